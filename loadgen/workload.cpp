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
  std::size_t line_no = 0;
  auto fail = [&](const std::string& what) {
    return WorkloadError(fmt::format("{}:{}: {}", source, line_no, what));
  };

  // The text is walked with absolute indices because contents= may continue over lines.
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    ++line_no;
    std::size_t eol = text.find('\n', i);
    if (eol == std::string_view::npos) eol = n;
    std::size_t end = eol;  // end of this line's text, without "\r\n"
    if (end > i && text[end - 1] == '\r') --end;
    std::size_t next = eol < n ? eol + 1 : n;

    if (text[i] == '#') {
      i = next;
      continue;
    }
    std::size_t j = i;
    while (j < end && is_blank(text[j])) ++j;
    if (j == end) {  // only whitespace: the session, if any, ends here
      in_session = false;
      i = next;
      continue;
    }

    const bool joins_burst = j > i;  // leading whitespace: part of the previous line's burst
    const std::size_t uri_start = j;
    while (j < end && !is_blank(text[j])) ++j;
    const std::string_view uri = text.substr(uri_start, j - uri_start);
    if (auto problem = uri_problem(uri); !problem.empty()) throw fail(std::string{problem});

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
    LoggedRequest& request = burst.requests.back();

    for (;;) {
      while (j < end && is_blank(text[j])) ++j;
      if (j >= end) break;
      const std::string_view rest = text.substr(j, end - j);
      if (rest.starts_with("contents=")) {
        j += 9;
        std::string body;
        bool single = false;
        bool dquote = false;
        for (;;) {
          if (j >= end) {
            if (single || dquote) throw fail("unterminated quote in contents=");
            break;
          }
          const char c = text[j];
          if (c == '\\') {
            if (j + 1 >= end) {
              // A backslash ending the line: the value goes on with a newline on the next one.
              body.push_back('\n');
              if (next >= n) throw fail("contents= continues past the end of the file");
              i = next;
              ++line_no;
              eol = text.find('\n', i);
              if (eol == std::string_view::npos) eol = n;
              end = eol;
              if (end > i && text[end - 1] == '\r') --end;
              next = eol < n ? eol + 1 : n;
              j = i;
              continue;
            }
            const char e = text[j + 1];
            body.push_back(e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e);
            j += 2;
            continue;
          }
          if (c == '"' && !single) {
            dquote = !dquote;
          } else if (c == '\'' && !dquote) {
            single = !single;
          } else if (is_blank(c) && !single && !dquote) {
            break;
          } else {
            body.push_back(c);
          }
          ++j;
        }
        request.body = std::move(body);
        continue;
      }
      const std::size_t token_start = j;
      while (j < end && !is_blank(text[j])) ++j;
      const std::string_view token = text.substr(token_start, j - token_start);
      if (token.starts_with("method=")) {
        const std::string_view method = token.substr(7);
        bool known = false;
        for (auto m : kMethods) known = known || m == method;
        if (!known) {
          throw fail(
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
          throw fail(fmt::format("think={}: not a number of seconds >= 0", value));
        }
        burst.think_s = think;
      } else {
        throw fail(fmt::format("unknown option '{}' (method=, think= or contents=)", token));
      }
    }
    i = next;
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
