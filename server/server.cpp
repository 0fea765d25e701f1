#include "server/server.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/semaphore.hpp"
#include "server/config_file.hpp"
#include "server/files/fd_budget.hpp"
#include "server/net/listener.hpp"
#include "server/net/server_context.hpp"
#include "server/ops/access_log.hpp"
#include "server/ops/log.hpp"
#include "server/ops/metrics.hpp"
#include "server/tls/kernel_tls.hpp"
#include "server/tls/tls_config.hpp"
#include "server/tls/tls_library.hpp"

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
  for (int sig : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1}) sigaddset(&sigs, sig);
  return sigs;
}

// What a running server cannot change: its runtime and I/O driver, its sockets, the error
// log's destination and its pid file. A reload that changes one of them is refused.
bool needs_restart(std::string_view key) {
  for (std::string_view prefix : {"runtime.", "metrics."}) {
    if (key.starts_with(prefix)) return true;
  }
  for (std::string_view k :
       {"server.listen", "server.listen_tls", "server.backlog", "server.reuseport",
        "server.defer_accept", "server.pid_file", "io.backend", "io.iowq_bounded",
        "io.iowq_unbounded", "io.ring_entries", "log.error_log"}) {
    if (key == k) return true;
  }
  return false;
}

// Waits for a context's connections to end, with deadlines: a fiber of its own waits on
// the WaitGroup, and the owner waits for that fiber's word as long as it likes. Destroying
// the watch waits for the connections to end (cancel them first when time is up).
class DrainWatch {
 public:
  explicit DrainWatch(ServerContext& ctx)
      : waiter_(rt::spawn(
            [&ctx, this] {
              ctx.connections.wait();
              done_.release();
            },
            {.name = "drain"})) {}
  ~DrainWatch() {
    if (!finished_) done_.acquire();
    waiter_.join();
  }
  DrainWatch(const DrainWatch&) = delete;
  DrainWatch& operator=(const DrainWatch&) = delete;

  /// Returns true once no connection is left, false when `deadline` came first.
  bool wait_until(rt::TimePoint deadline) {
    if (!finished_) finished_ = done_.try_acquire_until(deadline);
    return finished_;
  }

 private:
  rt::Semaphore done_{0};
  bool finished_ = false;
  rt::FiberHandle waiter_;
};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return "signal";
  }
}

// The start log's line on who makes the TLS records (tls.ktls, and what the kernel has).
std::string kernel_tls_line(KernelTls ktls) {
  if (!kLibraryHasKernelTls)
    return std::string("kTLS not in ") + kTlsLibrary + ": records in user space";
  if (ktls == KernelTls::off) return "kTLS off (tls.ktls): records in user space";
  if (kernel_tls_available()) {
    return "kTLS available: the kernel makes the records of sessions whose cipher it has, "
           "file bodies go by sendfile/splice";
  }
  return ktls == KernelTls::on ? "kTLS asked (tls.ktls = \"on\") but not available: each "
                                 "session falls back to records in user space"
                               : "kTLS not available: records in user space";
}

}  // namespace

// One loaded configuration and what it owns (see server.hpp).
struct Server::Generation {
  Config config;
  std::unique_ptr<ServerContext> ctx;
  unsigned number = 0;
  rt::Semaphore sweeper_stop{0};
  rt::CancelToken watch_stop;
  rt::FiberHandle sweeper;
  std::vector<rt::FiberHandle> watchers;  // one per site

  // Ends the fd caches' housekeeping fibers (on a fiber).
  void stop_housekeeping() {
    sweeper_stop.release();
    watch_stop.cancel();
    if (sweeper.joinable()) sweeper.join();
    for (auto& w : watchers) {
      if (w.joinable()) w.join();
    }
  }
};

void block_server_signals() {
  sigset_t sigs = server_signals();
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  // A client that goes away must never kill the server.
  ::signal(SIGPIPE, SIG_IGN);
}

Server::Server(Config config, ConfigLoader reload)
    : config_(std::move(config)), reload_(std::move(reload)) {}

