#include "loadgen/workload.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include <fmt/core.h>

namespace weft::load {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

// Returns why `uri` cannot go into a request line, or an empty view when it can.
std::string_view uri_problem(std::string_view uri) {
  if (uri.empty()) return "empty URI";
  for (unsigned char c : uri) {
    if (c == '\n') return "URI contains a newline";
    if (c == ' ' || c == '\t') return "URI contains whitespace";
    if (c < 0x20 || c == 0x7f) return "URI contains a control character";
  }
  return {};
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes >= 1024ull * 1024 * 1024) return fmt::format("{:.1f} GiB", bytes / 1073741824.0);
  if (bytes >= 1024ull * 1024) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

std::string calls_text(CallCount n) {
  return n == CallCount{1} ? "1 call" : fmt::format("{} calls", n.to_string());
}

constexpr std::array<std::string_view, 7> kMethods = {"DELETE", "GET", "HEAD", "OPTIONS",
                                                      "POST",   "PUT", "TRACE"};

// ---- --wsesslog parsing -----------------------------------------------------------------------

// The session log's current line, by absolute indices into the text: a contents= value may
// continue over a line end, and then the line it ends on is the one the parse goes on from.
struct LineCursor {
  std::string_view text;
  std::size_t start = 0;    // first byte of the current line
  std::size_t end = 0;      // end of the current line's text, without "\r\n"
  std::size_t next = 0;     // first byte of the line after it, or text.size() at the last
  std::size_t line_no = 0;  // 1-based, so 0 before the first advance()

  explicit LineCursor(std::string_view t) : text(t) {}

  // Returns true when a line follows the current one (so advance() may be called).
  bool has_next() const { return next < text.size(); }

  // Moves to the next line, so that errors from here on name its number.
  void advance() {
    start = next;
    ++line_no;
    std::size_t eol = text.find('\n', start);
    if (eol == std::string_view::npos) eol = text.size();
    end = eol;
    if (end > start && text[end - 1] == '\r') --end;
    next = eol < text.size() ? eol + 1 : text.size();
  }
};

// Returns the error "SOURCE:LINE: what" for the cursor's line, the form every problem takes.
WorkloadError line_error(std::string_view source, const LineCursor& line, std::string_view what) {
  return WorkloadError(fmt::format("{}:{}: {}", source, line.line_no, what));
}

// Returns the first index in [pos, end) past blanks, or `end`, where a token may start.
std::size_t skip_blanks(std::string_view text, std::size_t pos, std::size_t end) {
  while (pos < end && is_blank(text[pos])) ++pos;
  return pos;
}

// Returns the index in [pos, end) where the token at `pos` ends (a blank, or `end`).
std::size_t skip_token(std::string_view text, std::size_t pos, std::size_t end) {
  while (pos < end && !is_blank(text[pos])) ++pos;
  return pos;
}

// Parses the contents= value at `pos` (just past "contents=") and leaves `pos` past it; a
// backslash ending a line moves `line` on, so the options after it come from the next line.
std::string parse_contents(LineCursor& line, std::size_t& pos, std::string_view source) {
  std::string body;
  bool single = false;
  bool dquote = false;
  for (;;) {
    if (pos >= line.end) {
      if (single || dquote) throw line_error(source, line, "unterminated quote in contents=");
      return body;
    }
    const char c = line.text[pos];
    if (c == '\\') {
      if (pos + 1 >= line.end) {
        // A backslash ending the line: the value goes on with a newline on the next one.
        body.push_back('\n');
        if (!line.has_next()) {
          throw line_error(source, line, "contents= continues past the end of the file");
        }
        line.advance();
        pos = line.start;
        continue;
      }
      const char e = line.text[pos + 1];
      body.push_back(e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e);
      pos += 2;
      continue;
    }
    if (c == '"' && !single) {
      dquote = !dquote;
    } else if (c == '\'' && !dquote) {
      single = !single;
    } else if (is_blank(c) && !single && !dquote) {
      return body;
    } else {
      body.push_back(c);
    }
    ++pos;
  }
}

// Applies one method= or think= token; think= sets the burst's pause, as httperf reads it.
void apply_option(std::string_view token, LoggedRequest& request, LoggedBurst& burst,
                  const LineCursor& line, std::string_view source) {
  if (token.starts_with("method=")) {
    const std::string_view method = token.substr(7);
    bool known = false;
    for (auto m : kMethods) known = known || m == method;
    if (!known) {
      throw line_error(source, line,
                       fmt::format("unknown method '{}' (DELETE, GET, HEAD, OPTIONS, POST, PUT "
                                   "or TRACE)",
                                   method));
    }
    request.method = std::string{method};
  } else if (token.starts_with("think=")) {
    const std::string_view value = token.substr(6);
    double think = -1.0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), think);
    if (ec != std::errc{} || p != value.data() + value.size() || !std::isfinite(think) ||
        think < 0.0) {
      throw line_error(source, line, fmt::format("think={}: not a number of seconds >= 0", value));
    }
    burst.think_s = think;
  } else {
    throw line_error(source, line,
                     fmt::format("unknown option '{}' (method=, think= or contents=)", token));
  }
}

