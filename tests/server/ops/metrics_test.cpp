// Tests server/ops/metrics.cpp: counts from many threads sum exactly, the exposition text is
// valid format 0.0.4 line by line, and registered gauges appear.
#include "server/ops/metrics.hpp"

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace weft::http {
namespace {

// One sample line: name, labels as written after unescaping, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Checks `text` as Prometheus text format 0.0.4, line by line, and returns its samples; on
// the first bad line, records a failure naming it and returns nullopt. Checked: comment
// lines (# HELP name text, # TYPE name type), metric and label names, label value escapes,
// the value (and an optional timestamp), one HELP and one TYPE per family before its
// samples, the samples of a family together, and the final newline.
std::optional<std::vector<Sample>> check_exposition(const std::string& text) {
  static const std::regex kName("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");
  static const std::regex kHelp("# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)");
  static const std::regex kType(
      "# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) "
      "(counter|gauge|histogram|summary|untyped)");
  const auto fail = [](const std::string& why, const std::string& line) {
    ADD_FAILURE() << why << ": '" << line << "'";
    return std::nullopt;
  };
  if (text.empty() || text.back() != '\n') return fail("no final newline", text);

  std::vector<Sample> samples;
  std::set<std::string> helped, typed, finished;
  std::string current;  // the family whose samples are being read
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) {
      if (!std::regex_match(line, m, kHelp)) return fail("bad HELP", line);
      // HELP text may hold only the escapes \\ and \n.
      const std::string help = m[2];
      for (std::size_t i = 0; i < help.size(); ++i) {
        if (help[i] == '\\' && (++i == help.size() || (help[i] != '\\' && help[i] != 'n')))
          return fail("bad escape in HELP", line);
      }
      if (!helped.insert(m[1]).second) return fail("second HELP", line);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      if (!std::regex_match(line, m, kType)) return fail("bad TYPE", line);
      if (!typed.insert(m[1]).second) return fail("second TYPE", line);
      continue;
    }
    if (line.empty() || line[0] == '#') return fail("stray line", line);

    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (!std::regex_match(s.name, kName)) return fail("bad metric name", line);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        if (eq == std::string::npos) return fail("label without '='", line);
        const std::string label = line.substr(i, eq - i);
        if (!std::regex_match(label, kLabelName)) return fail("bad label name", line);
        i = eq + 1;
        if (i >= line.size() || line[i] != '"') return fail("unquoted label value", line);
        std::string value;
        for (++i; i < line.size() && line[i] != '"'; ++i) {
          if (line[i] == '\\') {
            if (++i == line.size()) return fail("cut escape", line);
            if (line[i] == 'n') {
              value += '\n';
            } else if (line[i] == '\\' || line[i] == '"') {
              value += line[i];
            } else {
              return fail("bad escape in label value", line);
            }
          } else {
            value += line[i];
          }
        }
        if (i >= line.size()) return fail("unterminated label value", line);
        ++i;  // closing quote
        if (!s.labels.emplace(label, value).second) return fail("repeated label", line);
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return fail("unterminated labels", line);
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') return fail("no space before value", line);
    std::istringstream rest(line.substr(i + 1));
    std::string value, timestamp, extra;
    rest >> value >> timestamp >> extra;
    if (!extra.empty()) return fail("trailing text", line);
    if (value == "NaN") {
      s.value = std::nan("");
    } else if (value == "+Inf") {
      s.value = HUGE_VAL;
    } else if (value == "-Inf") {
      s.value = -HUGE_VAL;
    } else {
      char* end = nullptr;
      s.value = std::strtod(value.c_str(), &end);
      // Digits, signs, a point and an exponent only: no hex floats, no "inf" spelled otherwise.
      if (value.empty() || *end != '\0' ||
          value.find_first_not_of("0123456789+-.eE") != std::string::npos)
        return fail("bad value", line);
    }
    if (!timestamp.empty() && timestamp.find_first_not_of("-0123456789") != std::string::npos)
      return fail("bad timestamp", line);

    if (s.name != current) {
      if (finished.count(s.name)) return fail("family split in two", line);
      if (!current.empty()) finished.insert(current);
      current = s.name;
      if (!typed.count(s.name) || !helped.count(s.name)) return fail("no HELP/TYPE before", line);
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

// Returns the value of the sample `name` with label code=`code` (empty: no labels).
double value_of(const std::vector<Sample>& samples, const std::string& name,
                const std::string& code = "") {
  for (const auto& s : samples) {
    if (s.name != name) continue;
    const auto it = s.labels.find("code");
    if (code.empty() ? s.labels.empty() : (it != s.labels.end() && it->second == code))
      return s.value;
  }
  ADD_FAILURE() << "no sample " << name << " " << code;
  return -1;
}

TEST(Metrics, CheckerRejectsBadText) {
  // The checker reports what it finds as a failure, which each case here expects.
  EXPECT_NONFATAL_FAILURE(check_exposition("x 1\n"), "no HELP/TYPE");
  EXPECT_NONFATAL_FAILURE(check_exposition("# HELP x h\n# TYPE x gauge\nx 1"), "final newline");
  EXPECT_NONFATAL_FAILURE(check_exposition("# HELP x h\n# TYPE x gauge\n9x 1\n"), "metric name");
  EXPECT_NONFATAL_FAILURE(check_exposition("# HELP x h\n# TYPE x gauge\nx{a=\"\\q\"} 1\n"),
                          "escape");
  EXPECT_NONFATAL_FAILURE(check_exposition("# HELP x h\n# TYPE x gauge\nx one\n"), "bad value");
  EXPECT_NONFATAL_FAILURE(check_exposition("# HELP x h\n# TYPE x gauge\nx inf\n"), "bad value");
  EXPECT_NONFATAL_FAILURE(check_exposition("# HELP x h\n# TYPE x gauge\n# TYPE x gauge\n"),
                          "second TYPE");
  EXPECT_NONFATAL_FAILURE(
      check_exposition("# HELP x h\n# TYPE x gauge\n# HELP y h\n# TYPE y gauge\nx 1\ny 1\nx 2\n"),
      "split");
  const auto ok = check_exposition(
      "# HELP x a \\\\ b\n# TYPE x counter\nx{code=\"2\\\"0\\n\",b=\"\"} 1.5e3 1700000000\n");
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)[0].labels.at("code"), "2\"0\n");
  EXPECT_EQ((*ok)[0].value, 1500);
}

TEST(Metrics, RendersEveryFamilyAtZero) {
  Metrics m(4);
  const std::string text = m.render();
  const auto samples = check_exposition(text);
  ASSERT_TRUE(samples) << text;
  for (int code : kStatusCodes) {
    EXPECT_EQ(value_of(*samples, "weft_requests_total", std::to_string(code)), 0);
  }
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "other"), 0);
  for (const char* name : {"weft_response_bytes_total", "weft_connections_open",
                           "weft_connections_total", "weft_connections_rejected_total",
                           "weft_fd_cache_hits_total", "weft_fd_cache_misses_total"}) {
    EXPECT_EQ(value_of(*samples, name), 0) << name;
  }
  EXPECT_NE(text.find("# TYPE weft_connections_open gauge\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE weft_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("weft_requests_total{code=\"404\"} 0\n"), std::string::npos);
}

