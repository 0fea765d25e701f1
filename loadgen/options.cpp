#include "loadgen/options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "weft_version.hpp"

namespace weft::load {

namespace {

std::optional<double> parse_double(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double v = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_count(std::string_view s) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// RFC 9110 token characters, the only ones a method may have.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        std::string_view{"!#$%&'*+-.^_`|~"}.find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool is_request_target(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

// What the command line gave, before it is checked and turned into Options.
struct Raw {
  std::optional<std::string> uri;
  std::optional<double> rate;
  std::optional<std::string> period;
  std::optional<std::string> num_calls;  // "N" or "MIN..MAX"
  std::optional<std::string> wlog;
  std::optional<std::string> wsesslog;
  std::optional<double> zipf;
  std::optional<std::string> files;
  std::optional<std::string> sweep;
  // 64-bit counts stay text until finish(): CLI11 2.1 lets strtoull wrap "-5" around.
  std::optional<std::string> num_conns;
  std::optional<std::string> max_conns;
  std::optional<std::string> seed;
  std::optional<double> warmup;
  std::optional<std::string> backend;
  std::optional<std::string> client;
  std::optional<std::string> start_at;
  std::optional<std::uint32_t> streams;
  std::vector<std::string> add_header;
};

// Parses the count option `name` from `text` into `into`; returns an error, or nullopt.
std::optional<std::string> count_option(const char* name, const std::optional<std::string>& text,
                                        std::uint64_t& into) {
  if (!text) return std::nullopt;
  const auto v = parse_count(*text);
  if (!v) return fmt::format("{} {}: not a whole number >= 0", name, *text);
  into = *v;
  return std::nullopt;
}

// Checks --method and parses the 64-bit counts that CLI11 left as text.
std::optional<std::string> finish_counts(const Raw& raw, Options& o) {
  WorkloadSpec& w = o.workload;
  if (!is_token(w.method)) return fmt::format("--method {}: not an HTTP method token", w.method);
  if (auto e = count_option("--seed", raw.seed, w.seed)) return e;
  if (auto e = count_option("--max-conns", raw.max_conns, o.max_conns)) return e;
  if (raw.num_conns) {
    std::uint64_t n = 0;
    if (auto e = count_option("--num-conns", raw.num_conns, n)) return e;
    o.num_conns = n;
  }
  return std::nullopt;
}

// Checks that at most one workload was chosen, and parses --num-calls against it.
std::optional<std::string> finish_workload_choice(const Raw& raw, WorkloadSpec& w) {
  const int workloads = (raw.uri ? 1 : 0) + (raw.wlog ? 1 : 0) + (raw.wsesslog ? 1 : 0) +
                        ((raw.zipf || raw.files) ? 1 : 0);
  if (workloads > 1) {
    return std::string{"choose one workload: --uri, --wlog, --wsesslog, or --zipf with --files"};
  }
  if (raw.zipf.has_value() != raw.files.has_value()) {
    return std::string{raw.zipf ? "--zipf needs --files MANIFEST (the file set to draw from)"
                                : "--files needs --zipf S (use --zipf 0 for uniform popularity)"};
  }
  if (raw.num_calls) {
    std::string error;
    auto calls = parse_num_calls(*raw.num_calls, error);
    if (!calls) return error;
    w.num_calls = *calls;
    if (!calls->fixed() && (raw.wlog || raw.wsesslog)) {
      return std::string{
          "--num-calls MIN..MAX works with --uri and --zipf; --wlog takes URIs in "
          "order and --wsesslog sets its own sessions"};
    }
  }
  return std::nullopt;
}

// Parses --wsesslog N,X,FILE into `o`, warning about the options it overrides.
std::optional<std::string> finish_sesslog(const Raw& raw, Options& o,
                                          std::vector<std::string>& warnings) {
  WorkloadSpec& w = o.workload;
  const std::string& v = *raw.wsesslog;
  const std::size_t c1 = v.find(',');
  const std::size_t c2 = c1 == std::string::npos ? c1 : v.find(',', c1 + 1);
  if (c2 == std::string::npos || c2 + 1 >= v.size()) {
    return fmt::format("--wsesslog {}: expected N,X,FILE (sessions, think time, file)", v);
  }
  const auto n = parse_count(std::string_view{v}.substr(0, c1));
  const auto x = parse_double(std::string_view{v}.substr(c1 + 1, c2 - c1 - 1));
  if (!n || *n == 0) return fmt::format("--wsesslog {}: N must be a count >= 1", v);
  if (!x || *x < 0.0) return fmt::format("--wsesslog {}: X must be seconds >= 0", v);
  w.kind = WorkloadSpec::Kind::kSessionLog;
  w.sesslog_sessions = *n;
  w.sesslog_think_s = *x;
  w.sesslog_file = v.substr(c2 + 1);
  if (o.num_conns) warnings.emplace_back("--num-conns is ignored with --wsesslog (N sets it)");
  if (raw.num_calls) warnings.emplace_back("--num-calls is ignored with --wsesslog");
  return std::nullopt;
}

// Checks the chosen workload's own option and fills the workload from it.
std::optional<std::string> finish_workload(const Raw& raw, Options& o,
                                           std::vector<std::string>& warnings) {
  WorkloadSpec& w = o.workload;
  if (raw.uri) {
    if (!is_request_target(*raw.uri)) {
      return fmt::format("--uri '{}': empty, or holds whitespace or control characters", *raw.uri);
    }
    w.kind = WorkloadSpec::Kind::kUri;
    w.uri = *raw.uri;
  } else if (raw.zipf) {
    if (!std::isfinite(*raw.zipf) || *raw.zipf < 0.0) {
      return fmt::format("--zipf {}: the exponent must be a number >= 0", *raw.zipf);
    }
    w.kind = WorkloadSpec::Kind::kZipf;
    w.zipf_s = *raw.zipf;
    w.files = *raw.files;
    if (w.files.empty()) return std::string{"--files: empty path"};
  } else if (raw.wlog) {
    const std::string& v = *raw.wlog;
    if (v.size() < 3 || (v[0] != 'y' && v[0] != 'n') || v[1] != ',') {
      return fmt::format("--wlog {}: expected B,FILE with B = y (wrap around) or n (stop)", v);
    }
    w.kind = WorkloadSpec::Kind::kWlog;
    w.wlog_loop = v[0] == 'y';
    w.wlog_file = v.substr(2);
  } else if (raw.wsesslog) {
    return finish_sesslog(raw, o, warnings);
  }
  return std::nullopt;
}

// Checks --rate, --period and --sweep and fills the schedule from them.
std::optional<std::string> finish_schedule(const Raw& raw, Options& o) {
  if (raw.rate && raw.period) {
    return std::string{"give --rate or --period, not both (--rate R is --period d1/R)"};
  }
  if (raw.sweep && (raw.rate || raw.period)) {
    return std::string{"--sweep sets the rate of each run: drop --rate and --period"};
  }
  if (raw.rate) {
    if (!std::isfinite(*raw.rate) || *raw.rate < 0.0) {
      return fmt::format("--rate {}: must be a number >= 0", *raw.rate);
    }
    o.period = Period::from_rate(*raw.rate);
  } else if (raw.period) {
    std::string error;
    auto p = parse_period(*raw.period, error);
    if (!p) return error;
    o.period = *p;
  }
  if (raw.sweep) {
    std::string error;
    auto rates = parse_sweep(*raw.sweep, error);
    if (!rates) return error;
    o.sweep_rates = std::move(*rates);
    if (!o.duration_s && !o.num_conns && o.workload.kind != WorkloadSpec::Kind::kSessionLog) {
      return std::string{"--sweep needs --duration or --num-conns to size each run"};
    }
  }
  return std::nullopt;
}

// Checks the run's limits (sessions, duration, timeout, warmup) and fills --warmup.
std::optional<std::string> finish_limits(const Raw& raw, Options& o) {
  if (o.num_conns && *o.num_conns == 0) return std::string{"--num-conns must be at least 1"};
  if (o.duration_s && (!std::isfinite(*o.duration_s) || *o.duration_s <= 0.0)) {
    return fmt::format("--duration {}: must be a number of seconds > 0", *o.duration_s);
  }
  if (o.timeout_s && (!std::isfinite(*o.timeout_s) || *o.timeout_s <= 0.0)) {
    return fmt::format("--timeout {}: must be a number of seconds > 0", *o.timeout_s);
  }
  if (raw.warmup) {
    if (!std::isfinite(*raw.warmup) || *raw.warmup < 0.0) {
      return fmt::format("--warmup {}: must be a number of seconds >= 0", *raw.warmup);
    }
    o.warmup_s = *raw.warmup;
  }
  if (o.warmup_s > 0.0 && o.duration_s && o.warmup_s >= *o.duration_s) {
    return fmt::format("--warmup {} must be shorter than --duration {}", o.warmup_s, *o.duration_s);
  }
  return std::nullopt;
}

// Checks --backend, --threads, --server and --port, and fills the backend.
std::optional<std::string> finish_engine(const Raw& raw, Options& o) {
  if (raw.backend) {
    if (*raw.backend == "auto") {
      o.backend = Backend::automatic;
    } else if (*raw.backend == "io_uring") {
      o.backend = Backend::io_uring;
    } else if (*raw.backend == "epoll") {
      o.backend = Backend::epoll;
    } else {
      return fmt::format("--backend {}: expected auto, io_uring or epoll", *raw.backend);
    }
  }
  if (o.threads < 1 || o.threads > 1024) {
    return fmt::format("--threads {}: must be between 1 and 1024", o.threads);
  }
  if (o.sweep_rates.empty() && o.period.spacing == Spacing::kSequential && o.threads > 1) {
    return std::string{
        "--rate 0 (sequential sessions, the default) runs one session at a time: "
        "give --rate or --period to use --threads"};
  }
  if (o.server.empty()) return std::string{"--server: empty host name"};
  if (o.port == 0) return std::string{"--port must be between 1 and 65535"};
  return std::nullopt;
}

// Checks --client, --start-at and --max-clock-error, and fills them.
std::optional<std::string> finish_fleet(const Raw& raw, Options& o) {
  std::string error;
  if (raw.client) {
    const auto share = parse_client(*raw.client, error);
    if (!share) return error;
    o.client = *share;
    if (o.client.count > 1 && o.sweep_rates.empty() && o.period.spacing == Spacing::kSequential) {
      return std::string{
          "--client splits a timed schedule: give --rate or --period (sequential sessions "
          "cannot be shared out)"};
    }
  }
  if (raw.start_at) {
    o.start_at_s = parse_start_at(*raw.start_at, error);
    if (!o.start_at_s) return error;
    if (!o.sweep_rates.empty()) {
      return std::string{"--start-at starts one run: give each rate of a sweep its own start"};
    }
  }
  if (raw.streams) {
    if (!o.http2) return std::string{"--streams needs --http2"};
    if (*raw.streams < 1 || *raw.streams > 1000) {
      return fmt::format("--streams {}: must be between 1 and 1000", *raw.streams);
    }
    o.streams = *raw.streams;
  }
  if (!std::isfinite(o.max_clock_error_ms) || o.max_clock_error_ms <= 0.0) {
    return fmt::format("--max-clock-error {}: must be a number of milliseconds > 0",
                       o.max_clock_error_ms);
  }
  return std::nullopt;
}

// Checks the combination and fills `o`; returns an error message, or nullopt when all is well.
// The steps run in this order so the first error reported stays the same one.
// Parses each --add-header "Name: value" into o.headers; refuses a malformed field and those
// weft-load writes itself or that would change how a message is framed or a connection kept
// (they mean nothing per request over HTTP/2 either).
std::optional<std::string> finish_headers(const Raw& raw, Options& o) {
  static constexpr std::string_view kOwn[] = {"host",       "content-length",  "transfer-encoding",
                                              "connection", "keep-alive",      "upgrade",
                                              "te",         "proxy-connection"};
  for (const std::string& text : raw.add_header) {
    const std::size_t colon = text.find(':');
    const std::string_view name = std::string_view{text}.substr(0, colon);
    if (colon == std::string::npos || !is_token(name)) {
      return fmt::format("--add-header '{}': expected NAME: VALUE, NAME a token", text);
    }
    std::string_view value = std::string_view{text}.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    for (unsigned char c : value) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        return fmt::format("--add-header '{}': control characters in the value", name);
      }
    }
    std::string lower{name};
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (std::find(std::begin(kOwn), std::end(kOwn), lower) != std::end(kOwn)) {
      return fmt::format("--add-header '{}': weft-load writes or forbids this field itself", name);
    }
    o.headers.push_back({std::string{name}, std::string{value}});
  }
  return std::nullopt;
}

std::optional<std::string> finish(const Raw& raw, Options& o, std::vector<std::string>& warnings) {
  if (auto e = finish_counts(raw, o)) return e;
  if (auto e = finish_workload_choice(raw, o.workload)) return e;
  if (auto e = finish_workload(raw, o, warnings)) return e;
  if (auto e = finish_schedule(raw, o)) return e;
  if (auto e = finish_limits(raw, o)) return e;
  if (auto e = finish_fleet(raw, o)) return e;
  if (auto e = finish_headers(raw, o)) return e;
  return finish_engine(raw, o);
}

}  // namespace

