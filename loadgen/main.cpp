// weft-load: an httperf-style open-loop load generator.
//
// This main parses and checks the command line, loads the workload files, resolves the
// server, and runs the engine once (or once per rate with --sweep), each run on a fresh
// runtime. It prints httperf's text report on stdout (one per run), writes --json (one object;
// an array of objects with --sweep) and appends --csv rows (one per run, under a header when
// the file is new or empty). While a run goes on, a progress line is redrawn on stderr once a
// second when stderr is a terminal; --quiet silences it and the text report. With --dry-run it
// prints the plan and the first sessions it would start, and sends nothing.
// Exit status: 0 done (whatever the errors counted), 1 a file could not be used or the engine
// could not start, 2 usage error.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include "loadgen/engine.hpp"
#include "loadgen/fleet.hpp"
#include "loadgen/merge.hpp"
#include "loadgen/options.hpp"
#include "loadgen/report.hpp"
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
  for (std::uint64_t k = 0; k < kPreviewSessions;) {
    const auto s = schedule.next();
    if (!s) break;
    if (!o.client.owns(s->index)) continue;  // another instance's (--client I/N)
    ++k;
    if (!source.plan_session(s->index, plan)) break;
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

// Raises the soft descriptor limit to the hard one (each open connection is a descriptor).
void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
}

