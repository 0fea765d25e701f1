#include "server/server.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/semaphore.hpp"
#include "server/access_log.hpp"
#include "server/fd_budget.hpp"
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

rt::IoOptions io_options(const Config& config) {
  rt::IoOptions o;
  o.backend = config.backend;
  o.ring_entries = config.ring_entries;
  o.iowq_bounded = config.iowq_bounded;
  o.iowq_unbounded = config.iowq_unbounded;
  return o;
}

rt::RuntimeOptions runtime_options(const Config& config) {
  rt::RuntimeOptions o;
  o.processors = config.processors;
  o.pin = config.pin_processors;
  o.stack_size = config.stack_size;
  o.spin = config.spin;
  o.help_age = config.help_age;
  o.make_driver = rt::make_io_driver_factory(io_options(config));  // throws when unusable
  return o;
}

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

Server::Server(const Config& config) : config_(config) {}

Server::~Server() {
  runtime_.reset();  // every fiber has ended: nothing uses the context any more
  ctx_.reset();
  for (auto& l : listeners_) ::close(l.fd);
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

bool Server::open() {
  // Signals are read from a signalfd by the main fiber; main() blocked them already, and
  // blocking again here keeps a Server usable on its own (tests).
  block_server_signals();
  sigset_t sigs = server_signals();
  signal_fd_ = ::signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd_ < 0) {
    spdlog::critical("signalfd: {}", std::strerror(errno));
    return false;
  }
  uint64_t fd_limit = raise_fd_limit();
  try {
    ctx_ = std::make_unique<ServerContext>(config_);
    ctx_->access_log = AccessLog::create(config_);
    runtime_ = std::make_unique<rt::Runtime>(runtime_options(config_));
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return false;
  }
  if (!open_sockets()) return false;
  unsigned procs = runtime_->processors();
  ServerContext& ctx = *ctx_;
  ctx.metrics = std::make_unique<Metrics>(procs);
  FdBudget budget = plan_fd_budget(config_, fd_limit, listeners_.size(), procs);
  spdlog::log(budget.lowered() ? spdlog::level::warn : spdlog::level::info, "{}",
              budget.describe());
  ctx.files = std::make_unique<FdCache>(config_, ctx.root_fd, ctx.mime, ctx.metrics.get(),
                                        budget.cache_entries);
  // Read area: the longest head the parser accepts plus one read (the arena for queued
  // response heads comes on top, see ConnectionWork).
  std::size_t read_capacity = config_.max_header_bytes + 4096;
  for (unsigned i = 0; i < procs; ++i) {
    ctx.pools.push_back(std::make_unique<ResourcePool>(config_, read_capacity, config_.pipe_size));
  }
  add_gauges(fd_limit);
  std::string addrs;
  for (const auto& a : config_.listen) addrs += (addrs.empty() ? "" : ", ") + a.to_string();
  spdlog::info("weft {} serving {} on {} with {} processor(s), {} socket(s); fd limit {}",
               kWeftVersion, config_.root.string(), addrs, procs, listeners_.size(), fd_limit);
  if (config_.metrics) {
    spdlog::info("metrics on http://{}/metrics", config_.metrics_listen.to_string());
  }
  return true;
}

