// Tests of loadgen/engine.cpp: the engine against a small in-process server on loopback.
#include "loadgen/engine.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loadgen/options.hpp"
#include "loadgen/workload.hpp"

namespace weft::load {
namespace {

// A loopback server on plain threads: every request (up to its blank line) gets `reply`,
// pipelined requests in order; with `close_after_reply` the server then ends the connection.
class CannedServer {
 public:
  explicit CannedServer(std::string reply, bool close_after_reply = false)
      : reply_(std::move(reply)), close_after_reply_(close_after_reply) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 256), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~CannedServer() {
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    for (auto& t : workers_) t.join();
    ::close(fd_);
  }
  CannedServer(const CannedServer&) = delete;
  CannedServer& operator=(const CannedServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::uint64_t requests() const { return requests_.load(); }
  std::uint64_t connections() const { return connections_.load(); }

 private:
  void accept_loop() {
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++connections_;
      workers_.emplace_back([this, c] { serve(c); });
    }
  }

  void serve(int c) {
    std::string in;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<std::size_t>(n));
      std::string out;
      for (std::size_t end; (end = in.find("\r\n\r\n")) != std::string::npos;) {
        in.erase(0, end + 4);
        ++requests_;
        out += reply_;
      }
      if (!out.empty() && ::send(c, out.data(), out.size(), MSG_NOSIGNAL) < 0) break;
      if (!out.empty() && close_after_reply_) break;
    }
    ::close(c);
  }

  std::string reply_;
  bool close_after_reply_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> workers_;  // only the acceptor touches it until the destructor
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> connections_{0};
};

const std::string kHello = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

Options options(std::vector<std::string> args) {
  std::vector<const char*> argv{"weft-load"};
  for (const auto& a : args) argv.push_back(a.c_str());
  auto r = parse_options(static_cast<int>(argv.size()), argv.data());
  EXPECT_TRUE(r.options) << r.output;
  return r.options.value_or(Options{});
}

RunResult run(const Options& o) {
  auto source = make_uri_source(o.workload);
  std::string error;
  auto target = resolve_target(o.server, o.port, error);
  EXPECT_TRUE(target) << error;
  Engine engine(o, *source, *target);
  return engine.run(o.period);
}

TEST(Engine, KeepAliveSessionsOnSeveralProcessorsMergeIntoOneReport) {
  CannedServer srv(kHello);
  const Options o =
      options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()), "--rate", "400",
               "--num-conns", "40", "--num-calls", "3", "--threads", "2", "--timeout", "5"});
  const RunResult r = run(o);
  const Stats& s = r.stats;
  EXPECT_EQ(s.sessions_started, 40u);
  EXPECT_EQ(s.sessions_completed, 40u);
  EXPECT_EQ(s.connections, 40u);
  EXPECT_EQ(s.connects, 40u);
  EXPECT_EQ(s.requests, 120u);
  EXPECT_EQ(s.replies(), 120u);
  EXPECT_EQ(s.replies_by_class[2], 120u);
  EXPECT_EQ(s.reply_body_bytes, 120u * 5);
  EXPECT_EQ(s.errors.total(), 0u);
  EXPECT_EQ(s.latency_from_send.count(), 120u);
  EXPECT_EQ(s.latency_from_schedule.count(), 120u);
  EXPECT_EQ(s.schedule_lag_ns.count, 40u);
  EXPECT_EQ(s.connection_time.count(), 40u);
  EXPECT_EQ(s.bytes_received, 120u * kHello.size());
  EXPECT_EQ(s.bytes_sent, s.request_bytes);
  EXPECT_GE(s.max_open_connections, 1u);
  EXPECT_GT(s.duration_s, 0.0);
  EXPECT_EQ(srv.requests(), 120u);
  EXPECT_EQ(srv.connections(), 40u);
  EXPECT_TRUE(r.backend == "io_uring" || r.backend == "epoll") << r.backend;
}

TEST(Engine, EpollBackendOnRequest) {
  CannedServer srv(kHello);
  const Options o =
      options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()), "--rate", "200",
               "--num-conns", "10", "--num-calls", "2", "--backend", "epoll"});
  const RunResult r = run(o);
  EXPECT_EQ(r.backend, "epoll");
  EXPECT_EQ(r.stats.replies(), 20u);
  EXPECT_EQ(r.stats.errors.total(), 0u);
}

