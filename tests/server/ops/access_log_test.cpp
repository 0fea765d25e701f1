// Tests server/ops/access_log.cpp: golden combined and JSON lines, escaping of hostile input,
// truncation, the time cache across seconds and threads, file output with reopen after a
// rename, stdout, drop accounting, and create()'s "off" and unwritable paths.
#include "server/ops/access_log.hpp"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

namespace weft::http {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

constexpr std::int64_t kTime = 1'795'995'600;  // 29/Nov/2026:23:40:00 +0000

// A temporary directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "weft-access-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> read_lines(const fs::path& p) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(p));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

Config config_for(const std::string& where, AccessLogFormat format) {
  Config c;
  c.access_log = where;
  c.access_format = format;
  return c;
}

AccessRecord sample() {
  AccessRecord r;
  r.remote_addr = "127.0.0.1";
  r.time_unix = kTime;
  r.method = "GET";
  r.target = "/index.html?q=1";
  r.protocol = "HTTP/1.1";
  r.status = 200;
  r.body_bytes = 1234;
  r.referer = "https://example.com/";
  r.user_agent = "curl/8.0";
  r.request_time_s = 0.003;
  return r;
}

// Writes each record through a fresh AccessLog into a file and returns the file's lines.
std::vector<std::string> log_lines(AccessLogFormat format, const std::vector<AccessRecord>& rs) {
  TempDir dir;
  const fs::path file = dir.path() / "access.log";
  auto log = AccessLog::create(config_for(file.string(), format));
  EXPECT_NE(log, nullptr);
  if (!log) return {};
  for (const auto& r : rs) log->log(r);
  log->flush();
  return read_lines(file);
}

std::string log_line(AccessLogFormat format, const AccessRecord& r) {
  const auto lines = log_lines(format, {r});
  EXPECT_EQ(lines.size(), 1u);
  return lines.empty() ? std::string{} : lines[0];
}

// A strict reader for the JSON lines AccessLog writes: one object whose members are strings
// or numbers (RFC 8259, including its rule that text is UTF-8). Returns the members, strings
// decoded to UTF-8 and numbers as written, or nullopt when the text is not such JSON.
class JsonLine {
 public:
  static std::optional<std::map<std::string, std::string>> parse(std::string_view text) {
    JsonLine p(text);
    std::map<std::string, std::string> members;
    if (!p.object(members)) return std::nullopt;
    p.whitespace();
    if (p.i_ != p.s_.size()) return std::nullopt;
    return members;
  }

 private:
  explicit JsonLine(std::string_view s) : s_(s) {}

  bool object(std::map<std::string, std::string>& members) {
    whitespace();
    if (!take('{')) return false;
    whitespace();
    if (take('}')) return true;
    for (;;) {
      std::string key;
      std::string value;
      whitespace();
      if (!string(key)) return false;
      whitespace();
      if (!take(':')) return false;
      whitespace();
      if (peek() == '"' ? !string(value) : !number(value)) return false;
      if (!members.emplace(key, value).second) return false;  // duplicate member
      whitespace();
      if (take('}')) return true;
      if (!take(',')) return false;
    }
  }

