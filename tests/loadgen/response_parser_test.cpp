// Tests loadgen/response_parser.cpp: a table of responses, each fed whole, byte by byte and in
// random pieces (fixed seed), which must all give the same results; plus classification and
// the no-allocation promise.
#include "loadgen/response_parser.hpp"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "loadgen/rng.hpp"

#include "alloc_counter.hpp"

namespace weft::load {
namespace {

// What one response should report.
struct Want {
  int status;
  std::optional<std::uint64_t> content_length;
  std::uint64_t body;
  std::uint64_t header;
  std::uint64_t footer;
  bool keep_alive;
  bool chunked = false;
  bool bodyless = false;
  std::uint32_t interim = 0;
};

struct Case {
  const char* note;
  std::vector<bool> heads;  // per response: was the request HEAD (missing: no)
  std::string input;
  bool eof;                  // the connection ends after the input
  std::vector<Want> want;    // complete responses, in order
  ParseError error;          // how it ends
  bool clean_close = false;  // finish() says kClosed
};

// The outcome of a run, for comparing feeding strategies with one another.
struct Outcome {
  std::vector<Response> responses;
  ParseError error = ParseError::kNone;
  bool clean_close = false;
  Response partial;

  friend bool operator==(const Outcome& a, const Outcome& b) {
    auto same = [](const Response& x, const Response& y) {
      return x.status == y.status && x.content_length == y.content_length &&
             x.body_bytes == y.body_bytes && x.header_bytes == y.header_bytes &&
             x.footer_bytes == y.footer_bytes && x.interim == y.interim && x.chunked == y.chunked &&
             x.bodyless == y.bodyless && x.keep_alive == y.keep_alive;
    };
    if (a.responses.size() != b.responses.size() || a.error != b.error ||
        a.clean_close != b.clean_close || !same(a.partial, b.partial)) {
      return false;
    }
    for (std::size_t i = 0; i < a.responses.size(); ++i) {
      if (!same(a.responses[i], b.responses[i])) return false;
    }
    return true;
  }
};

Outcome run(const Case& c, const std::vector<std::size_t>& pieces) {
  ResponseParser p;
  Outcome out;
  auto expect_next = [&] {
    const std::size_t k = out.responses.size();
    p.expect(k < c.heads.size() && c.heads[k]);
  };
  expect_next();
  std::size_t pos = 0;
  bool failed = false;
  for (std::size_t piece : pieces) {
    std::string_view rest = std::string_view{c.input}.substr(pos, piece);
    pos += piece;
    while (!rest.empty() && !failed) {
      const auto r = p.feed(rest);
      EXPECT_LE(r.consumed, rest.size());
      rest.remove_prefix(r.consumed);
      if (r.status == ResponseParser::Status::kComplete) {
        out.responses.push_back(p.response());
        expect_next();
      } else if (r.status == ResponseParser::Status::kError) {
        failed = true;
      } else {
        EXPECT_EQ(r.status, ResponseParser::Status::kIncomplete);
        EXPECT_TRUE(rest.empty());
      }
    }
  }
  if (!failed && c.eof) {
    const auto r = p.finish();
    if (r.status == ResponseParser::Status::kComplete) out.responses.push_back(p.response());
    out.clean_close = r.status == ResponseParser::Status::kClosed;
  }
  out.error = p.error();
  if (out.error != ParseError::kNone) {
    out.partial = p.response();
    EXPECT_STRNE(p.error_reason(), "");
  }
  return out;
}

std::vector<std::size_t> whole(const std::string& s) {
  return {s.size()};
}
std::vector<std::size_t> bytewise(const std::string& s) {
  return std::vector<std::size_t>(s.size(), 1);
}
std::vector<std::size_t> random_pieces(const std::string& s, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::size_t> out;
  for (std::size_t left = s.size(); left > 0;) {
    const std::size_t n = std::min<std::size_t>(left, 1 + rng.below(17));
    out.push_back(n);
    left -= n;
  }
  return out;
}

const std::string kOkHead = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
const std::string kChunkedHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
const std::string kHeadHead = "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n";
const std::string k204 = "HTTP/1.1 204 No Content\r\n\r\n";
const std::string k304 = "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\nETag: \"x\"\r\n\r\n";
const std::string k100 = "HTTP/1.1 100 Continue\r\n\r\n";
const std::string kClose = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n";
const std::string k10Eof = "HTTP/1.0 200 OK\r\nServer: x\r\n\r\n";
const std::string k10Ka = "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\n";
const std::string k404 = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n";
const std::string kBig = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n";

std::vector<Case> cases() {
  const std::string chunked_body = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  const std::string trailer_body = "3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\n";
  return {
      {"content-length, keep-alive",
       {},
       kOkHead + "hello",
       false,
       {{200, 5, 5, kOkHead.size(), 0, true}},
       ParseError::kNone},
      {"two pipelined",
       {},
       kOkHead + "hello" + kOkHead + "world",
       false,
       {{200, 5, 5, kOkHead.size(), 0, true}, {200, 5, 5, kOkHead.size(), 0, true}},
       ParseError::kNone},
      {"chunked",
       {},
       kChunkedHead + chunked_body,
       false,
       {{200, std::nullopt, 11, kChunkedHead.size(), chunked_body.size() - 11, true, true}},
       ParseError::kNone},
      {"chunked with trailer",
       {},
       kChunkedHead + trailer_body,
       false,
       {{200, std::nullopt, 3, kChunkedHead.size(), trailer_body.size() - 3, true, true}},
       ParseError::kNone},
      {"chunked, empty",
       {},
       kChunkedHead + "0\r\n\r\n" + kOkHead + "hello",
       false,
       {{200, std::nullopt, 0, kChunkedHead.size(), 5, true, true},
        {200, 5, 5, kOkHead.size(), 0, true}},
       ParseError::kNone},
      {"HEAD has no body despite Content-Length",
       {true, false},
       kHeadHead + kOkHead + "hello",
       false,
       {{200, 1234, 0, kHeadHead.size(), 0, true, false, true},
        {200, 5, 5, kOkHead.size(), 0, true}},
       ParseError::kNone},
      {"204 and 304 have no body",
       {},
       k204 + k304 + kOkHead + "hello",
       false,
       {{204, std::nullopt, 0, k204.size(), 0, true, false, true},
        {304, 99, 0, k304.size(), 0, true, false, true},
        {200, 5, 5, kOkHead.size(), 0, true}},
       ParseError::kNone},
      {"100 Continue is absorbed",
       {},
       k100 + kOkHead + "hello",
       false,
       {{200, 5, 5, k100.size() + kOkHead.size(), 0, true, false, false, 1}},
       ParseError::kNone},
      {"Connection: close",
       {},
       kClose + "ok",
       true,
       {{200, 2, 2, kClose.size(), 0, false}},
       ParseError::kNone,
       true},
      {"data after Connection: close",
       {},
       kClose + "ok" + kOkHead,
       false,
       {{200, 2, 2, kClose.size(), 0, false}},
       ParseError::kProtocol},
      {"HTTP/1.0 body until EOF",
       {},
       k10Eof + "until the end",
       true,
       {{200, std::nullopt, 13, k10Eof.size(), 0, false}},
       ParseError::kNone},
      {"HTTP/1.0 keep-alive",
       {},
       k10Ka + "abc",
       false,
       {{200, 3, 3, k10Ka.size(), 0, true}},
       ParseError::kNone},
      {"clean close between responses",
       {},
       kOkHead + "hello",
       true,
       {{200, 5, 5, kOkHead.size(), 0, true}},
       ParseError::kNone,
       true},
      {"close before any byte", {}, "", true, {}, ParseError::kNone, true},
      {"404 with a body",
       {},
       k404 + "not found",
       false,
       {{404, 9, 9, k404.size(), 0, true}},
       ParseError::kNone},
      {"large body",
       {},
       kBig + std::string(100000, 'x'),
       false,
       {{200, 100000, 100000, kBig.size(), 0, true}},
       ParseError::kNone},
      {"truncated body",
       {},
       "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd",
       true,
       {},
       ParseError::kTruncated},
      {"truncated headers", {}, "HTTP/1.1 200 OK\r\nContent-Le", true, {}, ParseError::kTruncated},
      {"not HTTP", {}, "HTTX/1.1 200 OK\r\n\r\n", false, {}, ParseError::kProtocol},
      {"bad chunk size", {}, kChunkedHead + "zz\r\n", false, {}, ParseError::kProtocol},
      {"101 without asking",
       {},
       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
       false,
       {},
       ParseError::kUpgrade},
  };
}

TEST(ResponseParser, TableFedWholeBytewiseAndInRandomPieces) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.note);
    const Outcome whole_run = run(c, whole(c.input));
    ASSERT_EQ(whole_run.responses.size(), c.want.size());
    for (std::size_t i = 0; i < c.want.size(); ++i) {
      SCOPED_TRACE(i);
      const Response& r = whole_run.responses[i];
      const Want& w = c.want[i];
      EXPECT_EQ(r.status, w.status);
      EXPECT_EQ(r.content_length, w.content_length);
      EXPECT_EQ(r.body_bytes, w.body);
      EXPECT_EQ(r.header_bytes, w.header);
      EXPECT_EQ(r.footer_bytes, w.footer);
      EXPECT_EQ(r.keep_alive, w.keep_alive);
      EXPECT_EQ(r.chunked, w.chunked);
      EXPECT_EQ(r.bodyless, w.bodyless);
      EXPECT_EQ(r.interim, w.interim);
    }
    EXPECT_EQ(whole_run.error, c.error);
    EXPECT_EQ(whole_run.clean_close, c.clean_close);
    EXPECT_TRUE(run(c, bytewise(c.input)) == whole_run) << "byte by byte differs";
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      EXPECT_TRUE(run(c, random_pieces(c.input, seed)) == whole_run) << "pieces, seed " << seed;
    }
  }
}

