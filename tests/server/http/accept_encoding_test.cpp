// Tests server/http/accept_encoding.cpp: a table of Accept-Encoding values and the weights they
// give br and gzip (and whether gzip was refused outright), and a field sent on several lines.
#include "server/http/accept_encoding.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

struct Case {
  const char* note;
  std::vector<std::string> lines;  // none: the field is absent
  std::uint16_t br;
  std::uint16_t gzip;
  bool gzip_refused = false;  // an explicit q=0 (of gzip, or of a `*` that covers it)
};

const Case kCases[] = {
    {"absent", {}, 0, 0},
    {"empty: no coding wanted", {""}, 0, 0},
    {"gzip", {"gzip"}, 0, 1000},
    {"br and gzip", {"gzip, deflate, br"}, 1000, 1000},
    {"weights", {"br;q=0.5, gzip"}, 500, 1000},
    {"gzip refused", {"gzip;q=0"}, 0, 0, true},
    {"q=0.000 refuses too", {"gzip;q=0.000, br;q=0.001"}, 1, 0, true},
    {"x-gzip refused", {"x-gzip;q=0, br"}, 1000, 0, true},
    {"star", {"*"}, 1000, 1000},
    {"star refused", {"*;q=0"}, 0, 0, true},
    {"star refuses only what is not listed", {"*;q=0, gzip;q=0.2"}, 0, 200},
    {"star for what is not listed", {"gzip;q=0, *;q=0.3"}, 300, 0, true},
    {"listed beats star whatever the order", {"*;q=0.2, br;q=0.9"}, 900, 200},
    {"identity only", {"identity"}, 0, 0},
    {"identity refused, nothing else", {"identity;q=0"}, 0, 0},
    {"codings without case", {"GZIP, Br"}, 1000, 1000},
    {"Q without case", {"gzip;Q=0.7"}, 0, 700},
    {"x-gzip is gzip", {"x-gzip"}, 0, 1000},
    {"whitespace around the parts", {" gzip ; q=0.5 ,\tbr "}, 1000, 500},
    {"q=1.000", {"br;q=1.000"}, 1000, 0},
    {"q=1. and q=0.", {"br;q=1., gzip;q=0."}, 1000, 0, true},
    {"first listing counts", {"gzip;q=0.1, gzip"}, 0, 100},
    {"first listing counts, a refusal too", {"gzip;q=0, gzip"}, 0, 0, true},
    {"other parameters are skipped", {"gzip;level=9;q=0.4"}, 0, 400},
    {"empty list elements", {",, gzip ,"}, 0, 1000},
    {"q above 1: the element is skipped", {"gzip;q=1.5, br"}, 1000, 0},
    {"q=1.001: skipped", {"gzip;q=1.001"}, 0, 0},
    {"a bad refusal is no refusal", {"gzip;q=0.0000"}, 0, 0},
    {"four decimals: skipped", {"gzip;q=0.5000"}, 0, 0},
    {"a letter in q: skipped", {"gzip;q=0.x"}, 0, 0},
    {"space around =: skipped", {"gzip;q = 0.5, br"}, 1000, 0},
    {"empty q: skipped", {"gzip;q="}, 0, 0},
    {"not a token: skipped", {"gz(ip), br"}, 1000, 0},
    {"a weight alone: skipped", {";q=1"}, 0, 0},
    {"compress and deflate are not ours", {"compress, deflate"}, 0, 0},
    {"a prefix is not a coding", {"gzipped, brotli"}, 0, 0},
    {"several lines", {"br;q=0.2", "gzip;q=0.8"}, 200, 800},
    {"star on a later line", {"gzip", "*;q=0.1"}, 100, 1000},
};

TEST(AcceptEncoding, Table) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.note);
    std::vector<Header> headers;
    headers.push_back({"Host", "x", Field::host});
    for (const std::string& line : c.lines) {
      headers.push_back({"Accept-Encoding", line, Field::accept_encoding});
      headers.push_back({"X-Other", "gzip", Field::other});  // never read
    }
    const CodingWeights w = parse_accept_encoding(FieldLines(headers, Field::accept_encoding));
    EXPECT_EQ(w.br, c.br);
    EXPECT_EQ(w.gzip, c.gzip);
    EXPECT_EQ(w.gzip_refused, c.gzip_refused);
  }
}

}  // namespace
}  // namespace weft::http