  bool string(std::string& out) {
    if (!take('"')) return false;
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (!escape(out)) return false;
      } else if (c < 0x80) {
        out += static_cast<char>(c);
        ++i_;
      } else if (const std::size_t n = utf8_length(); n != 0) {
        out.append(s_.substr(i_, n));
        i_ += n;
      } else {
        return false;
      }
    }
    return false;
  }

  bool escape(std::string& out) {
    ++i_;  // the backslash
    if (i_ >= s_.size()) return false;
    const char e = s_[i_++];
    switch (e) {
      case '"':
        out += '"';
        return true;
      case '\\':
        out += '\\';
        return true;
      case '/':
        out += '/';
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case 'n':
        out += '\n';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'u':
        break;
      default:
        return false;
    }
    unsigned cp = 0;
    if (!hex4(cp)) return false;
    if (cp >= 0xdc00 && cp <= 0xdfff) return false;  // a lone low surrogate
    if (cp >= 0xd800 && cp <= 0xdbff) {
      unsigned low = 0;
      if (!take('\\') || !take('u') || !hex4(low) || low < 0xdc00 || low > 0xdfff) return false;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
    }
    append_utf8(out, cp);
    return true;
  }

  bool hex4(unsigned& v) {
    if (s_.size() - i_ < 4) return false;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  // The length of the well-formed UTF-8 sequence at i_, or 0 (decoded, then checked for
  // overlong forms, surrogates and the U+10FFFF limit).
  std::size_t utf8_length() const {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s_[i_ + k]); };
    const unsigned c = at(0);
    std::size_t n = 0;
    unsigned cp = 0;
    if ((c & 0xe0) == 0xc0) {
      n = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 4;
      cp = c & 0x07;
    } else {
      return 0;
    }
    if (s_.size() - i_ < n) return 0;
    for (std::size_t k = 1; k < n; ++k) {
      if ((at(k) & 0xc0) != 0x80) return 0;
      cp = (cp << 6) | (at(k) & 0x3f);
    }
    constexpr unsigned kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
  }

  bool number(std::string& out) {
    const std::size_t start = i_;
    take('-');
    if (take('0')) {
    } else if (!digits()) {
      return false;
    }
    if (take('.') && !digits()) return false;
    if (take('e') || take('E')) {
      if (!take('+')) take('-');
      if (!digits()) return false;
    }
    out = std::string(s_.substr(start, i_ - start));
    return true;
  }

  bool digits() {
    const std::size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start;
  }

  void whitespace() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }

  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }

  bool take(char c) {
    if (peek() != c || i_ >= s_.size()) return false;
    ++i_;
    return true;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

TEST(AccessLog, JsonCheckerRejectsWhatIsNotJson) {
  EXPECT_TRUE(JsonLine::parse(R"({"a":"b","n":-1.5e3})"));
  EXPECT_FALSE(JsonLine::parse(R"({"a":"b")"));
  EXPECT_FALSE(JsonLine::parse("{\"a\":\"\xff\"}"));
  EXPECT_FALSE(JsonLine::parse("{\"a\":\"\n\"}"));
  EXPECT_FALSE(JsonLine::parse(R"({"a":"\x41"})"));
  EXPECT_FALSE(JsonLine::parse(R"({"a":"\ud800"})"));
  EXPECT_FALSE(JsonLine::parse(R"({"a":01})"));
  EXPECT_FALSE(JsonLine::parse(R"({"a":1,"a":2})"));
}

TEST(AccessLog, CombinedGolden) {
  EXPECT_EQ(log_line(AccessLogFormat::combined, sample()),
            R"(127.0.0.1 - - [29/Nov/2026:23:40:00 +0000] "GET /index.html?q=1 HTTP/1.1" 200 )"
            R"(1234 "https://example.com/" "curl/8.0")");

  AccessRecord r = sample();
  r.remote_addr = "::1";
  r.time_unix = 951782400 + 3600 * 13 + 60 * 5 + 9;  // leap day
  r.method = "HEAD";
  r.target = "/";
  r.protocol = "HTTP/1.0";
  r.status = 304;
  r.body_bytes = 0;
  r.referer = "";
  r.user_agent = "";
  EXPECT_EQ(log_line(AccessLogFormat::combined, r),
            R"(::1 - - [29/Feb/2000:13:05:09 +0000] "HEAD / HTTP/1.0" 304 0 "-" "-")");
}

TEST(AccessLog, CombinedEmptyRequestAndOddStatus) {
  AccessRecord r = sample();
  r.method = "";
  r.target = "";
  r.protocol = "";
  r.status = 0;
  r.body_bytes = 0;
  EXPECT_EQ(log_line(AccessLogFormat::combined, r),
            R"(127.0.0.1 - - [29/Nov/2026:23:40:00 +0000] "-" 000 0 "https://example.com/" )"
            R"("curl/8.0")");

  r.method = "GET";
  r.target = "/old";  // HTTP/0.9 style: no protocol
  r.status = 42;
  EXPECT_EQ(log_line(AccessLogFormat::combined, r),
            R"(127.0.0.1 - - [29/Nov/2026:23:40:00 +0000] "GET /old" 042 0 "https://example.com/" )"
            R"("curl/8.0")");
}

TEST(AccessLog, JsonGolden) {
  EXPECT_EQ(log_line(AccessLogFormat::json, sample()),
            R"({"time":"2026-11-29T23:40:00Z","remote_addr":"127.0.0.1","method":"GET",)"
            R"("target":"/index.html?q=1","protocol":"HTTP/1.1","status":200,"body_bytes":1234,)"
            R"("referer":"https://example.com/","user_agent":"curl/8.0","request_time":0.003})");

  AccessRecord r = sample();
  r.remote_addr = "::1";
  r.time_unix = 0;
  r.referer = "";
  r.user_agent = "";
  r.status = 404;
  r.body_bytes = 18446744073709551615u;
  r.request_time_s = 12345.6789;
  EXPECT_EQ(log_line(AccessLogFormat::json, r),
            R"({"time":"1970-01-01T00:00:00Z","remote_addr":"::1","method":"GET",)"
            R"("target":"/index.html?q=1","protocol":"HTTP/1.1","status":404,)"
            R"("body_bytes":18446744073709551615,"referer":"","user_agent":"",)"
            R"("request_time":12345.679})");
}

TEST(AccessLog, JsonRequestTime) {
  const auto time_of = [](double seconds) {
    AccessRecord r = sample();
    r.request_time_s = seconds;
    const auto members = JsonLine::parse(log_line(AccessLogFormat::json, r));
    return members ? members->at("request_time") : "invalid";
  };
  EXPECT_EQ(time_of(0), "0.000");
  EXPECT_EQ(time_of(1.5), "1.500");
  EXPECT_EQ(time_of(0.0004), "0.000");
  EXPECT_EQ(time_of(0.0006), "0.001");
  EXPECT_EQ(time_of(-1), "0.000");
  EXPECT_EQ(time_of(std::numeric_limits<double>::quiet_NaN()), "0.000");
  EXPECT_EQ(time_of(std::numeric_limits<double>::infinity()), "1000000000000.000");
}

// Bytes that must be escaped, and UTF-8 both well-formed and not.
const std::string kHostile = "/a\"b\\c\n\r\t\b\f"s + '\0' +
                             "\x01\x1f\x7f"
                             "\xff"
                             "\xc3\xa9"          // é
                             "\xc0\xaf"          // overlong '/'
                             "\xed\xa0\x80"      // a surrogate
                             "\xf0\x9f\x98\x80"  // U+1F600
                             "\xf4\x90\x80\x80"  // above U+10FFFF
                             "\xe2\x82";         // cut short

TEST(AccessLog, CombinedEscapesLikeNginx) {
  AccessRecord r = sample();
  r.target = kHostile;
  r.user_agent = "Mozilla \"evil\"\n127.0.0.1 - - [forged]";
  r.referer = "\\x22";
  const std::string line = log_line(AccessLogFormat::combined, r);
  EXPECT_EQ(line,
            R"(127.0.0.1 - - [29/Nov/2026:23:40:00 +0000] "GET )"
            R"(/a\x22b\x5Cc\x0A\x0D\x09\x08\x0C\x00\x01\x1F\x7F\xFF\xC3\xA9\xC0\xAF\xED\xA0\x80)"
            R"(\xF0\x9F\x98\x80\xF4\x90\x80\x80\xE2\x82 HTTP/1.1" 200 1234 "\x5Cx22" )"
            R"("Mozilla \x22evil\x22\x0A127.0.0.1 - - [forged]")");
}

TEST(AccessLog, JsonEscapesAndStaysValid) {
  AccessRecord r = sample();
  r.target = kHostile;
  r.method = "G\"T";
  r.user_agent = "Mozilla \"evil\"\n{\"status\":200}";
  const std::string referer = "\xff\xfe"s + '\0';
  r.referer = referer;
  r.remote_addr = "\x80";
  const std::string line = log_line(AccessLogFormat::json, r);
  EXPECT_EQ(
      line,
      R"({"time":"2026-11-29T23:40:00Z","remote_addr":"\u0080","method":"G\"T","target":)"
      R"("/a\"b\\c\n\r\t\b\f\u0000\u0001\u001f)"
      "\x7f"
      R"(\u00ff)"
      "\xc3\xa9"
      R"(\u00c0\u00af\u00ed\u00a0\u0080)"
      "\xf0\x9f\x98\x80"
      R"(\u00f4\u0090\u0080\u0080\u00e2\u0082",)"
      R"("protocol":"HTTP/1.1","status":200,"body_bytes":1234,"referer":"\u00ff\u00fe\u0000",)"
      R"("user_agent":"Mozilla \"evil\"\n{\"status\":200}","request_time":0.003})");

  const auto members = JsonLine::parse(line);
  ASSERT_TRUE(members) << line;
  EXPECT_EQ(members->size(), 10u);
  EXPECT_EQ(members->at("user_agent"), r.user_agent);
  EXPECT_EQ(members->at("method"), r.method);
  EXPECT_EQ(members->at("status"), "200");
  // Invalid bytes come back as the code points of the same value.
  EXPECT_EQ(members->at("referer"), "\xc3\xbf\xc3\xbe"s + '\0');
  EXPECT_EQ(members->at("target").substr(0, 16), "/a\"b\\c\n\r\t\b\f"s + '\0' + "\x01\x1f\x7f\xc3");
}

