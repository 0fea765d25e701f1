// Reports of a weft-load run: httperf's text layout, JSON, and CSV rows for rate sweeps.
//
// Text: line for line what httperf 0.9 prints (checked against a real run on Debian 12), so
// that scripts reading httperf's output read ours: the command line, "Maximum connect burst
// length", then the Total / Connection / Request / Reply / CPU / Net I/O / Errors sections
// with httperf's labels, units, number formats and blank lines; then, for session workloads,
// httperf's "Session ..." lines; then weft-load's own lines, which no httperf script matches:
//
//   Latency from schedule [ms]: p50 X p90 X p99 X p99.9 X max X (N replies)
//   Latency from send [ms]: p50 X p90 X p99 X p99.9 X max X (N replies)
//   HTTP errors: http-4xx N http-5xx N bad-length N
//   Schedule lag [ms]: max X mean X (N sessions)
//   Behind schedule: N of M sessions started more than X ms late (max X ms); ...
//                                                  (only when a session started that late)
//   Warmup [s]: X (excluded from every figure above)        (only with --warmup)
//
// Figures follow httperf's definitions (rates over test-duration; "Connection time" over
// connections with at least one reply; "Errors: total" over httperf's eight classes), with
// these differences, all in weft-load's favour of accuracy: the median connection time comes
// from the latency histogram (±0.2%) rather than httperf's 1 ms bins; with no data the
// figures print 0.0 where httperf prints the timeout or inf/nan; Net I/O counts every byte
// read and written on the sockets (httperf leaves out chunk footers).
//
// JSON: every figure of the text report, raw counts, both latency distributions
// (p50/p90/p99/p99.9/max/mean/count) and the per-second timeline; then what a merge needs:
// "test" (what identifies the test), "clients" (which instances of how many), and "raw",
// the whole Stats in a form that restores exactly (stats_json.hpp). CSV: one row per run of a
// rate sweep, under csv_header().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/stats.hpp"
#include "loadgen/tls_counts.hpp"

namespace weft::load {

/// What a report needs besides the figures.
struct ReportContext {
  std::string command_line;      // the first line, e.g. "httperf --client=0/1 --server=..."
  bool sessions = false;         // print httperf's session section (session workloads)
  double warmup_s = 0.0;         // --warmup, shown when > 0
  double offered_rate = 0.0;     // sessions per second asked for (CSV, JSON)
  std::optional<TlsCounts> tls;  // with --tls: the run's handshakes
  // The test this run belongs to, the same for every instance of a fleet (options.hpp's
  // test_identity), and which instances' figures the report holds: {I} of N for one
  // instance, every index merged for a merged report (merge.hpp).
  std::string test;
  std::uint32_t clients_of = 1;
  std::vector<std::uint32_t> client_indexes{0};
};

/// Returns the text report in httperf's layout followed by weft-load's lines; ends in '\n'.
std::string format_text_report(const Stats& stats, const ReportContext& context);

/// Returns the JSON report: one object, ending in '\n'.
std::string format_json_report(const Stats& stats, const ReportContext& context);

/// Returns the CSV header line for sweep rows, ending in '\n'.
std::string csv_header();

/// Returns one CSV row (matching csv_header()) for the run at context.offered_rate.
std::string format_csv_row(const Stats& stats, const ReportContext& context);

}  // namespace weft::load