TEST(Engine, SequentialSessionsNeverOverlap) {
  CannedServer srv(kHello);
  const Options o = options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()),
                             "--num-conns", "8", "--num-calls", "2"});
  const RunResult r = run(o);
  EXPECT_EQ(r.stats.sessions_completed, 8u);
  EXPECT_EQ(r.stats.replies(), 16u);
  EXPECT_EQ(r.stats.max_open_connections, 1u);
}

TEST(Engine, WarmupSessionsRunButAreNotCounted) {
  CannedServer srv(kHello);
  // Due every 10 ms: 0..190 ms is warmup (20 sessions), 200..490 ms measured (30).
  const Options o = options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()),
                             "--rate", "100", "--duration", "0.5", "--warmup", "0.2"});
  const RunResult r = run(o);
  EXPECT_EQ(r.stats.sessions_started, 30u);
  EXPECT_EQ(r.stats.replies(), 30u);
  EXPECT_EQ(srv.requests(), 50u);
}

TEST(Engine, ClosedPortIsConnrefused) {
  CannedServer srv(kHello);
  const std::uint16_t port = srv.port();
  std::string closed;
  {
    // A port that was free a moment ago: bind, read it, close.
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    closed = std::to_string(ntohs(a.sin_port));
    ::close(fd);
  }
  ASSERT_NE(closed, std::to_string(port));
  const Options o =
      options({"--server", "127.0.0.1", "--port", closed, "--rate", "500", "--num-conns", "10"});
  const RunResult r = run(o);
  EXPECT_EQ(r.stats.errors[ErrorClass::kConnRefused], 10u);
  EXPECT_EQ(r.stats.errors.total(), 10u);
  EXPECT_EQ(r.stats.sessions_failed, 10u);
  EXPECT_EQ(r.stats.connects, 0u);
}

TEST(Engine, ShortBodyIsBadLengthAndHttpErrorsAreReplies) {
  {
    // Nine bytes announced, five sent, then the server closes: bad-length.
    CannedServer srv("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello", true);
    const Options o = options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()),
                               "--rate", "100", "--num-conns", "3", "--timeout", "5"});
    const RunResult r = run(o);
    EXPECT_EQ(r.stats.errors[ErrorClass::kBadLength], 3u);
    EXPECT_EQ(r.stats.errors.total(), 3u);
  }
  {
    // The same short body with the connection left open: only --timeout ends the wait.
    CannedServer srv("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhello");
    const Options o = options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()),
                               "--rate", "100", "--num-conns", "3", "--timeout", "0.2"});
    const RunResult r = run(o);
    EXPECT_EQ(r.stats.errors[ErrorClass::kClientTimo], 3u);
  }
  {
    CannedServer srv("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope");
    const Options o = options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()),
                               "--rate", "100", "--num-conns", "3", "--num-calls", "2"});
    const RunResult r = run(o);
    EXPECT_EQ(r.stats.errors[ErrorClass::kHttp4xx], 6u);
    EXPECT_EQ(r.stats.replies_by_class[4], 6u);
    EXPECT_EQ(r.stats.errors.httperf_total(), 0u);
    EXPECT_EQ(r.stats.sessions_completed, 3u);
  }
}

TEST(Engine, MaxConnsFailsSessionsDueWhileTheCapIsReached) {
  // A server that never answers holds every connection until the timeout.
  CannedServer srv("");
  const Options o =
      options({"--server", "127.0.0.1", "--port", std::to_string(srv.port()), "--rate", "100",
               "--num-conns", "5", "--max-conns", "2", "--timeout", "1"});
  const RunResult r = run(o);
  EXPECT_EQ(r.stats.errors[ErrorClass::kClientTimo], 2u);
  EXPECT_EQ(r.stats.errors[ErrorClass::kFdUnavail], 3u);
  EXPECT_EQ(r.stats.max_open_connections, 2u);
  EXPECT_EQ(r.stats.connections, 5u);  // initiated, as httperf counts a connection out of fds
}

}  // namespace
}  // namespace weft::load
