// libFuzzer target: a connection's bytes through RequestParser, then what the server does
// with each ready request before touching the file system (normalize_target, parse_range,
// evaluate_preconditions, if_range_allows).
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
//   - a normalized path starts with '/', has no NUL, no empty, "." or ".." segment, and fits
//     kMaxPathBytes;
//   - a single range lies inside the file and is not empty.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/conditional.hpp"
#include "server/config.hpp"
#include "server/path.hpp"
#include "server/range.hpp"
#include "server/request_parser.hpp"

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
  const RangeResult r = parse_range(header, size);
  check(r.size == size, "RangeResult.size differs from the file size");
  if (r.kind == RangeResult::Kind::single) {
    check(r.length > 0, "empty single range");
    check(r.offset < size && r.length <= size - r.offset, "single range outside the file");
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
  const ETag tag = make_etag(1577934245, size);
  const Validators v{tag.view(), 1577934245};
  const std::int64_t now = 1700000000;
  const Precondition p = evaluate_preconditions(Preconditions::of(req), v, req.method(), now);
  check(p == Precondition::proceed || p == Precondition::not_modified || p == Precondition::failed,
        "unknown precondition outcome");
  if (const auto range = req.range()) {
    (void)if_range_allows(req.if_range(), v, now);
    check_range(*range, size);
  }
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::uint64_t h = hash(data, size);
  Rng rng{h | 1};
  const Config config = config_for(h);
  RequestParser parser(config);
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  std::string buf;  // the connection's read area: the current request's bytes
  std::size_t pos = 0;
  while (true) {
    const std::vector<char> copy(buf.begin(), buf.end());
    const ParseResult r = parser.parse(copy);
    if (r.status == ParseStatus::ready) {
      check(parser.consumed() <= copy.size(), "consumed() beyond the data");
      check(parser.head_bytes() <= parser.consumed(), "head longer than the request");
      check(r.close == !parser.request().keep_alive(), "close disagrees with keep_alive()");
      check_request(parser.request(), copy, h);
      if (r.close) break;
      check(parser.consumed() > 0, "ready without consuming a byte");
      buf.erase(0, parser.consumed());
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
      break;
    }
    check(r.keep <= copy.size(), "keep beyond the data");
    buf.resize(r.keep);
    if (pos == input.size()) break;
    // Reads of 1 to 64 bytes, now and then a large one.
    std::size_t n = 1 + rng.next() % 64;
    if (rng.next() % 8 == 0) n = 1 + rng.next() % 4096;
    n = std::min(n, input.size() - pos);
    buf.append(input.substr(pos, n));
    pos += n;
  }
  return 0;
}