// Parses the options after a request's URI, from `pos` on; contents= is not a plain token
// (it may hold quoted blanks and continue over lines), so it is read apart.
void parse_options(LineCursor& line, std::size_t pos, LoggedRequest& request, LoggedBurst& burst,
                   std::string_view source) {
  for (;;) {
    pos = skip_blanks(line.text, pos, line.end);
    if (pos >= line.end) return;
    if (line.text.substr(pos, line.end - pos).starts_with("contents=")) {
      pos += 9;
      request.body = parse_contents(line, pos, source);
      continue;
    }
    const std::size_t token_start = pos;
    pos = skip_token(line.text, pos, line.end);
    apply_option(line.text.substr(token_start, pos - token_start), request, burst, line, source);
  }
}

}  // namespace

// ---- --num-calls --------------------------------------------------------------------------

std::uint32_t CallCount::of_session(std::uint64_t seed, std::uint64_t index) const {
  if (fixed()) return min;
  Rng rng = Rng::for_stream(seed, kCallsStream, index);
  return min + static_cast<std::uint32_t>(rng.below(std::uint64_t{max} - min + 1));
}

std::string CallCount::to_string() const {
  return fixed() ? fmt::format("{}", min) : fmt::format("{}..{}", min, max);
}

// ---- --uri ----------------------------------------------------------------------------------

FixedUriSource::FixedUriSource(std::string uri, std::string method, CallCount num_calls,
                               std::uint64_t seed)
    : uri_(std::move(uri)), method_(std::move(method)), num_calls_(num_calls), seed_(seed) {}

bool FixedUriSource::plan_session(std::uint64_t index, SessionPlan& plan) const {
  plan.clear();
  const std::uint32_t calls = num_calls_.of_session(seed_, index);
  for (std::uint32_t j = 0; j < calls; ++j) {
    plan.calls.push_back(Call{method_, uri_, {}, std::nullopt});
    plan.bursts.push_back(Burst{j, 1, 0.0});
  }
  return true;
}

std::string FixedUriSource::describe() const {
  return fmt::format("uri {} {}, {} per session", method_, uri_, calls_text(num_calls_));
}

// ---- --zipf --files ---------------------------------------------------------------------------

ZipfUriSource::ZipfUriSource(Manifest manifest, double s, std::uint64_t seed, std::string method,
                             CallCount num_calls, std::string name)
    : manifest_(std::move(manifest)),
      sampler_(manifest_.entries.size(), s),
      seed_(seed),
      method_(std::move(method)),
      num_calls_(num_calls),
      name_(std::move(name)) {}