std::optional<std::uint64_t> Options::max_sessions() const {
  if (workload.kind == WorkloadSpec::Kind::kSessionLog) return workload.sesslog_sessions;
  if (num_conns) return *num_conns;
  if (duration_s) return std::nullopt;
  return 1;  // httperf's default --num-conns
}

std::optional<CallCount> parse_num_calls(const std::string& text, std::string& error) {
  const std::size_t dots = text.find("..");
  const std::string_view v{text};
  const auto lo = parse_count(dots == std::string::npos ? v : v.substr(0, dots));
  const auto hi = dots == std::string::npos ? lo : parse_count(v.substr(dots + 2));
  if (!lo || !hi) {
    error = fmt::format("--num-calls {}: expected N or MIN..MAX (whole numbers)", text);
    return std::nullopt;
  }
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint32_t>::max();
  if (*lo == 0 || *hi < *lo || *hi > kMax) {
    error = *lo == 0 ? std::string{"--num-calls must be at least 1"}
                     : fmt::format("--num-calls {}: need 1 <= MIN <= MAX <= {}", text, kMax);
    return std::nullopt;
  }
  return CallCount{static_cast<std::uint32_t>(*lo), static_cast<std::uint32_t>(*hi)};
}

std::optional<std::vector<double>> parse_sweep(const std::string& text, std::string& error) {
  const std::size_t c1 = text.find(':');
  const std::size_t c2 = c1 == std::string::npos ? c1 : text.find(':', c1 + 1);
  if (c2 == std::string::npos) {
    error = fmt::format("--sweep {}: expected FROM:TO:STEP (sessions per second)", text);
    return std::nullopt;
  }
  const std::string_view v{text};
  const auto from = parse_double(v.substr(0, c1));
  const auto to = parse_double(v.substr(c1 + 1, c2 - c1 - 1));
  const auto step = parse_double(v.substr(c2 + 1));
  if (!from || !to || !step || *from <= 0.0 || *step <= 0.0 || *to < *from) {
    error = fmt::format("--sweep {}: need 0 < FROM <= TO and STEP > 0", text);
    return std::nullopt;
  }
  const double count = std::floor((*to - *from) / *step + 1e-9) + 1.0;
  if (count > 1000.0) {
    error = fmt::format("--sweep {}: {} rates; at most 1000", text, count);
    return std::nullopt;
  }
  std::vector<double> rates;
  // Multiply rather than add STEP repeatedly, so 0.1 steps do not drift.
  for (int i = 0; i < static_cast<int>(count); ++i) rates.push_back(*from + i * *step);
  return rates;
}

