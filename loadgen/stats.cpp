#include "loadgen/stats.hpp"

#include <algorithm>
#include <cmath>

#include <sys/resource.h>

namespace weft::load {

namespace {

double seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

CpuTimes cpu_times(int who) {
  rusage ru{};
  if (getrusage(who, &ru) != 0) return CpuTimes{};
  return CpuTimes{seconds(ru.ru_utime), seconds(ru.ru_stime)};
}

// Rate samples of one timeline field over whole windows of `interval_s` seconds.
RateSamples samples_of(const Stats& s, std::uint64_t TimelineSecond::*field, std::size_t width) {
  RateSamples r;
  if (width == 0 || !(s.duration_s > 0.0)) return r;
  const double interval_s = static_cast<double>(width);
  const auto windows = static_cast<std::size_t>(std::floor(s.duration_s / interval_s));
  double sum = 0.0;
  double sum2 = 0.0;
  for (std::size_t w = 0; w < windows; ++w) {
    std::uint64_t n = 0;
    for (std::size_t k = w * width; k < (w + 1) * width && k < s.timeline.size(); ++k) {
      n += s.timeline[k].*field;
    }
    const double rate = static_cast<double>(n) / interval_s;
    r.min = r.count == 0 ? rate : std::min(r.min, rate);
    r.max = std::max(r.max, rate);
    sum += rate;
    sum2 += rate * rate;
    ++r.count;
  }
  if (r.count > 0) r.avg = sum / static_cast<double>(r.count);
  if (r.count > 1) {
    const double n = static_cast<double>(r.count);
    r.stddev = std::sqrt(std::max(0.0, (sum2 - sum * sum / n) / (n - 1.0)));
  }
  return r;
}

}  // namespace

CpuTimes process_cpu_times() {
  return cpu_times(RUSAGE_SELF);
}

CpuTimes thread_cpu_times() {
  return cpu_times(RUSAGE_THREAD);
}

void TimelineSecond::merge(const TimelineSecond& o) {
  sessions += o.sessions;
  sessions_done += o.sessions_done;
  connections += o.connections;
  requests += o.requests;
  replies += o.replies;
  errors += o.errors;
  bytes_received += o.bytes_received;
  latency_sum_ns += o.latency_sum_ns;
}

void RunningStat::record(double value) {
  ++count;
  sum += value;
  max = std::max(max, value);
}

void RunningStat::merge(const RunningStat& o) {
  count += o.count;
  sum += o.sum;
  max = std::max(max, o.max);
}

TimelineSecond& Stats::second(double at_s) {
  std::size_t index = 0;
  if (at_s > 0.0) {
    const double whole = std::floor(at_s);
    index = whole >= static_cast<double>(kMaxTimelineSeconds - 1) ? kMaxTimelineSeconds - 1
                                                                  : static_cast<std::size_t>(whole);
  }
  if (index >= timeline.size()) timeline.resize(index + 1);
  return timeline[index];
}

void Stats::record_session_started(double at_s, std::uint64_t lag_ns) {
  ++sessions_started;
  ++second(at_s).sessions;
  schedule_lag_ns.record(static_cast<double>(lag_ns));
  if (lag_ns > kLateSessionNs) ++sessions_late;
}

void Stats::record_connection_started(double at_s, std::uint64_t open_now) {
  ++connections;
  ++second(at_s).connections;
  max_open_connections = std::max(max_open_connections, open_now);
}

void Stats::record_connected(std::uint64_t connect_ns) {
  ++connects;
  connect_time.record(connect_ns);
}

void Stats::record_connect_burst(std::uint64_t n) {
  max_connect_burst = std::max(max_connect_burst, n);
}

void Stats::record_connection_closed(std::uint64_t lifetime_ns, std::uint64_t replies_on_it) {
  // httperf's "Connection time" only counts connections that completed at least one call.
  if (replies_on_it > 0) connection_time.record(lifetime_ns);
}

void Stats::record_request(double at_s, std::uint64_t bytes) {
  ++requests;
  request_bytes += bytes;
  ++second(at_s).requests;
}

void Stats::record_reply(double at_s, const ReplySample& r) {
  const int klass = r.status / 100;
  ++replies_by_class[klass >= 1 && klass <= 5 ? static_cast<std::size_t>(klass) : 0];
  reply_header_bytes += r.header_bytes;
  reply_body_bytes += r.body_bytes;
  reply_footer_bytes += r.footer_bytes;
  response_time.record(r.response_ns);
  transfer_time.record(r.transfer_ns);
  latency_from_schedule.record(r.from_schedule_ns);
  latency_from_send.record(r.from_send_ns);
  TimelineSecond& sec = second(at_s);
  ++sec.replies;
  sec.bytes_received += r.header_bytes + r.body_bytes + r.footer_bytes;
  sec.latency_sum_ns += r.from_send_ns;
}

void Stats::record_error(double at_s, ErrorClass c) {
  errors.add(c);
  ++second(at_s).errors;
}

void Stats::record_io(std::uint64_t sent, std::uint64_t received) {
  bytes_sent += sent;
  bytes_received += received;
}

void Stats::record_session_ended(double at_s, bool ok, double lifetime_s,
                                 std::uint64_t replies_in_session) {
  if (ok) {
    ++sessions_completed;
    session_lifetime_sum_s += lifetime_s;
    ++second(at_s).sessions_done;
  } else {
    ++sessions_failed;
    session_failtime_sum_s += lifetime_s;
  }
  // A session log can be long, but not absurdly: fold anything past 10^6 replies into the top.
  const std::size_t bin =
      static_cast<std::size_t>(std::min<std::uint64_t>(replies_in_session, 1'000'000));
  if (bin >= session_length.size()) session_length.resize(bin + 1, 0);
  ++session_length[bin];
}

std::uint64_t Stats::replies() const {
  std::uint64_t n = 0;
  for (std::size_t k = 1; k <= 5; ++k) n += replies_by_class[k];
  return n;
}

RateSamples Stats::reply_rate(std::size_t interval_s) const {
  return samples_of(*this, &TimelineSecond::replies, interval_s);
}

RateSamples Stats::session_rate(std::size_t interval_s) const {
  RateSamples r = samples_of(*this, &TimelineSecond::sessions_done, interval_s);
  r.avg = duration_s > 0.0 ? static_cast<double>(sessions_completed) / duration_s : 0.0;
  return r;
}

void Stats::merge(const Stats& o) {
  connections += o.connections;
  connects += o.connects;
  max_open_connections += o.max_open_connections;
  max_connect_burst = std::max(max_connect_burst, o.max_connect_burst);
  connect_time.merge(o.connect_time);
  connection_time.merge(o.connection_time);
  requests += o.requests;
  request_bytes += o.request_bytes;
  for (std::size_t k = 0; k < replies_by_class.size(); ++k) {
    replies_by_class[k] += o.replies_by_class[k];
  }
  reply_header_bytes += o.reply_header_bytes;
  reply_body_bytes += o.reply_body_bytes;
  reply_footer_bytes += o.reply_footer_bytes;
  response_time.merge(o.response_time);
  transfer_time.merge(o.transfer_time);
  latency_from_schedule.merge(o.latency_from_schedule);
  latency_from_send.merge(o.latency_from_send);
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
  errors.merge(o.errors);
  schedule_lag_ns.merge(o.schedule_lag_ns);
  sessions_late += o.sessions_late;
  sessions_started += o.sessions_started;
  sessions_completed += o.sessions_completed;
  sessions_failed += o.sessions_failed;
  session_lifetime_sum_s += o.session_lifetime_sum_s;
  session_failtime_sum_s += o.session_failtime_sum_s;
  if (o.session_length.size() > session_length.size()) {
    session_length.resize(o.session_length.size(), 0);
  }
  for (std::size_t k = 0; k < o.session_length.size(); ++k) {
    session_length[k] += o.session_length[k];
  }
  cpu.user_s += o.cpu.user_s;
  cpu.system_s += o.cpu.system_s;
  duration_s = std::max(duration_s, o.duration_s);
  if (o.timeline.size() > timeline.size()) timeline.resize(o.timeline.size());
  for (std::size_t k = 0; k < o.timeline.size(); ++k) timeline[k].merge(o.timeline[k]);
}

}  // namespace weft::load
