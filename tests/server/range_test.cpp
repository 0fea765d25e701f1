// Tests server/range.cpp: a table of Range headers against file sizes, and Content-Range.
#include "server/range.hpp"

#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

using Kind = RangeResult::Kind;

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

    // Several ranges: coalesced; one left → single, several → whole file.
    {"overlapping", "bytes=0-99,50-149", 1000, Kind::single, 0, 150},
    {"adjacent", "bytes=0-99,100-199", 1000, Kind::single, 0, 200},
    {"out of order adjacent", "bytes=100-199,0-99", 1000, Kind::single, 0, 200},
    {"contained", "bytes=0-999,10-20", 1000, Kind::single, 0, 1000},
    {"suffix overlapping", "bytes=900-,-50", 1000, Kind::single, 900, 100},
    {"same range twice", "bytes=5-9,5-9", 1000, Kind::single, 5, 5},
    {"disjoint: whole file", "bytes=0-9,20-29", 1000, Kind::none},
    {"disjoint with unsatisfiable", "bytes=0-9,2000-3000", 1000, Kind::single, 0, 10},
    {"100 disjoint ranges: whole file", many_ranges(100), 1000, Kind::none},
    {"101 ranges: ignored", many_ranges(101), 1000, Kind::none},

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
    const RangeResult r = parse_range(c.header, c.size);
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
    const RangeResult r = parse_range(c.header, c.size);
    if (r.kind != Kind::single) continue;
    SCOPED_TRACE(c.note);
    EXPECT_GT(r.length, 0u);
    EXPECT_LE(r.offset + r.length, c.size);
  }
}

TEST(ContentRange, Formats) {
  ContentRangeBuffer buf;
  EXPECT_EQ(format_content_range(parse_range("bytes=0-99", 1000), buf), "bytes 0-99/1000");
  EXPECT_EQ(format_content_range(parse_range("bytes=-1", 1000), buf), "bytes 999-999/1000");
  EXPECT_EQ(format_content_range(parse_range("bytes=5000-", 1000), buf), "bytes */1000");
  EXPECT_EQ(format_content_range(parse_range("", 1000), buf), "");
  RangeResult max{Kind::single, UINT64_MAX - 1, 1, UINT64_MAX};
  EXPECT_EQ(format_content_range(max, buf),
            "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
}

}  // namespace
}  // namespace weft::http