TEST(ResponseParser, TruncatedBodyKeepsItsPartialCount) {
  ResponseParser p;
  const std::string input = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd";
  EXPECT_EQ(p.feed(input).status, ResponseParser::Status::kIncomplete);
  EXPECT_TRUE(p.in_response());
  EXPECT_EQ(p.finish().status, ResponseParser::Status::kError);
  EXPECT_EQ(p.error(), ParseError::kTruncated);
  EXPECT_EQ(p.response().body_bytes, 4u);
  EXPECT_EQ(p.response().content_length, 10u);
  EXPECT_EQ(classify_response(p.response(), std::nullopt), ErrorClass::kBadLength);
  // Once failed, the parser stays failed until reset().
  EXPECT_EQ(p.feed("HTTP/1.1 200 OK\r\n").status, ResponseParser::Status::kError);
  p.reset();
  EXPECT_EQ(p.error(), ParseError::kNone);
  EXPECT_EQ(p.feed(kOkHead + "hello").status, ResponseParser::Status::kComplete);
}

TEST(ResponseParser, DataAfterConnectionCloseIsAnError) {
  ResponseParser p;
  const std::string input = kClose + "ok" + kOkHead + "hello";
  auto r = p.feed(input);
  ASSERT_EQ(r.status, ResponseParser::Status::kComplete);
  EXPECT_FALSE(p.response().keep_alive);
  r = p.feed(std::string_view{input}.substr(r.consumed));
  EXPECT_EQ(r.status, ResponseParser::Status::kError);
  EXPECT_EQ(p.error(), ParseError::kProtocol);
}

