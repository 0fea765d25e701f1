// The server as a whole: runtime, listeners, connections, logs, signals and reloads.
//
// Server is the lifecycle of one run: open() sets everything up (the runtime from the
// config, the listeners, the metrics and their gauges, and the first generation), and
// serve() runs it until a signal and shuts it down.
//
// A generation is one loaded configuration and the ServerContext built from it (document
// root, MIME map, fd cache, access log, pools, TLS certificates). SIGHUP (weft -s reload)
// loads the configuration again; a good one becomes a new generation that the acceptors
// use for every connection accepted from then on, without closing a listening socket. The
// old generation retires: its connections finish on the configuration they started with;
// after timeouts.shutdown_grace its idle keep-alive connections are closed and busy ones
// close after their response; after another grace the rest are cancelled; once the last
// has gone it is freed. What a running server cannot change (the runtime, the I/O backend,
// the listening and metrics addresses, the error log's destination) refuses the reload with
// one error line naming the keys, and the running generation keeps serving, as it does when
// the new file does not parse.
//
// Limits are the server's, not a generation's: every generation counts its connections in
// the server's one set of connection slots (limits.max_connections of the live
// configuration), and a retiring generation's fd cache is emptied (responses in flight keep
// their files) and caches nothing more, so a reload lets neither the connections nor the
// cached descriptors exceed what one generation may hold. Its change watcher runs until it
// is freed.
//
// Signals: SIGTERM, SIGINT and SIGQUIT shut down gracefully. Shutdown order: stop accepting
// (acceptors cancelled, listening sockets closed) -> every generation's idle keep-alive
// connections closed, busy ones finish their response and close -> after
// timeouts.shutdown_grace, whatever is left is cancelled -> logs flushed -> exit 0. SIGUSR1
// reopens the error and access logs (for logrotate), as SIGHUP also does. A generation whose
// access log is the same file as the live one's (path and format) shares that log, so lines
// of old and new connections never interleave and a reopen reaches both; a retiring
// generation with a file of its own has it reopened too.
//
// Threads: construct, open() and serve() from one thread, outside any runtime.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/scheduler.hpp"
#include "server/core/config.hpp"
#include "server/net/listener.hpp"
#include "server/net/server_context.hpp"

namespace weft::http {

/// Blocks the signals the server reads (SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1) in the
/// calling thread (so in every thread it starts) and ignores SIGPIPE; call first in main.
void block_server_signals();

class Server {
 public:
  /// Loads the configuration again for a reload; throws ConfigError when it cannot be used.
  using ConfigLoader = std::function<Config()>;

  /// Makes a server for `config`; a reload takes its configuration from `reload` (without
  /// one, SIGHUP only reopens the logs). Opens nothing yet.
  explicit Server(Config config, ConfigLoader reload = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Opens the signalfd, the runtime, the listeners, the pid file and the first generation;
  /// returns false, with a critical log line, when the server cannot start.
  bool open();

  /// Serves until SIGTERM, SIGINT or SIGQUIT, reloading on SIGHUP, then shuts down
  /// gracefully (see above).
  void serve();

 private:
  struct Generation;

  bool open_sockets();
  std::unique_ptr<Generation> make_generation(Config config);
  // Returns the access log `c` asks for: the live generation's when it writes the same file
  // in the same format, else a new one (throws ConfigError as AccessLog::create).
  std::shared_ptr<AccessLog> access_log_for(const Config& c);
  // Reopens every generation's access log once (SIGUSR1, SIGHUP).
  void reopen_access_logs();
  void start_housekeeping(Generation& g);
  void add_gauges();
  // The compressor's counters and gauges ([compression]), among the gauges.
  void add_compression_metrics();
  void spawn_acceptors(rt::CancelToken& stop, std::vector<rt::FiberHandle>& out);
  int wait_for_stop_signal();
  void reload();
  void retire(Generation* g);
  void drain();
  // Gives back what a burst left in the stack and working-state pools (runtime.pool_idle).
  void trim_pools();
  // Writes this process's id to server.pid_file and holds the file locked; returns false
  // when another running weft holds it (a failure to write is logged, not fatal).
  bool write_pid_file();
  // Removes the pid file if it still names this process, and drops the lock.
  void remove_pid_file();

  Config config_;  // as started: what a reload cannot change is read from here
  ConfigLoader reload_;
  int signal_fd_ = -1;
  int pid_fd_ = -1;  // server.pid_file, locked (flock) while this server holds it
  uint64_t fd_limit_ = 0;
  std::unique_ptr<rt::Runtime> runtime_;
  std::shared_ptr<Metrics> metrics_;
  // limits.max_connections across every generation (each context counts in it).
  std::shared_ptr<ConnectionSlots> slots_ = std::make_shared<ConnectionSlots>(0);
  std::vector<Listener> listeners_;
  int metrics_fd_ = -1;
  // Generations that served so far (weft_config_generation): written by the main fiber,
  // read by the metrics endpoint's.
  std::atomic<unsigned> generations_{0};
  CurrentContext current_;
  std::unique_ptr<Generation> live_;  // the generation new connections go to
  // Generations retiring (each owned by its retirement fiber); for shutdown and the pools.
  std::mutex retired_mu_;
  std::vector<Generation*> retired_;
  std::vector<rt::FiberHandle> retirements_;
};

/// Runs a Server with `config` (reloads from `reload`) until SIGTERM, SIGINT or SIGQUIT
/// (graceful) and returns the process exit status: 0 after a clean shutdown, 1 when it could
/// not start.
int run_server(Config config, Server::ConfigLoader reload = {});

}  // namespace weft::http
