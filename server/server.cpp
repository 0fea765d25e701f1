// run_server: sets up the runtime, the listeners and the shared state, serves until a
// signal, and shuts down gracefully.
//
// Shutdown order (SIGTERM or SIGINT): stop accepting (acceptors cancelled, listening sockets
// closed) -> idle keep-alive connections closed, busy ones finish their response and close
// -> after timeouts.shutdown_grace, whatever is left is cancelled -> logs flushed -> exit 0.
// SIGHUP reopens the error and access logs (for logrotate).
#include "server/server.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/semaphore.hpp"
#include "server/access_log.hpp"
#include "server/listener.hpp"
#include "server/log.hpp"
#include "server/metrics.hpp"
#include "server/server_context.hpp"

#include "weft_version.hpp"

namespace weft::http {

namespace io = weft::rt::io;

namespace {

// Raises the soft descriptor limit to the hard one; returns the limit in force.
rlim_t raise_fd_limit() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit want = rl;
    want.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur;
}

// Serves GET /metrics in the Prometheus text format on its own listener.
void serve_metrics(ServerContext& ctx, int lfd, rt::CancelToken& stop) {
  while (true) {
    int c = io::accept(lfd, nullptr, nullptr, rt::kNoDeadline, &stop);
    if (c == -ECANCELED) return;
    if (c < 0) {
      rt::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    rt::spawn([&ctx, c] {
      char req[2048];
      std::size_t have = 0;
      auto deadline = rt::now() + std::chrono::seconds(5);
      while (have < sizeof req) {
        int64_t n = io::recv(c, req + have, sizeof req - have, 0, deadline);
        if (n <= 0) break;
        have += static_cast<std::size_t>(n);
        if (std::string_view(req, have).find("\r\n\r\n") != std::string_view::npos) break;
      }
      std::string_view head(req, have);
      std::string body;
      std::string resp;
      if (head.starts_with("GET /metrics ") || head.starts_with("GET /metrics?")) {
        body = ctx.metrics->render();
        resp = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n";
      } else {
        body = "not found\n";
        resp = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n";
      }
      resp += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
      resp += body;
      io::send_all(c, resp.data(), resp.size(), 0, rt::now() + std::chrono::seconds(5));
      ::close(c);
    }).detach();
  }
}

}  // namespace

namespace {

sigset_t server_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  return sigs;
}

}  // namespace

void block_server_signals() {
  sigset_t sigs = server_signals();
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  // A client that goes away must never kill the server.
  ::signal(SIGPIPE, SIG_IGN);
}

