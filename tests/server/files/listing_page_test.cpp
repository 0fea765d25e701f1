// Tests server/listing_page: the escaping of names in each form (HTML text and links, JSON
// strings: quotes, backslash, control characters, markup bytes, U+2028/2029, bytes that
// are not UTF-8), the UTF-8 check, sizes for people, dates, the column headers' sort links
// and the JSON document's shape.
#include "server/files/listing_page.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(HtmlEscapeTest, EscapesTheFiveMarkupBytes) {
  std::string out;
  append_html_escaped("a&b<c>d\"e'f", out);
  EXPECT_EQ(out, "a&amp;b&lt;c&gt;d&quot;e&#39;f");
}

TEST(Utf8Test, SequenceLengths) {
  struct Row {
    const char* note;
    std::string in;
    std::size_t want;
  } rows[] = {
      {"ASCII", "a", 1},
      {"NUL is ASCII", std::string(1, '\0'), 1},
      {"two bytes", "\xC3\xA9", 2},
      {"three", "\xE2\x82\xAC", 3},
      {"four", "\xF0\x9F\x98\x80", 4},
      {"the last code point", "\xF4\x8F\xBF\xBF", 4},
      {"above U+10FFFF", "\xF4\x90\x80\x80", 0},
      {"overlong two (C0)", "\xC0\xAE", 0},
      {"overlong three", "\xE0\x80\xAE", 0},
      {"overlong four", "\xF0\x80\x80\xAE", 0},
      {"a surrogate", "\xED\xA0\x80", 0},
      {"a lone continuation", "\x80", 0},
      {"cut short", "\xE2\x82", 0},
      {"a bad continuation", "\xE2\x28\xA1", 0},
      {"F5 and up", "\xF5\x80\x80\x80", 0},
      {"FF", "\xFF", 0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.note);
    EXPECT_EQ(utf8_sequence_length(r.in), r.want);
  }
}

TEST(DisplayTextTest, EscapedWithControlsAndBadBytesReplaced) {
  struct Row {
    std::string in;
    std::string want;
  } rows[] = {
      {"plain.txt", "plain.txt"},
      {"<b>&'\"", "&lt;b&gt;&amp;&#39;&quot;"},
      {"h\xC3\xA9llo", "h\xC3\xA9llo"},
      {"a\nb\tc\x7F",
       "a\xEF\xBF\xBD"
       "b\xEF\xBF\xBD"
       "c\xEF\xBF\xBD"},
      {"\xFF\xFE.bin", "\xEF\xBF\xBD\xEF\xBF\xBD.bin"},
      {"\xC0\xBCscript", "\xEF\xBF\xBD\xEF\xBF\xBDscript"},  // an overlong "<" stays bytes
  };
  for (const Row& r : rows) {
    std::string out;
    append_display_text(r.in, out);
    EXPECT_EQ(out, r.want) << r.in;
  }
}

TEST(JsonStringTest, Escapes) {
  struct Row {
    const char* note;
    std::string in;
    std::string want;
  } rows[] = {
      {"plain", "a.txt", "\"a.txt\""},
      {"quote and backslash", "a\"b\\c", "\"a\\\"b\\\\c\""},
      {"newline, tab", "a\nb\tc", "\"a\\nb\\tc\""},
      {"other controls", std::string("\x01\x1f\x7f\r", 4), "\"\\u0001\\u001f\\u007f\\u000d\""},
      {"NUL", std::string(1, '\0'), "\"\\u0000\""},
      {"markup bytes", "<x>&", "\"\\u003cx\\u003e\\u0026\""},
      {"UTF-8 kept", "h\xC3\xA9llo \xF0\x9F\x98\x80", "\"h\xC3\xA9llo \xF0\x9F\x98\x80\""},
      {"line separators",
       "a\xE2\x80\xA8"
       "b\xE2\x80\xA9",
       "\"a\\u2028b\\u2029\""},
      {"not UTF-8", "\xFF\xFE.bin", "\"\xEF\xBF\xBD\xEF\xBF\xBD.bin\""},
      {"a surrogate", "\xED\xA0\x80", "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\""},
      {"cut short at the end", "a\xE2\x82", "\"a\xEF\xBF\xBD\xEF\xBF\xBD\""},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.note);
    std::string out;
    append_json_string(r.in, out);
    EXPECT_EQ(out, r.want);
  }
}

