#include "loadgen/fleet.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <ctime>

#include <fmt/core.h>
#include <sys/timex.h>

namespace weft::load {
namespace {

template <class T>
std::optional<T> parse_number(std::string_view text) {
  T v{};
  const auto* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc{} || p != end || text.empty()) return std::nullopt;
  return v;
}

// Parses "YYYY-MM-DDTHH:MM:SS[.fff]Z" as UTC; nullopt when it is not that form.
std::optional<double> parse_rfc3339_utc(std::string_view t) {
  if (t.size() < 20 || t.back() != 'Z' || t[4] != '-' || t[7] != '-' ||
      (t[10] != 'T' && t[10] != 't') || t[13] != ':' || t[16] != ':') {
    return std::nullopt;
  }
  const auto year = parse_number<int>(t.substr(0, 4));
  const auto mon = parse_number<int>(t.substr(5, 2));
  const auto day = parse_number<int>(t.substr(8, 2));
  const auto hour = parse_number<int>(t.substr(11, 2));
  const auto min = parse_number<int>(t.substr(14, 2));
  const std::string_view sec_text = t.substr(17, t.size() - 18);
  const auto sec = parse_number<double>(sec_text);
  if (!year || !mon || !day || !hour || !min || !sec || *mon < 1 || *mon > 12 || *day < 1 ||
      *day > 31 || *hour > 23 || *min > 59 || *sec < 0.0 || *sec >= 61.0) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *mon - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *min;
  const time_t whole = timegm(&tm);
  if (whole == static_cast<time_t>(-1)) return std::nullopt;
  return static_cast<double>(whole) + *sec;
}

}  // namespace

std::optional<ClientShare> parse_client(std::string_view text, std::string& error) {
  const std::size_t slash = text.find('/');
  std::optional<std::uint32_t> i;
  std::optional<std::uint32_t> n;
  if (slash != std::string_view::npos) {
    i = parse_number<std::uint32_t>(text.substr(0, slash));
    n = parse_number<std::uint32_t>(text.substr(slash + 1));
  }
  if (!i || !n || *n == 0 || *i >= *n) {
    error = fmt::format("--client {}: expected I/N with 0 <= I < N", text);
    return std::nullopt;
  }
  return ClientShare{*i, *n};
}

std::optional<double> parse_start_at(std::string_view text, std::string& error) {
  std::optional<double> t = parse_number<double>(text);
  if (!t) t = parse_rfc3339_utc(text);
  if (!t || !std::isfinite(*t) || *t <= 0.0) {
    error = fmt::format(
        "--start-at {}: expected seconds since the epoch or a UTC time such as "
        "2026-12-04T18:00:00Z",
        text);
    return std::nullopt;
  }
  return t;
}

ClockState read_clock_state() {
  timex tx{};  // modes 0: read only, allowed without privileges (containers too)
  const int state = adjtimex(&tx);
  ClockState c;
  c.synchronised = state != -1 && state != TIME_ERROR && (tx.status & STA_UNSYNC) == 0;
  c.max_error_ms = static_cast<double>(tx.maxerror) / 1000.0;  // microseconds
  return c;
}

std::optional<std::string> check_clock(const ClockState& clock, double max_error_ms) {
  if (!clock.synchronised) {
    return std::string{
        "--start-at: the system clock is not synchronised (adjtimex: STA_UNSYNC), so "
        "instances on other machines would not start together; run NTP, chrony or PTP on "
        "every client, or pass --no-clock-check when the instances share this machine's clock"};
  }
  if (clock.max_error_ms > max_error_ms) {
    return fmt::format(
        "--start-at: the kernel bounds the clock's error at {:.3f} ms, above --max-clock-error "
        "{} ms",
        clock.max_error_ms, max_error_ms);
  }
  return std::nullopt;
}

int sleep_until_wall_clock(double epoch_s, double late_ok_s, std::string& error) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const double now_s = static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
  if (now_s - epoch_s > late_ok_s) {
    error = fmt::format("--start-at: that time passed {:.3f} s ago", now_s - epoch_s);
    return -1;
  }
  timespec at{};
  at.tv_sec = static_cast<time_t>(std::floor(epoch_s));
  at.tv_nsec = static_cast<long>((epoch_s - std::floor(epoch_s)) * 1e9);
  // Absolute, so a signal that interrupts the sleep does not stretch it.
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr) == EINTR) {
  }
  return 0;
}

}  // namespace weft::load