TEST(Metrics, ThreadsSumExactly) {
  constexpr unsigned kShards = 4;
  constexpr int kThreads = 8;  // twice the shards: shards are shared, and 4..7 are folded
  constexpr int kEach = 20000;
  const int statuses[] = {200, 404, 304, 999, -1, 503, 206, 100};
  Metrics m(kShards);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto shard = static_cast<unsigned>(t);
      for (int i = 0; i < kEach; ++i) {
        m.on_request(shard, statuses[i % 8], 10);
        m.on_connection_open(shard);
        m.on_connection_close((shard + 1) % kShards);  // closed on another processor
        m.on_fd_cache(shard, i % 4 != 0);
        if (i % 10 == 0) m.on_rejected_connection(shard);
      }
      m.on_connection_open(shard);  // one each stays open
    });
  }
  // Scrapes race with the counting (for TSan); each must still be valid text.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(check_exposition(m.render()));
  for (auto& th : threads) th.join();

  const auto samples = check_exposition(m.render());
  ASSERT_TRUE(samples);
  constexpr double kPerStatus = kThreads * kEach / 8;
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "200"), kPerStatus);
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "404"), kPerStatus);
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "304"), kPerStatus);
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "503"), kPerStatus);
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "206"), kPerStatus);
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "other"), 3 * kPerStatus);  // 999 -1 100
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "500"), 0);
  EXPECT_EQ(value_of(*samples, "weft_response_bytes_total"), 10.0 * kThreads * kEach);
  EXPECT_EQ(value_of(*samples, "weft_connections_total"), kThreads * (kEach + 1));
  EXPECT_EQ(value_of(*samples, "weft_connections_open"), kThreads);
  EXPECT_EQ(value_of(*samples, "weft_connections_rejected_total"), kThreads * kEach / 10);
  EXPECT_EQ(value_of(*samples, "weft_fd_cache_hits_total"), kThreads * kEach * 3 / 4);
  EXPECT_EQ(value_of(*samples, "weft_fd_cache_misses_total"), kThreads * kEach / 4);
}