// Declares weft-load's own options (beside httperf's) on `app`, filling `o` and `raw`.
static void add_weft_load_options(CLI::App& app, Options& o, Raw& raw) {
  // weft-load's options.
  app.add_option("--zipf", raw.zipf, "Zipf exponent S of file popularity (needs --files)");
  app.add_option("--files", raw.files, "file-set manifest to draw URIs from (needs --zipf)");
  app.add_option("--duration", o.duration_s, "stop starting sessions after this many seconds");
  app.add_option("--seed", raw.seed, "seed of every random choice (default 1)");
  app.add_option("--warmup", raw.warmup, "seconds at the start left out of every figure");
  app.add_option("--threads", o.threads, "engine threads (processors)")->capture_default_str();
  app.add_option("--backend", raw.backend, "I/O backend: auto (default), io_uring or epoll");
  app.add_option("--max-conns", raw.max_conns, "cap on open connections (default 0: none)");
  app.add_option("--json", o.json_file, "write the JSON report to FILE");
  app.add_option("--csv", o.csv_file, "append CSV rows (one per rate) to FILE");
  app.add_flag("--quiet", o.quiet, "print no text report and no progress line");
  app.add_option("--sweep", raw.sweep, "FROM:TO:STEP: one run per rate, sessions per second");
  app.add_flag("--dry-run", o.dry_run, "print the plan and exit without sending anything");
  app.add_flag("--tls", o.tls, "speak HTTPS (TLS 1.2/1.3; the certificate is not verified)");
  app.add_flag(
      "--tls-resume", o.tls_resume,
      "with --tls: a warm-up handshake, then every connection offers the last ticket kept");
  app.add_option("--tls-server-name", o.tls_server_name,
                 "the name sent in the TLS handshake (SNI; default: --server unless an address)");
  app.add_flag("--http2", o.http2,
               "speak HTTP/2: h2 by ALPN with --tls, else h2c with prior knowledge; a session "
               "is one connection and its calls are streams");
  app.add_option("--streams", raw.streams,
                 "with --http2: at most N streams of a session open at once (default 100)");
  app.add_option("--client", raw.client,
                 "I/N: run instance I's share of a test split over N instances (every N-th "
                 "session, as one instance would run it)");
  app.add_option("--start-at", raw.start_at,
                 "start at this wall-clock time (epoch seconds or 2026-12-04T18:00:00Z), so "
                 "that a fleet's instances start together");
  app.add_option("--max-clock-error", o.max_clock_error_ms,
                 "--start-at refuses a clock whose error bound exceeds this many ms")
      ->capture_default_str();
  app.add_flag("--no-clock-check{false}", o.clock_check,
               "--start-at trusts the clock unchecked (instances on one machine)");
}

