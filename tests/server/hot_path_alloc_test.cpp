// Tests that the per-request work of the HTTP layer allocates nothing: parsing pipelined
// requests (with bodies), normalizing their targets into a reused string, Range, the
// preconditions, the MIME lookup, the Date cache, the status texts, and an access log line
// short enough for spdlog's inline buffer. Counts calls of the
// global operator new, which this file replaces for the whole test binary (forwarding to
// malloc, counting only while a test asks).
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "server/http/conditional.hpp"
#include "server/http/http_date.hpp"
#include "server/http/mime_map.hpp"
#include "server/http/path.hpp"
#include "server/http/range.hpp"
#include "server/http/request_parser.hpp"
#include "server/http/status.hpp"
#include "server/ops/access_log.hpp"

namespace {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
}  // namespace

// noinline: GCC would otherwise see malloc'd memory reach free() through an inlined
// operator delete and warn (-Wmismatched-new-delete) in every function of this file.
[[gnu::noinline]] void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t n) {
  return ::operator new(n);
}
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace weft::http {
namespace {

// Counts allocations on this thread while alive.
class AllocationCounter {
 public:
  AllocationCounter() {
    allocations = 0;
    counting = true;
  }
  ~AllocationCounter() { counting = false; }
  std::size_t count() const { return allocations; }
};

const std::string kRequests =
    "GET /a/../css/site.css?v=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: t\r\n"
    "If-None-Match: \"x\", \"y\"\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
    "Range: bytes=0-99\r\nIf-Range: \"2ebc98a1-400\"\r\n\r\n"
    "GET /%2e%2e%2fetc/passwd HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\nhello"
    "HEAD /img/weft.png HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
    "3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"
    "OPTIONS * HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n";

// Serves every request of `input`, in pieces of `piece` bytes, as a connection would;
// returns how many requests were ready.
int serve(RequestParser& parser, std::string& buf, std::string& path, const MimeMap& mime,
          DateCache& dates, std::size_t piece) {
  int ready = 0;
  std::size_t pos = 0;
  buf.clear();
  for (;;) {
    const ParseResult r = parser.parse(buf);
    if (r.status == ParseStatus::error) return -1;
    if (r.status == ParseStatus::need_more) {
      buf.resize(r.keep);
      if (pos == kRequests.size()) return ready;
      const std::size_t n = std::min(piece, kRequests.size() - pos);
      buf.append(kRequests, pos, n);
      pos += n;
      continue;
    }
    ++ready;
    const Request& q = parser.request();
    if (!is_asterisk_form(q.target())) normalize_target(q.target(), path);
    const ETag tag = make_etag(784111777, 0, 1024);
    const Validators v{tag.view(), 784111777};
    evaluate_preconditions(Preconditions::of(q), v, q.method(), 1'700'000'000);
    if (const auto range = q.range()) {
      if (if_range_allows(q.if_range(), v, 1'700'000'000)) {
        RangeParts parts;
        const RangeResult rr = parse_range(*range, 1024, 16, parts);
        ContentRangeBuffer cr;
        format_content_range(rr, cr);
      }
    }
    mime.lookup(path);
    HttpDateBuffer date;
    dates.get(date);
    format_http_date(784111777, date);
    status_line(200);
    error_body(404);
    status_from_errno(2);
    if (r.close) return ready;
    buf.erase(0, parser.consumed());
  }
}

TEST(HotPaths, DoNotAllocate) {
  RequestParser parser(Config{});
  std::string buf;
  buf.reserve(4096);
  std::string path;
  path.reserve(4096);
  MimeMap mime("application/octet-stream");
  mime.add_text("text/css css\nimage/png png\n");
  std::int64_t now = 1'700'000'000;
  DateCache dates([&now] { return now; });

  ASSERT_EQ(serve(parser, buf, path, mime, dates, 4096), 4);  // warm-up: first-use statics
  for (std::size_t piece : {std::size_t{4096}, std::size_t{1}, std::size_t{7}}) {
    ++now;  // a new second: the Date cache formats again
    AllocationCounter counter;
    const int ready = serve(parser, buf, path, mime, dates, piece);
    const std::size_t n = counter.count();
    EXPECT_EQ(ready, 4) << "piece " << piece;
    EXPECT_EQ(n, 0u) << "piece " << piece;
  }
}

// A line of about 150 bytes fits spdlog's inline message buffer (250 bytes with the logger's
// name), so logging it allocates nothing on the calling thread; longer lines cost spdlog one
// allocation, as access_log.hpp says.
TEST(HotPaths, AccessLogLineDoesNotAllocate) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "weft-alloc-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  for (auto format : {AccessLogFormat::combined, AccessLogFormat::json}) {
    Config config;
    config.access_log = dir + "/access.log";
    config.access_format = format;
    auto log = AccessLog::create(config);
    ASSERT_NE(log, nullptr);
    AccessRecord r;
    r.remote_addr = "127.0.0.1";
    r.time_unix = 1'700'000'000;
    r.method = "GET";
    r.target = "/css/site.css?v=1";
    r.protocol = "HTTP/1.1";
    r.status = 200;
    r.body_bytes = 1024;
    r.user_agent = "curl/8.0";
    log->log(r);  // warm-up: first-use statics
    log->flush();
    std::size_t n = 0;
    {
      AllocationCounter counter;
      for (int i = 0; i < 100; ++i) {
        r.time_unix += i % 3;  // new seconds: the time cache formats again
        log->log(r);
      }
      n = counter.count();
    }
    EXPECT_EQ(n, 0u);
    log->flush();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft::http
