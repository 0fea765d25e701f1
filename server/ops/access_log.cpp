// The access log: line formatting (combined, JSON), the per-second time cache, and the
// hand-off to spdlog's async logger with drop-and-count overflow.
#include "server/ops/access_log.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include <fmt/core.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/async_logger.h>
#include <spdlog/details/thread_pool.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "server/core/utf8.hpp"
#include "server/http/http_date.hpp"
#include "server/http/second_text.hpp"
#include "server/ops/log.hpp"

namespace weft::http {
namespace {

// Output budgets of the variable fields, after escaping (see the header).
constexpr std::size_t kAddrBudget = 64;
constexpr std::size_t kMethodBudget = kAccessFieldBudget.method;
constexpr std::size_t kTargetBudget = kAccessFieldBudget.target;
constexpr std::size_t kProtocolBudget = 16;
constexpr std::size_t kRefererBudget = kAccessFieldBudget.referer;
constexpr std::size_t kAgentBudget = kAccessFieldBudget.user_agent;
constexpr std::size_t kVhostBudget = 64;  // a configured name; longer ones are cut
// Everything else: JSON keys and punctuation (about 150 bytes), the time (at most 26 bytes)
// and three numbers (at most 20 bytes each), with room to spare.
constexpr std::size_t kFixedBudget = 320;
static_assert(kAddrBudget + kMethodBudget + kTargetBudget + kProtocolBudget + kRefererBudget +
                      kAgentBudget + kVhostBudget + kFixedBudget <=
                  kAccessLineCapacity,
              "a line of full fields must fit the stack buffer");

constexpr std::string_view kMarker = "[...]";

constexpr char kHexUpper[] = "0123456789ABCDEF";
constexpr char kHexLower[] = "0123456789abcdef";

// An append cursor over the line buffer. Writes are unchecked: the budgets above make every
// line fit, and put_field() keeps each field within its budget.
class Line {
 public:
  explicit Line(char* buf) : begin_(buf), p_(buf) {}

  void put(char c) {
    assert(size() < kAccessLineCapacity);
    *p_++ = c;
  }
  void put(std::string_view s) {
    assert(size() + s.size() <= kAccessLineCapacity);
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  template <class Int>
  void put_number(Int v) {
    p_ = std::to_chars(p_, p_ + 24, v).ptr;
  }
  char* pos() const { return p_; }
  void rewind(char* to) { p_ = to; }
  std::size_t size() const { return static_cast<std::size_t>(p_ - begin_); }

 private:
  char* begin_;
  char* p_;
};

// One escaped unit of a field: how many input bytes it stands for, and its text.
struct Unit {
  std::size_t in = 1;
  std::size_t len = 0;
  std::array<char, 6> text;
};

// NGINX's escape=default: '"', '\' and bytes outside 0x20..0x7e become "\xHH".
Unit escape_combined(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  Unit u;
  if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
    u.text = {'\\', 'x', kHexUpper[c >> 4], kHexUpper[c & 0xf]};
    u.len = 4;
  } else {
    u.text[0] = static_cast<char>(c);
    u.len = 1;
  }
  return u;
}

// RFC 8259 string escaping; a byte that is not part of well-formed UTF-8 becomes "\u00HH".
Unit escape_json(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  Unit u;
  const auto two = [&u](char e) {
    u.text = {'\\', e};
    u.len = 2;
  };
  const auto hex = [&u, c] {
    u.text = {'\\', 'u', '0', '0', kHexLower[c >> 4], kHexLower[c & 0xf]};
    u.len = 6;
  };
  switch (c) {
    case '"':
      two('"');
      return u;
    case '\\':
      two('\\');
      return u;
    case '\b':
      two('b');
      return u;
    case '\f':
      two('f');
      return u;
    case '\n':
      two('n');
      return u;
    case '\r':
      two('r');
      return u;
    case '\t':
      two('t');
      return u;
    default:
      break;
  }
  if (c < 0x20) {
    hex();
  } else if (c < 0x80) {
    u.text[0] = static_cast<char>(c);
    u.len = 1;
  } else if (const std::size_t n = utf8_sequence_length(s.substr(i)); n != 0) {
    std::memcpy(u.text.data(), s.data() + i, n);
    u.in = n;
    u.len = n;
  } else {
    hex();
  }
  return u;
}

using Escape = Unit (*)(std::string_view, std::size_t);

// Writes `s` escaped, in at most `budget` bytes: when it does not fit, the units that fit
// with the marker after them, so a field is never cut inside an escape or a UTF-8 sequence.
// (The escape is a template argument so that it is inlined into the loop.)
template <Escape escape>
void put_field(Line& line, std::string_view s, std::size_t budget) {
  char* const start = line.pos();
  std::size_t written = 0;
  std::size_t cut = 0;  // where to cut: the last unit boundary that leaves room for the marker
  for (std::size_t i = 0; i < s.size();) {
    const Unit u = escape(s, i);
    if (written + u.len > budget) {
      line.rewind(start + cut);
      line.put(kMarker);
      return;
    }
    line.put(std::string_view(u.text.data(), u.len));
    written += u.len;
    i += u.in;
    if (written + kMarker.size() <= budget) cut = written;
  }
}

// Writes the time of day and date of `second` as NGINX's $time_local in UTC
// ("29/Nov/2026:23:40:00 +0000") or as ISO 8601 ("2026-11-29T23:40:00Z"); returns the length.
// It rearranges the IMF-fixdate of format_http_date(), so the calendar arithmetic lives once.
std::size_t format_time(AccessLogFormat format, std::int64_t second, char* out) {
  HttpDateBuffer http;
  const std::string_view d = format_http_date(second, http);  // "Sun, 06 Nov 1994 08:49:37 GMT"
  const std::string_view day = d.substr(5, 2);
  const std::string_view month = d.substr(8, 3);
  const std::string_view year = d.substr(12, 4);
  const std::string_view clock = d.substr(17, 8);
  Line line(out);
  if (format == AccessLogFormat::combined) {
    line.put(day);
    line.put('/');
    line.put(month);
    line.put('/');
    line.put(year);
    line.put(':');
    line.put(clock);
    line.put(" +0000");
  } else {
    constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
    const std::size_t m = kMonths.find(month) / 3 + 1;
    line.put(year);
    line.put('-');
    line.put(static_cast<char>('0' + m / 10));
    line.put(static_cast<char>('0' + m % 10));
    line.put('-');
    line.put(day);
    line.put('T');
    line.put(clock);
    line.put('Z');
  }
  return line.size();
}

// The formatted time of the latest second logged, shared by every thread: formatted once
// per second by whichever thread first logs a request of a newer second, and read out of a
// SecondText (second_text.hpp, as DateCache does). A request that started in an earlier second (a
// long download) formats its time on the caller's stack instead, and never moves the cache back; so
// after the clock steps back, lines are formatted one by one until it catches up.
class TimeCache {
 public:
  using Text = SecondText<32>::Buffer;