TEST(AccessLog, EveryByteValueStaysValidJson) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  AccessRecord r = sample();
  r.target = all;
  r.user_agent = all;
  r.referer = all;
  const std::string line = log_line(AccessLogFormat::json, r);
  EXPECT_TRUE(JsonLine::parse(line)) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(AccessLog, TruncatesLongFieldsWithMarker) {
  AccessRecord r = sample();
  const std::string long_target(5000, 'a');
  r.target = long_target;
  std::string line = log_line(AccessLogFormat::combined, r);
  EXPECT_NE(line.find("GET " + std::string(2043, 'a') + "[...] HTTP/1.1\""), std::string::npos);

  // Escapes are never cut: 510 whole "\x22" and the marker within 2048 bytes.
  const std::string quotes(5000, '"');
  r.target = quotes;
  line = log_line(AccessLogFormat::combined, r);
  std::string escaped;
  for (int i = 0; i < 510; ++i) escaped += "\\x22";
  EXPECT_NE(line.find("GET " + escaped + "[...] HTTP/1.1\""), std::string::npos);

  // Nor UTF-8 sequences: 681 whole euro signs (3 bytes each) and the marker.
  std::string euros;
  for (int i = 0; i < 1500; ++i) euros += "\xe2\x82\xac";
  r.target = euros;
  line = log_line(AccessLogFormat::json, r);
  const auto members = JsonLine::parse(line);
  ASSERT_TRUE(members) << line;
  EXPECT_EQ(members->at("target"), euros.substr(0, 681 * 3) + "[...]");
}

