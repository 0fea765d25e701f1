#include "loadgen/schedule.hpp"

#include <charconv>
#include <cmath>

#include <fmt/core.h>

namespace weft::load {

namespace {

std::optional<double> parse_seconds(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

Period Period::from_rate(double rate) {
  if (!(rate > 0.0)) return Period{};
  return Period{Spacing::kFixed, 1.0 / rate, 0.0};
}

double Period::mean() const {
  switch (spacing) {
    case Spacing::kSequential:
      return 0.0;
    case Spacing::kFixed:
    case Spacing::kExponential:
      return t1;
    case Spacing::kUniform:
      return (t1 + t2) / 2.0;
  }
  return 0.0;
}

double Period::rate() const {
  const double m = mean();
  return m > 0.0 ? 1.0 / m : 0.0;
}

std::string Period::to_string() const {
  switch (spacing) {
    case Spacing::kSequential:
      return "0";
    case Spacing::kFixed:
      return fmt::format("d{}", t1);
    case Spacing::kUniform:
      return fmt::format("u{},{}", t1, t2);
    case Spacing::kExponential:
      return fmt::format("e{}", t1);
  }
  return "0";
}

std::optional<Period> parse_period(std::string_view text, std::string& error) {
  Period p;
  std::string_view rest = text;
  char law = 'd';
  if (!rest.empty() && (rest.front() == 'd' || rest.front() == 'u' || rest.front() == 'e')) {
    law = rest.front();
    rest.remove_prefix(1);
  }
  const std::size_t comma = rest.find(',');
  const std::string_view first = rest.substr(0, comma);
  const auto t1 = parse_seconds(first);
  if (!t1 || *t1 < 0.0) {
    error = fmt::format(
        "--period {}: '{}' is not a number of seconds >= 0 (syntax: "
        "[d|u|e]T1[,T2])",
        text, first);
    return std::nullopt;
  }
  p.t1 = *t1;
  if (law == 'u') {
    if (comma == std::string_view::npos) {
      error = fmt::format("--period {}: uniform spacing needs both bounds: u T1,T2", text);
      return std::nullopt;
    }
    const std::string_view second = rest.substr(comma + 1);
    const auto t2 = parse_seconds(second);
    if (!t2 || *t2 < *t1) {
      error = fmt::format("--period {}: '{}' is not a number of seconds >= T1", text, second);
      return std::nullopt;
    }
    p.t2 = *t2;
    p.spacing = p.t2 > 0.0 ? Spacing::kUniform : Spacing::kSequential;
  } else {
    if (comma != std::string_view::npos) {
      error = fmt::format("--period {}: only uniform spacing (u) takes a second value", text);
      return std::nullopt;
    }
    if (p.t1 == 0.0) {
      p.spacing = Spacing::kSequential;  // httperf: a period of 0 means one after another
    } else {
      p.spacing = law == 'e' ? Spacing::kExponential : Spacing::kFixed;
    }
  }
  if (p.spacing == Spacing::kSequential) p = Period{};
  return p;
}

Schedule::Schedule(Period period, std::uint64_t seed, std::optional<std::uint64_t> max_sessions,
                   std::optional<std::uint64_t> duration_ns)
    : period_(period),
      rng_(Rng::for_stream(seed, kScheduleStream, 0)),
      max_sessions_(max_sessions),
      duration_ns_(duration_ns) {}

double Schedule::draw_gap_s() {
  switch (period_.spacing) {
    case Spacing::kUniform:
      return period_.t1 + (period_.t2 - period_.t1) * rng_.uniform01();
    // Inversion: u in [0, 1) makes log1p(-u) finite; the gap is -mean * ln(1 - u).
    case Spacing::kExponential:
      return -period_.t1 * std::log1p(-rng_.uniform01());
    case Spacing::kSequential:
    case Spacing::kFixed:
      return 0.0;
  }
  return 0.0;
}

std::optional<ScheduledSession> Schedule::next() {
  if (max_sessions_ && index_ >= *max_sessions_) return std::nullopt;
  std::uint64_t due = 0;
  switch (period_.spacing) {
    case Spacing::kSequential:
      due = 0;
      break;
    case Spacing::kFixed:
      // Multiply instead of adding gaps: session i is due at exactly i * T1, with no drift.
      due =
          static_cast<std::uint64_t>(std::llround(static_cast<double>(index_) * period_.t1 * 1e9));
      break;
    case Spacing::kUniform:
    case Spacing::kExponential:
      if (index_ > 0) elapsed_s_ += draw_gap_s();
      due = static_cast<std::uint64_t>(std::llround(elapsed_s_ * 1e9));
      break;
  }
  if (duration_ns_ && !sequential() && due >= *duration_ns_) {
    max_sessions_ = index_;  // latch the end: later calls return nullopt at once
    return std::nullopt;
  }
  return ScheduledSession{index_++, due};
}

}  // namespace weft::load