OptionsParse parse_options(int argc, const char* const* argv) {
  Options o;
  Raw raw;
  CLI::App app{"weft-load: an httperf-style open-loop HTTP load generator", "weft-load"};
  app.set_version_flag("-V,--version", std::string{"weft-load "} + kWeftVersion);
  app.footer(
      "Sessions start on a schedule that never waits for the server (open loop). With "
      "--max-conns N, a session due while N connections are open fails at once as fd-unavail. "
      "Usage errors exit with status 2.");

  // httperf's options.
  app.add_option("--server", o.server, "host name or address of the server")->capture_default_str();
  app.add_option("--port", o.port, "server port")->capture_default_str();
  app.add_option("--uri", raw.uri, "the URI every call asks for (default /)");
  app.add_option("--method", o.workload.method, "request method")->capture_default_str();
  app.add_option("--add-header", raw.add_header,
                 "'NAME: VALUE': a header field every request carries (repeatable)");
  app.add_option("--rate", raw.rate, "sessions started per second (0: one after another)");
  app.add_option("--period", raw.period,
                 "[d|u|e]T1[,T2]: fixed, uniform [T1,T2) or exponential (Poisson) gaps, seconds");
  app.add_option("--num-conns", raw.num_conns, "sessions (connections) to start (default 1)");
  app.add_option("--num-calls", raw.num_calls,
                 "calls per connection, kept alive (default 1); MIN..MAX: drawn per session");
  app.add_option("--timeout", o.timeout_s, "seconds without progress before a call fails");
  app.add_option("--wlog", raw.wlog, "B,FILE: URIs from FILE (NUL-separated); B=y wraps around");
  app.add_option("--wsesslog", raw.wsesslog,
                 "N,X,FILE: N sessions from httperf session log FILE, default think time X");
  app.add_flag("--hog", o.hog, "accepted for httperf compatibility; no effect");

  add_weft_load_options(app, o, raw);

  OptionsParse result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out;
    std::ostringstream err;
    // CLI11 has its own codes (e.g. 109); usage errors exit 2, like most Unix tools.
    result.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;
    result.output = out.str() + err.str();
    return result;
  }
  if (auto error = finish(raw, o, result.warnings)) {
    result.exit_code = 2;
    result.output = fmt::format("weft-load: {}\nRun with --help for more information.\n", *error);
    return result;
  }
  result.options = std::move(o);
  return result;
}

