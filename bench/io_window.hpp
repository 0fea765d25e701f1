// The measurement window of an echo run, shared by the load client and the server.
//
// The client (another process) decides when the window starts and ends; the server's CPU
// time, its I/O driver counters and, optionally, a system-call count have to cover the same
// interval. Two pipes carry a handshake: the client writes 'S' on `ctl` and waits for 'k' on
// `reply` before it reads its message count, and at the end reads its count first, then
// writes 'E' and waits for 'k'. On the server a WindowSampler thread answers: at 'S' it
// enables the counter and takes its snapshots, at 'E' it takes them again and disables the
// counter. The skew between the two sides is one pipe hand-off (tens of microseconds)
// against a window of seconds.
//
// System-call counters (both attach to the server process from outside, as the issue asks):
// - perf: `perf stat -D -1 --control fd:CTL,ACK -p PID -e EVENTS`, started with the sampler
//   and disabled; "enable" / "disable" on its control pipe (acknowledged) bound the window
//   exactly. Counts raw_syscalls:sys_enter, io_uring_enter and epoll_pwait2 entries.
// - strace: `strace -c -f -e trace=io_uring_enter -p PID`, started at 'S' (the snapshot
//   waits until every thread shows a tracer in /proc) and interrupted after 'E'. ptrace
//   stops the server at every system call, so throughput under strace says nothing; the
//   count confirms the driver's counter.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "runtime/io_driver.hpp"

#include "bench/child.hpp"

namespace weft::bench {

enum class SyscallCounter { none, perf, strace };

/// The pipes of one run's handshake; made by the parent before it forks either side.
struct WindowPipes {
  int ctl[2] = {-1, -1};    // client -> server: 'S', 'E'
  int reply[2] = {-1, -1};  // server -> client: 'k'

  /// Makes both pipes (close-on-exec); returns false on failure.
  bool open();
  /// Closes whichever ends are still open.
  void close_all();
  /// In the server child: closes the client's ends.
  void keep_server_ends();
  /// In the client child: closes the server's ends.
  void keep_client_ends();
};

/// Client side: asks the server to take its snapshots and waits for them; `wait_reply`
/// reads one byte from the reply pipe (a fiber-friendly read in weft clients). Returns false
/// when the server is gone.
bool window_mark(const WindowPipes& p, char mark, const std::function<bool(int fd)>& wait_reply);

/// Server side: a thread answering the window handshake with snapshots.
class WindowSampler {
 public:
  /// `io_stats` sums the server's I/O driver counters (null: the server has none).
  WindowSampler(const WindowPipes& pipes, SyscallCounter counter,
                std::function<rt::IoStats()> io_stats);
  ~WindowSampler();
  WindowSampler(const WindowSampler&) = delete;
  WindowSampler& operator=(const WindowSampler&) = delete;

  /// Starts the thread (and perf, when counting with it).
  void start();

  /// Waits for the client to close its end, then sets the window's figures: srv_cpu_s,
  /// srv_sys_s, and when measured enters, operations, completions, perf_syscalls,
  /// perf_uring_enters, perf_epoll_waits, strace_uring_enters.
  void finish(Figures& out);

 private:
  struct Snapshot {
    double cpu_s = 0, sys_s = 0;
    rt::IoStats io{};
  };
  Snapshot take() const;
  void loop();
  bool perf_start();
  bool perf_command(const char* cmd);
  void perf_stop(Figures& out);
  bool strace_start();
  void strace_stop(Figures& out);

  int ctl_fd_, reply_fd_;
  SyscallCounter counter_;
  std::function<rt::IoStats()> io_stats_;
  std::thread thread_;
  Snapshot begin_{}, end_{};
  bool have_begin_ = false, have_end_ = false;
  Figures counted_;
  // perf / strace
  int tool_pid_ = -1;
  int perf_ctl_ = -1, perf_ack_ = -1;
  std::string out_path_;
};

}  // namespace weft::bench
