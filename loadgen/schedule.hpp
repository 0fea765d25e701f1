// The open-loop session schedule: when session i is due to start, decided before the run.
//
// A schedule is a spacing law (httperf's --period [d|u|e]T1[,T2], or --rate R = --period dR⁻¹),
// a seed, and two limits: at most max_sessions sessions, none due at or after `duration`.
// Start times depend on nothing that happens during the run (above all, not on replies): this
// is what makes the load "open": a slow server does not slow the arrivals down, and latency
// measured from the due time includes any time the generator or server fell behind.
//
// Deterministic spacing gives t_i = i * T1 exactly (computed by multiplication, so no drift);
// uniform and exponential spacing draw i.i.d. gaps from one Rng stream of the seed, so the same
// seed gives the same times. A period of 0 (rate 0) means httperf's sequential mode: each
// session starts when the previous one ends; next() then returns due time 0 for every session,
// the engine starts them one after another, and it alone can enforce a duration (the schedule
// cannot know when sessions end), so a sequential schedule ignores `duration`.
//
// Times are integer nanoseconds from the start of the test. A Schedule is a cursor owned by
// one thread; with several engine threads, each can run its own copy and keep every T-th
// session, which keeps the times identical whatever the thread count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "loadgen/rng.hpp"

namespace weft::load {

/// How the gaps between session starts are drawn.
enum class Spacing : std::uint8_t {
  kSequential,   // period 0: start each session when the previous one has ended
  kFixed,        // every gap is T1 ("d", or no letter)
  kUniform,      // gaps uniform in [T1, T2) ("u")
  kExponential,  // gaps exponential with mean T1: Poisson arrivals ("e")
};

/// The --period value: a spacing law and its parameters in seconds.
struct Period {
  Spacing spacing = Spacing::kSequential;
  double t1 = 0.0;  // fixed gap, lower bound (uniform) or mean (exponential)
  double t2 = 0.0;  // upper bound, uniform only

  /// Returns the period for --rate R sessions per second (R = 0 is sequential).
  static Period from_rate(double rate);

  /// Returns the mean gap in seconds (0 when sequential).
  double mean() const;

  /// Returns the mean arrival rate in sessions per second (0 when sequential).
  double rate() const;

  /// Returns the text httperf would accept for this period, e.g. "e0.01" or "u1,3".
  std::string to_string() const;

  friend bool operator==(const Period&, const Period&) = default;
};

/// Parses httperf's --period syntax "[d|u|e]T1[,T2]"; on failure returns nullopt and sets
/// `error` to a one-line reason.
std::optional<Period> parse_period(std::string_view text, std::string& error);

/// One scheduled session: its index (0, 1, ...) and due time.
struct ScheduledSession {
  std::uint64_t index;
  std::uint64_t due_ns;
};

class Schedule {
 public:
  /// Plans sessions with `period`; `max_sessions` (nullopt: unlimited) and `duration_ns`
  /// (nullopt: unlimited; no session is due at or after it) end the schedule.
  Schedule(Period period, std::uint64_t seed, std::optional<std::uint64_t> max_sessions,
           std::optional<std::uint64_t> duration_ns);

  /// Returns the next session and its due time, or nullopt once a limit is reached.
  std::optional<ScheduledSession> next();

  /// Returns the period this schedule follows.
  const Period& period() const { return period_; }

  /// Returns true when sessions are sequential (period 0) rather than timed.
  bool sequential() const { return period_.spacing == Spacing::kSequential; }

 private:
  double draw_gap_s();

  Period period_;
  Rng rng_;
  std::optional<std::uint64_t> max_sessions_;
  std::optional<std::uint64_t> duration_ns_;
  std::uint64_t index_ = 0;
  double elapsed_s_ = 0.0;  // sum of the random gaps drawn so far
};

/// The Rng stream of the seed that schedules use (other streams: see workload.hpp).
inline constexpr std::uint64_t kScheduleStream = 1;

}  // namespace weft::load
