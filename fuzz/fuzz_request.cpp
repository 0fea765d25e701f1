// libFuzzer target: a connection's bytes through RequestParser, then what the server does
// with each ready request before touching the file system (normalize_target, parse_range,
// evaluate_preconditions, if_range_allows, parse_accept_encoding).
//
// The input is the raw byte stream of one connection, so a seed is simply a request as it
// goes over the wire. How it is cut into reads, and which [limits] apply, is derived from a
// hash of the input: a mutation explores both, and a crasher reproduces exactly.
//
// Invariants checked (a failure aborts, and libFuzzer saves the input):
//   - parse() keeps within the bytes given: keep <= size, consumed <= size, head <= consumed;
//   - every view of a ready request (target, header names and values) lies inside the buffer
//     of that parse() call (a fresh, exactly sized heap copy each call, so ASan sees any read
//     of a stale or neighbouring buffer);
//   - an error is sticky, has a reason, and closes; a status is one of those documented;
//   - the outcomes (the requests found, their lengths and targets, and whether and where an
//     error ends the connection) are the same whether the bytes come in many small reads or
//     in one: a parser whose framing depends on the reads is a smuggling bug waiting for a
//     proxy. The error's status may differ: a request that breaks two rules (a ninth field
//     over max_headers = 8 that is also malformed) is refused for whichever the parser
//     meets first, and that can depend on where a read ended;
//   - a normalized path starts with '/', has no NUL, no empty, "." or ".." segment, and fits
//     kMaxPathBytes;
//   - a single range, and each part of a multipart one, lies inside the file and is not empty.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/config.hpp"
#include "server/http/accept_encoding.hpp"
#include "server/http/conditional.hpp"
#include "server/http/path.hpp"
#include "server/http/range.hpp"
#include "server/http/request_parser.hpp"

namespace {

using namespace weft::http;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_request: invariant violated: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

// FNV-1a: a stable seed from the input.
std::uint64_t hash(const std::uint8_t* data, std::size_t size) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

// xorshift64*: the read sizes.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
};

bool inside(std::string_view v, const std::vector<char>& buf) {
  if (v.empty()) return true;
  const char* b = buf.data();
  return v.data() >= b && v.data() + v.size() <= b + buf.size();
}

void check_path(std::string_view raw) {
  static std::string out;  // reused, as a connection reuses its string
  const TargetStatus ts = normalize_target(raw, out);
  if (ts != TargetStatus::ok) return;
  check(!out.empty() && out.front() == '/', "normalized path does not start with '/'");
  check(out.size() <= kMaxPathBytes, "normalized path longer than kMaxPathBytes");
  check(out.find('\0') == std::string::npos, "NUL in a normalized path");
  check(out.find("//") == std::string::npos, "empty segment in a normalized path");
  std::size_t start = 1;
  while (start <= out.size()) {
    std::size_t end = out.find('/', start);
    if (end == std::string::npos) end = out.size();
    const std::string_view seg(out.data() + start, end - start);
    check(seg != "." && seg != "..", "dot segment in a normalized path");
    check(seg.size() <= kMaxSegmentBytes, "segment longer than kMaxSegmentBytes");
    start = end + 1;
  }
}

void check_range(std::string_view header, std::uint64_t size) {
  RangeParts parts;
  const RangeResult r = parse_range(header, size, kMaxRangesLimit, parts);
  check(r.size == size, "RangeResult.size differs from the file size");
  if (r.kind == RangeResult::Kind::single) {
    check(r.length > 0, "empty single range");
    check(r.offset < size && r.length <= size - r.offset, "single range outside the file");
  }
  for (const ByteRange& p : r.parts) {
    check(p.length > 0 && p.offset < size && p.length <= size - p.offset,
          "a part outside the file");
  }
  ContentRangeBuffer buf;
  const std::string_view cr = format_content_range(r, buf);
  check(cr.size() <= buf.size(), "Content-Range longer than its buffer");
}