  explicit TimeCache(AccessLogFormat format) : format_(format) {}

  // Copies the time text of `second` into `out`; returns its length.
  std::size_t get(std::int64_t second, Text& out) {
    std::int64_t cached = 0;
    if (text_.read(out, cached) && cached == second) return length();
    const std::size_t n = format_time(format_, second, out.data());
    if (second > text_.second()) {
      text_.publish(second, out.data(), [second](std::int64_t now) { return second > now; });
    }
    return n;
  }

 private:
  std::size_t length() const { return format_ == AccessLogFormat::combined ? 26 : 20; }

  const AccessLogFormat format_;
  SecondText<32> text_;
};

// Writes $request: "METHOD TARGET PROTOCOL" of its non-empty parts, or "-" when all are empty.
void put_request(Line& line, const AccessRecord& r) {
  bool first = true;
  for (auto [part, budget] :
       {std::pair{r.method, kMethodBudget}, std::pair{r.target, kTargetBudget},
        std::pair{r.protocol, kProtocolBudget}}) {
    if (part.empty()) continue;
    if (!first) line.put(' ');
    put_field<escape_combined>(line, part, budget);
    first = false;
  }
  if (first) line.put('-');
}

// $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent
// "$http_referer" "$http_user_agent"
std::size_t format_combined(const AccessRecord& r, TimeCache& times, char* out) {
  Line line(out);
  const auto field = [&line](std::string_view s, std::size_t budget) {
    if (s.empty()) {
      line.put('-');
    } else {
      put_field<escape_combined>(line, s, budget);
    }
  };
  field(r.remote_addr, kAddrBudget);
  line.put(" - - [");  // $remote_user: no authentication, always "-"
  TimeCache::Text time;
  line.put(std::string_view(time.data(), times.get(r.time_unix, time)));
  line.put("] \"");
  put_request(line, r);
  line.put("\" ");
  if (r.status >= 0 && r.status < 100) line.put(r.status < 10 ? "00" : "0");  // NGINX's %03ui
  line.put_number(r.status);
  line.put(' ');
  line.put_number(r.body_bytes);
  line.put(" \"");
  field(r.referer, kRefererBudget);
  line.put("\" \"");
  field(r.user_agent, kAgentBudget);
  line.put('"');
  if (!r.content_encoding.empty()) {  // a coding weft names itself: nothing to escape
    line.put(" \"");
    line.put(r.content_encoding);
    line.put('"');
  }
  if (r.vhost_field) {  // the server has [[vhosts]]: which site answered
    line.put(" \"");
    field(r.vhost, kVhostBudget);
    line.put('"');
  }
  return line.size();
}

// Seconds with millisecond resolution, as NGINX's $request_time ("0.003").
void put_seconds(Line& line, double seconds) {
  if (!(seconds > 0)) seconds = 0;    // negative and NaN
  seconds = std::min(seconds, 1e12);  // and +inf: keeps the millisecond count exact
  const auto ms = static_cast<std::uint64_t>(std::llround(seconds * 1000));
  line.put_number(ms / 1000);
  line.put('.');
  const auto frac = static_cast<unsigned>(ms % 1000);
  line.put(static_cast<char>('0' + frac / 100));
  line.put(static_cast<char>('0' + frac / 10 % 10));
  line.put(static_cast<char>('0' + frac % 10));
}

std::size_t format_json(const AccessRecord& r, TimeCache& times, char* out) {
  Line line(out);
  TimeCache::Text time;
  line.put("{\"time\":\"");
  line.put(std::string_view(time.data(), times.get(r.time_unix, time)));
  line.put("\",\"remote_addr\":\"");
  put_field<escape_json>(line, r.remote_addr, kAddrBudget);
  line.put("\",\"method\":\"");
  put_field<escape_json>(line, r.method, kMethodBudget);
  line.put("\",\"target\":\"");
  put_field<escape_json>(line, r.target, kTargetBudget);
  line.put("\",\"protocol\":\"");
  put_field<escape_json>(line, r.protocol, kProtocolBudget);
  line.put("\",\"status\":");
  line.put_number(r.status);
  line.put(",\"body_bytes\":");
  line.put_number(r.body_bytes);
  line.put(",\"referer\":\"");
  put_field<escape_json>(line, r.referer, kRefererBudget);
  line.put("\",\"user_agent\":\"");
  put_field<escape_json>(line, r.user_agent, kAgentBudget);
  line.put("\",\"request_time\":");
  put_seconds(line, r.request_time_s);
  if (!r.content_encoding.empty()) {
    line.put(",\"content_encoding\":\"");
    line.put(r.content_encoding);
    line.put('"');
  }
  if (r.vhost_field) {
    line.put(",\"vhost\":\"");
    put_field<escape_json>(line, r.vhost, kVhostBudget);
    line.put('"');
  }
  line.put('}');
  return line.size();
}

// The logger's one sink, run by the background thread: writes through `target`, keeps the
// count of queued messages, flushes the target whenever the queue runs empty, and tells
// flush() when its request has been carried out. (set_pattern and set_formatter run only
// in create(), before the first line.)
class QueueSink final : public spdlog::sinks::sink {
 public:
  QueueSink(spdlog::sink_ptr target, std::atomic<std::uint64_t>& queued)
      : target_(std::move(target)), queued_(queued) {}