TEST(ResponseParser, HeadExpectationLastsOneResponse) {
  ResponseParser p;
  p.expect(true);
  auto r = p.feed(kHeadHead);
  ASSERT_EQ(r.status, ResponseParser::Status::kComplete);
  EXPECT_EQ(p.response().body_bytes, 0u);
  // No expect() this time: a plain GET, so the body is read.
  r = p.feed(kOkHead + "hello");
  ASSERT_EQ(r.status, ResponseParser::Status::kComplete);
  EXPECT_EQ(p.response().body_bytes, 5u);
}

TEST(ResponseParser, ManyResponsesAllocateNothing) {
  ResponseParser p;
  const std::string one = kChunkedHead + "5\r\nhello\r\n0\r\n\r\n" + kOkHead + "hello";
  const auto before = testing::allocations();
  int complete = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string_view rest = one;
    while (!rest.empty()) {
      const auto r = p.feed(rest);
      ASSERT_NE(r.status, ResponseParser::Status::kError);
      complete += r.status == ResponseParser::Status::kComplete;
      rest.remove_prefix(r.consumed);
    }
  }
  EXPECT_EQ(complete, 2000);
  EXPECT_EQ(testing::allocations(), before);
}

TEST(ResponseParser, Classification) {
  Response ok;
  ok.status = 200;
  ok.body_bytes = 100;
  ok.content_length = 100;
  EXPECT_FALSE(classify_response(ok, std::nullopt));
  EXPECT_FALSE(classify_response(ok, 100));
  EXPECT_EQ(classify_response(ok, 101), ErrorClass::kBadLength);
  Response partial = ok;
  partial.status = 206;
  EXPECT_FALSE(classify_response(partial, 5000));  // a range: the manifest size does not apply
  Response head = ok;
  head.bodyless = true;
  head.body_bytes = 0;
  EXPECT_FALSE(classify_response(head, 100));
  Response missing = ok;
  missing.status = 404;
  EXPECT_EQ(classify_response(missing, 100), ErrorClass::kHttp4xx);
  missing.status = 503;
  EXPECT_EQ(classify_response(missing, 100), ErrorClass::kHttp5xx);
}

}  // namespace
}  // namespace weft::load
