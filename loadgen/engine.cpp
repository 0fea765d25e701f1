#include "loadgen/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/core.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "loadgen/h2_client.hpp"
#include "loadgen/response_parser.hpp"
#include "runtime/fiber.hpp"
#include "runtime/io.hpp"
#include "runtime/io_driver.hpp"
#include "runtime/owned_counter.hpp"
#include "runtime/scheduler.hpp"
#include "server/tls/tls_stream.hpp"

#include "weft_version.hpp"

namespace weft::load {

namespace io = weft::rt::io;

namespace {

// Receive buffer of one session. Picked: a few TCP segments' worth of a loopback MSS (64 KiB)
// at once for large files, while 1000 open sessions hold 32 MiB; to be measured.
constexpr std::size_t kRecvBufferBytes = 32 * 1024;

std::int64_t now_ns() {
  return rt::to_ns(rt::now());
}

rt::TimePoint time_point(std::int64_t ns) {
  return rt::TimePoint{std::chrono::nanoseconds{ns}};
}

std::uint64_t since(std::int64_t from_ns, std::int64_t to_ns) {
  return to_ns > from_ns ? static_cast<std::uint64_t>(to_ns - from_ns) : 0;
}

}  // namespace

std::optional<Target> resolve_target(const std::string& host, std::uint16_t port,
                                     std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0) {
    error = fmt::format("--server {}: {}", host, gai_strerror(rc));
    return std::nullopt;
  }
  Target t;
  std::memcpy(&t.addr, res->ai_addr, res->ai_addrlen);
  t.len = res->ai_addrlen;
  freeaddrinfo(res);
  t.host_header = port == 80 ? host : fmt::format("{}:{}", host, port);
  return t;
}

// Everything a session needs besides its stack, pooled per processor (page faults are dear on
// these machines: buffers are touched once and reused, never freed during a run).
struct Engine::SessionState {
  SessionPlan plan;
  ResponseParser parser;
  std::string out;                   // the requests being sent
  std::vector<std::uint32_t> sizes;  // each request's size in `out`
  std::unique_ptr<char[]> in{new char[kRecvBufferBytes]};
};

// One processor's share of the run. Only fibers running on that processor write it; the
// progress counters are atomics so that another thread may read them.
struct alignas(64) Engine::Share {
  Stats measured;
  Stats warmup;  // sessions due during --warmup record here; thrown away
  std::vector<std::unique_ptr<SessionState>> pool;
  std::atomic<std::uint64_t> sessions{0};
  std::atomic<std::uint64_t> replies{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> lag_max_ns{0};

  void reset() {
    measured = Stats{};
    warmup = Stats{};
    sessions.store(0, std::memory_order_relaxed);
    replies.store(0, std::memory_order_relaxed);
    errors.store(0, std::memory_order_relaxed);
    lag_max_ns.store(0, std::memory_order_relaxed);
  }
};

// One session on one connection, run by one fiber from start to end.
class Engine::Session {
 public:
  Session(Engine& e, SessionState& st, std::int64_t due_ns)
      : e_(e), st_(st), due_ns_(due_ns), measured_(due_ns >= e.window_ns_) {}

  // Runs the planned session and records how it went.
  void run() {
    const std::int64_t start = now_ns();
    const std::uint64_t lag = since(due_ns_, start);
    {
      Share& slot = e_.local_slot();
      rt::bump_owned(slot.sessions);
      if (lag > slot.lag_max_ns.load(std::memory_order_relaxed)) {
        slot.lag_max_ns.store(lag, std::memory_order_relaxed);
      }
      stats().record_session_started(at(start), lag);
    }
    const bool ok = run_connection();
    const std::int64_t end = now_ns();
    stats().record_session_ended(at(end), ok, static_cast<double>(since(start, end)) * 1e-9,
                                 replies_);
  }

 private:
  Stats& stats() {
    Share& slot = e_.local_slot();
    return measured_ ? slot.measured : slot.warmup;
  }

