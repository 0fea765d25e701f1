#include "server/files/listing_page.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "server/http/path.hpp"

namespace weft::http {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// 9999-12-31T23:59:59Z: the last time RFC 3339's four-digit year can carry.
constexpr std::int64_t kLastTime = 253402300799;

template <typename Int>
void append_number(Int n, std::string& out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, end);
}

// The link of an entry: its exact name percent-encoded behind "./", "/" after a directory.
void append_href(const Listing& l, const ListingEntry& e, std::string& out) {
  out += "./";
  append_encoded_path(l.name(e), out);
  if (e.type == EntryType::directory) out += '/';
}

std::string_view type_name(EntryType t) {
  switch (t) {
    case EntryType::directory:
      return "directory";
    case EntryType::file:
      return "file";
    case EntryType::symlink:
      return "symlink";
    case EntryType::other:
      break;
  }
  return "other";
}

// The column headers: each links to its key ascending, or to the other direction when it
// is the current key, which it marks.
void append_column_headers(ListingOrder order, std::string& out) {
  struct Column {
    ListingKey key;
    std::string_view param;
    std::string_view label;
  };
  static constexpr Column kColumns[] = {{ListingKey::name, "name", "Name"},
                                        {ListingKey::size, "size", "Size"},
                                        {ListingKey::date, "date", "Modified (UTC)"}};
  out += "<thead><tr>";
  for (const Column& c : kColumns) {
    const bool current = c.key == order.key;
    out += "<th";
    if (current) out += order.descending ? " aria-sort=\"descending\"" : " aria-sort=\"ascending\"";
    out.append("><a href=\"?sort=").append(c.param).append("&amp;order=");
    out += current && !order.descending ? "desc" : "asc";
    out.append("\">").append(c.label).append("</a>");
    if (current) out += order.descending ? " &#9660;" : " &#9650;";
    out += "</th>";
  }
  out += "</tr></thead>\n";
}

// One row of the table: link, size, date (`href` is scratch space).
void append_html_row(const Listing& l, const ListingEntry& e, std::string& href, std::string& out) {
  out += "<tr><td><a href=\"";
  href.clear();
  append_href(l, e, href);
  append_html_escaped(href, out);  // the encoded name keeps "&", a sub-delimiter
  out += "\">";
  append_display_text(l.name(e), out);
  if (e.type == EntryType::directory) out += '/';
  out += "</a></td>";
  if (e.known && e.type == EntryType::file) {
    out += "<td title=\"";
    append_number(e.size, out);
    out += "\">";
    append_human_size(e.size, out);
    out += "</td>";
  } else {
    out += "<td>-</td>";
  }
  if (e.known) {
    out += "<td><time datetime=\"";
    append_listing_time(e.mtime, true, out);
    out += "\">";
    append_listing_time(e.mtime, false, out);
    out += "</time></td></tr>\n";
  } else {
    out += "<td>-</td></tr>\n";
  }
}

constexpr std::string_view kStyle =
    "<style>body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse}"
    "th,td{padding:.15em 1.5em .15em 0;text-align:left;white-space:nowrap}"
    "td+td{text-align:right;font-variant-numeric:tabular-nums}th a{text-decoration:none}"
    ".truncated{font-style:italic}</style>";

}  // namespace