void check_request(const Request& req, const std::vector<char>& buf, std::uint64_t h) {
  check(inside(req.target(), buf), "target outside the buffer");
  for (const Header& f : req.headers()) {
    check(inside(f.name, buf) && inside(f.value, buf), "header view outside the buffer");
    check(!f.name.empty(), "empty header name");
  }

  check_path(req.target());

  // Fixed validators: a file of a few sizes, including empty and huge.
  static constexpr std::uint64_t kSizes[] = {0, 1, 100, 1u << 20, ~std::uint64_t{0} >> 1};
  const std::uint64_t size = kSizes[h % std::size(kSizes)];
  const ETag tag = make_etag(1577934245, 0, size);
  const Validators v{tag.view(), 1577934245};
  const std::int64_t now = 1700000000;
  const Precondition p = evaluate_preconditions(Preconditions::of(req), v, req.method(), now);
  check(p == Precondition::proceed || p == Precondition::not_modified || p == Precondition::failed,
        "unknown precondition outcome");
  if (const auto range = req.range()) {
    (void)if_range_allows(req.if_range(), v, now);
    check_range(*range, size);
  }
  const CodingWeights w = parse_accept_encoding(req.accept_encoding());
  check(w.br <= 1000 && w.gzip <= 1000, "an Accept-Encoding weight above q=1");
}

Config config_for(std::uint64_t h) {
  Config c;
  if ((h >> 8) & 1) {  // small limits, so that 414, 431 and 413 are reachable
    c.max_header_bytes = 1024;
    c.max_uri_bytes = 256;
    c.max_headers = 8;
    c.max_body_bytes = 64;
  }
  return c;
}

// One outcome of parse(), kept to compare two ways of cutting the same bytes.
struct Outcome {
  ParseStatus status;
  int http_status = 0;
  std::size_t bytes = 0;  // ready: the whole request, discarded body included
  std::string target;
  std::size_t headers = 0;
  bool keep_alive = false;

  // Equal, but for the status of an error (see the top of this file).
  bool same_as(const Outcome& o) const {
    if (status == ParseStatus::error) return o.status == ParseStatus::error;
    return status == o.status && bytes == o.bytes && target == o.target && headers == o.headers &&
           keep_alive == o.keep_alive;
  }
};

// Plays a connection: appends the input in reads whose sizes `next_read` picks, hands the
// parser a fresh copy of its buffer each time, checks every result; returns the outcomes.
template <typename NextRead>
std::vector<Outcome> play(const Config& config, std::string_view input, std::uint64_t h,
                          NextRead next_read) {
  RequestParser parser(config);
  std::vector<Outcome> seen;
  std::string buf;  // the connection's read area: the current request's bytes
  std::size_t pos = 0;
  std::size_t discarded = 0;  // body bytes of the current request dropped on need_more
  while (true) {
    const std::vector<char> copy(buf.begin(), buf.end());
    const ParseResult r = parser.parse(copy);
    if (r.status == ParseStatus::ready) {
      const Request& req = parser.request();
      check(parser.consumed() <= copy.size(), "consumed() beyond the data");
      check(parser.head_bytes() <= parser.consumed(), "head longer than the request");
      check(r.close == !req.keep_alive(), "close disagrees with keep_alive()");
      check_request(req, copy, h);
      seen.push_back({r.status, 0, discarded + parser.consumed(), std::string(req.target()),
                      req.headers().size(), req.keep_alive()});
      if (r.close) break;
      check(parser.consumed() > 0, "ready without consuming a byte");
      buf.erase(0, parser.consumed());
      discarded = 0;
      continue;
    }
    if (r.status == ParseStatus::error) {
      check(r.close, "an error that keeps the connection");
      check(!r.reason.empty(), "an error without a reason");
      const int s = r.http_status;
      check(s == 400 || s == 413 || s == 414 || s == 431 || s == 501 || s == 505,
            "an undocumented error status");
      const ParseResult again = parser.parse(copy);
      check(again.status == ParseStatus::error && again.http_status == s, "error not sticky");
      seen.push_back({r.status, s, 0, {}, 0, false});
      break;
    }
    check(r.keep <= copy.size(), "keep beyond the data");
    discarded += buf.size() - r.keep;
    buf.resize(r.keep);
    if (pos == input.size()) break;
    const std::size_t n = std::min(next_read(), input.size() - pos);
    buf.append(input.substr(pos, n));
    pos += n;
  }
  return seen;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::uint64_t h = hash(data, size);
  const Config config = config_for(h);
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // Reads of 1 to 64 bytes, now and then a large one.
  Rng rng{h | 1};
  const auto split = play(config, input, h, [&rng] {
    std::size_t n = 1 + rng.next() % 64;
    if (rng.next() % 8 == 0) n = 1 + rng.next() % 4096;
    return n;
  });
  // The whole input in one read: the answers must not depend on how the bytes arrived.
  const auto whole = play(config, input, h, [] { return ~std::size_t{0}; });
  check(split.size() == whole.size() &&
            std::equal(split.begin(), split.end(), whole.begin(),
                       [](const Outcome& a, const Outcome& b) { return a.same_as(b); }),
        "the outcome depends on how the bytes were cut into reads");
  return 0;
}
