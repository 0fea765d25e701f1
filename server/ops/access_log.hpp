// weft::http::AccessLog: one line per answered request, in NGINX's combined format or JSON.
//
// Threads: any thread (any processor's fibers, at once) may call log(); reopen() and dropped()
// too. flush() blocks its caller until the background thread has written every line logged
// before the call, so call it from a plain thread (shutdown, SIGHUP handling, tests), not
// from a fiber on a hot path. create() and the destructor belong to the thread that owns the
// server (main); the destructor writes every line still queued, then stops the background
// thread.
//
// Formats, one line per request:
//   combined  127.0.0.1 - - [29/Nov/2026:23:40:00 +0000] "GET / HTTP/1.1" 200 1234 "-" "curl/8.0"
//             (NGINX's, with $time_local in UTC, $remote_user always "-", status as %03d)
//   json      {"time":"2026-11-29T23:40:00Z","remote_addr":"127.0.0.1","method":"GET",
//             "target":"/","protocol":"HTTP/1.1","status":200,"body_bytes":1234,"referer":"",
//             "user_agent":"curl/8.0","request_time":0.003}
//             (keys in this order; request_time in seconds with milliseconds, as NGINX's)
//   A response sent with a Content-Encoding (precompressed or compressed on the fly) has its
//   coding after the user agent: combined ` "zstd"`, JSON `,"content_encoding":"zstd"` (after
//   request_time); other lines have neither.
//   With [[vhosts]] configured, each line also names the site that answered, last: combined
//   ends with ` "b.test"` (the vhost's host as configured, "-" for the default site), JSON
//   with `,"vhost":"b.test"` ("" for the default site). Without vhosts, lines are as above.
// The time text is formatted once per second and shared by every thread, as NGINX caches its
// time strings.
//
// Path of a line: log() formats the record into a fixed 4 KiB buffer on the caller's stack
// (no allocation; 4 KiB of a fiber stack of at least 16 KiB), then hands the text to an
// spdlog async logger, whose one background thread ("weft-access", all signals blocked)
// writes it with the pattern "%v" (our text and a newline, nothing else) to stdout, stderr or
// a file. spdlog copies the text into its queue slot; a line longer than spdlog's inline
// buffer (about 250 bytes with the logger's name) costs that copy one heap allocation, which
// is the only allocation per line. The file is written through stdio and flushed whenever
// the background thread finds the queue empty, so lines reach the file in batches under
// load and at once when idle.
//
// Overflow: drop the new line and count it. At most kQueuedLines lines wait in the queue;
// log() drops any line beyond that and adds it to dropped(), so a stalled disk never blocks a
// processor thread (NGINX instead blocks its worker in write()). spdlog's own "overrun
// oldest" policy is not used because it could also overrun a queued flush request.
//
// Truncation: each field has a budget of output bytes after escaping (target 2048, referer
// 1024, user agent 512, remote address 64, vhost 64, method 32, protocol 16); a field that does not
// fit is cut at a character boundary and ends with the marker "[...]".
//
// Escaping: combined escapes '"', '\' and bytes below 0x20 or from 0x7f up as "\xHH" (upper
// case), as NGINX does; an empty referer, user agent or request line is written "-". JSON
// escapes per RFC 8259 and writes each byte that is not part of valid UTF-8 as "\u00HH", so
// every line is valid JSON and the byte value can be recovered; an empty string stays "".
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "server/core/config.hpp"

namespace weft::http {

/// What one access-log line says about a request; the views must stay valid during log().
struct AccessRecord {
  std::string_view remote_addr;  // "127.0.0.1" or "::1" (no port)
  int64_t time_unix = 0;         // seconds, when the request started
  std::string_view method;       // "GET"
  std::string_view target;       // the raw request target as received
  std::string_view protocol;     // "HTTP/1.1"
  int status = 0;
  uint64_t body_bytes = 0;            // body bytes actually sent
  std::string_view referer;           // empty: "-" (combined) or "" (json)
  std::string_view user_agent;        // empty: "-" (combined) or "" (json)
  double request_time_s = 0;          // from first byte of the request to the last byte sent
  std::string_view content_encoding;  // the body's coding ("zstd", "br", "gzip"); empty: none
  bool vhost_field = false;           // the server has [[vhosts]]: the line names the site
  std::string_view vhost;             // its host as configured; empty for the default site
};

/// The output budgets of the request's fields, after escaping (see "Truncation" above): a
/// field's first `budget + 1` bytes decide its text, so a caller may keep only those.
inline constexpr struct {
  std::size_t method = 32;
  std::size_t target = 2048;
  std::size_t referer = 1024;
  std::size_t user_agent = 512;
} kAccessFieldBudget;

/// Most bytes one formatted line may take, newline excluded (the stack buffer of log()).
inline constexpr std::size_t kAccessLineCapacity = 4096;

/// The access log of one server: formats lines on the caller's thread, writes them on its own.
class AccessLog {
 public:
  /// Lines that may wait for the background thread before log() drops; picked, to be
  /// measured: about 0.1 s at 80k requests/s; spdlog preallocates the slots, 408 bytes each
  /// (3.2 MiB).
  static constexpr std::size_t kQueuedLines = 8192;

  /// Returns the access log config asks for, or nullptr when log.access_log is "off" (or
  /// empty); throws ConfigError naming 'log.access_log' when the file cannot be opened.
  static std::unique_ptr<AccessLog> create(const Config& config);

  /// Writes every line still queued, then stops the background thread.
  ~AccessLog();

  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  /// Formats `r` and queues the line, or drops and counts it when the queue is full; never
  /// waits for the disk (only, briefly, for spdlog's queue mutex). Any thread.
  void log(const AccessRecord& r);

  /// Reopens the file by its name (after logrotate renamed it); lines still queued go to
  /// the new file. No-op for stdout and stderr; a failed reopen is reported on the error log
  /// and logging goes on to the old file. Any thread.
  void reopen();

  /// Returns once every line logged before the call is written and flushed. Blocking.
  void flush();

  /// Returns how many lines were dropped because the queue was full. Any thread.
  uint64_t dropped() const;

 private:
  struct State;
  explicit AccessLog(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace weft::http
