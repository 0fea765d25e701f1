// Child runs: one measurement in a forked child process, so that its peak RSS, page faults
// and CPU time belong to that measurement alone.
//
// The parent forks, the child resets its peak-RSS counter (/proc/self/clear_refs, "5"),
// runs the measurement, reads VmHWM and getrusage, writes everything to a pipe as text and
// _exit()s without running destructors (a runtime may still hold parked fibers). A fresh
// process per run also matters for Boost.Fiber: its work_stealing algorithm keeps a static
// barrier and scheduler table, so it can be set up only once per process.
//
// The parent must be single-threaded when it forks (run_in_child, start_child). Two children
// may run at once (a server and its client): start_child() each, then wait_child() each.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft::bench {

/// Named figures a measurement reports, in the order it set them.
class Figures {
 public:
  /// Sets `name` to `value`, replacing an earlier value.
  void set(const std::string& name, double value);
  /// Returns the value of `name`, or nullopt when it was never set.
  std::optional<double> get(const std::string& name) const;
  /// Returns every (name, value) pair.
  const std::vector<std::pair<std::string, double>>& all() const { return values_; }

 private:
  std::vector<std::pair<std::string, double>> values_;
};

struct ChildOptions {
  int cpu = -1;              // pin the child's first thread to this CPU; -1: inherit
  unsigned timeout_s = 120;  // SIGALRM kills a child that runs longer
};

struct ChildResult {
  bool ok = false;
  std::string error;        // why !ok: "timeout", "killed by signal 11", "exit status 3"
  Figures figures;          // what the measurement reported
  double peak_rss_kib = 0;  // VmHWM since the reset just before the measurement
  double minflt = 0;        // minor page faults during the measurement
  double majflt = 0;        // major page faults during the measurement
  double cpu_s = 0;         // user + system CPU seconds during the measurement, all threads
  double sys_s = 0;         // of which system (kernel) CPU seconds
  double wall_s = 0;        // wall-clock seconds of the measurement
};

/// A child started by start_child() and not yet waited for.
struct ChildProcess {
  int pid = -1;
  int fd = -1;        // the read end of the child's report pipe
  std::string error;  // why it could not start (then pid is -1)
};

/// Forks; the child pins itself per `opts`, runs `measure` and reports what it set in its
/// Figures; returns the child's report, or ok=false with the reason it gave none.
ChildResult run_in_child(const ChildOptions& opts, const std::function<void(Figures&)>& measure);

/// Forks like run_in_child() and returns at once; collect the report with wait_child().
ChildProcess start_child(const ChildOptions& opts, const std::function<void(Figures&)>& measure);

/// Reads the child's report and reaps it (blocks until it exits).
ChildResult wait_child(ChildProcess& child);

/// Sends SIGKILL to a started child (its wait_child() then reports the signal).
void kill_child(const ChildProcess& child);

/// Returns the CPUs this process may run on, in increasing order.
std::vector<int> allowed_cpus();

}  // namespace weft::bench