TEST(AccessLog, HugeFieldsFitTheLine) {
  const std::string huge(20000, '\x01');
  AccessRecord r;
  r.remote_addr = huge;
  r.method = huge;
  r.target = huge;
  r.protocol = huge;
  r.referer = huge;
  r.user_agent = huge;
  r.status = std::numeric_limits<int>::min();
  r.body_bytes = std::numeric_limits<std::uint64_t>::max();
  r.time_unix = std::numeric_limits<std::int64_t>::max();
  r.request_time_s = 1e300;
  for (auto format : {AccessLogFormat::combined, AccessLogFormat::json}) {
    const std::string line = log_line(format, r);
    EXPECT_LE(line.size(), kAccessLineCapacity);
    EXPECT_GT(line.size(), 3000u);
    if (format == AccessLogFormat::json) {
      EXPECT_TRUE(JsonLine::parse(line)) << line;
    }
  }
}

TEST(AccessLog, TimeFollowsEachRecordAcrossSeconds) {
  std::vector<AccessRecord> rs;
  for (std::int64_t t : {kTime, kTime + 1, kTime, kTime + 86'400 + 59, kTime + 1}) {
    rs.push_back(sample());
    rs.back().time_unix = t;
  }
  const auto lines = log_lines(AccessLogFormat::combined, rs);
  ASSERT_EQ(lines.size(), rs.size());
  const char* expected[] = {"[29/Nov/2026:23:40:00 +0000]", "[29/Nov/2026:23:40:01 +0000]",
                            "[29/Nov/2026:23:40:00 +0000]", "[30/Nov/2026:23:40:59 +0000]",
                            "[29/Nov/2026:23:40:01 +0000]"};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_NE(lines[i].find(expected[i]), std::string::npos) << lines[i];
  }
  const auto json = log_lines(AccessLogFormat::json, rs);
  ASSERT_EQ(json.size(), rs.size());
  EXPECT_NE(json[3].find("\"time\":\"2026-11-30T23:40:59Z\""), std::string::npos) << json[3];
  EXPECT_NE(json[4].find("\"time\":\"2026-11-29T23:40:01Z\""), std::string::npos) << json[4];
}

TEST(AccessLog, ClampsTimesToYears0To9999) {
  for (auto [t, text] :
       {std::pair{std::numeric_limits<std::int64_t>::min(), "01/Jan/0000:00:00:00"},
        std::pair{std::numeric_limits<std::int64_t>::max(), "31/Dec/9999:23:59:59"}}) {
    AccessRecord r = sample();
    r.time_unix = t;
    const std::string line = log_line(AccessLogFormat::combined, r);
    EXPECT_NE(line.find("["s + text + " +0000]"), std::string::npos) << line;
  }
}

