// Workloads: which requests each session sends, behind one interface, UriSource.
//
// A session is a list of bursts run on one connection (keep-alive). In a burst, the first call
// goes out alone; once its reply is in, the rest go out together (pipelined); after the last
// reply of a burst, the session waits the burst's think time before the next one. This is
// httperf's session model; the request-oriented workloads are sessions whose bursts are one
// call each, with no think time (httperf's --num-calls).
//
// Four sources, as httperf's generators:
//   --uri U                 every call asks for U
//   --zipf S --files M      every call asks for a file of manifest M, ranks drawn Zipf(S)
//   --wlog B,FILE           calls take URIs in order from FILE, a list of NUL-terminated URIs;
//                           B = y wraps around at the end, B = n ends the test there
//   --wsesslog N,X,FILE     N sessions, taken round-robin from the sessions described in FILE
//                           (httperf's session log format, see parse_session_log); X is the
//                           think time of bursts that do not set their own
//
// plan_session(i, plan) is a pure function of i: the calls of session i do not depend on the
// thread count or on the order sessions run in (Zipf draws use an Rng seeded for session i).
// Sources are immutable after construction, so threads share one. Views in a plan point into
// the source and stay valid while it lives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/manifest.hpp"
#include "loadgen/zipf.hpp"

namespace weft::load {

/// A header field every request carries (--add-header), as given: the name's case is kept.
struct ExtraHeader {
  std::string name;
  std::string value;
};

/// A workload file that cannot be read or is malformed; what() is one line naming the place.
class WorkloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Calls per session of the request-oriented workloads (--uri, --zipf, --wlog): a fixed count
/// (httperf's --num-calls N), or, for --uri and --zipf, a count drawn for each session uniformly
/// in [min, max] (weft-load's --num-calls MIN..MAX: httperf-style sessions of 1..N requests).
struct CallCount {
  std::uint32_t min = 1;
  std::uint32_t max = 1;

  /// A fixed count of `n` calls; implicit, so a plain number reads as a count.
  constexpr CallCount(std::uint32_t n = 1)
      : min(n), max(n) {}  // NOLINT(google-explicit-constructor)
  /// A count uniform in [lo, hi], lo <= hi.
  constexpr CallCount(std::uint32_t lo, std::uint32_t hi) : min(lo), max(hi) {}

  /// Returns true when every session makes the same number of calls.
  constexpr bool fixed() const { return min == max; }

  /// Returns the calls of session `index`: `min` when fixed, else a uniform draw from Rng
  /// stream kCallsStream of `seed`, item `index`. The stream is apart from the Zipf draws', so
  /// a session's first k URIs do not depend on how many calls it makes.
  std::uint32_t of_session(std::uint64_t seed, std::uint64_t index) const;

  /// Returns "N" or "MIN..MAX", as --num-calls takes it.
  std::string to_string() const;

  friend bool operator==(const CallCount&, const CallCount&) = default;
};

/// One request of a session.
struct Call {
  std::string_view method;  // "GET", "HEAD", "POST", ...
  std::string_view uri;
  std::string_view body;                       // request body (wsesslog contents=); empty when none
  std::optional<std::uint64_t> expected_size;  // the manifest's size of the file, if known
};

/// A run of calls: the first alone, the others after its reply; then think_s of pause.
struct Burst {
  std::uint32_t first = 0;  // index of the burst's first call in SessionPlan::calls
  std::uint32_t count = 0;  // number of calls in the burst (>= 1)
  double think_s = 0.0;     // pause after the burst's last reply, before the next burst
};

/// What one session sends. Reuse one plan per engine thread: clear() keeps the capacity, so
/// planning a session allocates nothing once the vectors have grown.
struct SessionPlan {
  std::vector<Call> calls;
  std::vector<Burst> bursts;

  /// Empties the plan, keeping its capacity.
  void clear() {
    calls.clear();
    bursts.clear();
  }
};

class UriSource {
 public:
  virtual ~UriSource() = default;

  /// Fills `plan` (cleared first) with the calls of session `index` and returns true, or
  /// returns false when the workload has no such session (wlog without wrap-around, wsesslog).
  virtual bool plan_session(std::uint64_t index, SessionPlan& plan) const = 0;

  /// Returns how many sessions the workload itself allows, or nullopt when it never runs out.
  virtual std::optional<std::uint64_t> session_limit() const = 0;

  /// Returns a one-line description, e.g. "zipf s=1 over 1000 files (12.3 MB) from set.txt".
  virtual std::string describe() const = 0;
};

/// Every call of every session asks for the same URI.
class FixedUriSource final : public UriSource {
 public:
  /// Sessions of `num_calls` calls (>= 1) of `method` for `uri`; a drawn count uses `seed`.
  FixedUriSource(std::string uri, std::string method, CallCount num_calls, std::uint64_t seed = 1);
  bool plan_session(std::uint64_t index, SessionPlan& plan) const override;
  std::optional<std::uint64_t> session_limit() const override { return std::nullopt; }
  std::string describe() const override;

 private:
  std::string uri_;
  std::string method_;
  CallCount num_calls_;
  std::uint64_t seed_;
};

/// Every call asks for a manifest file whose rank is drawn from Zipf(s).
class ZipfUriSource final : public UriSource {
 public:
  /// Sessions of `num_calls` calls of `method`; draws for session i use Rng stream kZipfStream
  /// of `seed`, item i (and kCallsStream for a drawn count). `name` names the manifest in
  /// describe().
  ZipfUriSource(Manifest manifest, double s, std::uint64_t seed, std::string method,
                CallCount num_calls, std::string name = "manifest");
  bool plan_session(std::uint64_t index, SessionPlan& plan) const override;
  std::optional<std::uint64_t> session_limit() const override { return std::nullopt; }
  std::string describe() const override;

