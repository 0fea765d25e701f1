// libFuzzer target: what an HTTP/2 client sends, as the server's session takes it in
// (H2Session without its socket loop: nghttp2's framing and HPACK under weft's callbacks,
// RequestFields, the answer's head through response_head.cpp and ResponseFields, bodies from
// text and from a cached file's bytes in DATA frames, single and multipart ranges).
//
// Input: the first byte chooses the mode: even, the bytes are the connection's first bytes
// as they come (the client preface or not); odd, the preface and an empty SETTINGS come
// first and the rest are frames after them. The next bytes cut the input into pieces fed one
// by one (frames split across reads). The seeds in corpus/fuzz_h2_frames/ are requests of
// curl and h2load (GET, HEAD, a Range, several streams) and the preface alone.
//
// Invariants checked (a failure aborts, and libFuzzer saves the input):
//   - the server's first frame is its SETTINGS, whatever the client sent;
//   - never more streams open than http2.max_concurrent_streams;
//   - the session ends (or waits for more) within a bounded number of steps;
//   - nothing leaks or overflows (ASan), whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include <unistd.h>

#include "server/h2/session.hpp"
#include "server/http/multipart.hpp"
#include "server/http/range.hpp"

namespace weft::http {

// The fd cache is not linked: its entries' destructor, as fd_cache.cpp has it.
FileEntry::~FileEntry() {
  if (fd >= 0) ::close(fd);
}

}  // namespace weft::http

namespace weft::rt {

// The runtime is not linked: outside a processor its coarse clock is the clock itself.
TimePoint coarse_now() {
  return now();
}

}  // namespace weft::rt

namespace {

using namespace weft::http;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::string_view kEmptySettings{"\0\0\0\x04\0\0\0\0\0", 9};

// A 40 KiB file held in memory (several DATA frames), as the fd cache holds small files.
FileRef cached_file() {
  auto* e = new FileEntry;
  e->path = "/f";
  e->size = 40 * 1024;
  e->bytes.reset(new char[e->size]);
  std::memset(e->bytes.get(), 'x', e->size);
  e->content_type = "text/plain";
  e->fields.build("text/plain", "\"5f-a\"", 1577934245, true, true);
  return FileRef(e);
}

// Answers as the static handler would, without a file system: "/" a page, "/f..." the cached
// file (with its Range: 206, multipart or 416), OPTIONS 200, anything else 404.
class Service final : public H2Service {
 public:
  Reply answer(const Request& req, ConnectionWork& work) override {
    if (req.method() == Method::options) {
      Reply r;
      r.kind = Reply::Kind::options;
      r.status = 200;
      return r;
    }
    if (req.target() == "/") {
      work.body = "<ul><li>f</li></ul>";
      return page_reply("text/html");
    }
    if (req.target().substr(0, 2) != "/f") return Reply::error_page(404);
    Reply r;
    r.kind = Reply::Kind::file;
    r.status = 200;
    r.file = file_;
    r.length = file_->size;
    if (std::optional<std::string_view> range = req.range()) {
      r.range = parse_range(*range, file_->size, 16, work.ranges);
      switch (r.range.kind) {
        case RangeResult::Kind::none:
          break;
        case RangeResult::Kind::single:
          r.status = 206;
          r.offset = r.range.offset;
          r.length = r.range.length;
          break;
        case RangeResult::Kind::multi: {
          r.status = 206;
          r.boundary = make_boundary(work.boundary);
          r.length = multipart_length(r.boundary, file_->content_type, r.range.parts, file_->size)
                         .value_or(0);
          break;
        }
        case RangeResult::Kind::unsatisfiable:
          return Reply::error_page(416);
      }
    }
    return r;
  }

  RequestNote note(const Request*, weft::rt::TimePoint started, std::string&) override {
    RequestNote n;
    n.started = started;
    return n;
  }

  int64_t read_file(const FileEntry&, char*, std::size_t, uint64_t) override {
    std::abort();  // the only file has its bytes in memory
  }

  void finished(int, uint64_t, const RequestNote&, std::string_view) override {}

 private:
  FileRef file_ = cached_file();
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static const Config config = [] {
    Config c;
    c.h2_max_concurrent_streams = 16;  // reachable by a fuzzer
    return c;
  }();
  static DateCache dates;
  static Service service;
  const bool after_preface = data[0] & 1;
  const std::size_t piece = 1 + data[1] % 64;  // bytes per read; 1 splits every frame
  std::string input;
  if (after_preface) {
    input.append(kPreface);
    input.append(kEmptySettings);
  }
  input.append(reinterpret_cast<const char*>(data + 2), size - 2);

  ConnectionWork work(config, 16 * 1024);
  weft::rt::CancelToken token, wake;
  std::atomic<bool> draining{false};
  H2Wire wire{.token = &token, .wake = &wake, .draining = &draining};
  H2Session session(config, HeadOrigin{"weft", dates}, wire, work, service);
  if (!session.open()) std::abort();
  SendBatch out;
  bool first = true;
  for (std::size_t at = 0; at < input.size(); at += piece) {
    const bool go_on =
        session.feed(std::span<const char>(input).subspan(at, std::min(piece, input.size() - at)));
    // Each step sends what it can: the windows bound it (no WINDOW_UPDATE: at most 64 KiB of
    // DATA), so one bounded produce per step drains it.
    for (int i = 0; i < 64; ++i) {
      const int64_t n = session.produce(out, 1 << 20);
      if (n < 0) std::abort();  // nghttp2 refused its own output
      if (first && out.size() >= 9) {
        if (out.data()[3] != 4) std::abort();  // the server's SETTINGS come first
        first = false;
      }
      out.clear();
      if (n == 0) break;
    }
    if (session.open_streams() > config.h2_max_concurrent_streams) std::abort();
    if (!go_on || !session.active()) break;
  }
  return 0;
}
