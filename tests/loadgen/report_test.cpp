// Tests loadgen/report.cpp: the text report against golden strings and against a real httperf
// run's layout, the regexes an httperf-parsing script uses, JSON and CSV.
#include "loadgen/report.hpp"

#include <cctype>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

namespace weft::load {
namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kUs = 1'000;

// httperf 0.9.0 on this machine (Debian 12): `httperf --server 127.0.0.1 --port 8099 --uri /
// --num-conns 50 --rate 50 --num-calls 2` against `python3 -m http.server` (HTTP/1.0, so each
// connection ends after one reply: hence the connreset errors). stderr's FD_SETSIZE warning
// left out.
constexpr const char* kRealHttperf =
    "httperf --client=0/1 --server=127.0.0.1 --port=8099 --uri=/ --rate=50 --send-buffer=4096 "
    "--recv-buffer=16384 --num-conns=50 --num-calls=2\n"
    "Maximum connect burst length: 1\n"
    "\n"
    "Total: connections 50 requests 100 replies 50 test-duration 0.982 s\n"
    "\n"
    "Connection rate: 50.9 conn/s (19.6 ms/conn, <=1 concurrent connections)\n"
    "Connection time [ms]: min 0.8 avg 1.1 max 1.5 median 0.5 stddev 0.2\n"
    "Connection time [ms]: connect 0.0\n"
    "Connection length [replies/conn]: 1.000\n"
    "\n"
    "Request rate: 101.8 req/s (9.8 ms/req)\n"
    "Request size [B]: 62.0\n"
    "\n"
    "Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)\n"
    "Reply time [ms]: response 1.0 transfer 0.0\n"
    "Reply size [B]: header 155.0 content 230.0 footer 0.0 (total 385.0)\n"
    "Reply status: 1xx=0 2xx=50 3xx=0 4xx=0 5xx=0\n"
    "\n"
    "CPU time [s]: user 0.10 system 0.88 (user 10.6% system 89.2% total 99.8%)\n"
    "Net I/O: 25.3 KB/s (0.2*10^6 bps)\n"
    "\n"
    "Errors: total 50 client-timo 0 socket-timo 0 connrefused 0 connreset 50\n"
    "Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0\n";

// A run whose every figure is known by construction (see each line of the golden text).
Stats fixed_stats() {
  Stats s;
  s.duration_s = 10.0;
  s.max_connect_burst = 1;
  for (int i = 0; i < 100; ++i) {
    s.record_session_started(i * 0.1, i == 99 ? 2500 * kUs : 0);
    s.record_connection_started(i * 0.1, 1 + i % 3);
    s.record_connected(200 * kUs);
    s.record_connection_closed(i < 50 ? 1 * kMs : 3 * kMs, 2);
  }
  for (int i = 0; i < 200; ++i) {
    s.record_request(i * 0.05, 62);
    ReplySample r;
    r.status = i == 0 ? 404 : i == 1 ? 503 : 200;
    r.header_bytes = 155;
    r.body_bytes = 230;
    r.response_ns = 1 * kMs;
    r.transfer_ns = 0;
    r.from_send_ns = 1 * kMs + static_cast<std::uint64_t>(i % 10) * 100 * kUs;
    r.from_schedule_ns = r.from_send_ns + 500 * kUs;
    // 15 replies a second for 5 s, then 25 a second: rate samples 15 and 25.
    const double at = i < 75 ? i / 15.0 : 5.0 + (i - 75) / 25.0;
    s.record_reply(at, r);
  }
  s.record_io(200 * 62, 200 * 385);
  s.errors.add(ErrorClass::kClientTimo, 2);
  s.errors.add(ErrorClass::kConnReset, 1);
  s.errors.add(ErrorClass::kHttp4xx, 1);
  s.errors.add(ErrorClass::kHttp5xx, 1);
  s.cpu = {1.0, 2.5};
  return s;
}

ReportContext fixed_context() {
  ReportContext c;
  c.command_line =
      "httperf --client=0/1 --server=127.0.0.1 --port=8080 --uri=/ --rate=10 --num-conns=100 "
      "--num-calls=2 --seed=1";
  c.offered_rate = 10.0;
  return c;
}

const std::string kGolden =
    "httperf --client=0/1 --server=127.0.0.1 --port=8080 --uri=/ --rate=10 --num-conns=100 "
    "--num-calls=2 --seed=1\n"
    "Maximum connect burst length: 1\n"
    "\n"
    "Total: connections 100 requests 200 replies 200 test-duration 10.000 s\n"
    "\n"
    "Connection rate: 10.0 conn/s (100.0 ms/conn, <=3 concurrent connections)\n"
    "Connection time [ms]: min 1.0 avg 2.0 max 3.0 median 1.0 stddev 1.0\n"
    "Connection time [ms]: connect 0.2\n"
    "Connection length [replies/conn]: 2.000\n"
    "\n"
    "Request rate: 20.0 req/s (50.0 ms/req)\n"
    "Request size [B]: 62.0\n"
    "\n"
    "Reply rate [replies/s]: min 15.0 avg 20.0 max 25.0 stddev 7.1 (2 samples)\n"
    "Reply time [ms]: response 1.0 transfer 0.0\n"
    "Reply size [B]: header 155.0 content 230.0 footer 0.0 (total 385.0)\n"
    "Reply status: 1xx=0 2xx=198 3xx=0 4xx=1 5xx=1\n"
    "\n"
    "CPU time [s]: user 1.00 system 2.50 (user 10.0% system 25.0% total 35.0%)\n"
    "Net I/O: 8.7 KB/s (0.1*10^6 bps)\n"
    "\n"
    "Errors: total 3 client-timo 2 socket-timo 0 connrefused 0 connreset 1\n"
    "Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0\n"
    "\n"
    // Bucket midpoints: 1.9 ms reads 1.898, 2.3 ms 2.298, 2.4 ms 2.396, 1.4 ms 1.399, 1.8 ms
    // 1.800; the max is exact.
    "Latency from schedule [ms]: p50 1.898 p90 2.298 p99 2.396 p99.9 2.396 max 2.400 (200 "
    "replies)\n"
    "Latency from send [ms]: p50 1.399 p90 1.800 p99 1.898 p99.9 1.898 max 1.900 (200 replies)\n"
    "HTTP errors: http-4xx 1 http-5xx 1 bad-length 0\n"
    "Schedule lag [ms]: max 2.500 mean 0.025 (100 sessions)\n"
    // One session started 2.5 ms late, past kLateSessionNs: the generator fell behind.
    "Behind schedule: 1 of 100 sessions started more than 1.000 ms late (max 2.500 ms); "
    "latency from schedule includes the lag\n";

TEST(Report, TextMatchesGolden) {
  EXPECT_EQ(format_text_report(fixed_stats(), fixed_context()), kGolden);
}

TEST(Report, SessionSectionAndWarmup) {
  Stats s = fixed_stats();
  for (int i = 0; i < 90; ++i) s.record_session_ended(i / 9.0, true, 0.3, 2);
  for (int i = 0; i < 10; ++i) s.record_session_ended(5.0, false, 1.5, 1);
  ReportContext c = fixed_context();
  c.sessions = true;
  c.warmup_s = 2.0;
  const std::string text = format_text_report(s, c);
  const std::string sessions =
      "Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0\n"
      "\n"
      // 45 completions in each 5 s window: 9.00/s; avg is completed / duration.
      "Session rate [sess/s]: min 9.00 avg 9.00 max 9.00 stddev 0.00 (90/100)\n"
      "Session: avg 1.00 connections/session\n"
      "Session lifetime [s]: 0.3\n"
      "Session failtime [s]: 1.5\n"
      "Session length histogram: 0 10 90\n"
      "\n"
      "Latency from schedule";
  EXPECT_NE(text.find(sessions), std::string::npos) << text;
  EXPECT_NE(text.find("\nWarmup [s]: 2.000 (excluded from every figure above)\n"),
            std::string::npos);
}

TEST(Report, EmptyRunPrintsZerosNotNan) {
  const std::string text = format_text_report(Stats{}, ReportContext{});
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
  EXPECT_NE(text.find("Total: connections 0 requests 0 replies 0 test-duration 0.000 s\n"),
            std::string::npos);
  EXPECT_NE(text.find("Reply rate [replies/s]: min 0.0 avg 0.0 max 0.0 stddev 0.0 (0 samples)\n"),
            std::string::npos);
}

// Replaces every number with '#', keeping the words, units and punctuation of a line.
std::string shape(const std::string& line) {
  static const std::regex number("[0-9]+(\\.[0-9]+)?");
  return std::regex_replace(line, number, "#");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(Report, LayoutMatchesARealHttperfRunLineForLine) {
  // From "Maximum connect burst length" to the second "Errors:" line, every line of ours has
  // the shape of httperf's line at the same place, blank lines included.
  const auto ours = lines_of(format_text_report(fixed_stats(), fixed_context()));
  const auto theirs = lines_of(kRealHttperf);
  ASSERT_GE(ours.size(), theirs.size());
  for (std::size_t i = 1; i < theirs.size(); ++i) {
    EXPECT_EQ(shape(ours[i]), shape(theirs[i])) << "line " << i + 1;
  }
  EXPECT_EQ(ours[0].rfind("httperf ", 0), 0u);
  EXPECT_EQ(ours[theirs.size()], "");  // weft-load's lines come after a blank line
}

// The regexes of a published httperf-output parser (its "want" states, in order), in
// ECMAScript syntax; a script that reads httperf's report this way must read ours.
struct Expression {
  const char* name;
  const char* pattern;
};
const std::string kI = "[0-9]+";
const std::string kFp = "[-+]?[0-9]*\\.?[0-9]+";

std::vector<std::pair<std::string, std::regex>> parser_states() {
  auto re = [](std::string p) {
    for (auto [key, value] : {std::pair{std::string{"{i}"}, kI}, {std::string{"{fp}"}, kFp}}) {
      for (std::size_t at; (at = p.find(key)) != std::string::npos;)
        p.replace(at, key.size(), value);
    }
    return std::regex(p);
  };
  return {
      {"command", re("^(httperf .+)$")},
      {"max_connect_burst_length", re("Maximum connect burst length: ({fp})$")},
      {"total", re("^Total: connections ({i}) requests ({i}) replies ({i}) test-duration ({fp})")},
      {"connection", re("^Connection rate: ({fp}) conn/s \\(({fp}) ms/conn, .+ concurrent "
                        "connections\\)")},
      {"connection_time", re("^Connection time \\[ms\\]: min ({fp}) avg ({fp}) max ({fp}) "
                             "median ({fp}) stddev ({fp})")},
      {"connection_time_connect", re("^Connection time \\[ms\\]: connect ({fp})$")},
      {"connection_length", re("^Connection length \\[replies/conn\\]: ({fp})$")},
      {"request", re("^Request rate: ({fp}) req/s \\(({fp}) ms/req\\)")},
      {"request_size", re("^Request size \\[B\\]: ({fp})$")},
      {"reply_rate", re("^Reply rate \\[replies/s\\]: min ({fp}) avg ({fp}) max ({fp}) stddev "
                        "({fp}) \\(({fp}) samples\\)")},
      {"reply_time", re("^Reply time \\[ms\\]: response ({fp}) transfer ({fp})")},
      {"reply_size", re("^Reply size \\[B\\]: header ({fp}) content ({fp}) footer ({fp}) "
                        "\\(total ({fp})\\)")},
      {"reply_status", re("^Reply status: 1xx=({i}) 2xx=({i}) 3xx=({i}) 4xx=({i}) 5xx=({i})")},
      {"cpu_time", re("^CPU time \\[s\\]: user ({fp}) system ({fp}) \\(user ({fp})% system "
                      "({fp})% total ({fp})%\\)")},
      {"net_io", re("^Net I/O: ({fp}) KB/s \\(({fp}.+) bps\\)")},
      {"errors1", re("^Errors: total ({i}) client-timo ({i}) socket-timo ({i}) connrefused ({i}) "
                     "connreset ({i})")},
      {"errors2", re("^Errors: fd-unavail ({i}) addrunavail ({i}) ftab-full ({i}) other ({i})")},
  };
}

// Walks the report as the script does: each state's regex must match a later line, in order.
std::map<std::string, std::vector<std::string>> parse_like_a_script(const std::string& text) {
  std::map<std::string, std::vector<std::string>> found;
  const auto states = parser_states();
  std::size_t state = 0;
  for (const std::string& line : lines_of(text)) {
    if (state == states.size() || line.empty()) continue;
    std::smatch m;
    if (std::regex_search(line, m, states[state].second)) {
      for (std::size_t g = 1; g < m.size(); ++g) found[states[state].first].push_back(m[g]);
      ++state;
    }
  }
  return found;
}

TEST(Report, ParsesWithAnHttperfScriptsRegexes) {
  const auto theirs = parse_like_a_script(kRealHttperf);
  ASSERT_EQ(theirs.size(), parser_states().size()) << "the regexes must read real httperf";
  const auto ours = parse_like_a_script(format_text_report(fixed_stats(), fixed_context()));
  ASSERT_EQ(ours.size(), parser_states().size());
  EXPECT_EQ(ours.at("total"), (std::vector<std::string>{"100", "200", "200", "10.000"}));
  EXPECT_EQ(ours.at("reply_rate"), (std::vector<std::string>{"15.0", "20.0", "25.0", "7.1", "2"}));
  EXPECT_EQ(ours.at("reply_status"), (std::vector<std::string>{"0", "198", "0", "1", "1"}));
  EXPECT_EQ(ours.at("errors1"), (std::vector<std::string>{"3", "2", "0", "0", "1"}));
  EXPECT_EQ(ours.at("net_io"), (std::vector<std::string>{"8.7", "0.1*10^6"}));
}

// ---- JSON: a small strict parser, enough to check validity and read values by path ----

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, JsonArray, JsonObject> v;
  const Json& operator[](const std::string& k) const { return std::get<JsonObject>(v).at(k); }
  const Json& operator[](std::size_t i) const { return std::get<JsonArray>(v).at(i); }
  double num() const { return std::get<double>(v); }
  const std::string& str() const { return std::get<std::string>(v); }
};

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}
  Json parse_document() {
    Json j = value();
    ws();
    if (i_ != s_.size()) throw std::runtime_error("trailing bytes");
    return j;
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) throw std::runtime_error("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) throw std::runtime_error(std::string{"expected "} + c);
    ++i_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) throw std::runtime_error("raw control char");
      if (c == '\\') {
        c = s_.at(i_++);
        if (c == 'u') {
          out += static_cast<char>(std::stoi(std::string{s_.substr(i_, 4)}, nullptr, 16));
          i_ += 4;
          continue;
        }
        c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
      }
      out += c;
    }
    expect('"');
    return out;
  }
  Json value() {
    const char c = peek();
    if (c == '{') {
      ++i_;
      JsonObject o;
      if (peek() == '}') return ++i_, Json{o};
      for (;;) {
        std::string k = string();
        expect(':');
        if (!o.emplace(k, value()).second) throw std::runtime_error("duplicate key " + k);
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return Json{std::move(o)};
      }
    }
    if (c == '[') {
      ++i_;
      JsonArray a;
      if (peek() == ']') return ++i_, Json{a};
      for (;;) {
        a.push_back(value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return Json{std::move(a)};
      }
    }
    if (c == '"') return Json{string()};
    if (literal("null")) return Json{nullptr};
    if (literal("true")) return Json{true};
    if (literal("false")) return Json{false};
    static const std::regex number("^-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?");
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(s_.begin() + static_cast<std::ptrdiff_t>(i_), s_.end(), m, number)) {
      throw std::runtime_error("bad value at " + std::to_string(i_));
    }
    const double d = std::stod(m.str());
    i_ += static_cast<std::size_t>(m.length());
    return Json{d};
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

TEST(Report, JsonCarriesEveryFigure) {
  ReportContext c = fixed_context();
  c.command_line += " \"quoted\"\ttab";
  const std::string text = format_json_report(fixed_stats(), c);
  ASSERT_EQ(text.back(), '\n');
  Json j;
  ASSERT_NO_THROW(j = JsonParser(text).parse_document()) << text;
  EXPECT_EQ(j["tool"].str(), "weft-load");
  EXPECT_EQ(j["command"].str(), c.command_line);
  EXPECT_EQ(j["test_duration_s"].num(), 10.0);
  EXPECT_EQ(j["connections"]["total"].num(), 100);
  EXPECT_EQ(j["connections"]["max_concurrent"].num(), 3);
  EXPECT_DOUBLE_EQ(j["connections"]["connect_ms"].num(), 0.2);
  EXPECT_EQ(j["requests"]["total"].num(), 200);
  EXPECT_EQ(j["replies"]["total"].num(), 200);
  EXPECT_EQ(j["replies"]["rate_per_s"]["samples"].num(), 2);
  EXPECT_EQ(j["replies"]["rate_per_s"]["max"].num(), 25);
  EXPECT_EQ(j["replies"]["status"]["2xx"].num(), 198);
  EXPECT_EQ(j["replies"]["bytes"]["content"].num(), 200 * 230);
  EXPECT_EQ(j["errors"]["total"].num(), 3);
  EXPECT_EQ(j["errors"]["all_classes_total"].num(), 5);
  EXPECT_EQ(j["errors"]["client-timo"].num(), 2);
  EXPECT_EQ(j["errors"]["http-5xx"].num(), 1);
  EXPECT_EQ(j["errors"]["bad-length"].num(), 0);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["from_send"]["max"].num(), 1.9);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["from_send"]["p50"].num(), 1.398784);
  EXPECT_DOUBLE_EQ(j["latency_ms"]["from_schedule"]["p99.9"].num(), 2.39616);
  EXPECT_EQ(j["latency_ms"]["from_schedule"]["count"].num(), 200);
  EXPECT_DOUBLE_EQ(j["schedule_lag_ms"]["max"].num(), 2.5);
  EXPECT_EQ(j["schedule_lag_ms"]["late_sessions"].num(), 1);
  EXPECT_DOUBLE_EQ(j["cpu"]["total_pct"].num(), 35.0);
  const auto& timeline = std::get<JsonArray>(j["timeline"].v);
  ASSERT_EQ(timeline.size(), 10u);
  EXPECT_EQ(timeline[0]["t"].num(), 0);
  EXPECT_EQ(timeline[0]["replies"].num(), 15);
  EXPECT_EQ(timeline[9]["replies"].num(), 25);
  EXPECT_EQ(timeline[9]["t"].num(), 9);
  EXPECT_EQ(timeline[0]["sessions"].num(), 10);
  double replies = 0;
  for (const Json& sec : timeline) replies += sec["replies"].num();
  EXPECT_EQ(replies, 200);
}