// Many threads log records of a few seconds at once: every line written carries its own
// record's time (the target names it), and written + dropped = logged.
TEST(AccessLog, ManyThreadsKeepTimesAndCount) {
  TempDir dir;
  const fs::path file = dir.path() / "access.log";
  auto log = AccessLog::create(config_for(file.string(), AccessLogFormat::combined));
  ASSERT_NE(log, nullptr);
  constexpr int kThreads = 8;
  constexpr int kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < kEach; ++i) {
        const int k = (i + t) % 5;  // seconds come and go out of order
        const std::string target = "/" + std::to_string(k);
        AccessRecord r = sample();
        r.time_unix = kTime + k;
        r.target = target;
        log->log(r);
      }
    });
  }
  for (auto& th : threads) th.join();
  log->flush();
  const auto lines = read_lines(file);
  EXPECT_EQ(lines.size() + log->dropped(), std::size_t{kThreads * kEach});
  for (const auto& line : lines) {
    const std::size_t at = line.find("GET /");
    ASSERT_NE(at, std::string::npos) << line;
    const char k = line[at + 5];
    ASSERT_NE(line.find("[29/Nov/2026:23:40:0"s + k + " +0000]"), std::string::npos) << line;
  }
}

TEST(AccessLog, ReopenAfterRenameStartsNewFile) {
  TempDir dir;
  const fs::path file = dir.path() / "access.log";
  const fs::path rotated = dir.path() / "access.log.1";
  auto log = AccessLog::create(config_for(file.string(), AccessLogFormat::combined));
  ASSERT_NE(log, nullptr);
  AccessRecord first = sample();
  first.target = "/first";
  AccessRecord second = sample();
  second.target = "/second";

  log->log(first);
  log->flush();
  fs::rename(file, rotated);
  log->reopen();
  log->log(second);
  log->flush();

  const auto old_lines = read_lines(rotated);
  const auto new_lines = read_lines(file);
  ASSERT_EQ(old_lines.size(), 1u);
  ASSERT_EQ(new_lines.size(), 1u);
  EXPECT_NE(old_lines[0].find("GET /first "), std::string::npos);
  EXPECT_NE(new_lines[0].find("GET /second "), std::string::npos);

  // A reopen that fails keeps writing the file it had.
  fs::rename(file, rotated);
  fs::create_directory(file);
  log->reopen();
  log->log(first);
  log->flush();
  EXPECT_EQ(read_lines(rotated).size(), 2u);
}

TEST(AccessLog, AppendsToAnExistingFile) {
  TempDir dir;
  const fs::path file = dir.path() / "access.log";
  std::ofstream(file) << "earlier line\n";
  auto log = AccessLog::create(config_for(file.string(), AccessLogFormat::json));
  ASSERT_NE(log, nullptr);
  log->log(sample());
  log->flush();
  const auto lines = read_lines(file);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "earlier line");
}

TEST(AccessLog, DestructionWritesQueuedLines) {
  TempDir dir;
  const fs::path file = dir.path() / "access.log";
  auto log = AccessLog::create(config_for(file.string(), AccessLogFormat::combined));
  ASSERT_NE(log, nullptr);
  for (int i = 0; i < 100; ++i) log->log(sample());
  const std::uint64_t dropped = log->dropped();
  log.reset();
  EXPECT_EQ(read_lines(file).size(), 100 - dropped);
}

TEST(AccessLog, WritesToStdout) {
  auto log = AccessLog::create(config_for("stdout", AccessLogFormat::combined));
  ASSERT_NE(log, nullptr);
  testing::internal::CaptureStdout();
  log->log(sample());
  log->flush();
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out,
            "127.0.0.1 - - [29/Nov/2026:23:40:00 +0000] \"GET /index.html?q=1 HTTP/1.1\" 200 1234 "
            "\"https://example.com/\" \"curl/8.0\"\n");
  log->reopen();  // no-op
}

TEST(AccessLog, OffGivesNothing) {
  EXPECT_EQ(AccessLog::create(config_for("off", AccessLogFormat::combined)), nullptr);
  EXPECT_EQ(AccessLog::create(config_for("", AccessLogFormat::json)), nullptr);
  EXPECT_EQ(AccessLog::create(Config{}), nullptr);  // the default
  EXPECT_NE(AccessLog::create(config_for("stderr", AccessLogFormat::json)), nullptr);
}

TEST(AccessLog, UnwritablePathThrowsNamingTheKey) {
  TempDir dir;
  std::ofstream(dir.path() / "plain") << "a file, not a directory\n";
  // Unopenable even as root: a directory, and a path through a regular file.
  for (const fs::path& p : {dir.path(), dir.path() / "plain" / "access.log"}) {
    Config c = config_for(p.string(), AccessLogFormat::combined);
    c.source = "conf/weft.toml";
    try {
      AccessLog::create(c);
      ADD_FAILURE() << "no ConfigError for " << p;
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("conf/weft.toml: key 'log.access_log'"), std::string::npos) << what;
      EXPECT_NE(what.find(p.string()), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace weft::http
