// Tests loadgen/stats.cpp: recording keeps totals and timeline consistent, rate samples, merge.
#include "loadgen/stats.hpp"

#include <gtest/gtest.h>

namespace weft::load {
namespace {

constexpr std::uint64_t kMs = 1'000'000;

ReplySample reply(int status, std::uint64_t send_ns) {
  ReplySample r;
  r.status = status;
  r.header_bytes = 100;
  r.body_bytes = 1000;
  r.footer_bytes = 5;
  r.response_ns = send_ns / 2;
  r.transfer_ns = send_ns / 2;
  r.from_send_ns = send_ns;
  r.from_schedule_ns = send_ns + kMs;
  return r;
}

TEST(Stats, RecordingUpdatesTotalsAndTimeline) {
  Stats s;
  s.record_session_started(0.5, 2000);
  s.record_connection_started(0.5, 1);
  s.record_connected(300'000);
  s.record_request(0.6, 62);
  s.record_reply(1.2, reply(200, 2 * kMs));
  s.record_reply(1.7, reply(404, 4 * kMs));
  s.record_error(2.5, ErrorClass::kHttp4xx);
  s.record_io(62, 2210);
  s.record_connection_closed(10 * kMs, 2);
  s.record_connection_closed(10 * kMs, 0);  // no reply: not in "Connection time"
  s.record_session_ended(2.9, true, 2.4, 2);

  EXPECT_EQ(s.sessions_started, 1u);
  EXPECT_EQ(s.sessions_late, 0u);  // 2 µs late is on time
  EXPECT_EQ(s.connections, 1u);
  EXPECT_EQ(s.connects, 1u);
  EXPECT_EQ(s.requests, 1u);
  EXPECT_EQ(s.request_bytes, 62u);
  EXPECT_EQ(s.replies(), 2u);
  EXPECT_EQ(s.replies_by_class[2], 1u);
  EXPECT_EQ(s.replies_by_class[4], 1u);
  EXPECT_EQ(s.reply_header_bytes, 200u);
  EXPECT_EQ(s.reply_body_bytes, 2000u);
  EXPECT_EQ(s.reply_footer_bytes, 10u);
  EXPECT_EQ(s.connection_time.count(), 1u);
  EXPECT_EQ(s.latency_from_send.count(), 2u);
  EXPECT_DOUBLE_EQ(s.latency_from_send.mean(), 3.0 * kMs);
  EXPECT_EQ(s.errors[ErrorClass::kHttp4xx], 1u);
  EXPECT_EQ(s.schedule_lag_ns.count, 1u);
  EXPECT_DOUBLE_EQ(s.schedule_lag_ns.max, 2000.0);
  EXPECT_EQ(s.sessions_completed, 1u);
  ASSERT_EQ(s.session_length.size(), 3u);
  EXPECT_EQ(s.session_length[2], 1u);

  ASSERT_EQ(s.timeline.size(), 3u);
  EXPECT_EQ(s.timeline[0].sessions, 1u);
  EXPECT_EQ(s.timeline[0].connections, 1u);
  EXPECT_EQ(s.timeline[0].requests, 1u);
  EXPECT_EQ(s.timeline[1].replies, 2u);
  EXPECT_EQ(s.timeline[1].bytes_received, 2210u);
  EXPECT_EQ(s.timeline[1].latency_sum_ns, 6 * kMs);
  EXPECT_EQ(s.timeline[2].errors, 1u);
  EXPECT_EQ(s.timeline[2].sessions_done, 1u);
}

TEST(Stats, TimelineClampsOddTimes) {
  Stats s;
  s.second(-3.0).replies = 7;
  EXPECT_EQ(s.timeline.size(), 1u);
  EXPECT_EQ(s.timeline[0].replies, 7u);
  s.second(1e18);
  EXPECT_EQ(s.timeline.size(), kMaxTimelineSeconds);
}

TEST(Stats, ReplyRateSamplesWholeFiveSecondWindows) {
  Stats s;
  s.duration_s = 17.5;  // three whole windows; the last 2.5 s are not a sample
  for (int sec = 0; sec < 18; ++sec) {
    const int n = sec < 5 ? 10 : sec < 10 ? 20 : sec < 15 ? 30 : 1000;
    for (int k = 0; k < n; ++k) s.record_reply(sec + 0.5, reply(200, kMs));
  }
  const RateSamples r = s.reply_rate(5);
  EXPECT_EQ(r.count, 3u);
  EXPECT_DOUBLE_EQ(r.min, 10.0);
  EXPECT_DOUBLE_EQ(r.max, 30.0);
  EXPECT_DOUBLE_EQ(r.avg, 20.0);
  EXPECT_DOUBLE_EQ(r.stddev, 10.0);
  s.duration_s = 4.9;
  EXPECT_EQ(s.reply_rate(5).count, 0u);
  EXPECT_EQ(s.reply_rate(5).max, 0.0);
}

TEST(Stats, SessionRateAverageIsCompletedOverDuration) {
  Stats s;
  s.duration_s = 10.0;
  for (int k = 0; k < 30; ++k) s.record_session_ended(k % 10 + 0.1, true, 1.0, 1);
  s.record_session_ended(3.0, false, 4.0, 0);
  const RateSamples r = s.session_rate(5);
  EXPECT_EQ(r.count, 2u);
  EXPECT_DOUBLE_EQ(r.avg, 3.0);
  EXPECT_DOUBLE_EQ(r.min, 3.0);
  EXPECT_EQ(s.sessions_failed, 1u);
  EXPECT_DOUBLE_EQ(s.session_failtime_sum_s, 4.0);
  EXPECT_EQ(s.session_length[0], 1u);
  EXPECT_EQ(s.session_length[1], 30u);
}

TEST(Stats, MergeEqualsRecordingIntoOne) {
  Stats a, b, one;
  for (int i = 0; i < 100; ++i) {
    Stats& half = i % 2 ? a : b;
    for (Stats* s : {&half, &one}) {
      s->record_session_started(i * 0.1, static_cast<std::uint64_t>(i) * 20'000);
      s->record_connection_started(i * 0.1, 1 + i % 4);
      s->record_connected(100'000 + static_cast<std::uint64_t>(i));
      s->record_request(i * 0.1, 60 + i % 3);
      s->record_reply(i * 0.1 + 0.05, reply(i % 7 ? 200 : 500, (1 + i % 9) * kMs));
      s->record_io(60, 1105);
      s->record_connection_closed((2 + i % 5) * kMs, 1);
      if (i % 11 == 0) s->record_error(i * 0.1, ErrorClass::kConnReset);
      s->record_session_ended(i * 0.1 + 0.06, i % 13 != 0, 0.06, 1);
    }
  }
  a.duration_s = 9.0;
  b.duration_s = 10.0;
  one.duration_s = 10.0;
  a.cpu = {1.0, 2.0};
  b.cpu = {0.5, 0.25};
  a.record_connect_burst(3);
  b.record_connect_burst(5);

  Stats merged;
  merged.merge(a);
  merged.merge(b);
  EXPECT_EQ(merged.connections, one.connections);
  EXPECT_EQ(merged.requests, one.requests);
  EXPECT_EQ(merged.request_bytes, one.request_bytes);
  EXPECT_EQ(merged.replies_by_class, one.replies_by_class);
  EXPECT_EQ(merged.reply_body_bytes, one.reply_body_bytes);
  EXPECT_EQ(merged.bytes_sent, one.bytes_sent);
  EXPECT_EQ(merged.bytes_received, one.bytes_received);
  EXPECT_EQ(merged.errors, one.errors);
  EXPECT_EQ(merged.sessions_completed, one.sessions_completed);
  EXPECT_EQ(merged.sessions_failed, one.sessions_failed);
  EXPECT_EQ(merged.session_length, one.session_length);
  EXPECT_EQ(merged.sessions_late, one.sessions_late);
  EXPECT_EQ(one.sessions_late, 49u);  // lags 1.02 .. 1.98 ms, past kLateSessionNs
  EXPECT_EQ(merged.timeline, one.timeline);
  EXPECT_EQ(merged.schedule_lag_ns.count, one.schedule_lag_ns.count);
  EXPECT_DOUBLE_EQ(merged.schedule_lag_ns.max, one.schedule_lag_ns.max);
  for (double p : {50.0, 90.0, 99.0, 100.0}) {
    EXPECT_EQ(merged.latency_from_send.percentile(p), one.latency_from_send.percentile(p));
    EXPECT_EQ(merged.latency_from_schedule.percentile(p), one.latency_from_schedule.percentile(p));
    EXPECT_EQ(merged.connection_time.percentile(p), one.connection_time.percentile(p));
  }
  EXPECT_EQ(merged.reply_rate(5).count, 2u);
  EXPECT_DOUBLE_EQ(merged.reply_rate(5).avg, one.reply_rate(5).avg);
  EXPECT_DOUBLE_EQ(merged.duration_s, 10.0);
  EXPECT_DOUBLE_EQ(merged.cpu.user_s, 1.5);
  EXPECT_DOUBLE_EQ(merged.cpu.system_s, 2.25);
  EXPECT_EQ(merged.max_connect_burst, 5u);
  EXPECT_EQ(merged.max_open_connections, a.max_open_connections + b.max_open_connections);
}

TEST(Stats, CpuTimesGrowWithWork) {
  const CpuTimes start = thread_cpu_times();
  volatile double x = 0;
  for (int i = 0; i < 20'000'000; ++i) x = x + 1e-9 * i;
  const CpuTimes end = thread_cpu_times();
  EXPECT_GT(end.user_s + end.system_s, start.user_s + start.system_s);
  EXPECT_GE(process_cpu_times().user_s, end.user_s);
}

}  // namespace
}  // namespace weft::load