  // Seconds since the measured window began.
  double at(std::int64_t t_ns) const { return static_cast<double>(t_ns - e_.window_ns_) * 1e-9; }

  rt::TimePoint deadline() const {
    return e_.timeout_ns_ > 0 ? rt::coarse_now() + std::chrono::nanoseconds{e_.timeout_ns_}
                              : rt::kNoDeadline;
  }

  void fail(ErrorClass c) {
    stats().record_error(at(now_ns()), c);
    rt::bump_owned(e_.local_slot().errors);
  }

  // Counts a failed system call: -ETIMEDOUT at our own deadline is --timeout (client-timo);
  // any other errno is classified by errors.hpp.
  void fail_errno(const char* what, std::int64_t res, rt::TimePoint dl) {
    const int err = static_cast<int>(-res);
    ErrorClass c = error_class_from_errno(err);
    if (err == ETIMEDOUT && dl != rt::kNoDeadline && rt::now() >= dl) c = ErrorClass::kClientTimo;
    if (c == ErrorClass::kOther) e_.note_other(what, err);
    fail(c);
  }

  bool run_connection() {
    const std::int64_t t_conn = now_ns();
    const std::uint64_t open_now = e_.open_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (e_.options_.max_conns != 0 && open_now > e_.options_.max_conns) {
      // The cap is the client's limit, as EMFILE is (see options.hpp): initiated, failed.
      e_.open_.fetch_sub(1, std::memory_order_relaxed);
      stats().record_connection_started(at(t_conn), open_now - 1);
      fail(ErrorClass::kFdUnavail);
      return false;
    }
    stats().record_connection_started(at(t_conn), open_now);
    const bool ok = connect_and_call();
    e_.open_.fetch_sub(1, std::memory_order_relaxed);
    return ok;
  }

  bool connect_and_call() {
    const Target& t = e_.target_;
    fd_ = io::socket(t.addr.ss_family, SOCK_STREAM, 0);
    if (fd_ < 0) {
      fail_errno("socket", fd_, rt::kNoDeadline);
      return false;
    }
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const std::int64_t t_conn = now_ns();
    const rt::TimePoint dl = deadline();
    const int rc = io::connect(fd_, reinterpret_cast<const sockaddr*>(&t.addr), t.len, dl);
    bool ok = false;
    if (rc < 0) {
      fail_errno("connect", rc, dl);
    } else {
      stats().record_connected(since(t_conn, now_ns()));
      ok = start_tls() && start_http2() && run_calls();
      stats().record_connection_closed(since(t_conn, now_ns()), replies_);
    }
    h2_.reset();
    end_tls();
    io::close(fd_);
    fd_ = -1;
    stats().record_io(sent_, received_);
    return ok;
  }

  // With --tls: the handshake on the connected socket; false (the error counted) when it fails.
  bool start_tls() {
    if (!e_.tls_) return true;
    tls_.emplace(e_.tls_->new_session(offered_), fd_);
    const rt::TimePoint dl = deadline();
    const int rc = tls_->handshake(dl);
    if (rc < 0) {
      fail_errno("tls handshake", rc, dl);
      return false;
    }
    return true;
  }

  // With --http2: the client session on the connection (over TLS, the server must have chosen
  // h2 by ALPN); false (counted as "other") when it did not.
  bool start_http2() {
    if (!e_.options_.http2) return true;
    if (tls_) {
      const unsigned char* proto = nullptr;
      unsigned len = 0;
      SSL_get0_alpn_selected(tls_->session(), &proto, &len);
      if (std::string_view{reinterpret_cast<const char*>(proto), proto ? len : 0} != "h2") {
        e_.note_other("http2", 0, "the server did not choose h2 in the TLS handshake (ALPN)");
        fail(ErrorClass::kOther);
        return false;
      }
    }
    h2_.emplace(e_.target_.host_header, tls_ ? "https" : "http", e_.user_agent_,
                e_.options_.headers);
    return true;
  }