Server::~Server() {
  runtime_.reset();  // every fiber has ended: nothing uses a context any more
  live_.reset();
  for (auto& l : listeners_) ::close(l.fd);
  if (metrics_fd_ >= 0) ::close(metrics_fd_);
  if (signal_fd_ >= 0) ::close(signal_fd_);
  remove_pid_file();
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
  // Before the sockets: once weft takes connections, weft -s finds it (a signal sent before
  // serve() waits in the signalfd).
  if (!write_pid_file()) return false;
  fd_limit_ = raise_fd_limit();
  try {
    runtime_ = std::make_unique<rt::Runtime>(runtime_options(config_));
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return false;
  }
  if (!open_sockets()) return false;
  metrics_ = std::make_shared<Metrics>(runtime_->processors());
  live_ = make_generation(config_);
  if (!live_) return false;
  config_ = live_->config;  // with the sizes it was given
  live_->number = 1;
  slots_->set_limit(config_.max_connections);
  current_.publish(live_->ctx.get());
  generations_.store(1, std::memory_order_relaxed);
  add_gauges();
  std::string addrs;
  for (const auto& a : config_.listen) addrs += (addrs.empty() ? "" : ", ") + a.to_string();
  for (const auto& a : config_.listen_tls) {
    addrs += (addrs.empty() ? "" : ", ") + a.to_string() + " (TLS)";
  }
  spdlog::info("weft {} serving {} on {} with {} processor(s), {} socket(s); fd limit {}",
               kWeftVersion, config_.root.string(), addrs, runtime_->processors(),
               listeners_.size(), fd_limit_);
  if (config_.metrics) {
    spdlog::info("metrics on http://{}/metrics", config_.metrics_listen.to_string());
  }
  if (!config_.listen_tls.empty()) spdlog::info("{}", kernel_tls_line(config_.tls_ktls));
  return true;
}

bool Server::open_sockets() {
  try {
    // The metrics listener first: once weft's own addresses take connections, /metrics
    // does too (a client that waited for the first could be refused by the second:
    // test_overload was, under ASan on a loaded machine).
    if (config_.metrics) metrics_fd_ = open_listener(config_.metrics_listen, 64, false);
    const unsigned defer = config_.defer_accept ? defer_accept_seconds(config_) : 0;
    listeners_ = open_listeners(config_.listen, config_.backlog, config_.reuseport,
                                runtime_->processors(), defer);
    std::vector<Listener> tls = open_listeners(config_.listen_tls, config_.backlog,
                                               config_.reuseport, runtime_->processors(), defer);
    for (auto& l : tls) {
      l.tls = true;
      listeners_.push_back(std::move(l));
    }
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return false;
  }
  return true;
}

std::unique_ptr<Server::Generation> Server::make_generation(Config config) {
  auto g = std::make_unique<Generation>();
  unsigned procs = runtime_->processors();
  size_from_fd_limit(config, fd_limit_, listeners_.size(), procs);
  g->config = std::move(config);
  const Config& c = g->config;
  FdBudget budget = plan_fd_budget(c, fd_limit_, listeners_.size(), procs);
  spdlog::log(budget.lowered() ? spdlog::level::warn : spdlog::level::info, "{}",
              budget.describe());
  try {
    g->ctx = std::make_unique<ServerContext>(c, slots_);
    g->ctx->access_log = access_log_for(c);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return nullptr;
  }
  ServerContext& ctx = *g->ctx;
  ctx.metrics = metrics_;
  if (std::string err = ctx.open_sites(ctx.metrics.get(), budget.cache_entries); !err.empty()) {
    spdlog::critical("{}", err);
    return nullptr;
  }
  // Read from their files for each generation: a reload (SIGHUP) renews the certificates.
  if (!c.listen_tls.empty()) {
    std::string err;
    ctx.tls = open_tls(c, err);
    if (!ctx.tls) {
      spdlog::critical("{}", err);
      return nullptr;
    }
    for (const auto& note : ctx.tls->notes()) spdlog::warn("{}", note);
  }
  // Read area: the longest head the parser accepts plus one read (the arena for queued
  // response heads comes on top, see ConnectionWork).
  std::size_t read_capacity = c.max_header_bytes + 4096;
  for (unsigned i = 0; i < procs; ++i) {
    ctx.pools.push_back(std::make_unique<ResourcePool>(c, read_capacity, c.pipe_size));
  }
  return g;
}

std::shared_ptr<AccessLog> Server::access_log_for(const Config& c) {
  // One log per file, whichever generations write it: two streams with a writer thread each
  // would interleave their lines, and a reopen must reach every writer of the file.
  if (live_ && live_->ctx->access_log && live_->config.access_log == c.access_log &&
      live_->config.access_format == c.access_format) {
    return live_->ctx->access_log;
  }
  return AccessLog::create(c);
}

void Server::reopen_access_logs() {
  std::vector<AccessLog*> done;
  auto reopen = [&done](const std::shared_ptr<AccessLog>& log) {
    if (!log || std::find(done.begin(), done.end(), log.get()) != done.end()) return;
    log->reopen();
    done.push_back(log.get());
  };
  reopen(live_->ctx->access_log);
  // A retiring generation's own file too (a reload changed the path): it may still log.
  std::lock_guard lock(retired_mu_);
  for (Generation* g : retired_) reopen(g->ctx->access_log);
}