std::string httperf_command_line(const Options& o, std::optional<double> rate) {
  const WorkloadSpec& w = o.workload;
  std::string line = "httperf";
  if (o.hog) line += " --hog";
  line += fmt::format(" --client={}/{} --server={} --port={}", o.client.index, o.client.count,
                      o.server, o.port);
  if (w.kind == WorkloadSpec::Kind::kUri) line += fmt::format(" --uri={}", w.uri);
  if (w.method != "GET") line += fmt::format(" --method={}", w.method);
  for (const ExtraHeader& h : o.headers)
    line += fmt::format(" --add-header='{}: {}\\n'", h.name, h.value);
  if (rate) {
    line += fmt::format(" --rate={}", *rate);
  } else if (o.period.spacing == Spacing::kFixed) {
    line += fmt::format(" --rate={}", o.period.rate());
  } else if (o.period.spacing != Spacing::kSequential) {
    line += fmt::format(" --period={}", o.period.to_string());
  }
  if (o.timeout_s) line += fmt::format(" --timeout={}", *o.timeout_s);
  if (w.kind == WorkloadSpec::Kind::kWlog) {
    line += fmt::format(" --wlog={},{}", w.wlog_loop ? 'y' : 'n', w.wlog_file);
  }
  if (w.kind == WorkloadSpec::Kind::kSessionLog) {
    line += fmt::format(" --wsesslog={},{:.3f},{}", w.sesslog_sessions, w.sesslog_think_s,
                        w.sesslog_file);
  } else {
    if (o.num_conns) line += fmt::format(" --num-conns={}", *o.num_conns);
    line += fmt::format(" --num-calls={}", w.num_calls.to_string());
  }
  // weft-load's own options, after httperf's.
  if (w.kind == WorkloadSpec::Kind::kZipf) {
    line += fmt::format(" --zipf={} --files={}", w.zipf_s, w.files);
  }
  if (o.duration_s) line += fmt::format(" --duration={}", *o.duration_s);
  if (o.warmup_s > 0.0) line += fmt::format(" --warmup={}", o.warmup_s);
  line += fmt::format(" --seed={}", w.seed);
  if (o.threads != 1) line += fmt::format(" --threads={}", o.threads);
  if (o.backend == Backend::io_uring) line += " --backend=io_uring";
  if (o.backend == Backend::epoll) line += " --backend=epoll";
  if (o.max_conns != 0) line += fmt::format(" --max-conns={}", o.max_conns);
  if (o.tls || o.tls_resume) line += o.tls_resume ? " --tls-resume" : " --tls";
  if (o.http2) line += fmt::format(" --http2 --streams={}", o.streams);
  return line;
}

