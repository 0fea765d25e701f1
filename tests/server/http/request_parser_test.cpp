// Tests server/http/request_parser.cpp: a table of requests, each fed whole, byte by byte and in
// random-sized pieces (fixed seed) through a caller that moves its buffer on every call, with
// identical results; then the views, the body discarding and the limits in detail.
#include "server/http/request_parser.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

using namespace std::string_literals;

// One outcome of parse(), flattened so that the three feeding modes can be compared.
struct Seen {
  ParseStatus status = ParseStatus::need_more;
  int http_status = 0;
  bool close = false;
  std::string reason;
  Method method = Method::other;
  std::string method_text;
  std::string target;
  Version version = Version::http_1_1;
  bool keep_alive = false;
  std::vector<std::pair<std::string, std::string>> headers;
  std::size_t request_bytes = 0;  // the whole request: discarded body pieces + consumed()
  std::size_t head_bytes = 0;
  std::uint64_t body_bytes = 0;

  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  switch (s.status) {
    case ParseStatus::need_more:
      return os << "need_more";
    case ParseStatus::error:
      return os << "error " << s.http_status << " (" << s.reason << ")";
    case ParseStatus::ready:
      os << "ready " << s.method_text << " " << s.target << " ka=" << s.keep_alive
         << " bytes=" << s.request_bytes << " head=" << s.head_bytes << " body=" << s.body_bytes
         << " headers=[";
      for (const auto& [n, v] : s.headers) os << n << ": " << v << "; ";
      return os << "]";
  }
  return os;
}

// Returns how many bytes to append next, given how many remain.
using Chunker = std::function<std::size_t(std::size_t remaining)>;

// Plays a connection: appends input in pieces, calls parse() on a fresh copy of its buffer
// each time (so nothing may rely on the buffer's address), keeps `keep` bytes on need_more,
// drops consumed() bytes after ready, stops at an error or at a ready that closes. Records
// every ready and error, and a final need_more when input ran out inside a request.
std::vector<Seen> feed(const Config& config, std::string_view input, const Chunker& chunk) {
  RequestParser parser(config);
  std::vector<Seen> seen;
  std::string buf;
  std::size_t pos = 0;
  std::size_t discarded = 0;  // body bytes of the current request dropped on need_more
  for (int guard = 0; guard < 1'000'000; ++guard) {
    const std::vector<char> copy(buf.begin(), buf.end());
    const ParseResult r = parser.parse(copy);
    Seen s;
    s.status = r.status;
    if (r.status == ParseStatus::ready) {
      const Request& q = parser.request();
      s.close = r.close;
      s.method = q.method();
      s.method_text = q.method_text();
      s.target = q.target();
      s.version = q.version();
      s.keep_alive = q.keep_alive();
      for (const Header& h : q.headers()) s.headers.emplace_back(h.name, h.value);
      s.request_bytes = discarded + parser.consumed();
      s.head_bytes = parser.head_bytes();
      s.body_bytes = parser.body_bytes();
      EXPECT_EQ(r.close, !q.keep_alive());
      EXPECT_LE(parser.consumed(), copy.size());
      seen.push_back(s);
      if (r.close) break;
      buf.erase(0, parser.consumed());
      discarded = 0;
      continue;
    }
    if (r.status == ParseStatus::error) {
      s.http_status = r.http_status;
      s.close = r.close;
      s.reason = r.reason;
      EXPECT_TRUE(r.close);
      EXPECT_FALSE(r.reason.empty());
      const ParseResult again = parser.parse(copy);  // the error is sticky
      EXPECT_EQ(again.status, ParseStatus::error);
      EXPECT_EQ(again.http_status, r.http_status);
      seen.push_back(s);
      break;
    }
    EXPECT_LE(r.keep, buf.size());
    discarded += buf.size() - r.keep;
    buf.resize(r.keep);
    if (pos == input.size()) {
      if (!buf.empty()) seen.push_back(s);
      break;
    }
    const std::size_t n = std::max<std::size_t>(1, chunk(input.size() - pos));
    buf.append(input.substr(pos, n));
    pos += n;
  }
  return seen;
}

std::vector<Seen> feed_whole(const Config& c, std::string_view in) {
  return feed(c, in, [](std::size_t rest) { return rest; });
}

std::vector<Seen> feed_bytes(const Config& c, std::string_view in) {
  return feed(c, in, [](std::size_t) { return std::size_t{1}; });
}