// Redraws one status line on stderr once a second while a run goes on.
class ProgressLine {
 public:
  explicit ProgressLine(const weft::load::Engine& engine) : engine_(engine) {
    thread_ = std::thread([this] { loop(); });
  }
  ~ProgressLine() {
    {
      std::lock_guard g(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
    if (drawn_) std::fputs("\r\x1b[K", stderr);  // leave a clean line for what follows
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  void loop() {
    std::unique_lock lock(mu_);
    std::uint64_t last_replies = 0;
    while (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
      const weft::load::Progress p = engine_.progress();
      if (!p.running) continue;
      fmt::print(stderr,
                 "\r\x1b[Kweft-load: {:.0f} s: {} sessions, {} replies ({}/s), {} errors, "
                 "{} open, lag max {:.3f} ms",
                 p.elapsed_s, p.sessions, p.replies, p.replies - last_replies, p.errors, p.open,
                 p.lag_max_ms);
      std::fflush(stderr);
      last_replies = p.replies;
      drawn_ = true;
    }
  }

  const weft::load::Engine& engine_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

bool write_file(const std::string& path, const std::string& text, bool append) {
  std::ofstream f(path, append ? std::ios::app : std::ios::trunc);
  f << text;
  f.close();
  if (!f) {
    fmt::print(stderr, "weft-load: cannot write {}\n", path);
    return false;
  }
  return true;
}

bool file_is_empty(const std::string& path) {
  std::ifstream f(path, std::ios::ate);
  return !f || f.tellg() <= 0;
}

// Sends the runtime's spdlog messages to stderr: stdout carries the report.
void log_to_stderr() {
  auto logger = spdlog::stderr_logger_mt("weft-load");
  logger->set_pattern("weft-load: %v");
  logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

// What the runs produce for --json and --csv, written once every run is done.
struct Outputs {
  std::string json;
  std::string csv;
};

// Returns the rate of each run: each --sweep rate, or one nullopt (the --rate or --period run).
std::vector<std::optional<double>> run_rates(const Options& o) {
  std::vector<std::optional<double>> rates;
  if (!o.sweep_rates.empty()) {
    for (double r : o.sweep_rates) rates.emplace_back(r);
  } else {
    rates.emplace_back(std::nullopt);
  }
  return rates;
}

// Runs the engine once, under a progress line when asked; nullopt when the run failed.
std::optional<weft::load::RunResult> run_once(weft::load::Engine& engine,
                                              const weft::load::Period& period,
                                              bool show_progress) {
  try {
    // The progress line must be gone before an error is printed, hence its scope.
    std::optional<ProgressLine> progress;
    if (show_progress) progress.emplace(engine);
    return engine.run(period);
  } catch (const std::exception& e) {
    fmt::print(stderr, "weft-load: {}\n", e.what());
    return std::nullopt;
  }
}

// Prints run `i`'s text report and adds its JSON object and CSV row to `out`.
void report_run(const Options& o, std::size_t i, std::optional<double> rate,
                const weft::load::Period& period, const weft::load::RunResult& result,
                Outputs& out) {
  if (!result.first_other.empty()) {
    fmt::print(stderr, "weft-load: the first error counted as 'other': {}\n", result.first_other);
  }
  weft::load::ReportContext context;
  context.command_line = weft::load::httperf_command_line(o, rate);
  context.sessions = o.workload.kind == weft::load::WorkloadSpec::Kind::kSessionLog;
  context.warmup_s = o.warmup_s;
  context.offered_rate = period.rate();
  context.tls = result.tls;
  context.test = weft::load::test_identity(o, rate);
  context.clients_of = o.client.count;
  context.client_indexes = {o.client.index};
  if (!o.quiet) {
    if (i > 0) fmt::print("\n");
    fmt::print("{}", weft::load::format_text_report(result.stats, context));
    std::fflush(stdout);
  }
  if (!o.json_file.empty()) {
    std::string obj = weft::load::format_json_report(result.stats, context);
    if (!o.sweep_rates.empty()) {
      obj.pop_back();  // the newline; the array gets its own
      out.json += (i > 0 ? ",\n" : "\n") + obj;
    } else {
      out.json += obj;
    }
  }
  if (!o.csv_file.empty()) out.csv += weft::load::format_csv_row(result.stats, context);
}

// Runs the engine at each rate, reports every run, then writes the files; returns the status.
int run_all(const Options& o, weft::load::Engine& engine) {
  const bool sweep = !o.sweep_rates.empty();
  const std::vector<std::optional<double>> rates = run_rates(o);
  const bool show_progress = !o.quiet && isatty(STDERR_FILENO) == 1;
  Outputs out;
  out.json = sweep ? "[" : "";
  if (!o.csv_file.empty() && file_is_empty(o.csv_file)) out.csv = weft::load::csv_header();

  for (std::size_t i = 0; i < rates.size(); ++i) {
    const weft::load::Period period =
        rates[i] ? weft::load::Period::from_rate(*rates[i]) : o.period;
    const auto result = run_once(engine, period, show_progress);
    if (!result) return 1;
    report_run(o, i, rates[i], period, *result, out);
  }
  if (sweep) out.json += "\n]\n";
  bool ok = true;
  if (!o.json_file.empty()) ok = write_file(o.json_file, out.json, false) && ok;
  if (!o.csv_file.empty()) ok = write_file(o.csv_file, out.csv, true) && ok;
  return ok ? 0 : 1;
}

// weft-load merge: reads the reports, merges them, prints and writes the merged report.
int merge_main(int argc, char** argv) {
  int code = 0;
  std::string output;
  const auto mo = weft::load::parse_merge_options(argc, argv, code, output);
  if (!mo) {
    std::fputs(output.c_str(), code == 0 ? stdout : stderr);
    return code;
  }
  std::vector<weft::load::MergeInput> inputs;
  for (const std::string& path : mo->files) {
    std::ifstream f(path);
    std::stringstream text;
    text << f.rdbuf();
    if (!f) {
      fmt::print(stderr, "weft-load merge: cannot read {}\n", path);
      return 1;
    }
    inputs.push_back({path, text.str()});
  }
  std::string error;
  const auto merged = weft::load::merge_reports(inputs, error);
  if (!merged) {
    fmt::print(stderr, "weft-load merge: {}\n", error);
    return 1;
  }
  const weft::load::ReportContext& c = merged->context;
  if (c.client_indexes.size() != c.clients_of) {
    fmt::print(stderr, "weft-load merge: warning: {} of the test's {} instances merged\n",
               c.client_indexes.size(), c.clients_of);
  }
  if (!mo->quiet) fmt::print("{}", weft::load::format_text_report(merged->stats, c));
  if (!mo->json_file.empty() &&
      !write_file(mo->json_file, weft::load::format_json_report(merged->stats, c), false)) {
    return 1;
  }
  return 0;
}

// Waits for --start-at (the clock checked first, unless --no-clock-check); false when the
// run must not start.
bool wait_for_start(const Options& o) {
  if (!o.start_at_s) return true;
  if (o.clock_check) {
    if (auto why = weft::load::check_clock(weft::load::read_clock_state(), o.max_clock_error_ms)) {
      fmt::print(stderr, "weft-load: {}\n", *why);
      return false;
    }
  }
  std::string error;
  // A start already past by less than the clocks may disagree is still a common start.
  if (weft::load::sleep_until_wall_clock(*o.start_at_s, o.max_clock_error_ms / 1000.0, error) !=
      0) {
    fmt::print(stderr, "weft-load: {}\n", error);
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view{argv[1]} == "merge") return merge_main(argc, argv);
  auto parsed = weft::load::parse_options(argc, argv);
  if (!parsed.options) {
    std::fputs(parsed.output.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  for (const auto& w : parsed.warnings) fmt::print(stderr, "weft-load: warning: {}\n", w);
  const Options& o = *parsed.options;
  log_to_stderr();

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

  raise_fd_limit();
  std::string error;
  auto target = weft::load::resolve_target(o.server, o.port, error);
  if (!target) {
    fmt::print(stderr, "weft-load: {}\n", error);
    return 1;
  }
  std::optional<weft::load::Engine> engine;
  try {
    engine.emplace(o, *source, std::move(*target));
  } catch (const std::exception& e) {
    fmt::print(stderr, "weft-load: {}\n", e.what());
    return 1;
  }
  if (!wait_for_start(o)) return 1;
  return run_all(o, *engine);
}