  void log(const spdlog::details::log_msg& msg) override {
    try {
      target_->log(msg);
    } catch (...) {
      queued_.fetch_sub(1, std::memory_order_relaxed);
      throw;
    }
    // Last of the queue: write out stdio's buffer now, so an idle server's lines are in
    // the file at once and a busy one's go out in batches.
    if (queued_.fetch_sub(1, std::memory_order_relaxed) == 1) target_->flush();
  }

  void flush() override {
    try {
      target_->flush();
    } catch (...) {
      finish_flush();
      throw;
    }
    finish_flush();
  }

  void set_pattern(const std::string& pattern) override { target_->set_pattern(pattern); }

  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    target_->set_formatter(std::move(formatter));
  }

  // Returns how many flush requests have been carried out.
  std::uint64_t flushes() {
    std::lock_guard lock(mutex_);
    return flushes_;
  }

  // Blocks until `count` flush requests have been carried out.
  void wait_flushes(std::uint64_t count) {
    std::unique_lock lock(mutex_);
    flushed_.wait(lock, [&] { return flushes_ >= count; });
  }

 private:
  void finish_flush() {
    queued_.fetch_sub(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(mutex_);
      ++flushes_;
    }
    flushed_.notify_all();
  }

  spdlog::sink_ptr target_;
  std::atomic<std::uint64_t>& queued_;
  std::mutex mutex_;
  std::condition_variable flushed_;
  std::uint64_t flushes_ = 0;
};

// spdlog's error handler for the access logger (a failed write, a full disk): one line a
// second on the error log rather than spdlog's own lines on stderr.
void report_error(const std::string& what) {
  static std::atomic<std::int64_t> last{INT64_MIN};
  const std::int64_t now = DateCache::system_seconds();
  std::int64_t prev = last.load(std::memory_order_relaxed);
  if (prev == now || !last.compare_exchange_strong(prev, now, std::memory_order_relaxed)) return;
  spdlog::error("access log: {}", what);
}

// The background thread takes no signals (the server handles them elsewhere) and is named so
// that top and perf show it.
void on_writer_start() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "weft-access");
}

}  // namespace