std::vector<Seen> feed_random(const Config& c, std::string_view in, unsigned seed) {
  std::mt19937 rng(seed);
  return feed(c, in, [&rng](std::size_t rest) {
    return std::min(rest, std::uniform_int_distribution<std::size_t>(1, 23)(rng));
  });
}

// What a table row expects of each outcome.
struct Expect {
  ParseStatus status;
  int http_status = 0;
  std::string target;
  bool keep_alive = true;
};

Expect ok(std::string target, bool keep_alive = true) {
  return {ParseStatus::ready, 0, std::move(target), keep_alive};
}
Expect err(int status) {
  return {ParseStatus::error, status, "", true};
}
Expect more() {
  return {ParseStatus::need_more, 0, "", true};
}

struct Limits {
  std::size_t max_header_bytes = 8 * 1024;
  std::size_t max_uri_bytes = 4 * 1024;
  unsigned max_headers = 100;
  std::size_t max_body_bytes = 64 * 1024;
  bool accept_bare_lf = true;
};

Config config_with(const Limits& l) {
  Config c;
  c.max_header_bytes = l.max_header_bytes;
  c.max_uri_bytes = l.max_uri_bytes;
  c.max_headers = l.max_headers;
  c.max_body_bytes = l.max_body_bytes;
  c.accept_bare_lf = l.accept_bare_lf;
  return c;
}

struct Case {
  std::string note;
  std::string input;
  std::vector<Expect> expect;
  Limits limits = {};
};

std::string get(std::string_view target, std::string_view extra = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: example.com\r\n" + std::string(extra) +
         "\r\n";
}

std::string pipelined(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += get("/" + std::to_string(i));
  return s;
}