  // With --tls: counts the handshake, keeps the session for --tls-resume (its tickets came
  // with the first reply), and sends close_notify (a session ended without it cannot be
  // resumed).
  void end_tls() {
    if (!tls_) return;
    if (replies_ > 0) e_.tls_->finished(tls_->session(), offered_);
    tls_->close_notify(rt::coarse_now() + std::chrono::milliseconds{100});
    tls_.reset();
  }

  std::int64_t send_all(const void* buf, std::size_t len, rt::TimePoint dl) {
    return tls_ ? tls_->write_all(buf, len, dl) : io::send_all(fd_, buf, len, 0, dl);
  }

  std::int64_t receive_some(void* buf, std::size_t len, rt::TimePoint dl) {
    return tls_ ? tls_->read(buf, len, dl) : io::recv(fd_, buf, len, 0, dl);
  }

  bool run_calls() {
    const SessionPlan& plan = st_.plan;
    std::int64_t eligible = due_ns_;  // when the next call was due to go out
    for (std::size_t b = 0; b < plan.bursts.size(); ++b) {
      const Burst& burst = plan.bursts[b];
      if (!round(burst.first, 1, eligible)) return false;
      if (burst.count > 1 && !round(burst.first + 1, burst.count - 1, last_reply_ns_)) {
        return false;
      }
      eligible = last_reply_ns_;
      if (burst.think_s > 0.0 && b + 1 < plan.bursts.size()) {
        eligible += static_cast<std::int64_t>(burst.think_s * 1e9);
        rt::sleep_until(time_point(eligible));
      }
    }
    return true;
  }

  // Sends calls [first, first + n) at once and reads their replies in order.
  bool round(std::uint32_t first, std::uint32_t n, std::int64_t due) {
    if (h2_) return round_h2(first, n, due);
    const SessionPlan& plan = st_.plan;
    if (closing_) {
      fail(ErrorClass::kConnReset);  // the server ended the connection with calls left
      return false;
    }
    st_.out.clear();
    st_.sizes.clear();
    for (std::uint32_t c = first; c < first + n; ++c) {
      const std::size_t before = st_.out.size();
      append_request(plan.calls[c]);
      st_.sizes.push_back(static_cast<std::uint32_t>(st_.out.size() - before));
    }
    const std::int64_t send_ns = now_ns();
    const rt::TimePoint dl = deadline();
    const std::int64_t rc = send_all(st_.out.data(), st_.out.size(), dl);
    if (rc < 0) {
      fail_errno("send", rc, dl);
      return false;
    }
    sent_ += st_.out.size();
    const double sent_at = at(now_ns());
    for (std::uint32_t size : st_.sizes) stats().record_request(sent_at, size);
    for (std::uint32_t c = first; c < first + n; ++c) {
      if (c > first && closing_) {
        fail(ErrorClass::kConnReset);  // replies of pipelined calls will never come
        return false;
      }
      if (!receive(plan.calls[c], send_ns, due)) return false;
    }
    return true;
  }

  // --http2: calls [first, first + n) as streams, at most --streams open at once (and no more
  // than the server allows), each reply recorded as its stream ends. Returns false (the
  // errors counted) when a stream or the connection failed.
  bool round_h2(std::uint32_t first, std::uint32_t n, std::int64_t due) {
    H2Client& h = *h2_;
    h.reset_round();
    std::uint32_t next = first;
    std::size_t done = 0;
    bool ok = true;
    for (;;) {
      while (next < first + n && h.open_streams() < e_.options_.streams && h.room() > 0 &&
             !h.going_away() && h.submit(st_.plan.calls[next], next)) {
        ++next;
      }
      if (!flush_h2()) return false;
      done = record_h2(due, ok);
      if (done == n) return ok;
      if (h.open_streams() == 0 && next < first + n && (h.going_away() || next == first)) {
        fail(ErrorClass::kConnReset);  // the server took no more streams: calls left unsent
        return false;
      }
      const rt::TimePoint dl = deadline();
      const std::int64_t got = receive_some(st_.in.get(), kRecvBufferBytes, dl);
      if (got <= 0) {
        if (got < 0) fail_errno("recv", got, dl);
        if (got == 0) fail(ErrorClass::kConnReset);  // closed with streams open
        return false;
      }
      received_ += static_cast<std::uint64_t>(got);
      if (!h.feed(st_.in.get(), static_cast<std::size_t>(got), now_ns())) {
        e_.note_other("http2", 0, "the server's frames broke the HTTP/2 protocol");
        fail(ErrorClass::kOther);
        flush_h2();  // the GOAWAY nghttp2 queued
        return false;
      }
    }
  }

