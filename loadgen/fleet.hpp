// weft::load fleet: one open-loop test split across N weft-load instances (--client I/N), and
// a common start time for them (--start-at).
//
// The split: instance I of N runs exactly the sessions of the one-instance schedule whose index
// is I modulo N, at the due times, URIs and call counts that one instance would have given
// them (both come from the seed and the session's index alone; see schedule.hpp and
// workload.hpp). So N instances together offer the same test as one, and their reports merge
// (merge.hpp) into the report one process would have made.
//
// The start: --start-at names a wall-clock time; every instance sleeps until it on
// CLOCK_REALTIME, then starts its schedule at time 0. That is only as good as the clocks
// agree, so before waiting an instance asks the kernel (adjtimex) whether its clock is
// synchronised and how large its error bound is, and refuses to start unless it is within
// --max-clock-error; --no-clock-check skips that (instances sharing one machine's clock).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weft::load {

/// Which share of the test this instance runs: sessions whose index % count == index.
struct ClientShare {
  std::uint32_t index = 0;
  std::uint32_t count = 1;

  /// Returns whether the session of global index `session` is this instance's.
  bool owns(std::uint64_t session) const { return session % count == index; }

  friend bool operator==(const ClientShare&, const ClientShare&) = default;
};

/// Parses --client "I/N" (0 <= I < N); on failure returns nullopt and sets `error`.
std::optional<ClientShare> parse_client(std::string_view text, std::string& error);

/// Parses --start-at: seconds since the Unix epoch ("1764871200.5") or a UTC time in
/// RFC 3339's form "2026-12-04T18:00:00Z" (fractional seconds allowed); returns epoch seconds,
/// or nullopt with `error` set.
std::optional<double> parse_start_at(std::string_view text, std::string& error);

/// What the kernel says of the system clock (adjtimex with no change asked).
struct ClockState {
  bool synchronised = false;  // not STA_UNSYNC, and adjtimex did not return TIME_ERROR
  double max_error_ms = 0.0;  // the kernel's bound on the clock's error (maxerror)
};

/// Returns the kernel's view of the clock's synchronisation.
ClockState read_clock_state();

/// Returns an error message when `clock` is not good enough to start instances together
/// within `max_error_ms`, or nullopt when it is.
std::optional<std::string> check_clock(const ClockState& clock, double max_error_ms);

/// Sleeps until wall-clock time `epoch_s`; returns 0, or -1 with `error` set when that time
/// passed more than `late_ok_s` seconds ago (the instances would not start together).
int sleep_until_wall_clock(double epoch_s, double late_ok_s, std::string& error);

}  // namespace weft::load