int run_server(const Config& config) {
  // Signals are read from a signalfd by the main fiber; main() blocked them already, and
  // blocking again here keeps run_server usable on its own (tests).
  block_server_signals();
  sigset_t sigs = server_signals();
  int sfd = ::signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) {
    spdlog::critical("signalfd: {}", std::strerror(errno));
    return 1;
  }

  rlim_t fd_limit = raise_fd_limit();
  rt::IoOptions io_opts;
  io_opts.backend = config.backend == IoBackend::io_uring ? rt::IoBackendKind::io_uring
                    : config.backend == IoBackend::epoll  ? rt::IoBackendKind::epoll
                                                          : rt::IoBackendKind::automatic;
  io_opts.ring_entries = config.ring_entries;
  io_opts.iowq_bounded = config.iowq_bounded;
  io_opts.iowq_unbounded = config.iowq_unbounded;

  rt::RuntimeOptions ro;
  ro.processors = config.processors;
  ro.pin = config.pin_processors;
  ro.stack_size = config.stack_size;
  ro.spin = config.spin;
  ro.help_age = config.help_age;
  try {
    ro.make_driver = rt::make_io_driver_factory(io_opts);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }

  ServerContext ctx(config);
  std::vector<Listener> listeners;
  int metrics_fd = -1;
  try {
    ctx.access_log = AccessLog::create(config);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  rt::Runtime runtime(ro);
  unsigned procs = runtime.processors();
  try {
    // The metrics listener first: once weft's own addresses take connections, /metrics
    // does too (a client that waited for the first could be refused by the second:
    // test_overload was, under ASan on a loaded machine).
    if (config.metrics) metrics_fd = open_listener(config.metrics_listen, 64, false);
    listeners = open_listeners(config.listen, config.backlog, config.reuseport, procs);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  ctx.root_fd = ::open(config.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (ctx.root_fd < 0) {
    spdlog::critical("document root {}: {}", config.root.string(), std::strerror(errno));
    return 1;
  }
  ctx.metrics = std::make_unique<Metrics>(procs);
  // The fd budget: connections (each a socket, plus a pipe pair while splicing), listeners,
  // rings and the like, and the cache must all fit RLIMIT_NOFILE; the cache gives way.
  std::size_t per_conn = config.body == BodyPath::splice ? 3 : 1;
  std::size_t reserve = 64 + listeners.size() + 4 * std::size_t{procs};
  std::size_t conn_fds = std::size_t{config.max_connections} * per_conn;
  std::size_t cache_entries = config.fd_cache_entries;
  if (conn_fds + reserve + cache_entries > fd_limit) {
    std::size_t room = fd_limit > conn_fds + reserve ? fd_limit - conn_fds - reserve : 0;
    cache_entries = std::max<std::size_t>(room, 16);
    spdlog::warn(
        "fd budget: limit {} < connections {} + cache {} + reserve {}; fd cache "
        "lowered to {} entries (raise the hard RLIMIT_NOFILE or lower "
        "limits.max_connections)",
        fd_limit, conn_fds, config.fd_cache_entries, reserve, cache_entries);
  } else {
    spdlog::info("fd budget: limit {} >= connections {} + fd cache {} + reserve {}", fd_limit,
                 conn_fds, cache_entries, reserve);
  }
  ctx.files =
      std::make_unique<FdCache>(config, ctx.root_fd, ctx.mime, ctx.metrics.get(), cache_entries);
  ctx.metrics->add_gauge("weft_fd_cache_entries", "Entries in the fd cache",
                         [&ctx] { return static_cast<double>(ctx.files->size()); });
  ctx.metrics->add_gauge("weft_fd_cache_bytes", "Bytes of file contents in the fd cache",
                         [&ctx] { return static_cast<double>(ctx.files->bytes()); });
  // Read area: the longest head the parser accepts plus one read (the arena for queued
  // response heads comes on top, see ConnectionWork).
  std::size_t read_capacity = config.max_header_bytes + 4096;
  for (unsigned i = 0; i < procs; ++i) {
    ctx.pools.push_back(std::make_unique<ResourcePool>(config, read_capacity, config.pipe_size));
  }
  ctx.metrics->add_gauge("weft_fibers", "Fibers alive (running, ready or parked)",
                         [&runtime] { return static_cast<double>(runtime.live_fibers()); });
  ctx.metrics->add_gauge("weft_ready_queue_length", "Fibers ready to run, all processors",
                         [&runtime] {
                           double n = 0;
                           for (unsigned i = 0; i < runtime.processors(); ++i) {
                             n += runtime.processor(i).queue_length();
                           }
                           return n;
                         });
  ctx.metrics->add_gauge("weft_iowq_max_workers_bounded",
                         "io_uring bounded kernel workers allowed per processor",
                         [&config] { return static_cast<double>(config.iowq_bounded); });
  ctx.metrics->add_gauge("weft_iowq_max_workers_unbounded",
                         "io_uring unbounded kernel workers allowed per processor",
                         [&config] { return static_cast<double>(config.iowq_unbounded); });
  ctx.metrics->add_gauge("weft_fd_limit", "RLIMIT_NOFILE in force",
                         [fd_limit] { return static_cast<double>(fd_limit); });

  std::string addrs;
  for (const auto& a : config.listen) addrs += (addrs.empty() ? "" : ", ") + a.to_string();
  spdlog::info("weft {} serving {} on {} with {} processor(s), {} socket(s); fd limit {}",
               kWeftVersion, config.root.string(), addrs, procs, listeners.size(), fd_limit);
  if (config.metrics)
    spdlog::info("metrics on http://{}/metrics", config.metrics_listen.to_string());

  runtime.run([&] {
    rt::CancelToken stop;
    std::vector<rt::FiberHandle> acceptors;
    for (const auto& l : listeners) {
      acceptors.push_back(rt::spawn([&ctx, fd = l.fd, &stop] { accept_loop(ctx, fd, stop); },
                                    {.name = "acceptor"}));
    }
    // With one shared socket per address, every processor gets an acceptor on it.
    if (!config.reuseport) {
      for (unsigned i = 1; i < procs; ++i) {
        for (const auto& l : listeners) {
          acceptors.push_back(rt::spawn([&ctx, fd = l.fd, &stop] { accept_loop(ctx, fd, stop); },
                                        {.name = "acceptor"}));
        }
      }
    }
    if (metrics_fd >= 0) {
      acceptors.push_back(
          rt::spawn([&ctx, metrics_fd, &stop] { serve_metrics(ctx, metrics_fd, stop); },
                    {.name = "metrics"}));
    }

    // The fd cache's housekeeping: drop inactive entries every second; follow inotify.
    rt::Semaphore sweeper_stop(0);
    auto sweeper = rt::spawn(
        [&ctx, &sweeper_stop] {
          while (!sweeper_stop.try_acquire_for(std::chrono::seconds(1))) ctx.files->sweep();
        },
        {.name = "fd-cache-sweeper"});
    auto watcher =
        rt::spawn([&ctx, &stop] { ctx.files->watch_loop(stop); }, {.name = "fd-cache-inotify"});

    while (true) {
      signalfd_siginfo si{};
      int64_t n = io::read(sfd, &si, sizeof si);
      if (n != static_cast<int64_t>(sizeof si)) {
        if (n < 0 && n != -EINTR && n != -EAGAIN) {
          spdlog::error("signalfd read: {}", std::strerror(static_cast<int>(-n)));
          rt::sleep_for(std::chrono::milliseconds(100));
        }
        continue;
      }
      if (si.ssi_signo == SIGHUP) {
        spdlog::info("SIGHUP: reopening logs");
        reopen_error_log();
        if (ctx.access_log) ctx.access_log->reopen();
        continue;
      }
      spdlog::info("{}: shutting down (grace {} ms, {} connection(s) open)",
                   si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT", config.shutdown_grace.count(),
                   ctx.open_connections.load());
      break;
    }

    stop.cancel();
    sweeper_stop.release();
    sweeper.join();
    watcher.join();
    for (auto& a : acceptors) a.join();
    for (auto& l : listeners) ::close(l.fd);
    if (metrics_fd >= 0) ::close(metrics_fd);
    ctx.begin_drain();
    rt::TimePoint grace_end = rt::now() + config.shutdown_grace;
    while (ctx.connections.count() > 0 && rt::now() < grace_end) {
      rt::sleep_for(std::chrono::milliseconds(10));
    }
    if (ctx.connections.count() > 0) {
      spdlog::warn("grace period over: cancelling {} connection(s)", ctx.connections.count());
      ctx.cancel_all();
    }
    ctx.connections.wait();
  });
  if (ctx.access_log) ctx.access_log->flush();
  ::close(sfd);
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  return 0;
}

}  // namespace weft::http