  // Sends what the HTTP/2 session has to send; stamps the streams whose requests went out.
  bool flush_h2() {
    const std::string_view out = h2_->take_output();
    if (out.empty()) return true;
    const rt::TimePoint dl = deadline();
    const std::int64_t rc = send_all(out.data(), out.size(), dl);
    if (rc < 0) {
      fail_errno("send", rc, dl);
      return false;
    }
    sent_ += out.size();
    const std::int64_t t = now_ns();
    for (H2Client::Stream& s : h2_->streams()) {
      if (s.sent && s.sent_ns == 0) {
        s.sent_ns = t;
        stats().record_request(at(t), s.request_bytes);
      }
    }
    return true;
  }

  // Records the streams of this round that ended and were not recorded yet; returns how many
  // have ended. A reset stream counts as conn-reset and clears `ok`.
  std::size_t record_h2(std::int64_t due, bool& ok) {
    std::vector<H2Client::Stream>& streams = h2_->streams();
    std::size_t ended = 0;
    for (H2Client::Stream& s : streams) {
      if (!s.closed) continue;
      ++ended;
      if (s.recorded) continue;
      s.recorded = true;
      if (s.reset) {
        fail(ErrorClass::kConnReset);
        ok = false;
        continue;
      }
      const Call& call = st_.plan.calls[s.call];
      const std::int64_t first = s.first_ns ? s.first_ns : s.last_ns;
      ReplySample r;
      r.status = s.response.status;
      r.header_bytes = s.response.header_bytes;
      r.body_bytes = s.response.body_bytes;
      r.response_ns = since(s.sent_ns, first);
      r.transfer_ns = since(first, s.last_ns);
      r.from_schedule_ns = since(due, s.last_ns);
      r.from_send_ns = since(s.sent_ns, s.last_ns);
      stats().record_reply(at(s.last_ns), r);
      rt::bump_owned(e_.local_slot().replies);
      ++replies_;
      last_reply_ns_ = std::max(last_reply_ns_, s.last_ns);
      if (const auto c = classify_response(s.response, call.expected_size)) fail(*c);
    }
    return ended;
  }

  void append_request(const Call& call) {
    std::string& out = st_.out;
    out.append(call.method);
    out += ' ';
    out.append(call.uri);
    out.append(" HTTP/1.1\r\n");
    out.append(e_.request_headers_);
    if (!call.body.empty()) out.append(fmt::format("Content-Length: {}\r\n", call.body.size()));
    out.append("\r\n");
    out.append(call.body);
  }