TEST(HumanSizeTest, RoundedToBinaryUnits) {
  struct Row {
    std::uint64_t bytes;
    const char* want;
  } rows[] = {
      {0, "0"},
      {1023, "1023"},
      {1024, "1.0K"},
      {1536, "1.5K"},
      {10188, "9.9K"},
      {10189, "10K"},  // 9.95K: the decimal would round to "10.0"
      {1047552, "1023K"},
      {1048063, "1023K"},
      {1048064, "1.0M"},  // 1023.5K would round to "1024K"
      {3 * 1024 * 1024 + 5, "3.0M"},
      {5ull << 40, "5.0T"},
      {std::numeric_limits<std::uint64_t>::max(), "16E"},
  };
  for (const Row& r : rows) {
    std::string out;
    append_human_size(r.bytes, out);
    EXPECT_EQ(out, r.want) << r.bytes;
  }
}

TEST(ListingTimeTest, FixedFormatsInUtc) {
  struct Row {
    std::int64_t t;
    const char* shown;
    const char* rfc3339;
  } rows[] = {
      {0, "1970-01-01 00:00", "1970-01-01T00:00:00Z"},
      {1700000000, "2023-11-14 22:13", "2023-11-14T22:13:20Z"},
      {-86400, "1970-01-01 00:00", "1970-01-01T00:00:00Z"},  // clamped
      {std::numeric_limits<std::int64_t>::max(), "9999-12-31 23:59", "9999-12-31T23:59:59Z"},
  };
  for (const Row& r : rows) {
    std::string shown, rfc;
    append_listing_time(r.t, false, shown);
    append_listing_time(r.t, true, rfc);
    EXPECT_EQ(shown, r.shown);
    EXPECT_EQ(rfc, r.rfc3339);
  }
}

// A listing of one file "a&b" (10 bytes) and one directory "d".
Listing two_entries() {
  Listing l;
  l.names = "a&bd";
  ListingEntry f;
  f.name_len = 3;
  f.type = EntryType::file;
  f.known = true;
  f.size = 10;
  f.mtime = 1700000000;
  ListingEntry d;
  d.name_at = 3;
  d.name_len = 1;
  d.type = EntryType::directory;
  d.known = true;
  d.mtime = 1700000000;
  l.entries = {d, f};
  return l;
}

TEST(ListingHtmlTest, ColumnHeadersLinkToTheOtherOrders) {
  std::string page;
  write_listing_html(two_entries(), "/x/", {ListingKey::size, false}, page);
  EXPECT_NE(page.find("<th><a href=\"?sort=name&amp;order=asc\">Name</a></th>"
                      "<th aria-sort=\"ascending\"><a href=\"?sort=size&amp;order=desc\">Size"
                      "</a> &#9650;</th><th><a href=\"?sort=date&amp;order=asc\">"),
            std::string::npos)
      << page;
  write_listing_html(two_entries(), "/x/", {ListingKey::size, true}, page);
  EXPECT_NE(page.find("<th aria-sort=\"descending\"><a href=\"?sort=size&amp;order=asc\">Size"
                      "</a> &#9660;</th>"),
            std::string::npos)
      << page;
  // The file's "&" is escaped in its link and its text.
  EXPECT_NE(page.find("<a href=\"./a&amp;b\">a&amp;b</a>"), std::string::npos) << page;
}

TEST(ListingJsonTest, Document) {
  std::string json;
  write_listing_json(two_entries(), "/x\"/", json);
  EXPECT_EQ(json,
            "{\"path\":\"/x\\\"/\",\"truncated\":false,\"entries\":[\n"
            "{\"name\":\"d\",\"type\":\"directory\",\"mtime\":\"2023-11-14T22:13:20Z\","
            "\"href\":\"./d/\"},\n"
            "{\"name\":\"a\\u0026b\",\"type\":\"file\",\"size\":10,"
            "\"mtime\":\"2023-11-14T22:13:20Z\",\"href\":\"./a\\u0026b\"}\n]}\n");
  Listing empty;
  empty.truncated = true;
  write_listing_json(empty, "/", json);
  EXPECT_EQ(json, "{\"path\":\"/\",\"truncated\":true,\"entries\":[\n]}\n");
}

}  // namespace
}  // namespace weft::http
