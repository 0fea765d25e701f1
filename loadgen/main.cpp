// weft-load: an httperf-style open-loop load generator.
//
// This main parses and checks the command line, loads the workload files, and with --dry-run
// prints the plan and the first sessions it would start. The network engine (on weft's fiber
// runtime) is not built yet: without --dry-run, weft-load says so and exits with status 1.
// Exit status: 0 done, 1 a file could not be used or the engine is missing, 2 usage error.
#include <cstdio>
#include <exception>
#include <optional>

#include <fmt/core.h>

#include "loadgen/options.hpp"
#include "loadgen/schedule.hpp"
#include "loadgen/workload.hpp"

namespace {

using weft::load::Options;

// How many sessions --dry-run shows.
constexpr std::uint64_t kPreviewSessions = 5;

void print_preview(const Options& o, const weft::load::UriSource& source) {
  std::optional<std::uint64_t> duration_ns;
  if (o.duration_s) duration_ns = static_cast<std::uint64_t>(*o.duration_s * 1e9);
  const weft::load::Period period =
      o.sweep_rates.empty() ? o.period : weft::load::Period::from_rate(o.sweep_rates.front());
  // The run ends at whichever limit comes first: the options' or the workload's own.
  std::optional<std::uint64_t> limit = o.max_sessions();
  if (const auto own = source.session_limit(); own && (!limit || *own < *limit)) limit = own;
  weft::load::Schedule schedule(period, o.workload.seed, limit, duration_ns);
  weft::load::SessionPlan plan;
  fmt::print("first sessions:\n");
  for (std::uint64_t k = 0; k < kPreviewSessions; ++k) {
    const auto s = schedule.next();
    if (!s || !source.plan_session(s->index, plan)) break;
    fmt::print("  #{} due {:.6f} s:", s->index, static_cast<double>(s->due_ns) / 1e9);
    for (const auto& burst : plan.bursts) {
      fmt::print(" [");
      for (std::uint32_t c = burst.first; c < burst.first + burst.count; ++c) {
        fmt::print("{}{} {}", c == burst.first ? "" : ", ", plan.calls[c].method,
                   plan.calls[c].uri);
      }
      fmt::print("]");
      if (burst.think_s > 0.0) fmt::print(" think {} s", burst.think_s);
    }
    fmt::print("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = weft::load::parse_options(argc, argv);
  if (!parsed.options) {
    std::fputs(parsed.output.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  for (const auto& w : parsed.warnings) fmt::print(stderr, "weft-load: warning: {}\n", w);
  const Options& o = *parsed.options;

  std::unique_ptr<weft::load::UriSource> source;
  try {
    source = weft::load::make_uri_source(o.workload);
  } catch (const std::exception& e) {
    fmt::print(stderr, "weft-load: {}\n", e.what());
    return 1;
  }

  if (o.dry_run) {
    fmt::print("{}\n", weft::load::httperf_command_line(o));
    fmt::print("{}", weft::load::describe_plan(o));
    fmt::print("source:    {}\n", source->describe());
    print_preview(o, *source);
    return 0;
  }
  fmt::print(stderr,
             "weft-load: the network engine is not built yet; use --dry-run to check a plan\n");
  return 1;
}