bool Server::open_sockets() {
  try {
    // The metrics listener first: once weft's own addresses take connections, /metrics
    // does too (a client that waited for the first could be refused by the second:
    // test_overload was, under ASan on a loaded machine).
    if (config_.metrics) metrics_fd_ = open_listener(config_.metrics_listen, 64, false);
    listeners_ =
        open_listeners(config_.listen, config_.backlog, config_.reuseport, runtime_->processors());
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return false;
  }
  ctx_->root_fd = ::open(config_.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (ctx_->root_fd < 0) {
    spdlog::critical("document root {}: {}", config_.root.string(), std::strerror(errno));
    return false;
  }
  return true;
}

void Server::add_gauges(uint64_t fd_limit) {
  ServerContext& ctx = *ctx_;
  rt::Runtime& runtime = *runtime_;
  auto gauge = [&ctx](const char* name, const char* help, std::function<double()> read) {
    ctx.metrics->add_gauge(name, help, std::move(read));
  };
  gauge("weft_fd_cache_entries", "Entries in the fd cache",
        [&ctx] { return static_cast<double>(ctx.files->size()); });
  gauge("weft_fd_cache_bytes", "Bytes of file contents in the fd cache",
        [&ctx] { return static_cast<double>(ctx.files->bytes()); });
  gauge("weft_connections_idle",
        "Connections waiting for their next request without a fiber (reclaimable when "
        "limits.max_connections are open)",
        [&ctx] { return static_cast<double>(ctx.slots.idle()); });
  gauge("weft_connections_reclaimed",
        "Idle connections closed so far to make room for a new one at limits.max_connections",
        [&ctx] { return static_cast<double>(ctx.slots.reclaimed()); });
  gauge("weft_fibers", "Fibers alive (running, ready or parked)",
        [&runtime] { return static_cast<double>(runtime.live_fibers()); });
  gauge("weft_ready_queue_length", "Fibers ready to run, all processors", [&runtime] {
    double n = 0;
    for (unsigned i = 0; i < runtime.processors(); ++i) n += runtime.processor(i).queue_length();
    return n;
  });
  const Config& config = config_;
  gauge("weft_iowq_max_workers_bounded", "io_uring bounded kernel workers allowed per processor",
        [&config] { return static_cast<double>(config.iowq_bounded); });
  gauge("weft_iowq_max_workers_unbounded",
        "io_uring unbounded kernel workers allowed per processor",
        [&config] { return static_cast<double>(config.iowq_unbounded); });
  gauge("weft_fd_limit", "RLIMIT_NOFILE in force",
        [fd_limit] { return static_cast<double>(fd_limit); });
}

void Server::spawn_acceptors(rt::CancelToken& stop, std::vector<rt::FiberHandle>& out) {
  ServerContext& ctx = *ctx_;
  // With SO_REUSEPORT each processor has sockets of its own (open_listeners made one per
  // processor and address); with one shared socket per address, every processor gets an
  // acceptor on it.
  unsigned rounds = config_.reuseport ? 1 : runtime_->processors();
  for (unsigned i = 0; i < rounds; ++i) {
    for (const auto& l : listeners_) {
      out.push_back(rt::spawn([&ctx, fd = l.fd, &stop] { accept_loop(ctx, fd, stop); },
                              {.name = "acceptor"}));
    }
  }
  if (metrics_fd_ >= 0) {
    out.push_back(
        rt::spawn([&ctx, fd = metrics_fd_, &stop] { accept_loop(ctx, fd, stop, Site::metrics); },
                  {.name = "metrics"}));
  }
}

int Server::wait_for_stop_signal() {
  while (true) {
    signalfd_siginfo si{};
    int64_t n = io::read(signal_fd_, &si, sizeof si);
    if (n != static_cast<int64_t>(sizeof si)) {
      if (n < 0 && n != -EINTR && n != -EAGAIN) {
        spdlog::error("signalfd read: {}", std::strerror(static_cast<int>(-n)));
        rt::sleep_for(std::chrono::milliseconds(100));
      }
      continue;
    }
    if (si.ssi_signo != SIGHUP) return static_cast<int>(si.ssi_signo);
    spdlog::info("SIGHUP: reopening logs");
    reopen_error_log();
    if (ctx_->access_log) ctx_->access_log->reopen();
  }
}

void Server::trim_pools() {
  // Keep a few of each per pool: the next burst's first connections start without a fault.
  constexpr std::size_t kKeep = 8;
  std::size_t freed = runtime_->trim_stacks(kKeep);
  for (auto& pool : ctx_->pools) freed += pool->trim(kKeep);
  // The working states were malloc'd: glibc keeps freed chunks in its arenas (and
  // fragmentation keeps them from the heap's top), so give their pages back explicitly.
  // Only after something was freed: a pass over every arena is not free.
  if (freed > 0) ::malloc_trim(0);
}

void Server::drain() {
  ServerContext& ctx = *ctx_;
  ctx.begin_drain();
  // A fiber waits for the connections; this one waits for it, or for the end of the grace.
  rt::Semaphore drained(0);
  auto waiter = rt::spawn(
      [&ctx, &drained] {
        ctx.connections.wait();
        drained.release();
      },
      {.name = "drain"});
  if (!drained.try_acquire_until(rt::now() + config_.timeouts_shutdown_grace)) {
    spdlog::warn("grace period over: cancelling {} connection(s)", ctx.connections.count());
    ctx.cancel_all();
    drained.acquire();
  }
  waiter.join();
}

void Server::serve() {
  ServerContext& ctx = *ctx_;
  runtime_->run([&] {
    rt::CancelToken stop;
    std::vector<rt::FiberHandle> acceptors;
    spawn_acceptors(stop, acceptors);
    // The fd cache's housekeeping: drop inactive entries every second; follow inotify.
    rt::Semaphore sweeper_stop(0);
    auto sweeper = rt::spawn(
        [&ctx, &sweeper_stop] {
          while (!sweeper_stop.try_acquire_for(std::chrono::seconds(1))) ctx.files->sweep();
        },
        {.name = "fd-cache-sweeper"});
    auto watcher =
        rt::spawn([&ctx, &stop] { ctx.files->watch_loop(stop); }, {.name = "fd-cache-inotify"});
    // Memory a burst left in the pools goes back once unused for runtime.pool_idle.
    rt::Semaphore trimmer_stop(0);
    auto trimmer = rt::spawn(
        [this, &trimmer_stop] {
          if (config_.pool_idle.count() == 0) return;
          while (!trimmer_stop.try_acquire_for(config_.pool_idle)) trim_pools();
        },
        {.name = "pool-trimmer"});
    int signo = wait_for_stop_signal();
    spdlog::info("{}: shutting down (grace {} ms, {} connection(s) open)",
                 signo == SIGTERM ? "SIGTERM" : "SIGINT", config_.timeouts_shutdown_grace.count(),
                 ctx.slots.open());
    stop.cancel();
    sweeper_stop.release();
    sweeper.join();
    trimmer_stop.release();
    trimmer.join();
    watcher.join();
    for (auto& a : acceptors) a.join();
    for (auto& l : listeners_) ::close(std::exchange(l.fd, -1));
    if (metrics_fd_ >= 0) ::close(std::exchange(metrics_fd_, -1));
    drain();
  });
  if (ctx.access_log) ctx.access_log->flush();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
}

int run_server(const Config& config) {
  Server server(config);
  if (!server.open()) return 1;
  server.serve();
  return 0;
}

}  // namespace weft::http