  // Reads one reply; returns false (after counting the error) when the connection failed.
  bool receive(const Call& call, std::int64_t send_ns, std::int64_t due) {
    ResponseParser& parser = st_.parser;
    parser.expect(call.method == "HEAD");
    std::int64_t first_byte = 0;
    for (;;) {
      ResponseParser::Result res{};
      if (pos_ == end_) {
        const rt::TimePoint dl = deadline();
        const std::int64_t n = receive_some(st_.in.get(), kRecvBufferBytes, dl);
        if (n < 0) {
          fail_errno("recv", n, dl);
          return false;
        }
        data_ns_ = now_ns();
        received_ += static_cast<std::uint64_t>(n);
        pos_ = 0;
        end_ = static_cast<std::size_t>(n);
        if (n == 0) {
          res = parser.finish();
          if (res.status == ResponseParser::Status::kComplete) {
            if (first_byte == 0) first_byte = data_ns_;
            return replied(call, send_ns, due, first_byte);
          }
          // Closed before or inside the reply. A body cut short of its announced length is
          // bad-length; anything else is the connection failing under the call.
          const Response& r = parser.response();
          const bool short_body = res.status == ResponseParser::Status::kError &&
                                  parser.in_response() && r.status != 0 &&
                                  r.content_length.has_value() && !r.bodyless;
          fail(short_body ? ErrorClass::kBadLength : ErrorClass::kConnReset);
          return false;
        }
      }
      if (first_byte == 0) first_byte = data_ns_;
      res = parser.feed(std::string_view{st_.in.get() + pos_, end_ - pos_});
      pos_ += res.consumed;
      switch (res.status) {
        case ResponseParser::Status::kIncomplete:
          break;
        case ResponseParser::Status::kComplete:
          return replied(call, send_ns, due, first_byte);
        case ResponseParser::Status::kClosed:
        case ResponseParser::Status::kError:
          e_.note_other("parse", 0, parser.error_reason());
          fail(ErrorClass::kOther);
          return false;
      }
    }
  }

  bool replied(const Call& call, std::int64_t send_ns, std::int64_t due, std::int64_t first_byte) {
    const Response& r = st_.parser.response();
    const std::int64_t last = data_ns_;
    ReplySample s;
    s.status = r.status;
    s.header_bytes = r.header_bytes;
    s.body_bytes = r.body_bytes;
    s.footer_bytes = r.footer_bytes;
    s.response_ns = since(send_ns, first_byte);
    s.transfer_ns = since(first_byte, last);
    s.from_schedule_ns = since(due, last);
    s.from_send_ns = since(send_ns, last);
    Stats& st = stats();
    st.record_reply(at(last), s);
    rt::bump_owned(e_.local_slot().replies);
    ++replies_;
    last_reply_ns_ = last;
    if (!r.keep_alive) closing_ = true;
    if (const auto c = classify_response(r, call.expected_size)) fail(*c);
    return true;
  }