bool ZipfUriSource::plan_session(std::uint64_t index, SessionPlan& plan) const {
  plan.clear();
  Rng rng = Rng::for_stream(seed_, kZipfStream, index);
  const std::uint32_t calls = num_calls_.of_session(seed_, index);
  for (std::uint32_t j = 0; j < calls; ++j) {
    const ManifestEntry& e = manifest_.entries[sampler_.sample(rng) - 1];
    plan.calls.push_back(Call{method_, e.path, {}, e.size});
    plan.bursts.push_back(Burst{j, 1, 0.0});
  }
  return true;
}

std::string ZipfUriSource::describe() const {
  return fmt::format("zipf s={} over {} files ({}) from {}, {} {} per session", sampler_.exponent(),
                     manifest_.entries.size(), format_bytes(manifest_.total_bytes), name_, method_,
                     calls_text(num_calls_));
}

// ---- --wlog -----------------------------------------------------------------------------------

std::vector<std::string> parse_wlog(std::string_view data, std::string_view source) {
  std::vector<std::string> uris;
  std::size_t pos = 0;
  std::size_t entry = 0;
  while (pos < data.size()) {
    std::size_t nul = data.find('\0', pos);
    if (nul == std::string_view::npos) nul = data.size();
    const std::string_view uri = data.substr(pos, nul - pos);
    ++entry;
    if (!uri.empty()) {
      if (auto problem = uri_problem(uri); !problem.empty()) {
        std::string hint;
        if (uri.find('\n') != std::string_view::npos) {
          hint =
              "; --wlog wants URIs each ended by a NUL byte, not lines (convert a list of "
              "lines with: tr '\\n' '\\0')";
        }
        throw WorkloadError(
            fmt::format("{}: entry {} (byte {}): {}{}", source, entry, pos, problem, hint));
      }
      uris.emplace_back(uri);
    }
    pos = nul + 1;
  }
  if (uris.empty()) throw WorkloadError(fmt::format("{}: no URI in the file", source));
  return uris;
}

WlogUriSource::WlogUriSource(std::vector<std::string> uris, bool loop, std::string method,
                             std::uint32_t num_calls, std::string name)
    : uris_(std::move(uris)),
      loop_(loop),
      method_(std::move(method)),
      num_calls_(num_calls),
      name_(std::move(name)) {}

bool WlogUriSource::plan_session(std::uint64_t index, SessionPlan& plan) const {
  plan.clear();
  const std::uint64_t n = uris_.size();
  const std::uint64_t first = index * num_calls_;
  // Overflow of index * num_calls would take ~2^64 / num_calls sessions: not a practical case,
  // but a non-looping log must still end rather than wrap, so check the division too.
  if (!loop_ && (first >= n || first / num_calls_ != index)) return false;
  for (std::uint32_t j = 0; j < num_calls_; ++j) {
    const std::uint64_t k = first + j;
    if (!loop_ && k >= n) break;  // the list ends inside this session
    plan.calls.push_back(Call{method_, uris_[k % n], {}, std::nullopt});
    plan.bursts.push_back(Burst{j, 1, 0.0});
  }
  return true;
}

std::optional<std::uint64_t> WlogUriSource::session_limit() const {
  if (loop_) return std::nullopt;
  return (uris_.size() + num_calls_ - 1) / num_calls_;
}

std::string WlogUriSource::describe() const {
  return fmt::format("wlog {} URIs from {} ({}), {} {} per session", uris_.size(), name_,
                     loop_ ? "wrapping around" : "ending with the list", method_,
                     calls_text(num_calls_));
}

// ---- --wsesslog -------------------------------------------------------------------------------

