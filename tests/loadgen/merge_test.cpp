// Tests loadgen/merge.cpp (and stats_json.cpp, Histogram's snapshot): reports of a test split
// between instances merge into exactly the report of one process that saw every call; reports
// that cannot be merged are refused with the file named.
#include "loadgen/merge.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loadgen/rng.hpp"
#include "loadgen/stats_json.hpp"

namespace weft::load {
namespace {

constexpr int kInstances = 4;

// Records one synthetic run's events into `whole` and, dealt out by session index as
// --client I/N deals them, into `parts`.
void record_run(Stats& whole, std::vector<Stats>& parts) {
  Rng rng(42);
  for (std::uint64_t session = 0; session < 2'000; ++session) {
    Stats& part = parts[session % parts.size()];
    const double at = static_cast<double>(session) / 400.0;  // 400 sessions a second
    const std::uint64_t lag = rng() % 3'000'000;
    const std::uint64_t calls = 1 + rng() % 5;
    const std::uint64_t connect_ns = 20'000 + rng() % 100'000;
    for (Stats* s : {&whole, &part}) {
      s->record_session_started(at, lag);
      s->record_connection_started(at, 1 + session % 7);
      s->record_connected(connect_ns);
    }
    for (std::uint64_t c = 0; c < calls; ++c) {
      ReplySample r;
      r.status = rng() % 50 == 0 ? 404 : 200;
      r.header_bytes = 150;
      r.body_bytes = 100 + rng() % 10'000;
      r.response_ns = 50'000 + rng() % 5'000'000;
      r.transfer_ns = rng() % 200'000;
      r.from_send_ns = r.response_ns + r.transfer_ns;
      r.from_schedule_ns = r.from_send_ns + lag;
      const bool fails = rng() % 100 == 0;
      for (Stats* s : {&whole, &part}) {
        s->record_request(at, 80);
        if (fails) {
          s->record_error(at + 0.001, ErrorClass::kClientTimo);
        } else {
          s->record_reply(at + 0.001, r);
        }
      }
    }
    for (Stats* s : {&whole, &part}) {
      s->record_connection_closed(1'000'000 + calls * 100'000, calls);
      s->record_io(80 * calls, 2'000 * calls);
      s->record_session_ended(at + 0.002, true, 0.002, calls);
    }
  }
  whole.duration_s = 5.0;
  for (Stats& p : parts) p.duration_s = 5.0;
}

ReportContext context_of(std::uint32_t index, std::uint32_t of) {
  ReportContext c;
  c.command_line = "httperf --client=" + std::to_string(index) + "/" + std::to_string(of);
  c.test = "httperf --client=0/1 --server=x --rate=400 --seed=1";
  c.offered_rate = 400.0;
  c.clients_of = of;
  c.client_indexes = {index};
  return c;
}

std::vector<MergeInput> split_reports(const std::vector<Stats>& parts) {
  std::vector<MergeInput> in;
  for (std::uint32_t i = 0; i < parts.size(); ++i) {
    in.push_back(
        {"part" + std::to_string(i), format_json_report(parts[i], context_of(i, kInstances))});
  }
  return in;
}

TEST(Merge, SplitReportsMergeIntoTheOneProcessReport) {
  Stats whole;
  std::vector<Stats> parts(kInstances);
  record_run(whole, parts);
  std::string error;
  const auto merged = merge_reports(split_reports(parts), error);
  ASSERT_TRUE(merged) << error;
  ReportContext single = context_of(0, 1);
  ReportContext m = merged->context;
  EXPECT_EQ(m.client_indexes, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  // The same figures, down to the text: every count, rate and percentile (histograms add
  // bucket by bucket), but the command line and the instance line.
  m.command_line = single.command_line;
  m.clients_of = 1;
  m.client_indexes = {0};
  // Peaks of open connections add (each instance's peak bounds its share: httperf's
  // "<=N concurrent"), where one process saw the true peak: the one figure that differs.
  Stats figures = merged->stats;
  std::uint64_t peaks = 0;
  for (const Stats& p : parts) peaks += p.max_open_connections;
  EXPECT_EQ(figures.max_open_connections, peaks);
  figures.max_open_connections = whole.max_open_connections;
  EXPECT_EQ(format_text_report(figures, m), format_text_report(whole, single));
  for (Histogram Stats::*h : {&Stats::latency_from_schedule, &Stats::latency_from_send,
                              &Stats::response_time, &Stats::connect_time}) {
    for (double p : {0.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
      EXPECT_EQ((merged->stats.*h).percentile(p), (whole.*h).percentile(p)) << p;
    }
    EXPECT_EQ((merged->stats.*h).count(), (whole.*h).count());
  }
  EXPECT_EQ(merged->stats.errors.count, whole.errors.count);
  EXPECT_EQ(merged->stats.timeline, whole.timeline);
  EXPECT_EQ(merged->stats.session_length, whole.session_length);
}

TEST(Merge, RawFiguresRoundTripExactly) {
  Stats whole;
  std::vector<Stats> parts(1);
  record_run(whole, parts);
  std::string error;
  const auto back = stats_from_json(nlohmann::json::parse(stats_to_json(whole).dump()), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->latency_from_send.mean(), whole.latency_from_send.mean());
  EXPECT_EQ(back->latency_from_send.stddev(), whole.latency_from_send.stddev());
  EXPECT_EQ(back->schedule_lag_ns.sum, whole.schedule_lag_ns.sum);
  EXPECT_EQ(format_json_report(*back, context_of(0, 1)),
            format_json_report(whole, context_of(0, 1)));
}

TEST(Merge, RefusesWhatIsNotOneTest) {
  Stats whole;
  std::vector<Stats> parts(kInstances);
  record_run(whole, parts);
  std::string error;

  auto in = split_reports(parts);
  in[2].text = format_json_report(parts[2], [] {
    ReportContext c = context_of(2, kInstances);
    c.test += " --uri=/other";
    return c;
  }());
  EXPECT_FALSE(merge_reports(in, error));
  EXPECT_NE(error.find("part2: cannot merge with part0: another test"), std::string::npos) << error;

  in = split_reports(parts);
  in[3] = in[1];
  in[3].name = "again";
  EXPECT_FALSE(merge_reports(in, error));
  EXPECT_NE(error.find("again: instance 1 of 4 is already merged"), std::string::npos) << error;

  in = split_reports(parts);
  in[1].text = "[" + in[1].text + "]";
  EXPECT_FALSE(merge_reports(in, error));
  EXPECT_NE(error.find("part1: a --sweep report"), std::string::npos) << error;

  in = split_reports(parts);
  in[0].text = R"({"tool": "weft-load", "version": "1"})";
  EXPECT_FALSE(merge_reports(in, error));
  EXPECT_NE(error.find("part0: has no raw figures"), std::string::npos) << error;

  in = split_reports(parts);
  in[0].text = "not json";
  EXPECT_FALSE(merge_reports(in, error));
  EXPECT_NE(error.find("part0: not JSON"), std::string::npos) << error;

  in = split_reports(parts);
  auto j = nlohmann::json::parse(in[0].text);
  j["raw"]["latency_from_send"]["count"] = 1;  // buckets no longer add up
  in[0].text = j.dump();
  EXPECT_FALSE(merge_reports(in, error));
  EXPECT_NE(error.find("part0: raw figures: latency_from_send: inconsistent buckets"),
            std::string::npos)
      << error;
}

TEST(Merge, APartialMergeSaysWhichInstancesItHolds) {
  Stats whole;
  std::vector<Stats> parts(kInstances);
  record_run(whole, parts);
  auto in = split_reports(parts);
  in.resize(2);
  std::string error;
  const auto merged = merge_reports(in, error);
  ASSERT_TRUE(merged) << error;
  EXPECT_NE(format_text_report(merged->stats, merged->context)
                .find("Clients: 2 of 4 instances (0 1): part of the test"),
            std::string::npos);
  // A merged report merges again with the rest.
  std::vector<MergeInput> again{
      {"half", format_json_report(merged->stats, merged->context)},
      split_reports(parts)[2],
      split_reports(parts)[3],
  };
  const auto all = merge_reports(again, error);
  ASSERT_TRUE(all) << error;
  EXPECT_EQ(all->stats.latency_from_send.percentile(99.0),
            whole.latency_from_send.percentile(99.0));
  EXPECT_EQ(all->stats.replies(), whole.replies());
}

}  // namespace
}  // namespace weft::load
