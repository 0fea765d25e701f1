// Tests server/http/range.cpp: a table of Range headers against file sizes, a table of several
// ranges (multipart parts, limits.max_ranges, overlaps that add up to the file), and
// Content-Range.
#include "server/http/range.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

using Kind = RangeResult::Kind;

constexpr std::size_t kDefaultMax = 16;  // limits.max_ranges' default

// parse_range with a scratch array of its own (a multi result's parts then dangle: not for
// those).
RangeResult parse(std::string_view header, std::uint64_t size, std::size_t max = kDefaultMax) {
  RangeParts scratch;
  RangeResult r = parse_range(header, size, max, scratch);
  r.parts = {};
  return r;
}

struct Case {
  const char* note;
  std::string header;
  std::uint64_t size;
  Kind kind;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

std::string many_ranges(int n) {
  std::string s = "bytes=";
  for (int i = 0; i < n; ++i)
    s += (i ? "," : "") + std::to_string(i * 10) + "-" + std::to_string(i * 10);
  return s;
}

const Case kCases[] = {
    // Single ranges.
    {"first-last", "bytes=0-99", 1000, Kind::single, 0, 100},
    {"middle", "bytes=100-199", 1000, Kind::single, 100, 100},
    {"one byte", "bytes=5-5", 1000, Kind::single, 5, 1},
    {"open-ended", "bytes=900-", 1000, Kind::single, 900, 100},
    {"open-ended from 0", "bytes=0-", 1000, Kind::single, 0, 1000},
    {"last byte", "bytes=999-999", 1000, Kind::single, 999, 1},
    {"last-pos past the end is clamped", "bytes=990-5000", 1000, Kind::single, 990, 10},
    {"suffix", "bytes=-100", 1000, Kind::single, 900, 100},
    {"suffix longer than the file", "bytes=-5000", 1000, Kind::single, 0, 1000},
    {"unit is case-insensitive", "Bytes=0-9", 1000, Kind::single, 0, 10},
    {"whitespace around the spec", "bytes= 0-9 ", 1000, Kind::single, 0, 10},
    {"empty list elements", "bytes=,,0-9,", 1000, Kind::single, 0, 10},
    {"huge last-pos saturates", "bytes=0-99999999999999999999999", 1000, Kind::single, 0, 1000},
    {"huge suffix saturates", "bytes=-99999999999999999999999", 1000, Kind::single, 0, 1000},
    {"large file", "bytes=4294967296-", 8589934592, Kind::single, 4294967296, 4294967296},

    // Several ranges coalesced into one: single (several left: the Multi table).
    {"overlapping", "bytes=0-99,50-149", 1000, Kind::single, 0, 150},
    {"adjacent", "bytes=0-99,100-199", 1000, Kind::single, 0, 200},
    {"out of order adjacent", "bytes=100-199,0-99", 1000, Kind::single, 0, 200},
    {"contained", "bytes=0-999,10-20", 1000, Kind::single, 0, 1000},
    {"suffix overlapping", "bytes=900-,-50", 1000, Kind::single, 900, 100},
    {"same range twice", "bytes=5-9,5-9", 1000, Kind::single, 5, 5},
    {"disjoint with unsatisfiable", "bytes=0-9,2000-3000", 1000, Kind::single, 0, 10},
    {"17 ranges, over the default limit: ignored", many_ranges(17), 1000, Kind::none},
    {"a contained range, added up past the size, still one", "bytes=0-999,0-999", 1000,
     Kind::single, 0, 1000},

    // Unsatisfiable: 416.
    {"first-pos at the size", "bytes=1000-", 1000, Kind::unsatisfiable},
    {"first-pos past the size", "bytes=2000-3000", 1000, Kind::unsatisfiable},
    {"suffix of zero", "bytes=-0", 1000, Kind::unsatisfiable},
    {"all unsatisfiable", "bytes=1000-,2000-,-0", 1000, Kind::unsatisfiable},
    {"huge first-pos", "bytes=99999999999999999999999-", 1000, Kind::unsatisfiable},
    {"empty file, int range", "bytes=0-", 0, Kind::unsatisfiable},
    {"empty file, suffix: whole (empty) file", "bytes=-5", 0, Kind::none},

    // Malformed or not bytes: ignored, whole file.
    {"empty header", "", 1000, Kind::none},
    {"other unit", "items=0-1", 1000, Kind::none},
    {"no equals", "bytes 0-1", 1000, Kind::none},
    {"space before equals", "bytes =0-1", 1000, Kind::none},
    {"no range-spec", "bytes=", 1000, Kind::none},
    {"only commas", "bytes=,,", 1000, Kind::none},
    {"no dash", "bytes=5", 1000, Kind::none},
    {"dash only", "bytes=-", 1000, Kind::none},
    {"last before first", "bytes=10-5", 1000, Kind::none},
    {"letters", "bytes=a-b", 1000, Kind::none},
    {"negative", "bytes=--5", 1000, Kind::none},
    {"plus sign", "bytes=+1-5", 1000, Kind::none},
    {"two dashes", "bytes=1-2-3", 1000, Kind::none},
    {"space inside", "bytes=1 -5", 1000, Kind::none},
    {"hex", "bytes=0x10-0x20", 1000, Kind::none},
    {"one bad spec spoils all", "bytes=0-9,x", 1000, Kind::none},
};

TEST(ParseRange, Table) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.note);
    const RangeResult r = parse(c.header, c.size);
    EXPECT_EQ(r.kind, c.kind);
    EXPECT_EQ(r.size, c.size);
    if (c.kind == Kind::single) {
      EXPECT_EQ(r.offset, c.offset);
      EXPECT_EQ(r.length, c.length);
    }
  }
}

