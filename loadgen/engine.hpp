// The weft-load engine: runs one load test on weft's fiber runtime and returns its figures.
//
// One run is one fresh Runtime of --threads processors with the I/O driver (io_uring, or
// epoll when io_uring is unavailable or --backend asks for it). On it:
//
//   - T scheduler fibers (T = --threads) each walk their own copy of the Schedule and keep
//     every T-th session; at a session's due time (rt::sleep_until) a scheduler spawns the
//     session's fiber and goes straight on to the next due time. It never waits for a
//     session: the load is open. Sessions already due when a scheduler wakes up are spawned
//     together; their count is the "connect burst". In sequential mode (--rate 0) the one
//     scheduler runs each session itself, one after the other, until --duration.
//   - A session fiber records how late it started against its due time (the schedule lag),
//     connects (TCP_NODELAY), runs its bursts (the first call alone, the rest of a burst
//     pipelined after its reply, think time between bursts), checks every reply (status,
//     Content-Length, the manifest's size), and closes. --timeout bounds the connect and each
//     send and receive (no progress for that long: client-timo). A failure ends the session
//     with one error, classified by errors.hpp from the errno.
//   - Latency is recorded twice per reply: from the send of its request, and from the time
//     the call was due: for a session's first call the session's scheduled time (so lag and
//     connect time count), for a later call the moment it became eligible (the reply before
//     it, plus think time).
//
// Statistics: each processor owns a Share (Stats for measured sessions, Stats for warmup
// sessions that are thrown away, a pool of session buffers, progress counters). A fiber
// records into the slot of the processor it runs on at that moment (it may migrate between
// records, never during one), so recording takes no lock and no shared atomic; the slots are
// merged after the runtime stopped. The only shared atomics are the open-connection count
// (one increment and one decrement per connection, which --max-conns needs anyway) and the
// session WaitGroup (once per session).
//
// Warmup: a session whose due time falls inside --warmup runs like any other but records into
// the warmup Stats; the measured window starts at the warmup's end and its CPU time is
// sampled there. The run ends when every session ended (replied, failed or timed out).
//
// Threads: construct, run() and destroy from one thread outside any runtime; progress() may be
// called from any thread at any time while the Engine lives.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <sys/socket.h>

#include "loadgen/client_tls.hpp"
#include "loadgen/options.hpp"
#include "loadgen/schedule.hpp"
#include "loadgen/stats.hpp"
#include "loadgen/workload.hpp"
#include "runtime/latch.hpp"

namespace weft::load {

/// The server's address, resolved once before any run.
struct Target {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string host_header;  // the Host header's value: the --server name, ":port" unless 80
};

/// Resolves `host` and `port` (getaddrinfo, first TCP result); returns nullopt and sets
/// `error` to a one-line reason when the name does not resolve.
std::optional<Target> resolve_target(const std::string& host, std::uint16_t port,
                                     std::string& error);

/// What one run produced.
struct RunResult {
  Stats stats;                   // the measured window, every processor's figures merged
  std::string backend;           // the I/O backend used ("io_uring" or "epoll")
  std::string first_other;       // the first failure counted as "other", described; empty if none
  std::optional<TlsCounts> tls;  // with --tls: the run's handshakes (warmup included)
};

/// Live counts for the progress line (approximate: read while the engine runs).
struct Progress {
  double elapsed_s = 0.0;  // since the run started (warmup included)
  std::uint64_t sessions = 0;
  std::uint64_t replies = 0;
  std::uint64_t errors = 0;
  std::uint64_t open = 0;  // connections open now
  double lag_max_ms = 0.0;
  bool running = false;
};

class Engine {
 public:
  /// Prepares runs of `options` against `target`, taking sessions from `source` (which must
  /// outlive the engine); starts nothing. Throws std::runtime_error when --tls cannot be set up.
  Engine(const Options& options, const UriSource& source, Target target);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Runs one test at `period` on a fresh runtime and returns its figures once every session
  /// has ended; throws std::runtime_error when the runtime cannot start (e.g. io_uring was
  /// required but is unavailable).
  RunResult run(const Period& period);

  /// Returns the live counts of the run in progress (any thread).
  Progress progress() const;

 private:
  struct Share;
  struct SessionState;
  class Session;
  friend class Session;

  Share& local_slot();
  void schedule_sessions(const Period& period, unsigned k, unsigned of);
  void run_session(std::uint64_t index, std::int64_t due_ns);
  void note_other(const char* what, int err, const char* reason = nullptr);
  // With --tls-resume: one handshake before the test (not counted), so that every connection
  // of the test has its ticket to offer; a server that gives none leaves nothing kept.
  void prime_tls();

  const Options& options_;
  const UriSource& source_;
  Target target_;
  unsigned slots_count_;
  std::unique_ptr<Share[]> slots_;

  // State of the run in progress (set before the runtime starts, read by its fibers).
  std::int64_t start_ns_ = 0;   // steady-clock ns of the run's time 0
  std::int64_t window_ns_ = 0;  // start of the measured window (after warmup)
  std::optional<std::uint64_t> session_limit_;
  std::atomic<bool> window_cpu_taken_{false};
  CpuTimes window_cpu_;
  std::atomic<std::uint64_t> open_{0};
  std::atomic<bool> running_{false};
  std::atomic<std::int64_t> progress_start_ns_{0};
  std::int64_t timeout_ns_ = 0;     // --timeout; 0: none
  std::string request_headers_;     // User-Agent and Host lines, the same in every request
  std::string user_agent_;          // weft-load/VERSION (HTTP/2's user-agent field)
  std::unique_ptr<ClientTls> tls_;  // with --tls
  rt::WaitGroup sessions_wg_;       // sessions spawned and not yet ended
  std::atomic<bool> other_noted_{false};
  std::string first_other_;
};

}  // namespace weft::load