void Server::start_housekeeping(Generation& g) {
  ServerContext& ctx = *g.ctx;
  // The fd caches' housekeeping: drop inactive entries every second; follow inotify (each
  // site's root has its watch, so a vhost's files are as fresh as the main site's).
  g.sweeper = rt::spawn(
      [&ctx, &g] {
        while (!g.sweeper_stop.try_acquire_for(std::chrono::seconds(1))) {
          ctx.files->sweep();
          for (auto& v : ctx.vhosts) v->files->sweep();
        }
      },
      {.name = "fd-cache-sweeper"});
  auto watch = [&g](FdCache& files) {
    g.watchers.push_back(
        rt::spawn([&files, &g] { files.watch_loop(g.watch_stop); }, {.name = "fd-cache-inotify"}));
  };
  watch(*ctx.files);
  for (auto& v : ctx.vhosts) watch(*v->files);
}

namespace {

// Returns the process id the file at `path` holds, 0 when it holds none.
long read_pid(const std::filesystem::path& path) {
  char text[32] = {};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  return n > 0 ? std::strtol(text, nullptr, 10) : 0;
}

}  // namespace

bool Server::write_pid_file() {
  if (config_.pid_file.empty()) return true;
  const std::string path = config_.pid_file.string();
  // /run/weft is made by systemd (RuntimeDirectory); a server started by hand makes it.
  ::mkdir(config_.pid_file.parent_path().c_str(), 0755);
  // Held locked while the server runs: a second weft with the same pid file must neither
  // take it over (weft -s would lose this one) nor, failing to start, remove it.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      spdlog::critical(
          "pid file {} is held by a running weft (pid {}); stop that one, or give "
          "this one a server.pid_file of its own",
          path, read_pid(config_.pid_file));
      return false;
    }
    errno = err;
  } else if (fd >= 0) {
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0 &&
        ::pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size())) {
      pid_fd_ = fd;
      return true;
    }
    const int err = errno;
    ::close(fd);
    errno = err;
  }
  spdlog::error("pid file {}: {} (weft -s will not find this server)", path, std::strerror(errno));
  return true;
}

void Server::remove_pid_file() {
  if (pid_fd_ < 0) return;
  // Only a file that still names this process: one replaced meanwhile belongs to another.
  if (read_pid(config_.pid_file) == ::getpid()) ::unlink(config_.pid_file.c_str());
  ::close(std::exchange(pid_fd_, -1));  // and the lock with it
}

void Server::add_compression_metrics() {
  // Of the generation new connections go to: its compressor (a reload starts a new one, so
  // these counters start again from 0 then, as after a restart).
  auto read = [this](uint64_t Compressor::Stats::*member) {
    return [this, member] {
      CurrentContext::Pin pin(current_);
      return static_cast<double>(pin.ctx().compressor->stats().*member);
    };
  };
  using S = Compressor::Stats;
  metrics_->add_counter("weft_compression_hits_total",
                        "Responses sent from a representation compressed on the fly",
                        read(&S::hits));
  metrics_->add_counter("weft_compression_misses_total",
                        "Responses sent as identity to a client accepting a coding weft "
                        "compresses on the fly (none cached yet)",
                        read(&S::misses));
  metrics_->add_counter("weft_compression_saved_bytes_total",
                        "Body bytes not sent thanks to compression on the fly (whole GETs)",
                        read(&S::saved_bytes));
  metrics_->add_counter("weft_compression_evictions_total",
                        "Compressed representations dropped for compression.cache_size",
                        read(&S::evictions));
  metrics_->add_counter("weft_compression_stale_total",
                        "Compressed representations dropped because their file changed",
                        read(&S::stale));
  metrics_->add_counter("weft_compressions_total", "Compressions run by the workers",
                        read(&S::compressions));
  metrics_->add_gauge("weft_compressions_running", "Compressions running now", read(&S::running));
  metrics_->add_gauge("weft_compressions_queued", "Compressions waiting for a worker",
                      read(&S::queued));
  metrics_->add_gauge("weft_compression_cache_bytes",
                      "Bytes of compressed representations held (compression.cache_size)",
                      read(&S::cache_bytes));
  metrics_->add_gauge("weft_compression_cache_entries",
                      "Compressed representations held, being made included",
                      read(&S::cache_entries));
}