TEST(ParseRange, SingleRangeStaysInsideTheFile) {
  for (const Case& c : kCases) {
    const RangeResult r = parse(c.header, c.size);
    if (r.kind != Kind::single) continue;
    SCOPED_TRACE(c.note);
    EXPECT_GT(r.length, 0u);
    EXPECT_LE(r.offset + r.length, c.size);
  }
}

struct MultiCase {
  const char* note;
  std::string header;
  std::uint64_t size;
  std::size_t max_ranges;
  std::vector<ByteRange> parts;  // empty: `none`, the whole file
};

const MultiCase kMulti[] = {
    {"two disjoint", "bytes=0-9,20-29", 1000, 16, {{0, 10}, {20, 10}}},
    {"sorted ascending", "bytes=20-29,0-9", 1000, 16, {{0, 10}, {20, 10}}},
    {"coalesced, then several", "bytes=0-4,5-9,20-29,25-34", 1000, 16, {{0, 10}, {20, 15}}},
    {"suffix and int-range", "bytes=-10,0-0", 1000, 16, {{0, 1}, {990, 10}}},
    {"open-ended last", "bytes=0-0,990-", 1000, 16, {{0, 1}, {990, 10}}},
    {"unsatisfiable ones dropped", "bytes=0-0,5000-,10-10,-0", 1000, 16, {{0, 1}, {10, 1}}},
    {"clamped last-pos", "bytes=0-0,998-5000", 1000, 16, {{0, 1}, {998, 2}}},
    {"one byte apart", "bytes=0-0,2-2", 3, 16, {{0, 1}, {2, 1}}},
    {"at the limit", many_ranges(16), 1000, 16, {}},  // filled in by the test
    {"over the limit: ignored", many_ranges(17), 1000, 16, {}},
    {"100 at the largest limit", many_ranges(100), 1000, 100, {}},  // filled in by the test
    {"101 over the largest limit", many_ranges(101), 1000, 100, {}},
    {"a limit above the capacity is the capacity", many_ranges(101), 1000, 1000, {}},
    {"max_ranges 1: two disjoint get the whole file", "bytes=0-1,5-6", 1000, 1, {}},
    {"max_ranges 1: two that coalesce are two specs", "bytes=0-1,2-3", 1000, 1, {}},
    {"max_ranges 0: ignored", "bytes=0-1,5-6", 1000, 0, {}},
    {"requested sum over the size", "bytes=0-5,0-5,8-9", 10, 16, {}},
    {"requested sum equal to the size", "bytes=0-3,0-3,8-9", 10, 16, {}},
    {"requested sum just under the size", "bytes=0-2,0-2,8-9", 10, 16, {{0, 3}, {8, 2}}},
    {"all but one byte", "bytes=0-4,6-9", 10, 16, {{0, 5}, {6, 4}}},
};

// The parts of many_ranges(n) against 1000 bytes: one byte every ten.
std::vector<ByteRange> every_tenth(int n) {
  std::vector<ByteRange> parts;
  for (int i = 0; i < n; ++i) parts.push_back({static_cast<std::uint64_t>(i) * 10, 1});
  return parts;
}

TEST(ParseRange, Multi) {
  for (const MultiCase& c : kMulti) {
    SCOPED_TRACE(c.note);
    std::vector<ByteRange> want = c.parts;
    if (std::string_view(c.note).starts_with("at the limit")) want = every_tenth(16);
    if (std::string_view(c.note).starts_with("100 at")) want = every_tenth(100);
    RangeParts scratch;
    const RangeResult r = parse_range(c.header, c.size, c.max_ranges, scratch);
    EXPECT_EQ(r.size, c.size);
    if (want.empty()) {
      EXPECT_EQ(r.kind, Kind::none);
      EXPECT_TRUE(r.parts.empty());
      continue;
    }
    ASSERT_EQ(r.kind, Kind::multi);
    ASSERT_EQ(r.parts.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(r.parts[i].offset, want[i].offset) << i;
      EXPECT_EQ(r.parts[i].length, want[i].length) << i;
    }
    EXPECT_EQ(r.parts.data(), scratch.data());  // viewed in the caller's array
  }
}

TEST(ParseRange, LimitZeroIgnoresEveryRange) {
  // Not even a 416: with no ranges at all, "bytes=5000-" is just a request for the file.
  for (const char* h : {"bytes=0-1", "bytes=5000-", "bytes=-5", "bytes=0-1,5-6"}) {
    SCOPED_TRACE(h);
    EXPECT_EQ(parse(h, 1000, 0).kind, Kind::none);
  }
  EXPECT_EQ(parse("bytes=5000-", 1000, 1).kind, Kind::unsatisfiable);
  EXPECT_EQ(parse("bytes=0-1", 1000, 1).kind, Kind::single);
}

TEST(ContentRange, Formats) {
  ContentRangeBuffer buf;
  EXPECT_EQ(format_content_range(parse("bytes=0-99", 1000), buf), "bytes 0-99/1000");
  EXPECT_EQ(format_content_range(parse("bytes=-1", 1000), buf), "bytes 999-999/1000");
  EXPECT_EQ(format_content_range(parse("bytes=5000-", 1000), buf), "bytes */1000");
  EXPECT_EQ(format_content_range(parse("", 1000), buf), "");
  EXPECT_EQ(format_content_range(parse("bytes=0-0,5-5", 1000), buf), "");  // multi: per part
  EXPECT_EQ(format_part_range({5, 10}, 1000, buf), "bytes 5-14/1000");
  RangeResult max{Kind::single, UINT64_MAX - 1, 1, UINT64_MAX, {}};
  EXPECT_EQ(format_content_range(max, buf),
            "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
}

}  // namespace
}  // namespace weft::http
