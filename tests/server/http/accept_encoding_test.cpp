// Tests server/http/accept_encoding.cpp: a table of Accept-Encoding values and the weights they
// give zstd, br and gzip (and whether gzip or identity was refused outright), a field sent on
// several lines, and a table of the codings ranked by weight, then the server's order.
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
  std::uint16_t zstd = 0;
  bool identity_refused = false;
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
    {"star", {"*"}, 1000, 1000, false, 1000},
    {"star refused", {"*;q=0"}, 0, 0, true, 0, true},
    {"star refuses only what is not listed", {"*;q=0, gzip;q=0.2"}, 0, 200, false, 0, true},
    {"star for what is not listed", {"gzip;q=0, *;q=0.3"}, 300, 0, true, 300},
    {"listed beats star whatever the order", {"*;q=0.2, br;q=0.9"}, 900, 200, false, 200},
    {"identity only", {"identity"}, 0, 0},
    {"identity refused, nothing else", {"identity;q=0"}, 0, 0, false, 0, true},
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
    {"star on a later line", {"gzip", "*;q=0.1"}, 100, 1000, false, 100},
    {"a browser's", {"gzip, deflate, br, zstd"}, 1000, 1000, false, 1000},
    {"zstd weighted", {"zstd;q=0.4, br;q=0.5"}, 500, 0, false, 400},
    {"ZSTD without case", {"ZStd"}, 0, 0, false, 1000},
    {"zstd refused, star for the others", {"zstd;q=0, *"}, 1000, 1000, false, 0},
    {"star gives zstd too", {"*;q=0.7"}, 700, 700, false, 700},
    {"identity refused", {"identity;q=0, gzip"}, 0, 1000, false, 0, true},
    {"star refuses identity", {"*;q=0"}, 0, 0, true, 0, true},
    {"star refused, identity listed", {"*;q=0, identity"}, 0, 0, true, 0, false},
    {"identity weighted is not refused", {"identity;q=0.1, br"}, 1000, 0, false, 0, false},
    {"a refused star does not refuse identity when absent", {}, 0, 0, false, 0, false},
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
    EXPECT_EQ(w.zstd, c.zstd);
    EXPECT_EQ(w.identity_refused, c.identity_refused);
  }
}

struct RankCase {
  const char* note;
  const char* field;
  std::vector<ContentCoding> server_order;
  std::vector<ContentCoding> want;
};

constexpr auto Z = ContentCoding::zstd;
constexpr auto B = ContentCoding::br;
constexpr auto G = ContentCoding::gzip;

const RankCase kRankCases[] = {
    {"all equal: the server's order", "gzip, br, zstd", {Z, B, G}, {Z, B, G}},
    {"another server order", "gzip, br, zstd", {G, Z, B}, {G, Z, B}},
    {"weights first", "zstd;q=0.5, br;q=0.9, gzip;q=0.7", {Z, B, G}, {B, G, Z}},
    {"a tie among two", "zstd;q=0.5, br, gzip;q=0.5", {Z, B, G}, {B, Z, G}},
    {"q=0 is never ranked", "zstd;q=0, br, gzip", {Z, B, G}, {B, G}},
    {"not in the server's list", "zstd, br, gzip", {G}, {G}},
    {"nothing accepted", "identity", {Z, B, G}, {}},
    {"star", "*;q=0.5, gzip", {Z, B, G}, {G, Z, B}},
    {"no server codings", "gzip", {}, {}},
};

TEST(AcceptEncoding, Rank) {
  for (const RankCase& c : kRankCases) {
    SCOPED_TRACE(c.note);
    std::vector<Header> headers{{"Accept-Encoding", c.field, Field::accept_encoding}};
    const CodingWeights w = parse_accept_encoding(FieldLines(headers, Field::accept_encoding));
    const RankedCodings r = rank_codings(w, c.server_order);
    std::vector<ContentCoding> got(r.codings.begin(), r.codings.begin() + r.count);
    EXPECT_EQ(got, c.want);
  }
}

TEST(AcceptEncoding, Names) {
  for (auto c : {Z, B, G}) EXPECT_EQ(coding_named(coding_name(c)), c);
  EXPECT_EQ(coding_named("deflate"), std::nullopt);
  EXPECT_EQ(coding_named("ZSTD"), std::nullopt);  // config values are lower case
}

}  // namespace
}  // namespace weft::http