void append_html_escaped(std::string_view in, std::string& out) {
  for (char c : in) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

void append_display_text(std::string_view in, std::string& out) {
  while (!in.empty()) {
    const unsigned char c = static_cast<unsigned char>(in.front());
    const std::size_t n = utf8_sequence_length(in);
    if (c < 0x20 || c == 0x7F || n == 0) {
      out += kReplacement;
      in.remove_prefix(1);
    } else if (n == 1) {
      append_html_escaped(in.substr(0, 1), out);
      in.remove_prefix(1);
    } else {
      out.append(in.substr(0, n));
      in.remove_prefix(n);
    }
  }
}

void append_json_string(std::string_view in, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  while (!in.empty()) {
    const unsigned char c = static_cast<unsigned char>(in.front());
    const std::size_t n = utf8_sequence_length(in);
    if (n == 0) {
      out += kReplacement;
      in.remove_prefix(1);
      continue;
    }
    if (n == 1) {
      in.remove_prefix(1);
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7F || c == '<' || c == '>' || c == '&') {
        out.append("\\u00").append(1, kHex[c >> 4]).append(1, kHex[c & 15]);
      } else {
        out += static_cast<char>(c);
      }
      continue;
    }
    const std::string_view seq = in.substr(0, n);
    if (seq == "\xE2\x80\xA8" || seq == "\xE2\x80\xA9") {  // U+2028, U+2029: line ends to JS
      out.append(seq == "\xE2\x80\xA8" ? "\\u2028" : "\\u2029");
    } else {
      out.append(seq);
    }
    in.remove_prefix(n);
  }
  out += '"';
}

void append_human_size(std::uint64_t bytes, std::string& out) {
  if (bytes < 1024) {
    append_number(bytes, out);
    return;
  }
  static constexpr char kUnits[] = "KMGTPE";
  double v = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  // 1023.5 and up would show as "1024": the next unit's "1.0" instead.
  while (v >= 1023.5 && unit + 1 < sizeof kUnits - 1) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  const int precision = v < 9.95 ? 1 : 0;
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  out.append(buf, end);
  out += kUnits[unit];
}

void append_listing_time(std::int64_t t, bool rfc3339, std::string& out) {
  const std::time_t clamped = static_cast<std::time_t>(std::clamp<std::int64_t>(t, 0, kLastTime));
  std::tm tm{};
  ::gmtime_r(&clamped, &tm);
  char buf[64];
  int n = rfc3339
              ? std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                              tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec)
              : std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d", tm.tm_year + 1900,
                              tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min);
  out.append(buf, static_cast<std::size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
}

void write_listing_html(const Listing& listing, std::string_view path, ListingOrder order,
                        std::string& body) {
  body.assign("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">");
  body += "<meta name=\"viewport\" content=\"width=device-width\"><title>Index of ";
  append_display_text(path, body);
  body.append("</title>").append(kStyle).append("</head>\n<body><h1>Index of ");
  append_display_text(path, body);
  body += "</h1>\n<table>\n";
  append_column_headers(order, body);
  body += "<tbody>\n<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n";
  std::string href;
  for (const ListingEntry& e : listing.entries) append_html_row(listing, e, href, body);
  body += "</tbody></table>\n";
  if (listing.truncated) {
    body += "<p class=\"truncated\">The directory has more entries than the ";
    append_number(listing.entries.size(), body);
    body += " listed (the first read, sorted among themselves).</p>\n";
  }
  body += "</body></html>\n";
}

void write_listing_json(const Listing& listing, std::string_view path, std::string& body) {
  body.assign("{\"path\":");
  append_json_string(path, body);
  body.append(",\"truncated\":").append(listing.truncated ? "true" : "false");
  body += ",\"entries\":[";
  std::string href;
  bool first = true;
  for (const ListingEntry& e : listing.entries) {
    body += first ? "\n{\"name\":" : ",\n{\"name\":";
    first = false;
    append_json_string(listing.name(e), body);
    body.append(",\"type\":\"").append(type_name(e.type)).append("\"");
    if (e.known && e.type == EntryType::file) {
      body += ",\"size\":";
      append_number(e.size, body);
    }
    if (e.known) {
      body += ",\"mtime\":\"";
      append_listing_time(e.mtime, true, body);
      body += '"';
    }
    href.clear();
    append_href(listing, e, href);
    body += ",\"href\":";
    append_json_string(href, body);  // ASCII; its "&" becomes \u0026
    body += '}';
  }
  body += "\n]}\n";
}

}  // namespace weft::http