TEST(Metrics, ZeroShardsIsOne) {
  Metrics m(0);
  m.on_request(0, 200, 5);
  m.on_request(7, 200, 5);
  const auto samples = check_exposition(m.render());
  ASSERT_TRUE(samples);
  EXPECT_EQ(value_of(*samples, "weft_requests_total", "200"), 2);
  EXPECT_EQ(value_of(*samples, "weft_response_bytes_total"), 10);
}

TEST(Metrics, GaugesAppear) {
  Metrics m(2);
  double entries = 42;
  m.add_gauge("weft_fd_cache_entries", "Entries in the fd cache.", [&entries] { return entries; });
  m.add_gauge("weft_odd_values", "A help text with \\ and\na newline.",
              [] { return std::nan(""); });
  m.add_gauge("weft_ratio", "Half.", [] { return 0.5; });
  m.add_gauge("weft_big", "Huge.", [] { return -HUGE_VAL; });
  m.add_gauge("weft:recorded_rule", "Colons are allowed.", [] { return 1e21; });

  std::string text = m.render();
  auto samples = check_exposition(text);
  ASSERT_TRUE(samples) << text;
  EXPECT_EQ(value_of(*samples, "weft_fd_cache_entries"), 42);
  EXPECT_NE(text.find("# HELP weft_fd_cache_entries Entries in the fd cache.\n"
                      "# TYPE weft_fd_cache_entries gauge\nweft_fd_cache_entries 42\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# HELP weft_odd_values A help text with \\\\ and\\na newline.\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nweft_odd_values NaN\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nweft_ratio 0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nweft_big -Inf\n"), std::string::npos) << text;
  EXPECT_EQ(value_of(*samples, "weft:recorded_rule"), 1e21);
  // Registered gauges come after the built-in families, in registration order.
  EXPECT_LT(text.find("weft_fd_cache_misses_total"), text.find("weft_fd_cache_entries"));
  EXPECT_LT(text.find("weft_fd_cache_entries"), text.find("weft_odd_values"));

  entries = 7;  // read at each render
  samples = check_exposition(m.render());
  ASSERT_TRUE(samples);
  EXPECT_EQ(value_of(*samples, "weft_fd_cache_entries"), 7);
}

TEST(Metrics, GaugeNamesAreChecked) {
  Metrics m(1);
  EXPECT_THROW(m.add_gauge("", "h", [] { return 0.0; }), std::invalid_argument);
  EXPECT_THROW(m.add_gauge("9lives", "h", [] { return 0.0; }), std::invalid_argument);
  EXPECT_THROW(m.add_gauge("weft-dash", "h", [] { return 0.0; }), std::invalid_argument);
  EXPECT_THROW(m.add_gauge("weft_connections_open", "h", [] { return 0.0; }),
               std::invalid_argument);
  m.add_gauge("weft_x", "h", [] { return 0.0; });
  EXPECT_THROW(m.add_gauge("weft_x", "h", [] { return 0.0; }), std::invalid_argument);
  EXPECT_TRUE(check_exposition(m.render()));
}

}  // namespace
}  // namespace weft::http
