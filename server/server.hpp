// The server as a whole: runtime, listeners, connections, logs and signals.
//
// Server is the lifecycle of one run: open() sets everything up (the runtime from the
// config, the listeners, the document root, the metrics and their gauges, the fd budget
// and the cache, the access log), and serve() runs it until a signal and shuts it down.
//
// Shutdown order (SIGTERM or SIGINT): stop accepting (acceptors cancelled, listening sockets
// closed) -> idle keep-alive connections closed, busy ones finish their response and close
// -> after timeouts.shutdown_grace, whatever is left is cancelled -> logs flushed -> exit 0.
// SIGHUP reopens the error and access logs (for logrotate).
#pragma once

#include <memory>
#include <vector>

#include "runtime/scheduler.hpp"
#include "server/config.hpp"
#include "server/listener.hpp"
#include "server/server_context.hpp"

namespace weft::http {

/// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (so in every thread it starts)
/// and ignores SIGPIPE; call first thing in main.
void block_server_signals();

class Server {
 public:
  /// Makes a server for `config` (which must outlive it); opens nothing yet.
  explicit Server(const Config& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Opens the signalfd, the runtime, the listeners, the root, the logs and the cache;
  /// returns false, with a critical log line, when the server cannot start.
  bool open();

  /// Serves until SIGTERM or SIGINT, then shuts down gracefully (see above).
  void serve();

 private:
  bool open_sockets();
  void add_gauges(uint64_t fd_limit);
  void spawn_acceptors(rt::CancelToken& stop, std::vector<rt::FiberHandle>& out);
  int wait_for_stop_signal();
  void drain();
  // Gives back what a burst left in the stack and working-state pools (runtime.pool_idle).
  void trim_pools();

  const Config& config_;
  int signal_fd_ = -1;
  std::unique_ptr<rt::Runtime> runtime_;
  std::unique_ptr<ServerContext> ctx_;
  std::vector<Listener> listeners_;
  int metrics_fd_ = -1;
};

/// Runs a Server with `config` until SIGTERM or SIGINT (graceful) and returns the process
/// exit status: 0 after a clean shutdown, 1 when it could not start.
int run_server(const Config& config);

}  // namespace weft::http
