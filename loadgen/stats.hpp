// Everything a weft-load report needs, gathered per engine thread and merged at the end.
//
// Each engine thread owns one Stats and records into it with the record_* functions, which
// keep the totals, the latency histograms and the per-second timeline consistent; nothing is
// shared, so nothing is locked. At the end, merge() the threads' Stats into one and hand it to
// report.hpp. Times are nanoseconds for durations and seconds (double) since the start of the
// measured window (after --warmup) for "when"; the engine records nothing during warmup.
//
// httperf's figures derive from these as httperf derives them (see report.hpp); its 5-second
// reply-rate samples are computed from the per-second timeline, so that threads' counts add up
// second by second before any rate is taken.
//
// Merging: counts, bytes, histograms, timelines and CPU times add up (each thread measures its
// own CPU time, e.g. with getrusage(RUSAGE_THREAD)); maxima take the max, except
// max_open_connections, which adds up: httperf prints it as "<=N concurrent connections", and
// the sum of per-thread peaks is such a bound. duration_s takes the max.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "loadgen/errors.hpp"
#include "loadgen/histogram.hpp"

namespace weft::load {

/// Counts of one second of the measured window, for the JSON timeline and rate samples.
struct TimelineSecond {
  std::uint64_t sessions = 0;        // sessions started
  std::uint64_t sessions_done = 0;   // sessions completed successfully
  std::uint64_t connections = 0;     // connections initiated
  std::uint64_t requests = 0;        // requests sent
  std::uint64_t replies = 0;         // replies received in full
  std::uint64_t errors = 0;          // errors of any class
  std::uint64_t bytes_received = 0;  // reply bytes (header + body + footer)
  std::uint64_t latency_sum_ns = 0;  // sum of latency from send over the second's replies

  /// Adds `other`'s counts to this second's.
  void merge(const TimelineSecond& other);

  friend bool operator==(const TimelineSecond&, const TimelineSecond&) = default;
};

/// Count, sum and max of a non-negative quantity, e.g. how late sessions started.
struct RunningStat {
  std::uint64_t count = 0;
  double sum = 0.0;
  double max = 0.0;

  /// Adds one value.
  void record(double value);
  /// Returns the mean, or 0 when empty.
  double mean() const { return count ? sum / static_cast<double>(count) : 0.0; }
  /// Adds `other`'s values to this one.
  void merge(const RunningStat& other);
};

/// Min/avg/max/stddev of rate samples, as httperf's "Reply rate" line shows them.
struct RateSamples {
  std::uint64_t count = 0;
  double min = 0.0;
  double avg = 0.0;
  double max = 0.0;
  double stddev = 0.0;  // sample stddev (n - 1), 0 for fewer than two samples
};

/// One complete reply, as the engine measured it.
struct ReplySample {
  int status = 0;
  std::uint64_t header_bytes = 0;
  std::uint64_t body_bytes = 0;
  std::uint64_t footer_bytes = 0;
  std::uint64_t response_ns = 0;       // first request byte sent -> first reply byte
  std::uint64_t transfer_ns = 0;       // first reply byte -> last reply byte
  std::uint64_t from_schedule_ns = 0;  // the call's due time -> last reply byte
  std::uint64_t from_send_ns = 0;      // first request byte sent -> last reply byte
};

/// CPU time a process or thread has used.
struct CpuTimes {
  double user_s = 0.0;
  double system_s = 0.0;
};

/// Returns the CPU time this process has used so far (getrusage(RUSAGE_SELF)).
CpuTimes process_cpu_times();

/// Returns the CPU time the calling thread has used so far (getrusage(RUSAGE_THREAD)).
CpuTimes thread_cpu_times();

struct Stats {
  // Connections.
  std::uint64_t connections = 0;           // initiated ("Total: connections")
  std::uint64_t connects = 0;              // established
  std::uint64_t max_open_connections = 0;  // peak open at once ("<=N concurrent")
  std::uint64_t max_connect_burst = 0;     // most connections initiated in one scheduler tick
  Histogram connect_time;                  // connect() start -> established
  Histogram connection_time;               // lifetime of connections that got >= 1 reply