std::string test_identity(const Options& o, std::optional<double> rate) {
  Options whole = o;
  whole.client = ClientShare{};
  return httperf_command_line(whole, rate);
}

std::string describe_plan(const Options& o) {
  std::string out;
  const WorkloadSpec& w = o.workload;
  out += fmt::format("server:    {}:{}\n", o.server, o.port);
  switch (w.kind) {
    case WorkloadSpec::Kind::kUri:
      out += fmt::format("workload:  {} {}, {} call(s) per session\n", w.method, w.uri,
                         w.num_calls.to_string());
      break;
    case WorkloadSpec::Kind::kZipf:
      out += fmt::format("workload:  {} files of {}, Zipf s={}, {} call(s) per session\n", w.method,
                         w.files, w.zipf_s, w.num_calls.to_string());
      break;
    case WorkloadSpec::Kind::kWlog:
      out += fmt::format("workload:  {} URIs of {} ({}), {} call(s) per session\n", w.method,
                         w.wlog_file, w.wlog_loop ? "wrapping around" : "once",
                         w.num_calls.to_string());
      break;
    case WorkloadSpec::Kind::kSessionLog:
      out += fmt::format("workload:  {} sessions from {}, default think time {} s\n",
                         w.sesslog_sessions, w.sesslog_file, w.sesslog_think_s);
      break;
  }
  auto spacing_text = [](const Period& p) -> std::string {
    switch (p.spacing) {
      case Spacing::kSequential:
        return "sequential (each session when the previous ends)";
      case Spacing::kFixed:
        return fmt::format("{} sessions/s, fixed gaps of {} s", p.rate(), p.t1);
      case Spacing::kUniform:
        return fmt::format("{} sessions/s, gaps uniform in [{}, {}) s", p.rate(), p.t1, p.t2);
      case Spacing::kExponential:
        return fmt::format("{} sessions/s, Poisson arrivals (mean gap {} s)", p.rate(), p.t1);
    }
    return "";
  };
  if (o.sweep_rates.empty()) {
    out += fmt::format("schedule:  {}\n", spacing_text(o.period));
  } else {
    out += fmt::format("sweep:     {} runs at", o.sweep_rates.size());
    for (double r : o.sweep_rates) out += fmt::format(" {}", r);
    out += " sessions/s, fixed gaps\n";
  }
  const auto max = o.max_sessions();
  out += fmt::format("sessions:  {}\n", max ? fmt::format("{}", *max) : "until the duration ends");
  out += fmt::format("duration:  {}\n",
                     o.duration_s ? fmt::format("{} s", *o.duration_s) : "until sessions end");
  if (o.warmup_s > 0.0) out += fmt::format("warmup:    {} s, not measured\n", o.warmup_s);
  out += fmt::format("timeout:   {}\n", o.timeout_s ? fmt::format("{} s", *o.timeout_s) : "none");
  out += fmt::format("threads:   {}\n", o.threads);
  out += fmt::format("backend:   {}\n", o.backend == Backend::io_uring ? "io_uring"
                                        : o.backend == Backend::epoll  ? "epoll"
                                                                       : "auto");
  out += fmt::format("max-conns: {}\n", o.max_conns ? fmt::format("{}", o.max_conns) : "no cap");
  out += fmt::format("seed:      {}\n", w.seed);
  if (o.client.count > 1) {
    out += fmt::format("client:    {} of {}: sessions whose index % {} == {}\n", o.client.index,
                       o.client.count, o.client.count, o.client.index);
  }
  if (o.start_at_s) out += fmt::format("start at:  {:.3f} (epoch seconds)\n", *o.start_at_s);
  if (!o.json_file.empty()) out += fmt::format("json:      {}\n", o.json_file);
  if (!o.csv_file.empty()) out += fmt::format("csv:       {}\n", o.csv_file);
  if (o.hog) out += "hog:       accepted, no effect\n";
  return out;
}

}  // namespace weft::load