  /// Returns the manifest the source draws from.
  const Manifest& manifest() const { return manifest_; }

 private:
  Manifest manifest_;
  ZipfSampler sampler_;
  std::uint64_t seed_;
  std::string method_;
  CallCount num_calls_;
  std::string name_;
};

/// Parses a --wlog file: URIs each terminated by a NUL byte (a last one without its NUL is
/// accepted). Empty entries are skipped, as httperf does. Throws WorkloadError naming
/// `source` and the entry when a URI holds whitespace or a control byte (most often a file
/// of lines, not NUL-terminated URIs) or when there is no URI at all.
std::vector<std::string> parse_wlog(std::string_view data, std::string_view source = "wlog");

/// Calls take the log's URIs in order: call j of session i gets URI i * num_calls + j.
class WlogUriSource final : public UriSource {
 public:
  /// `loop`: wrap around at the end (B = y); otherwise the workload ends with the list, and
  /// the last session may have fewer calls.
  WlogUriSource(std::vector<std::string> uris, bool loop, std::string method,
                std::uint32_t num_calls, std::string name = "wlog");
  bool plan_session(std::uint64_t index, SessionPlan& plan) const override;
  std::optional<std::uint64_t> session_limit() const override;
  std::string describe() const override;

 private:
  std::vector<std::string> uris_;
  bool loop_;
  std::string method_;
  std::uint32_t num_calls_;
  std::string name_;
};

/// One request of a session log, with its own storage.
struct LoggedRequest {
  std::string method = "GET";
  std::string uri;
  std::string body;

  friend bool operator==(const LoggedRequest&, const LoggedRequest&) = default;
};

/// One burst of a session log.
struct LoggedBurst {
  std::vector<LoggedRequest> requests;
  double think_s = 0.0;

  friend bool operator==(const LoggedBurst&, const LoggedBurst&) = default;
};

/// One session of a session log.
struct LoggedSession {
  std::vector<LoggedBurst> bursts;

  friend bool operator==(const LoggedSession&, const LoggedSession&) = default;
};

/// Parses httperf's session log format (--wsesslog):
///   - a line whose first character is '#' is a comment;
///   - a line of only whitespace ends the current session (several in a row make no empty
///     sessions);
///   - any other line is one request: a URI, then options separated by whitespace;
///   - a request line that starts with whitespace joins the burst of the line before it; one
///     that does not starts a new burst (the first request of a session always does);
///   - options: method=M (DELETE, GET, HEAD, OPTIONS, POST, PUT or TRACE), think=X (seconds
///     to wait after this burst, for the burst the line belongs to; default
///     `default_think_s`), contents=TEXT (the request body; quote with '...' or "..." to keep
///     spaces; \n, \r and \t are escapes, a backslash before any other character keeps that
///     character, and a backslash at the end of a line continues TEXT on the next line with
///     a newline).
/// Throws WorkloadError "SOURCE:LINE: reason" on an unknown option or method, a bad think
/// time, an unterminated quote, or a file with no request.
std::vector<LoggedSession> parse_session_log(std::string_view text, double default_think_s,
                                             std::string_view source = "wsesslog");

/// Sessions taken round-robin from a session log, `num_sessions` in all.
class SessionLogSource final : public UriSource {
 public:
  /// `sessions` must not be empty.
  SessionLogSource(std::vector<LoggedSession> sessions, std::uint64_t num_sessions,
                   std::string name = "wsesslog");
  bool plan_session(std::uint64_t index, SessionPlan& plan) const override;
  std::optional<std::uint64_t> session_limit() const override { return num_sessions_; }
  std::string describe() const override;

 private:
  std::vector<LoggedSession> sessions_;
  std::uint64_t num_sessions_;
  std::string name_;
};

/// Which workload to build, as the command line chose it.
struct WorkloadSpec {
  enum class Kind : std::uint8_t { kUri, kZipf, kWlog, kSessionLog };
  Kind kind = Kind::kUri;
  std::string method = "GET";
  CallCount num_calls;  // calls per session (not for session logs; a range only for kUri, kZipf)
  std::uint64_t seed = 1;
  std::string uri = "/";               // kUri
  double zipf_s = 1.0;                 // kZipf
  std::string files;                   // kZipf: manifest path
  bool wlog_loop = false;              // kWlog
  std::string wlog_file;               // kWlog
  std::uint64_t sesslog_sessions = 0;  // kSessionLog: N
  double sesslog_think_s = 0.0;        // kSessionLog: X
  std::string sesslog_file;            // kSessionLog

  friend bool operator==(const WorkloadSpec&, const WorkloadSpec&) = default;
};

/// Builds the source `spec` describes, reading its files; throws WorkloadError or
/// ManifestError naming the file on any problem.
std::unique_ptr<UriSource> make_uri_source(const WorkloadSpec& spec);

/// The Rng stream of the seed that Zipf draws use (schedules use kScheduleStream).
inline constexpr std::uint64_t kZipfStream = 2;
/// The Rng stream of the seed that drawn call counts (CallCount) use.
inline constexpr std::uint64_t kCallsStream = 3;

}  // namespace weft::load