std::vector<Case> table() {
  const std::string kHost = "Host: a\r\n";
  const std::string big_value(9000, 'v');
  const std::string long_target = "/" + std::string(5000, 'a');
  std::string many_headers;
  for (int i = 0; i < 100; ++i) many_headers += "X-" + std::to_string(i) + ": v\r\n";
  std::string ninety_nine_headers;
  for (int i = 0; i < 99; ++i) ninety_nine_headers += "X-" + std::to_string(i) + ": v\r\n";

  return {
      // Complete and incomplete heads.
      {"simple GET", get("/"), {ok("/")}},
      {"incomplete 1", "G", {more()}},
      {"incomplete 3", "GET", {more()}},
      {"incomplete request line", "GET / HTTP/1.1\r\n", {more()}},
      {"incomplete head CR", "GET / HTTP/1.1\r\nHost: a\r\n\r", {more()}},
      {"incomplete field", "GET / HTTP/1.1\r\nHost: a\r\nX-Long", {more()}},
      {"HEAD", "HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n", {ok("/h")}},
      {"OPTIONS asterisk", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", {ok("*")}},
      {"POST is parsed (405 is the handler's)",
       "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
       {ok("/p")}},
      {"absolute-form target",
       "GET http://example.com/a?b=c HTTP/1.1\r\nHost: x\r\n\r\n",
       {ok("http://example.com/a?b=c")}},
      {"leading CRLF ignored", "\r\n" + get("/"), {ok("/")}},
      {"obs-text in header value", get("/", "X: caf\xc3\xa9\r\n"), {ok("/")}},
      {"tab inside header value", get("/", "X: a\tb\r\n"), {ok("/")}},
      {"empty header value", get("/", "X:\r\nY: \r\n"), {ok("/")}},

      // Keep-alive.
      {"HTTP/1.0 no keep-alive", "GET / HTTP/1.0\r\n\r\n", {ok("/", false)}},
      {"HTTP/1.0 keep-alive header",
       "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
       {ok("/", true)}},
      {"HTTP/1.0 keep-alive then next",
       "GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get("/2"),
       {ok("/1"), ok("/2")}},
      {"HTTP/1.1 Connection: close", get("/", "Connection: close\r\n"), {ok("/", false)}},
      {"HTTP/1.1 close stops the connection",
       get("/a", "Connection: close\r\n") + get("/b"),
       {ok("/a", false)}},
      {"Connection list with close", get("/", "Connection: foo, close\r\n"), {ok("/", false)}},
      {"CONNECT closes",
       "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
       {ok("example.com:443", false)}},
      {"Upgrade is ignored",
       get("/u", "Upgrade: websocket\r\nConnection: Upgrade\r\n") + get("/n"),
       {ok("/u"), ok("/n")}},

      // Pipelining.
      {"10 pipelined requests in one buffer",
       pipelined(10),
       {ok("/0"), ok("/1"), ok("/2"), ok("/3"), ok("/4"), ok("/5"), ok("/6"), ok("/7"), ok("/8"),
        ok("/9")}},
      {"pipelined, last incomplete",
       pipelined(2) + "GET /2 HTTP/1.1\r\nHo",
       {ok("/0"), ok("/1"), more()}},
      {"pipelined after a body",
       "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc" + get("/b"),
       {ok("/a"), ok("/b")}},

      // Bodies: read and thrown away.
      {"CL body discarded",
       get("/", "Content-Length: 10\r\n") + "0123456789" + get("/n"),
       {ok("/"), ok("/n")}},
      {"CL body incomplete", get("/", "Content-Length: 10\r\n") + "01234", {more()}},
      {"CL zero", get("/", "Content-Length: 0\r\n") + get("/n"), {ok("/"), ok("/n")}},
      {"CL leading zeros", get("/", "Content-Length: 003\r\n") + "abc", {ok("/")}},
      {"CL at the limit",
       get("/", "Content-Length: 16\r\n") + std::string(16, 'b'),
       {ok("/")},
       {.max_body_bytes = 16}},
      {"body over limit 413",
       get("/", "Content-Length: 17\r\n") + std::string(17, 'b'),
       {err(413)},
       {.max_body_bytes = 16}},
      {"body over default limit 413", get("/", "Content-Length: 65537\r\n"), {err(413)}},
      {"chunked body discarded",
       get("/", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" +
           get("/n"),
       {ok("/"), ok("/n")}},
      {"chunked with extension and trailer",
       get("/", "Transfer-Encoding: chunked\r\n") + "3;ext=1\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n" +
           get("/n"),
       {ok("/"), ok("/n")}},
      {"chunked coding name is case-insensitive",
       get("/", "Transfer-Encoding: Chunked\r\n") + "0\r\n\r\n",
       {ok("/")}},
      {"chunked leading zeros",
       get("/", "Transfer-Encoding: chunked\r\n") + "0003\r\nabc\r\n0\r\n\r\n",
       {ok("/")}},
      {"chunked incomplete", get("/", "Transfer-Encoding: chunked\r\n") + "5\r\nhel", {more()}},
      {"chunked at the limit",
       get("/", "Transfer-Encoding: chunked\r\n") + "8\r\n01234567\r\n8\r\n01234567\r\n0\r\n\r\n",
       {ok("/")},
       {.max_body_bytes = 16}},
      {"chunked over limit 413",
       get("/", "Transfer-Encoding: chunked\r\n") + "8\r\n01234567\r\n9\r\n012345678\r\n0\r\n\r\n",
       {err(413)},
       {.max_body_bytes = 16}},
      {"chunk size alone over limit 413",
       get("/", "Transfer-Encoding: chunked\r\n") + "ffffffff\r\n",
       {err(413)}},
      {"chunk extensions over limit 413",
       get("/", "Transfer-Encoding: chunked\r\n") + "1;" + std::string(300, 'e') + "\r\n",
       {err(413)},
       {.max_header_bytes = 256}},
      {"trailers over limit 413",
       get("/", "Transfer-Encoding: chunked\r\n") + "0\r\nX: " + std::string(300, 't') + "\r\n",
       {err(413)},
       {.max_header_bytes = 256}},
      {"Expect 100-continue with body: answer and close",
       get("/e", "Expect: 100-continue\r\nContent-Length: 5\r\n"),
       {ok("/e", false)}},
      {"Expect 100-continue without body", get("/e", "Expect: 100-continue\r\n"), {ok("/e")}},

      // Smuggling.
      {"CL+TE",
       get("/", "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n",
       {err(400)}},
      {"TE+CL",
       get("/", "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n") + "0\r\n\r\n",
       {err(400)}},
      {"duplicate CL", get("/", "Content-Length: 3\r\nContent-Length: 3\r\n") + "abc", {err(400)}},
      {"duplicate CL, different",
       get("/", "Content-Length: 3\r\nContent-Length: 4\r\n"),
       {err(400)}},
      {"CL list", get("/", "Content-Length: 3, 3\r\n"), {err(400)}},
      {"CL plus sign", get("/", "Content-Length: +3\r\n"), {err(400)}},
      {"CL negative", get("/", "Content-Length: -1\r\n"), {err(400)}},
      {"CL hex", get("/", "Content-Length: 0x10\r\n"), {err(400)}},
      {"CL empty", get("/", "Content-Length: \r\n"), {err(400)}},
      {"CL overflow", get("/", "Content-Length: 99999999999999999999999\r\n"), {err(400)}},
      {"TE final coding not chunked", get("/", "Transfer-Encoding: gzip\r\n"), {err(400)}},
      {"TE chunked then gzip", get("/", "Transfer-Encoding: chunked, gzip\r\n"), {err(400)}},
      {"TE identity", get("/", "Transfer-Encoding: identity\r\n"), {err(400)}},
      {"TE chunked twice, one line",
       get("/", "Transfer-Encoding: chunked, chunked\r\n"),
       {err(400)}},
      {"TE chunked twice, two lines",
       get("/", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
       {err(400)}},
      {"TE unknown coding before chunked 501",
       get("/", "Transfer-Encoding: gzip, chunked\r\n") + "0\r\n\r\n",
       {err(501)}},
      {"TE in HTTP/1.0",
       "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
       {err(400)}},
      {"bad chunk size", get("/", "Transfer-Encoding: chunked\r\n") + "zz\r\n", {err(400)}},
      {"chunk size overflow",
       get("/", "Transfer-Encoding: chunked\r\n") + "fffffffffffffffff\r\n",
       {err(400)}},
      {"chunk size with space",
       get("/", "Transfer-Encoding: chunked\r\n") + "3 \r\nabc\r\n",
       {err(400)}},
      {"chunk size negative",
       get("/", "Transfer-Encoding: chunked\r\n") + "-3\r\nabc\r\n",
       {err(400)}},
      {"chunk longer than its size",
       get("/", "Transfer-Encoding: chunked\r\n") + "3\r\nabcd\r\n",
       {err(400)}},
      // Accepted by llhttp 8.1 built without LLHTTP_STRICT_MODE, which takes the two bytes
      // after chunk data, and the byte after a CR, whatever they are.
      {"chunk data followed by two bytes that are not CRLF",
       get("/", "Transfer-Encoding: chunked\r\n") + "5\r\nhelloXY0\r\n\r\n",
       {err(400)}},
      {"chunk data followed by CR and a byte",
       get("/", "Transfer-Encoding: chunked\r\n") + "5\r\nhello\rX0\r\n\r\n",
       {err(400)}},
      {"chunk size followed by CR and a byte",
       get("/", "Transfer-Encoding: chunked\r\n") + "5\rXhello\r\n0\r\n\r\n",
       {err(400)}},
      {"last chunk followed by CR and a byte",
       get("/", "Transfer-Encoding: chunked\r\n") + "0\r\n\rX",
       {err(400)}},
      {"chunk line with bare LF",
       get("/", "Transfer-Encoding: chunked\r\n") + "3\nabc\n0\n\n",
       {err(400)}},
      {"obs-fold", get("/", "X: a\r\n b\r\n"), {err(400)}},
      {"obs-fold tab", get("/", "X: a\r\n\tb\r\n"), {err(400)}},
      {"obs-fold after empty value", get("/", "X:\r\n b\r\n"), {err(400)}},
      {"whitespace before first field", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", {err(400)}},
      // A lone LF ends a line of the head (RFC 9112 §2.2), unless accept_bare_lf is off.
      {"bare LF", "GET / HTTP/1.1\nHost: a\n\n", {ok("/")}},
      {"bare LF after request line", "GET / HTTP/1.1\nHost: a\r\n\r\n", {ok("/")}},
      {"bare LF ending a field", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", {ok("/")}},
      {"bare LF ending the head", "GET / HTTP/1.1\r\nHost: a\r\n\n", {ok("/")}},
      {"bare LF before the request", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", {ok("/")}},
      {"bare LF pipelined",
       "GET /1 HTTP/1.1\nHost: a\n\nGET /2 HTTP/1.1\nHost: a\n\n",
       {ok("/1"), ok("/2")}},
      {"bare LF obs-fold", "GET / HTTP/1.1\nHost: a\nX: a\n b\n\n", {err(400)}},
      {"bare LF with extra space in the request line", "GET  / HTTP/1.1\nHost: a\n\n", {err(400)}},
      {"bare LF CR LF", "GET / HTTP/1.1\nHost: a\n\r\n", {ok("/")}},
      {"strict: bare LF", "GET / HTTP/1.1\nHost: a\n\n", {err(400)}, {.accept_bare_lf = false}},
      {"strict: bare LF after request line",
       "GET / HTTP/1.1\nHost: a\r\n\r\n",
       {err(400)},
       {.accept_bare_lf = false}},
      {"strict: bare LF ending a field",
       "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
       {err(400)},
       {.accept_bare_lf = false}},
      {"strict: bare LF ending the head",
       "GET / HTTP/1.1\r\nHost: a\r\n\n",
       {err(400)},
       {.accept_bare_lf = false}},
      {"strict: bare LF before the request",
       "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
       {err(400)},
       {.accept_bare_lf = false}},
      {"CR without LF", "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", {err(400)}},
      // llhttp 8.1 built without LLHTTP_STRICT_MODE took any byte after the last CR as its
      // LF: "\r\n\rG" ended the head and "ET /x" became the next request (smuggling).
      {"bare CR ending the head", "GET /a HTTP/1.1\r\nHost: a\r\n\r" + get("/b"), {err(400)}},
      {"bare CR then any byte ending the head",
       "GET / HTTP/1.1\r\nHost: a\r\n\rX" + get("/b"),
       {err(400)}},
      {"CR CR LF ending the head", "GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", {err(400)}},
      {"bare CR after the request line", "GET / HTTP/1.1\rHost: a\r\n\r\n", {err(400)}},
      {"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", {err(400)}},
      {"tab before colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", {err(400)}},
      {"empty field name", get("/", ": a\r\n"), {err(400)}},
      // Found by fuzz_request: an empty name when the field table is already full.
      {"empty field name after max_headers fields",
       "GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\n: x\r\n\r\n",
       {err(400)},
       {.max_headers = 3}},
      {"field without colon", get("/", "NoColon\r\n"), {err(400)}},
      {"non-token field name", get("/", "X\xe9: a\r\n"), {err(400)}},
      {"NUL in header value", get("/", "X: a\0b\r\n"s), {err(400)}},
      {"control character in header value", get("/", "X: a\x01z\r\n"), {err(400)}},
      {"DEL in header value", get("/", "X: a\x7fz\r\n"), {err(400)}},
      {"NUL in target", "GET /a\0b HTTP/1.1\r\nHost: a\r\n\r\n"s, {err(400)}},
      {"tab in target", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"DEL in target", "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"two spaces before target", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"two spaces after target", "GET /  HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},

      // Host.
      {"missing Host in HTTP/1.1", "GET / HTTP/1.1\r\n\r\n", {err(400)}},
      {"HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n", {ok("/", false)}},
      {"two Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", {err(400)}},
      {"invalid Host", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", {err(400)}},
      {"Host with userinfo", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", {err(400)}},
      {"empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", {ok("/")}},
      {"Host with port and IPv6", "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", {ok("/")}},

      // Versions and methods.
      {"HTTP/1.2 505", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", {err(505)}},
      {"HTTP/2.0 505", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", {err(505)}},
      {"HTTP/3.0 505", "GET / HTTP/3.0\r\nHost: a\r\n\r\n", {err(505)}},
      {"HTTP/0.9 505", "GET / HTTP/0.9\r\n\r\n", {err(505)}},
      {"no version (HTTP/0.9) 505", "GET /\r\n\r\n", {err(505)}},
      {"HTTP/2 preface 505", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", {err(505)}},
      {"HTTP/11.1 malformed", "GET / HTTP/11.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"junk after HTTP/1.1", "GET / HTTP/1.1 x\r\nHost: a\r\n\r\n", {err(400)}},
      {"junk after HTTP/1.0", "GET / HTTP/1.0x\r\n\r\n", {err(400)}},
      {"space after HTTP/1.1", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", {err(400)}},
      {"lower-case http", "GET / http/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"unknown method 501", "FOO / HTTP/1.1\r\nHost: a\r\n\r\n", {err(501)}},
      {"known prefix, unknown method 501", "GETX / HTTP/1.1\r\nHost: a\r\n\r\n", {err(501)}},
      {"lower-case method 501", "get / HTTP/1.1\r\nHost: a\r\n\r\n", {err(501)}},
      {"unknown method, bare LF 501", "FOO / HTTP/1.1\nHost: a\n\n", {err(501)}},
      {"unknown method, line incomplete", "FOO / HTTP/1.1", {more()}},
      // RFC 9112 §3: a malformed request line is 400 whatever its first token.
      {"junk before the method 400", "Extra lineGET / HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"unknown method, no version 400", "FOO /\r\nHost: a\r\n\r\n", {err(400)}},
      {"unknown method, bad version 400", "FOO / HTTP/1\r\nHost: a\r\n\r\n", {err(400)}},
      {"unknown method, two spaces 400", "FOO  / HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"unknown method, control byte in target 400", "FOO /\x01 HTTP/1.1\r\n\r\n", {err(400)}},
      {"unknown method, line over max_header_bytes 414",
       "FOO /" + std::string(300, 'u'),
       {err(414)},
       {.max_header_bytes = 256, .max_uri_bytes = 1024}},
      // CONNECT takes only authority-form, with its port (RFC 9112 §3.2.3, RFC 9110 §9.3.6).
      {"CONNECT without a port 400", "CONNECT localhost HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"CONNECT origin-form 400", "CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"CONNECT empty port 400", "CONNECT a: HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"CONNECT userinfo 400", "CONNECT u@a:443 HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"CONNECT absolute-form 400",
       "CONNECT http://a:443/ HTTP/1.1\r\nHost: a\r\n\r\n",
       {err(400)}},
      {"CONNECT IPv6", "CONNECT [::1]:443 HTTP/1.1\r\nHost: a\r\n\r\n", {ok("[::1]:443", false)}},
      {"method incomplete", "FOO", {more()}},
      {"method with a non-token byte", "G@T / HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"method then tab", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", {err(400)}},
      {"response instead of request", "HTTP/1.1 200 OK\r\n\r\n", {err(400)}},
      {"binary garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"s, {err(400)}},

      // Limits.
      {"header too big 431", get("/", "X: " + big_value + "\r\n"), {err(431)}},
      {"head exactly at max_header_bytes",
       "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(256 - 32, 'v') + "\r\n\r\n",
       {ok("/")},
       {.max_header_bytes = 256}},
      {"head one over max_header_bytes",
       "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(256 - 31, 'v') + "\r\n\r\n",
       {err(431)},
       {.max_header_bytes = 256}},
      {"uri too long 414", get(long_target), {err(414)}},
      {"uri at max_uri_bytes",
       get("/" + std::string(63, 'u')),
       {ok("/" + std::string(63, 'u'))},
       {.max_uri_bytes = 64}},
      {"uri one over max_uri_bytes 414",
       get("/" + std::string(64, 'u')),
       {err(414)},
       {.max_uri_bytes = 64}},
      {"request line over max_header_bytes 414",
       get("/" + std::string(300, 'u')),
       {err(414)},
       {.max_header_bytes = 256, .max_uri_bytes = 1024}},
      {"too many headers 431", get("/", many_headers), {err(431)}},
      {"exactly max_headers", get("/", ninety_nine_headers), {ok("/")}},
      {"too many headers, small limit",
       get("/", "A: 1\r\nB: 2\r\nC: 3\r\n"),
       {err(431)},
       {.max_headers = 3}},
      {"garbage without end 431", get("/", "X: " + std::string(20'000, 'g')), {err(431)}},
  };
}

const std::vector<Case>& cases() {
  static const std::vector<Case> t = table();
  return t;
}

class RequestParserTable : public ::testing::TestWithParam<std::size_t> {};

TEST_P(RequestParserTable, SameResultWholeByteByByteAndInPieces) {
  const Case& c = cases()[GetParam()];
  SCOPED_TRACE(c.note);
  const Config config = config_with(c.limits);

  const auto whole = feed_whole(config, c.input);
  ASSERT_EQ(whole.size(), c.expect.size()) << ::testing::PrintToString(whole);
  for (std::size_t i = 0; i < whole.size(); ++i) {
    SCOPED_TRACE("outcome " + std::to_string(i) + ": " + ::testing::PrintToString(whole[i]));
    const Expect& e = c.expect[i];
    EXPECT_EQ(whole[i].status, e.status);
    if (e.status == ParseStatus::error) {
      EXPECT_EQ(whole[i].http_status, e.http_status);
    }
    if (e.status == ParseStatus::ready) {
      EXPECT_EQ(whole[i].target, e.target);
      EXPECT_EQ(whole[i].keep_alive, e.keep_alive);
    }
  }
  EXPECT_EQ(feed_bytes(config, c.input), whole) << "byte by byte";
  for (unsigned seed = 1; seed <= 3; ++seed) {
    EXPECT_EQ(feed_random(config, c.input, 1000 * seed + static_cast<unsigned>(GetParam())), whole)
        << "random pieces, seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RequestParserTable,
                         ::testing::Range<std::size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& param) {
                           std::string name;
                           for (char ch : cases()[param.param].note) {
                             name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           }
                           return std::to_string(param.param) + "_" + name;
                         });

// Parses one complete request from `text` and returns the parser, ready.
class Parsed {
 public:
  explicit Parsed(std::string text, const Config& config = {})
      : text_(std::move(text)), parser_(config) {
    result_ = parser_.parse(text_);
  }
  const ParseResult& result() const { return result_; }
  const Request& request() const { return parser_.request(); }
  RequestParser& parser() { return parser_; }

 private:
  std::string text_;
  RequestParser parser_;
  ParseResult result_;
};

TEST(RequestParser, ExposesMethodTargetVersionAndHeaders) {
  Parsed p(
      "GET /a/b?c=d HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t  \r\nIf-None-Match: \"x\"\r\n"
      "ACCEPT:   */*\r\n\r\n");
  ASSERT_EQ(p.result().status, ParseStatus::ready);
  const Request& r = p.request();
  EXPECT_EQ(r.method(), Method::get);
  EXPECT_EQ(r.method_text(), "GET");
  EXPECT_EQ(r.target(), "/a/b?c=d");
  EXPECT_EQ(r.version(), Version::http_1_1);
  EXPECT_TRUE(r.keep_alive());
  ASSERT_EQ(r.headers().size(), 4u);
  EXPECT_EQ(r.headers()[1].name, "User-Agent");
  EXPECT_EQ(r.headers()[1].value, "t");  // trailing whitespace is not part of the value
  EXPECT_EQ(r.headers()[3].value, "*/*");
  EXPECT_EQ(r.find("accept"), "*/*");
  EXPECT_EQ(r.find("user-agent"), "t");
  EXPECT_FALSE(r.find("cookie"));
  EXPECT_EQ(r.host(), "example.com");
  EXPECT_EQ(r.count(Field::if_none_match), 1u);
  EXPECT_EQ(*r.if_none_match().begin(), "\"x\"");
  EXPECT_FALSE(r.range());
  EXPECT_TRUE(r.if_match().empty());
}

TEST(RequestParser, MethodsAreClassified) {
  const std::pair<std::string, Method> cases[] = {
      {"GET", Method::get},    {"HEAD", Method::head},    {"OPTIONS", Method::options},
      {"POST", Method::other}, {"DELETE", Method::other}, {"PROPFIND", Method::other},
  };
  for (const auto& [text, method] : cases) {
    Parsed p(text + " / HTTP/1.1\r\nHost: a\r\n\r\n");
    ASSERT_EQ(p.result().status, ParseStatus::ready) << text;
    EXPECT_EQ(p.request().method(), method) << text;
    EXPECT_EQ(p.request().method_text(), text);
  }
}

TEST(RequestParser, QuickAccessorsForTheFieldsTheServerUses) {
  Parsed p(get("/",
               "connection: keep-alive\r\nIf-Match: \"a\"\r\nIf-None-Match: \"b\", \"c\"\r\n"
               "If-None-Match: \"d\"\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
               "If-Unmodified-Since: Mon, 07 Nov 1994 08:49:37 GMT\r\nRANGE: bytes=0-9\r\n"
               "If-Range: \"e\"\r\n"));
  ASSERT_EQ(p.result().status, ParseStatus::ready);
  const Request& r = p.request();
  EXPECT_EQ(r.host(), "example.com");
  EXPECT_EQ(*r.connection().begin(), "keep-alive");
  EXPECT_EQ(*r.if_match().begin(), "\"a\"");
  std::vector<std::string_view> inm(r.if_none_match().begin(), r.if_none_match().end());
  EXPECT_EQ(inm, (std::vector<std::string_view>{"\"b\", \"c\"", "\"d\""}));
  EXPECT_EQ(r.if_modified_since(), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(r.if_unmodified_since(), "Mon, 07 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(r.range(), "bytes=0-9");
  EXPECT_EQ(r.if_range(), "\"e\"");
}

TEST(RequestParser, RepeatedSingleValueFieldsAreIgnored) {
  {
    Parsed p(get("/", "Range: bytes=0-1\r\nRange: bytes=2-3\r\n"));
    ASSERT_EQ(p.result().status, ParseStatus::ready);
    EXPECT_FALSE(p.request().range());
    EXPECT_EQ(p.request().count(Field::range), 2u);
  }
  {
    // An invalid If-Range means the Range is ignored too.
    Parsed p(get("/", "Range: bytes=0-1\r\nIf-Range: \"a\"\r\nIf-Range: \"b\"\r\n"));
    ASSERT_EQ(p.result().status, ParseStatus::ready);
    EXPECT_FALSE(p.request().range());
    EXPECT_FALSE(p.request().if_range());
  }
  {
    Parsed p(get("/", "If-Modified-Since: a\r\nIf-Modified-Since: b\r\n"));
    ASSERT_EQ(p.result().status, ParseStatus::ready);
    EXPECT_FALSE(p.request().if_modified_since());
  }
}

TEST(RequestParser, ConsumedCoversHeadAndBody) {
  const std::string head = get("/", "Content-Length: 4\r\n");
  Parsed p(head + "bodyGET /next");
  ASSERT_EQ(p.result().status, ParseStatus::ready);
  EXPECT_EQ(p.parser().head_bytes(), head.size());
  EXPECT_EQ(p.parser().consumed(), head.size() + 4);
  EXPECT_EQ(p.parser().body_bytes(), 4u);
  EXPECT_FALSE(p.result().close);
}

TEST(RequestParser, BodyInPiecesNeedsNoMoreThanHeadPlusOneRead) {
  Config config;
  config.max_body_bytes = 1 << 20;
  RequestParser parser(config);
  const std::string head = get("/big", "Content-Length: 600000\r\n");
  std::string buf = head;
  std::size_t sent = 0;
  ParseResult r = parser.parse(buf);
  while (r.status == ParseStatus::need_more) {
    ASSERT_EQ(r.keep, head.size());  // only the head is kept; body bytes are gone
    buf.resize(r.keep);
    const std::size_t n = std::min<std::size_t>(4096, 600000 - sent);
    ASSERT_GT(n, 0u) << "the parser wants more than the body";
    buf.append(n, 'x');
    sent += n;
    ASSERT_LE(buf.size(), head.size() + 4096);
    r = parser.parse(buf);
  }
  ASSERT_EQ(r.status, ParseStatus::ready);
  EXPECT_EQ(sent, 600000u);
  EXPECT_EQ(parser.request().target(), "/big");
  EXPECT_EQ(parser.consumed(), buf.size());
  EXPECT_EQ(parser.body_bytes(), 600000u);
}

TEST(RequestParser, ExpectContinueAnswersAtTheHead) {
  const std::string head = get("/up", "Expect: 100-continue\r\nContent-Length: 100000\r\n");
  Config config;
  config.max_body_bytes = 1 << 20;
  Parsed p(head, config);
  ASSERT_EQ(p.result().status, ParseStatus::ready);
  EXPECT_TRUE(p.result().close);
  EXPECT_FALSE(p.request().keep_alive());
  EXPECT_EQ(p.parser().consumed(), head.size());
}

TEST(RequestParser, ViewsPointIntoTheLatestBuffer) {
  RequestParser parser(Config{});
  const std::string text = get("/moved", "X-A: 1\r\n");
  std::string first(text.substr(0, 20));
  ASSERT_EQ(parser.parse(first).status, ParseStatus::need_more);
  const std::string second = text;  // a different buffer holding the same bytes and more
  ASSERT_EQ(parser.parse(second).status, ParseStatus::ready);
  const Request& r = parser.request();
  EXPECT_EQ(r.target().data(), second.data() + 4);
  EXPECT_EQ(r.headers()[1].value.data(), second.data() + second.find("X-A: ") + 5);
}

TEST(RequestParser, ErrorsNameTheirReason) {
  const std::pair<std::string, std::string_view> cases[] = {
      {get("/", "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n"), "Transfer-Encoding"},
      {get("/", "X: a\r\n b\r\n"), "obs-fold"},
      {"GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", "expected LF"},
      {"GET / HTTP/1.1\r\n\r\n", "Host"},
      // Strict llhttp refuses the space itself, before weft's "whitespace ... colon" check.
      {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", "header token"},
      {"FOO / HTTP/1.1\r\n\r\n", "method"},
  };
  for (const auto& [text, fragment] : cases) {
    Parsed p(text);
    ASSERT_EQ(p.result().status, ParseStatus::error) << text;
    EXPECT_NE(p.result().reason.find(fragment), std::string_view::npos)
        << p.result().reason << " lacks " << fragment;
  }
}

TEST(RequestParser, NextRequestStartsFresh) {
  RequestParser parser(Config{});
  const std::string a = get("/a", "Range: bytes=0-1\r\nX-Only-A: 1\r\n");
  ASSERT_EQ(parser.parse(a).status, ParseStatus::ready);
  EXPECT_EQ(parser.request().headers().size(), 3u);
  const std::string b = "GET /b HTTP/1.0\r\n\r\n";
  ASSERT_EQ(parser.parse(b).status, ParseStatus::ready);
  EXPECT_EQ(parser.request().target(), "/b");
  EXPECT_TRUE(parser.request().headers().empty());
  EXPECT_FALSE(parser.request().range());
  EXPECT_FALSE(parser.request().host());
  EXPECT_EQ(parser.request().version(), Version::http_1_0);
}

}  // namespace
}  // namespace weft::http