void Server::add_gauges() {
  rt::Runtime& runtime = *runtime_;
  auto gauge = [this](const char* name, const char* help, std::function<double()> read) {
    metrics_->add_gauge(name, help, std::move(read));
  };
  // Of the generation new connections go to (pinned while read: a reload may retire it).
  auto current = [this](auto read) {
    return [this, read] {
      CurrentContext::Pin pin(current_);
      return static_cast<double>(read(pin.ctx()));
    };
  };
  gauge("weft_fd_cache_entries", "Entries in the fd cache",
        current([](ServerContext& c) { return c.files->size(); }));
  gauge("weft_fd_cache_bytes", "Bytes of file contents in the fd cache",
        current([](ServerContext& c) { return c.files->bytes(); }));
  gauge("weft_fd_cache_watched_dirs",
        "Directories of the default site inotify watches (at most fd_cache.max_watches)",
        current([](ServerContext& c) { return c.files->watched_dirs(); }));
  add_compression_metrics();
  gauge("weft_connections_idle",
        "Connections waiting for their next request without a fiber (reclaimable when "
        "limits.max_connections are open)",
        current([](ServerContext& c) { return c.slots.idle(); }));
  gauge("weft_connections_reclaimed",
        "Idle connections closed so far to make room for a new one at limits.max_connections",
        current([](ServerContext& c) { return c.slots.reclaimed(); }));
  gauge("weft_fibers", "Fibers alive (running, ready or parked)",
        [&runtime] { return static_cast<double>(runtime.live_fibers()); });
  gauge("weft_ready_queue_length", "Fibers ready to run, all processors", [&runtime] {
    double n = 0;
    for (unsigned i = 0; i < runtime.processors(); ++i) n += runtime.processor(i).queue_length();
    return n;
  });
  gauge("weft_config_generation", "Configurations loaded so far (1 at start, +1 per reload)",
        [this] { return static_cast<double>(generations_.load(std::memory_order_relaxed)); });
  const Config& config = config_;
  gauge("weft_iowq_max_workers_bounded", "io_uring bounded kernel workers allowed per processor",
        [&config] { return static_cast<double>(config.iowq_bounded); });
  gauge("weft_iowq_max_workers_unbounded",
        "io_uring unbounded kernel workers allowed per processor",
        [&config] { return static_cast<double>(config.iowq_unbounded); });
  gauge("weft_fd_limit", "RLIMIT_NOFILE in force",
        [this] { return static_cast<double>(fd_limit_); });
}