  Engine& e_;
  SessionState& st_;
  std::int64_t due_ns_;
  bool measured_;
  int fd_ = -1;
  std::optional<http::TlsStream> tls_;  // with --tls
  std::optional<H2Client> h2_;          // with --http2
  bool offered_ = false;                // the handshake offered a kept session
  bool closing_ = false;                // the last reply said the connection ends
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
  std::uint64_t replies_ = 0;
  std::int64_t last_reply_ns_ = 0;
  std::size_t pos_ = 0;  // unparsed bytes are st_.in[pos_, end_)
  std::size_t end_ = 0;
  std::int64_t data_ns_ = 0;  // when the buffered bytes arrived
};

Engine::Engine(const Options& options, const UriSource& source, Target target)
    : options_(options),
      source_(source),
      target_(std::move(target)),
      slots_count_(options.threads),
      slots_(new Share[options.threads]) {
  user_agent_ = fmt::format("weft-load/{}", kWeftVersion);
  request_headers_ =
      fmt::format("User-Agent: weft-load/{}\r\nHost: {}\r\n", kWeftVersion, target_.host_header);
  for (const ExtraHeader& h : options_.headers) {
    request_headers_ += fmt::format("{}: {}\r\n", h.name, h.value);
  }
  if (options_.timeout_s) timeout_ns_ = static_cast<std::int64_t>(*options_.timeout_s * 1e9);
  session_limit_ = options_.max_sessions();
  if (options_.tls || options_.tls_resume) {
    std::string error;
    const std::string& name =
        options_.tls_server_name.empty() ? options_.server : options_.tls_server_name;
    tls_ = ClientTls::create(name, options_.tls_resume, options_.http2, error);
    if (!tls_) throw std::runtime_error(error);
  }
  if (const auto own = source_.session_limit();
      own && (!session_limit_ || *own < *session_limit_)) {
    session_limit_ = own;
  }
}

Engine::~Engine() = default;

Engine::Share& Engine::local_slot() {
  rt::Processor* p = rt::Processor::current();
  return slots_[p ? p->index() % slots_count_ : 0];
}

void Engine::note_other(const char* what, int err, const char* reason) {
  if (other_noted_.exchange(true, std::memory_order_relaxed)) return;
  first_other_ = reason != nullptr ? fmt::format("{}: {}", what, reason)
                                   : fmt::format("{}: {}", what, std::strerror(err));
}

void Engine::run_session(std::uint64_t index, std::int64_t due_ns) {
  std::unique_ptr<SessionState> st;
  {
    Share& slot = local_slot();
    if (slot.pool.empty()) {
      st = std::make_unique<SessionState>();
    } else {
      st = std::move(slot.pool.back());
      slot.pool.pop_back();
    }
  }
  if (source_.plan_session(index, st->plan)) {
    st->parser.reset();
    Session(*this, *st, due_ns).run();
  }
  local_slot().pool.push_back(std::move(st));
}

void Engine::schedule_sessions(const Period& period, unsigned k, unsigned of) {
  std::optional<std::uint64_t> duration_ns;
  if (options_.duration_s) duration_ns = static_cast<std::uint64_t>(*options_.duration_s * 1e9);
  Schedule schedule(period, options_.workload.seed, session_limit_, duration_ns);
  auto mark_window = [this](std::int64_t due) {
    if (due < window_ns_ || window_cpu_taken_.load(std::memory_order_relaxed)) return;
    rt::sleep_until(time_point(window_ns_));
    window_cpu_ = process_cpu_times();
    window_cpu_taken_.store(true, std::memory_order_release);
  };

  if (schedule.sequential()) {
    // httperf's --rate 0: each session starts when the previous one has ended.
    while (const auto s = schedule.next()) {
      const std::int64_t t = now_ns();
      if (duration_ns && since(start_ns_, t) >= *duration_ns) break;
      mark_window(t);
      run_session(s->index, t);
    }
    return;
  }

  std::uint64_t burst = 0;
  bool burst_measured = false;
  auto end_burst = [&] {
    if (burst > 0 && burst_measured) local_slot().measured.record_connect_burst(burst);
    burst = 0;
  };
  while (const auto s = schedule.next()) {
    const std::int64_t due = start_ns_ + static_cast<std::int64_t>(s->due_ns);
    if (k == 0) mark_window(due);
    // This instance's sessions (--client I/N), shared out between its schedulers.
    const ClientShare& share = options_.client;
    if (!share.owns(s->index) || (s->index / share.count) % of != k) continue;
    if (due > now_ns()) {
      end_burst();
      rt::sleep_until(time_point(due));
    }
    sessions_wg_.add(1);
    rt::spawn([this, index = s->index, due] {
      run_session(index, due);
      sessions_wg_.done();
    });
    ++burst;
    burst_measured = due >= window_ns_;
  }
  end_burst();
}

void Engine::prime_tls() {
  const Target& t = target_;
  const int fd = io::socket(t.addr.ss_family, SOCK_STREAM, 0);
  if (fd < 0) return;
  const rt::TimePoint dl =
      rt::now() + std::chrono::nanoseconds{timeout_ns_ > 0 ? timeout_ns_ : 5'000'000'000};
  if (io::connect(fd, reinterpret_cast<const sockaddr*>(&t.addr), t.len, dl) == 0) {
    bool offered = false;
    http::TlsStream tls(tls_->new_session(offered), fd);
    if (tls.handshake(dl) == 0) {
      // The tickets come before anything else the server sends (TLS 1.3: right after the
      // handshake; 1.2: inside it): read until it closes, answering our close_notify, and
      // they have been read, with no request made (the server logs nothing).
      tls.close_notify(dl);
      char buf[512];
      while (!tls_->has_session() && tls.read(buf, sizeof buf, dl) > 0) {
      }
    }
  }
  io::close(fd);
  tls_->reset_counts();
}

RunResult Engine::run(const Period& period) {
  for (unsigned i = 0; i < slots_count_; ++i) slots_[i].reset();
  open_.store(0, std::memory_order_relaxed);
  window_cpu_taken_.store(false, std::memory_order_relaxed);
  other_noted_.store(false, std::memory_order_relaxed);
  first_other_.clear();

  rt::IoOptions io_options;
  io_options.backend = options_.backend;
  rt::RuntimeOptions ro;
  ro.processors = options_.threads;
  ro.make_driver = rt::make_io_driver_factory(io_options);  // throws when io_uring is required
  rt::Runtime runtime(ro);

  RunResult result;
  std::int64_t end_ns = 0;
  runtime.run([&] {
    if (tls_ && options_.tls_resume && !tls_->has_session()) prime_tls();
    start_ns_ = now_ns();
    window_ns_ = start_ns_ + static_cast<std::int64_t>(options_.warmup_s * 1e9);
    progress_start_ns_.store(start_ns_, std::memory_order_relaxed);
    running_.store(true, std::memory_order_release);
    if (window_ns_ <= start_ns_) {
      window_cpu_ = process_cpu_times();
      window_cpu_taken_.store(true, std::memory_order_release);
    }
    const unsigned schedulers = period.spacing == Spacing::kSequential ? 1 : slots_count_;
    std::vector<rt::FiberHandle> handles;
    for (unsigned k = 0; k < schedulers; ++k) {
      handles.push_back(
          rt::spawn([this, &period, k, schedulers] { schedule_sessions(period, k, schedulers); }));
    }
    for (auto& h : handles) h.join();
    sessions_wg_.wait();
    end_ns = now_ns();
    result.backend = io::backend();
  });
  running_.store(false, std::memory_order_release);

  const CpuTimes cpu_end = process_cpu_times();
  std::uint64_t max_open = 0;
  for (unsigned i = 0; i < slots_count_; ++i) {
    result.stats.merge(slots_[i].measured);
    // Each slot saw the true global count at its peaks: the maximum, not the sum, is exact.
    max_open = std::max(max_open, slots_[i].measured.max_open_connections);
  }
  result.stats.max_open_connections = max_open;
  if (window_cpu_taken_.load(std::memory_order_acquire)) {
    result.stats.cpu.user_s = cpu_end.user_s - window_cpu_.user_s;
    result.stats.cpu.system_s = cpu_end.system_s - window_cpu_.system_s;
    result.stats.duration_s = static_cast<double>(since(window_ns_, end_ns)) * 1e-9;
  }
  result.first_other = first_other_;
  if (tls_) result.tls = tls_->take_counts();
  return result;
}

Progress Engine::progress() const {
  Progress p;
  p.running = running_.load(std::memory_order_acquire);
  p.elapsed_s =
      static_cast<double>(since(progress_start_ns_.load(std::memory_order_relaxed), now_ns())) *
      1e-9;
  std::uint64_t lag = 0;
  for (unsigned i = 0; i < slots_count_; ++i) {
    const Share& s = slots_[i];
    p.sessions += s.sessions.load(std::memory_order_relaxed);
    p.replies += s.replies.load(std::memory_order_relaxed);
    p.errors += s.errors.load(std::memory_order_relaxed);
    lag = std::max(lag, s.lag_max_ns.load(std::memory_order_relaxed));
  }
  p.open = open_.load(std::memory_order_relaxed);
  p.lag_max_ms = static_cast<double>(lag) * 1e-6;
  return p;
}

}  // namespace weft::load
