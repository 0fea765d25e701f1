// The weft-load command line: httperf's options with httperf's meanings, plus weft-load's own.
//
// httperf's: --server, --port, --uri, --method, --rate (sessions per second), --period
// ([d|u|e]T1[,T2]), --num-conns, --num-calls, --timeout, --wlog B,FILE, --wsesslog N,X,FILE,
// --hog (accepted and ignored: it asks httperf to use any local port, which weft-load does
// anyway). weft-load's: --zipf S with --files MANIFEST, --duration, --seed, --warmup,
// --threads, --backend, --max-conns, --json, --csv, --quiet, --sweep FROM:TO:STEP, --dry-run,
// and one extension of httperf's --num-calls: MIN..MAX.
//
// Decisions the options encode (and --help repeats):
//   - One workload per run: --uri (the default, "/"), --wlog, --wsesslog, or --zipf with
//     --files. --wsesslog's N sets the session count, so --num-conns and --num-calls are
//     ignored with it (with a warning, as httperf ignores them silently).
//   - Sessions end at --num-conns (default 1, as httperf; unlimited when only --duration is
//     given), at --duration seconds of scheduling, or when the workload runs out, whichever
//     comes first. --warmup seconds at the start count towards --duration but not in any
//     figure; --warmup must be shorter than --duration.
//   - --num-calls MIN..MAX gives each session its own count, drawn uniformly in [MIN, MAX]
//     from the seed and the session's index (httperf's sessions of 1..N requests over fresh
//     connections; httperf itself can only fix the count per run, or replay a --wsesslog).
//     With --uri and --zipf only: --wlog hands out URIs in order, --wsesslog has its own.
//   - --rate 0 / --period 0 is httperf's sequential mode (a session starts when the previous
//     one ends): it needs --threads 1.
//   - --max-conns N caps open connections. A session due while N are open is not delayed,
//     since the load must stay open-loop; it fails at once and counts as fd-unavail, the class
//     httperf uses when the client runs out of descriptors: in both cases the client, not the
//     server, was the limit, and a non-zero count means the figures describe the client.
//     0 (default) means no cap besides the descriptor limit (EMFILE is fd-unavail too).
//   - Usage errors (unknown option, bad value, bad combination) exit with code 2; --help and
//     --version exit 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/fleet.hpp"
#include "loadgen/schedule.hpp"
#include "loadgen/workload.hpp"
#include "runtime/io_backend.hpp"

namespace weft::load {

/// The I/O backend the engine asks weft's runtime for (--backend).
using Backend = rt::IoBackendKind;

struct Options {
  std::string server = "localhost";
  std::uint16_t port = 80;
  WorkloadSpec workload;                   // --uri/--zipf/--wlog/--wsesslog, method, calls, seed
  Period period;                           // from --rate or --period; sequential by default
  std::optional<std::uint64_t> num_conns;  // --num-conns as given
  std::optional<double> duration_s;        // --duration
  std::optional<double> timeout_s;         // --timeout; none: wait forever, as httperf
  double warmup_s = 0.0;                   // --warmup
  unsigned threads = 1;                    // --threads
  Backend backend = Backend::automatic;    // --backend
  std::uint64_t max_conns = 0;             // --max-conns; 0: no cap
  std::string json_file;                   // --json; empty: none
  std::string csv_file;                    // --csv; empty: none
  std::vector<double> sweep_rates;         // --sweep, expanded; empty: one run at `period`
  bool quiet = false;                      // --quiet: no text report, no progress line
  bool hog = false;                        // --hog: accepted for compatibility, no effect
  bool dry_run = false;                    // --dry-run: print the plan, run nothing
  bool tls = false;                        // --tls: HTTPS, a handshake per connection
  bool tls_resume = false;                 // --tls-resume: offer the last session (implies --tls)
  std::string tls_server_name;             // --tls-server-name; empty: --server's name
  bool http2 = false;                      // --http2: HTTP/2 (h2 by ALPN, or h2c without --tls)
  std::uint32_t streams = 100;             // --streams: concurrent streams per session (--http2)
  std::vector<ExtraHeader> headers;        // --add-header, in order
  ClientShare client;                      // --client I/N: this instance's share (fleet.hpp)
  std::optional<double> start_at_s;        // --start-at: wall-clock start, epoch seconds
  double max_clock_error_ms = 10.0;        // --max-clock-error: for --start-at
  bool clock_check = true;                 // --no-clock-check: trust the clock as it is

  /// Returns the most sessions to start: the --wsesslog count, else --num-conns, else 1
  /// unless --duration bounds the run (then nullopt: until the duration ends).
  std::optional<std::uint64_t> max_sessions() const;
};

/// Outcome of parsing argv: options to run with, or an exit code and text to print.
struct OptionsParse {
  std::optional<Options> options;
  int exit_code = 0;
  std::string output;                 // help, version or error text
  std::vector<std::string> warnings;  // options accepted but ignored, one line each
};

/// Parses and checks weft-load's command line; --help, --version and usage errors come back
/// as output with exit code 0 or 2.
OptionsParse parse_options(int argc, const char* const* argv);

/// Parses --num-calls "N" (every session makes N calls) or "MIN..MAX" (each session draws its
/// count uniformly in [MIN, MAX]); on failure returns nullopt and sets `error`.
std::optional<CallCount> parse_num_calls(const std::string& text, std::string& error);

/// Parses --sweep "FROM:TO:STEP" into the list of rates FROM, FROM+STEP, ... <= TO; on failure
/// returns nullopt and sets `error`.
std::optional<std::vector<double>> parse_sweep(const std::string& text, std::string& error);

/// Returns the httperf command line equivalent to `o` (rate `rate` when sweeping), weft-load's
/// own options appended: the first line of the text report, which httperf scripts match as
/// "^httperf ".
std::string httperf_command_line(const Options& o, std::optional<double> rate = std::nullopt);

/// Returns what identifies the test `o` runs (at `rate` when sweeping) whichever instance of
/// a fleet runs it: the command line with --client=0/1, so reports of one test's instances
/// carry the same text and merge.hpp refuses to merge reports of different tests.
std::string test_identity(const Options& o, std::optional<double> rate = std::nullopt);

/// Returns a human-readable description of the run `o` asks for (--dry-run).
std::string describe_plan(const Options& o);

}  // namespace weft::load