// Destroyed in reverse order: the pool first, whose destructor lets the background thread
// write every queued line and joins it while the logger, sinks and counters are still alive;
// then the logger. So the last reference to the logger is always ours, and it is freed on
// this thread: were it the background thread's (a queued message's), the free would happen
// inside libspdlog, whose reference counting TSan cannot see, and TSan would report a race.
struct AccessLog::State {
  explicit State(AccessLogFormat f) : format(f), times(f) {}

  const AccessLogFormat format;
  TimeCache times;
  // Messages posted and not yet carried out, flush requests included. log() admits a line
  // only while fewer than kQueuedLines are counted, so spdlog's queue (kQueuedLines + 1
  // slots: one for the single flush request flush() allows at a time) never fills and its
  // "block" policy never blocks. Relaxed: only the count matters, the queue's mutex orders
  // the messages themselves.
  std::atomic<std::uint64_t> queued{0};
  std::atomic<std::uint64_t> dropped{0};
  std::mutex flush_mutex;  // one flush() at a time
  std::string path;        // empty for stdout/stderr
  std::shared_ptr<ReopenableFileSink> file;
  std::shared_ptr<QueueSink> sink;
  std::shared_ptr<spdlog::async_logger> logger;
  std::shared_ptr<spdlog::details::thread_pool> pool;
};

AccessLog::AccessLog(std::unique_ptr<State> state) : state_(std::move(state)) {}

AccessLog::~AccessLog() = default;

std::unique_ptr<AccessLog> AccessLog::create(const Config& config) {
  const std::string& where = config.access_log;
  if (where == "off" || where.empty()) return nullptr;

  auto state = std::make_unique<State>(config.access_format);
  spdlog::sink_ptr target;
  if (where == "stdout") {
    target = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  } else if (where == "stderr") {
    target = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  } else {
    try {
      state->file = std::make_shared<ReopenableFileSink>(where);
    } catch (const spdlog::spdlog_ex& e) {
      const std::string source =
          config.source.empty() ? std::string{} : config.source.string() + ": ";
      throw ConfigError(fmt::format("{}key 'log.access_log': {}", source, e.what()));
    }
    state->path = where;
    target = state->file;
  }
  state->sink = std::make_shared<QueueSink>(std::move(target), state->queued);
  state->pool =
      std::make_shared<spdlog::details::thread_pool>(kQueuedLines + 1, 1, on_writer_start);
  state->logger = std::make_shared<spdlog::async_logger>("access", state->sink, state->pool,
                                                         spdlog::async_overflow_policy::block);
  state->logger->set_pattern("%v");
  state->logger->set_level(spdlog::level::info);
  state->logger->set_error_handler(report_error);
  return std::unique_ptr<AccessLog>(new AccessLog(std::move(state)));
}

void AccessLog::log(const AccessRecord& r) {
  State& s = *state_;
  if (s.queued.fetch_add(1, std::memory_order_relaxed) >= kQueuedLines) {
    s.queued.fetch_sub(1, std::memory_order_relaxed);
    s.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  char buf[kAccessLineCapacity];
  const std::size_t n = s.format == AccessLogFormat::combined ? format_combined(r, s.times, buf)
                                                              : format_json(r, s.times, buf);
  s.logger->log(spdlog::level::info, spdlog::string_view_t(buf, n));
}

void AccessLog::reopen() {
  State& s = *state_;
  if (!s.file) return;
  if (!s.file->reopen()) {
    spdlog::error("cannot reopen the access log {}; still writing the old file", s.path);
  }
}

void AccessLog::flush() {
  State& s = *state_;
  std::lock_guard one(s.flush_mutex);
  // Flush requests are carried out in queue order, after every line queued before; with one
  // request in flight at a time, the next one carried out is ours.
  const std::uint64_t want = s.sink->flushes() + 1;
  s.queued.fetch_add(1, std::memory_order_relaxed);
  s.logger->flush();
  s.sink->wait_flushes(want);
}

uint64_t AccessLog::dropped() const {
  return state_->dropped.load(std::memory_order_relaxed);
}

}  // namespace weft::http