  // Requests and replies.
  std::uint64_t requests = 0;  // sent in full
  std::uint64_t request_bytes = 0;
  std::array<std::uint64_t, 6> replies_by_class{};  // [status / 100]; [0]: status outside 1..5xx
  std::uint64_t reply_header_bytes = 0;
  std::uint64_t reply_body_bytes = 0;
  std::uint64_t reply_footer_bytes = 0;
  Histogram response_time;          // ReplySample::response_ns
  Histogram transfer_time;          // ReplySample::transfer_ns
  Histogram latency_from_schedule;  // ReplySample::from_schedule_ns
  Histogram latency_from_send;      // ReplySample::from_send_ns

  // Bytes on the wire, all connections (Net I/O).
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;

  ErrorCounts errors;
  RunningStat schedule_lag_ns;      // how late each session started against its due time
  std::uint64_t sessions_late = 0;  // sessions that started more than kLateSessionNs late

  // Sessions (session workloads report them; httperf's "Session ..." lines).
  std::uint64_t sessions_started = 0;
  std::uint64_t sessions_completed = 0;
  std::uint64_t sessions_failed = 0;
  double session_lifetime_sum_s = 0.0;        // over completed sessions
  double session_failtime_sum_s = 0.0;        // over failed sessions
  std::vector<std::uint64_t> session_length;  // [replies in the session] -> sessions

  CpuTimes cpu;             // used during the measured window
  double duration_s = 0.0;  // length of the measured window ("test-duration")

  std::vector<TimelineSecond> timeline;  // [whole seconds since the window began]

  /// Returns the timeline entry for time `at_s`, growing the timeline as needed; negative
  /// times count in second 0 and times past kMaxTimelineSeconds in the last second.
  TimelineSecond& second(double at_s);

  /// Counts a session started at `at_s`, `lag_ns` after its due time (late past
  /// kLateSessionNs).
  void record_session_started(double at_s, std::uint64_t lag_ns);
  /// Counts a connection initiated at `at_s`, with `open_now` connections open counting it.
  void record_connection_started(double at_s, std::uint64_t open_now);
  /// Counts an established connection that took `connect_ns` to connect.
  void record_connected(std::uint64_t connect_ns);
  /// Counts a connect burst of `n` connections initiated in one scheduler tick.
  void record_connect_burst(std::uint64_t n);
  /// Counts a closed connection that lived `lifetime_ns` and received `replies` replies.
  void record_connection_closed(std::uint64_t lifetime_ns, std::uint64_t replies);
  /// Counts a request of `bytes` bytes sent in full at `at_s`.
  void record_request(double at_s, std::uint64_t bytes);
  /// Counts a complete reply received at `at_s`.
  void record_reply(double at_s, const ReplySample& reply);
  /// Counts an error of class `c` at `at_s`.
  void record_error(double at_s, ErrorClass c);
  /// Counts bytes written to and read from sockets (everything, whatever it carried).
  void record_io(std::uint64_t sent, std::uint64_t received);
  /// Counts a session that ended at `at_s`, after `lifetime_s`, with `replies` replies.
  void record_session_ended(double at_s, bool ok, double lifetime_s, std::uint64_t replies);

  /// Returns the number of replies with a status in 1xx..5xx (httperf's "replies").
  std::uint64_t replies() const;

  /// Returns reply-rate samples over consecutive windows of `interval_s` whole seconds (5 for
  /// httperf), from the timeline; a window that the test duration cuts short is not a sample.
  RateSamples reply_rate(std::size_t interval_s = 5) const;

  /// Returns session-completion rate samples the same way, with avg = completed / duration as
  /// httperf prints it.
  RateSamples session_rate(std::size_t interval_s = 5) const;

  /// Adds everything `other` recorded to this one (see the header comment for maxima).
  void merge(const Stats& other);
};

/// A session that starts more than this after its due time is late: the generator fell behind
/// its own schedule, and the report says so. Picked: well above the timer and wake-up jitter
/// of an idle generator (tens of microseconds on the development VMs) and below any latency
/// worth measuring; to be measured.
inline constexpr std::uint64_t kLateSessionNs = 1'000'000;

/// The longest timeline kept, in seconds (a week); later times fold into the last second.
inline constexpr std::size_t kMaxTimelineSeconds = 7 * 24 * 3600;

}  // namespace weft::load