std::vector<LoggedSession> parse_session_log(std::string_view text, double default_think_s,
                                             std::string_view source) {
  std::vector<LoggedSession> sessions;
  bool in_session = false;
  LineCursor line{text};
  while (line.has_next()) {
    line.advance();
    if (text[line.start] == '#') continue;
    std::size_t pos = skip_blanks(text, line.start, line.end);
    if (pos == line.end) {  // only whitespace: the session, if any, ends here
      in_session = false;
      continue;
    }

    const bool joins_burst = pos > line.start;  // leading whitespace: the previous line's burst
    const std::size_t uri_start = pos;
    pos = skip_token(text, pos, line.end);
    const std::string_view uri = text.substr(uri_start, pos - uri_start);
    if (auto problem = uri_problem(uri); !problem.empty()) throw line_error(source, line, problem);

    if (!in_session) {
      sessions.emplace_back();
      in_session = true;
    }
    LoggedSession& session = sessions.back();
    if (session.bursts.empty() || !joins_burst) {
      session.bursts.push_back(LoggedBurst{{}, default_think_s});
    }
    LoggedBurst& burst = session.bursts.back();
    burst.requests.push_back(LoggedRequest{"GET", std::string{uri}, {}});
    parse_options(line, pos, burst.requests.back(), burst, source);
  }
  if (sessions.empty()) {
    throw WorkloadError(fmt::format("{}: no session in the file (no request line)", source));
  }
  return sessions;
}

SessionLogSource::SessionLogSource(std::vector<LoggedSession> sessions, std::uint64_t num_sessions,
                                   std::string name)
    : sessions_(std::move(sessions)), num_sessions_(num_sessions), name_(std::move(name)) {
  if (sessions_.empty()) throw WorkloadError(fmt::format("{}: no session", name_));
}

bool SessionLogSource::plan_session(std::uint64_t index, SessionPlan& plan) const {
  plan.clear();
  if (index >= num_sessions_) return false;
  const LoggedSession& s = sessions_[index % sessions_.size()];
  for (const LoggedBurst& b : s.bursts) {
    const auto first = static_cast<std::uint32_t>(plan.calls.size());
    for (const LoggedRequest& r : b.requests) {
      plan.calls.push_back(Call{r.method, r.uri, r.body, std::nullopt});
    }
    plan.bursts.push_back(Burst{first, static_cast<std::uint32_t>(b.requests.size()), b.think_s});
  }
  return true;
}

std::string SessionLogSource::describe() const {
  std::size_t requests = 0;
  for (const auto& s : sessions_) {
    for (const auto& b : s.bursts) requests += b.requests.size();
  }
  return fmt::format("wsesslog {} sessions round-robin over {} defined in {} ({} requests)",
                     num_sessions_, sessions_.size(), name_, requests);
}

// ---- factory ----------------------------------------------------------------------------------

std::unique_ptr<UriSource> make_uri_source(const WorkloadSpec& spec) {
  auto read = [](const std::string& path) {
    try {
      return read_file(path);
    } catch (const std::runtime_error& e) {
      throw WorkloadError(e.what());
    }
  };
  switch (spec.kind) {
    case WorkloadSpec::Kind::kUri:
      return std::make_unique<FixedUriSource>(spec.uri, spec.method, spec.num_calls, spec.seed);
    case WorkloadSpec::Kind::kZipf:
      return std::make_unique<ZipfUriSource>(load_manifest(spec.files), spec.zipf_s, spec.seed,
                                             spec.method, spec.num_calls, spec.files);
    case WorkloadSpec::Kind::kWlog:
      // Calls take the log's URIs in order, so the count is fixed (options refuse a range).
      if (!spec.num_calls.fixed()) throw WorkloadError("--wlog needs a fixed --num-calls");
      return std::make_unique<WlogUriSource>(parse_wlog(read(spec.wlog_file), spec.wlog_file),
                                             spec.wlog_loop, spec.method, spec.num_calls.min,
                                             spec.wlog_file);
    case WorkloadSpec::Kind::kSessionLog:
      return std::make_unique<SessionLogSource>(
          parse_session_log(read(spec.sesslog_file), spec.sesslog_think_s, spec.sesslog_file),
          spec.sesslog_sessions, spec.sesslog_file);
  }
  throw WorkloadError("unknown workload kind");
}

}  // namespace weft::load