void Server::spawn_acceptors(rt::CancelToken& stop, std::vector<rt::FiberHandle>& out) {
  // With SO_REUSEPORT each processor has sockets of its own (open_listeners made one per
  // processor and address); with one shared socket per address, every processor gets an
  // acceptor on it.
  unsigned rounds = config_.reuseport ? 1 : runtime_->processors();
  for (unsigned i = 0; i < rounds; ++i) {
    for (const auto& l : listeners_) {
      out.push_back(
          rt::spawn([this, l, &stop] { accept_loop(current_, l, stop); }, {.name = "acceptor"}));
    }
  }
  if (metrics_fd_ >= 0) {
    out.push_back(rt::spawn([this,
                             l = Listener{config_.metrics_listen, metrics_fd_,
                                          std::make_shared<ListenerAdmission>(metrics_fd_)},
                             &stop] { accept_loop(current_, l, stop, Site::metrics); },
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
    const auto sig = static_cast<int>(si.ssi_signo);
    if (sig != SIGHUP && sig != SIGUSR1) return sig;
    spdlog::info("{}: reopening logs", sig == SIGHUP ? "SIGHUP" : "SIGUSR1");
    reopen_error_log();
    reopen_access_logs();
    if (sig == SIGHUP) reload();
  }
}

void Server::reload() {
  if (!reload_) return;
  Config next;
  try {
    next = reload_();
  } catch (const ConfigError& e) {
    spdlog::error("reload refused, still serving generation {}: {}", live_->number, e.what());
    return;
  }
  std::string fixed;
  for (const auto& key : changed_keys(config_, next)) {
    if (needs_restart(key)) fixed += (fixed.empty() ? "" : ", ") + key;
  }
  if (!fixed.empty()) {
    spdlog::error(
        "reload refused, still serving generation {}: {} cannot change without a "
        "restart",
        live_->number, fixed);
    return;
  }
  std::unique_ptr<Generation> g = make_generation(std::move(next));
  if (!g) {
    spdlog::error("reload refused, still serving generation {}", live_->number);
    return;
  }
  spdlog::set_level(spdlog::level::from_str(g->config.log_level));
  slots_->set_limit(g->config.max_connections);
  start_housekeeping(*g);
  g->number = live_->number + 1;   // counted once it serves: a refused reload is no generation
  current_.publish(g->ctx.get());  // returns once no acceptor admits into the old one
  generations_.store(g->number, std::memory_order_relaxed);
  std::swap(g, live_);
  spdlog::info(
      "reloaded: generation {} serves new connections; generation {} retires with "
      "{} connection(s)",
      live_->number, g->number, g->ctx->connections.count());
  retire(g.release());
}

void Server::retire(Generation* g) {
  {
    std::lock_guard lock(retired_mu_);
    retired_.push_back(g);
  }
  retirements_.push_back(rt::spawn(
      [this, g] {
        ServerContext& ctx = *g->ctx;
        // Its cached descriptors go back now: the live generation's cache has the budget.
        ctx.files->retire();
        for (auto& v : ctx.vhosts) v->files->retire();
        const rt::Duration grace = g->config.timeouts_shutdown_grace;
        {
          DrainWatch watch(ctx);
          if (!watch.wait_until(rt::now() + grace)) {
            ctx.begin_drain();  // idle ones close now, busy ones after their response
            if (!watch.wait_until(rt::now() + grace)) ctx.cancel_all();
          }
        }
        g->stop_housekeeping();  // the change watcher ran as long as it served
        {
          std::lock_guard lock(retired_mu_);
          std::erase(retired_, g);
        }
        if (ctx.access_log) ctx.access_log->flush();
        spdlog::debug("generation {} retired", g->number);
        delete g;
      },
      {.name = "retire"}));
}

void Server::trim_pools() {
  // Keep a few of each per pool: the next burst's first connections start without a fault.
  constexpr std::size_t kKeep = 8;
  std::size_t freed = runtime_->trim_stacks(kKeep);
  {
    CurrentContext::Pin pin(current_);
    for (auto& pool : pin.ctx().pools) freed += pool->trim(kKeep);
  }
  // The working states were malloc'd: glibc keeps freed chunks in its arenas (and
  // fragmentation keeps them from the heap's top), so give their pages back explicitly.
  // Only after something was freed: a pass over every arena is not free.
  if (freed > 0) ::malloc_trim(0);
}

void Server::drain() {
  ServerContext& ctx = *live_->ctx;
  {
    std::lock_guard lock(retired_mu_);
    for (Generation* g : retired_) g->ctx->begin_drain();
  }
  ctx.begin_drain();
  {
    DrainWatch watch(ctx);
    // The live generation's grace: timeouts are among what a reload changes.
    if (!watch.wait_until(rt::now() + live_->config.timeouts_shutdown_grace)) {
      spdlog::warn("grace period over: cancelling {} connection(s)", ctx.connections.count());
      ctx.cancel_all();
    }
  }
  {
    // Retiring generations had the same grace: cancel what they still hold. Under the lock
    // a listed generation is not freed (its fiber takes it off the list first).
    std::lock_guard lock(retired_mu_);
    for (Generation* g : retired_) g->ctx->cancel_all();
  }
  for (auto& r : retirements_) r.join();
}

void Server::serve() {
  runtime_->run([&] {
    rt::CancelToken stop;
    std::vector<rt::FiberHandle> acceptors;
    spawn_acceptors(stop, acceptors);
    start_housekeeping(*live_);
    // Memory a burst left in the pools goes back once unused for runtime.pool_idle.
    rt::Semaphore trimmer_stop(0);
    auto trimmer = rt::spawn(
        [this, &trimmer_stop] {
          if (config_.pool_idle.count() == 0) return;
          while (!trimmer_stop.try_acquire_for(config_.pool_idle)) trim_pools();
        },
        {.name = "pool-trimmer"});
    int signo = wait_for_stop_signal();
    spdlog::info("{}: shutting down (grace {} ms, {} connection(s) open)", signal_name(signo),
                 live_->config.timeouts_shutdown_grace.count(), live_->ctx->slots.open());
    stop.cancel();
    trimmer_stop.release();
    trimmer.join();
    live_->stop_housekeeping();
    for (auto& a : acceptors) a.join();
    for (auto& l : listeners_) ::close(std::exchange(l.fd, -1));
    if (metrics_fd_ >= 0) ::close(std::exchange(metrics_fd_, -1));
    drain();
  });
  if (live_->ctx->access_log) live_->ctx->access_log->flush();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
}

int run_server(Config config, Server::ConfigLoader reload) {
  Server server(std::move(config), std::move(reload));
  if (!server.open()) return 1;
  server.serve();
  return 0;
}

}  // namespace weft::http