TEST(Report, JsonOfAnEmptyRunIsValid) {
  const std::string text = format_json_report(Stats{}, ReportContext{});
  EXPECT_NO_THROW(JsonParser(text).parse_document()) << text;
}

TEST(Report, CsvRowMatchesHeader) {
  const std::string header = csv_header();
  const std::string row = format_csv_row(fixed_stats(), fixed_context());
  auto fields = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream in(line.substr(0, line.size() - 1));
    for (std::string f; std::getline(in, f, ',');) out.push_back(f);
    return out;
  };
  const auto names = fields(header);
  const auto values = fields(row);
  ASSERT_EQ(names.size(), values.size());
  std::map<std::string, std::string> by_name;
  for (std::size_t i = 0; i < names.size(); ++i) by_name[names[i]] = values[i];
  EXPECT_EQ(names.front(), "offered_rate");
  EXPECT_EQ(by_name.at("offered_rate"), "10.000");
  EXPECT_EQ(by_name.at("replies"), "200");
  EXPECT_EQ(by_name.at("reply_rate_avg"), "20.000");
  EXPECT_EQ(by_name.at("lat_send_max_ms"), "1.900");
  EXPECT_EQ(by_name.at("lat_sched_p99_ms"), "2.396");
  EXPECT_EQ(by_name.at("status_4xx"), "1");
  EXPECT_EQ(by_name.at("errors_total"), "3");
  EXPECT_EQ(by_name.at("client_timo"), "2");
  EXPECT_EQ(by_name.at("bad_length"), "0");
  EXPECT_EQ(by_name.at("lag_max_ms"), "2.500");
  EXPECT_EQ(by_name.at("late_sessions"), "1");
  EXPECT_EQ(by_name.size(), names.size()) << "column names must be unique";
}

}  // namespace
}  // namespace weft::load
