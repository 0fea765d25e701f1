// Tests loadgen/workload.cpp: the four URI sources, the wlog and session-log formats, and the
// factory.
#include "loadgen/workload.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "alloc_counter.hpp"

namespace weft::load {
namespace {

using namespace std::string_literals;

std::vector<std::string> uris_of(const SessionPlan& p) {
  std::vector<std::string> out;
  for (const Call& c : p.calls) out.emplace_back(c.uri);
  return out;
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// ---- --uri ----

TEST(Workload, FixedUriSessionsAreSequentialCalls) {
  FixedUriSource src("/index.html", "GET", 3);
  SessionPlan plan;
  ASSERT_TRUE(src.plan_session(12345, plan));
  ASSERT_EQ(plan.calls.size(), 3u);
  ASSERT_EQ(plan.bursts.size(), 3u);
  for (std::uint32_t j = 0; j < 3; ++j) {
    EXPECT_EQ(plan.calls[j].method, "GET");
    EXPECT_EQ(plan.calls[j].uri, "/index.html");
    EXPECT_TRUE(plan.calls[j].body.empty());
    EXPECT_FALSE(plan.calls[j].expected_size);
    EXPECT_EQ(plan.bursts[j].first, j);
    EXPECT_EQ(plan.bursts[j].count, 1u);
    EXPECT_EQ(plan.bursts[j].think_s, 0.0);
  }
  EXPECT_FALSE(src.session_limit());
  EXPECT_NE(src.describe().find("/index.html"), std::string::npos);
}

TEST(Workload, PlanningReusesThePlanWithoutAllocating) {
  FixedUriSource src("/", "GET", 4);
  SessionPlan plan;
  ASSERT_TRUE(src.plan_session(0, plan));
  const auto before = testing::allocations();
  for (std::uint64_t i = 1; i < 1000; ++i) ASSERT_TRUE(src.plan_session(i, plan));
  EXPECT_EQ(testing::allocations(), before);
}

// ---- --zipf --files ----

Manifest small_manifest() {
  return parse_manifest(
      "# weft-fileset v1\n/one\t100\t1\n/two\t200\t2\n/three\t300\t3\n/four\t400\t4\n");
}

TEST(Workload, ZipfCallsMapRanksToManifestFiles) {
  ZipfUriSource src(small_manifest(), 1.0, 42, "GET", 8);
  SessionPlan plan;
  std::map<std::string, int> counts;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    ASSERT_TRUE(src.plan_session(i, plan));
    ASSERT_EQ(plan.calls.size(), 8u);
    for (const Call& c : plan.calls) {
      ++counts[std::string{c.uri}];
      ASSERT_TRUE(c.expected_size);
      const std::map<std::string, std::uint64_t> sizes = {
          {"/one", 100}, {"/two", 200}, {"/three", 300}, {"/four", 400}};
      EXPECT_EQ(*c.expected_size, sizes.at(std::string{c.uri}));
    }
  }
  // P(k) = (1/k) / H(4) with H(4) = 25/12: 0.48, 0.24, 0.16, 0.12 of 160000 calls.
  EXPECT_NEAR(counts["/one"], 76800, 1200);
  EXPECT_NEAR(counts["/two"], 38400, 1000);
  EXPECT_NEAR(counts["/three"], 25600, 900);
  EXPECT_NEAR(counts["/four"], 19200, 800);
}

TEST(Workload, ZipfSessionDependsOnlyOnSeedAndIndex) {
  ZipfUriSource a(small_manifest(), 1.2, 9, "GET", 16);
  ZipfUriSource b(small_manifest(), 1.2, 9, "GET", 16);
  ZipfUriSource other_seed(small_manifest(), 1.2, 10, "GET", 16);
  SessionPlan pa, pb, pc;
  // Planning order must not matter: plan 5 then 3 in one source, 3 then 5 in the other.
  a.plan_session(5, pa);
  const auto a5 = uris_of(pa);
  a.plan_session(3, pa);
  const auto a3 = uris_of(pa);
  b.plan_session(3, pb);
  EXPECT_EQ(uris_of(pb), a3);
  b.plan_session(5, pb);
  EXPECT_EQ(uris_of(pb), a5);
  other_seed.plan_session(5, pc);
  EXPECT_NE(uris_of(pc), a5);
}

// ---- --num-calls MIN..MAX ----

TEST(Workload, CallCountIsFixedOrUniformPerSession) {
  EXPECT_EQ(CallCount{4}.of_session(1, 99), 4u);
  EXPECT_EQ(CallCount{4}.to_string(), "4");
  const CallCount range{1, 5};
  EXPECT_EQ(range.to_string(), "1..5");
  std::map<std::uint32_t, int> counts;
  for (std::uint64_t i = 0; i < 50000; ++i) ++counts[range.of_session(7, i)];
  ASSERT_EQ(counts.size(), 5u);  // every count in [1, 5], nothing else
  EXPECT_EQ(counts.begin()->first, 1u);
  EXPECT_EQ(counts.rbegin()->first, 5u);
  for (const auto& [n, c] : counts) EXPECT_NEAR(c, 10000, 500) << n;
  EXPECT_EQ(range.of_session(7, 123), range.of_session(7, 123));
}

TEST(Workload, DrawnCallCountsKeepEachSessionsUris) {
  // A session's count comes from its own stream: its first k URIs are the ones a fixed-count
  // run draws for the same session.
  ZipfUriSource drawn(small_manifest(), 1.0, 5, "GET", CallCount{1, 6});
  ZipfUriSource fixed(small_manifest(), 1.0, 5, "GET", 6);
  FixedUriSource uri("/x", "GET", CallCount{2, 3}, 5);
  SessionPlan pd, pf, pu;
  std::map<std::size_t, int> lengths;
  for (std::uint64_t i = 0; i < 600; ++i) {
    ASSERT_TRUE(drawn.plan_session(i, pd));
    ASSERT_TRUE(fixed.plan_session(i, pf));
    const std::size_t k = pd.calls.size();
    ASSERT_EQ(k, CallCount(1, 6).of_session(5, i));
    ASSERT_EQ(pd.bursts.size(), k);
    auto want = uris_of(pf);
    want.resize(k);
    EXPECT_EQ(uris_of(pd), want) << "session " << i;
    ++lengths[k];
    ASSERT_TRUE(uri.plan_session(i, pu));
    EXPECT_EQ(pu.calls.size(), CallCount(2, 3).of_session(5, i));
  }
  EXPECT_EQ(lengths.size(), 6u);
  EXPECT_NE(drawn.describe().find("1..6 calls"), std::string::npos) << drawn.describe();
}

// ---- --wlog ----

TEST(Workload, WlogParsesNulTerminatedUris) {
  EXPECT_EQ(parse_wlog("/a\0/b/c?x=1\0/d\0"s), (std::vector<std::string>{"/a", "/b/c?x=1", "/d"}));
  // Empty entries are skipped; a last URI without its NUL is kept.
  EXPECT_EQ(parse_wlog("\0/a\0\0/b"s), (std::vector<std::string>{"/a", "/b"}));
}

TEST(Workload, WlogRejectsLinesAndEmptyFiles) {
  const std::string lines = error_of([] { parse_wlog("/a\n/b\n", "log.txt"); });
  EXPECT_NE(lines.find("log.txt: entry 1 (byte 0): URI contains a newline"), std::string::npos)
      << lines;
  EXPECT_NE(lines.find("tr '\\n' '\\0'"), std::string::npos) << lines;
  EXPECT_NE(error_of([] { parse_wlog("/a\0/b c\0"s, "w"); })
                .find("w: entry 2 (byte 3): URI "
                      "contains whitespace"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_wlog("", "w"); }).find("w: no URI"), std::string::npos);
  EXPECT_NE(error_of([] { parse_wlog("\0\0"s, "w"); }).find("no URI"), std::string::npos);
}

TEST(Workload, WlogWithoutLoopEndsWithTheList) {
  WlogUriSource src({"/1", "/2", "/3", "/4", "/5"}, false, "GET", 2);
  SessionPlan plan;
  ASSERT_TRUE(src.plan_session(0, plan));
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/1", "/2"}));
  ASSERT_TRUE(src.plan_session(2, plan));
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/5"}));  // the list ends inside it
  EXPECT_FALSE(src.plan_session(3, plan));
  EXPECT_FALSE(src.plan_session(~std::uint64_t{0}, plan));
  EXPECT_EQ(src.session_limit(), 3u);
}

TEST(Workload, WlogWithLoopWrapsAround) {
  WlogUriSource src({"/1", "/2", "/3"}, true, "HEAD", 2);
  SessionPlan plan;
  ASSERT_TRUE(src.plan_session(1, plan));
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/3", "/1"}));
  EXPECT_EQ(plan.calls[0].method, "HEAD");
  ASSERT_TRUE(src.plan_session(1'000'000, plan));
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/3", "/1"}));  // 2e6 % 3 == 2
  EXPECT_FALSE(src.session_limit());
}

// ---- --wsesslog ----

// The example of httperf's manual page, verbatim (tabs before the burst lines).
constexpr std::string_view kManPageLog =
    "# Comment lines start with a ``#'' as the first\n"
    "# character.  Lines with only whitespace delimit\n"
    "# sessions (multiple blank lines do not generate\n"
    "# ``null'' sessions).  All other lines specify a\n"
    "# uri-sequence (1 uri per line).  If the first\n"
    "# character of the line is whitespace (e.g. space\n"
    "# or tab), the uri is considered to be part of a\n"
    "# burst that is sent out after the previous\n"
    "# non-burst uri.\n"
    "\n"
    "# session 1 definition (this is a comment)\n"
    "/foo.html think=2.0\n"
    "\t/pict1.gif\n"
    "\t/pict2.gif\n"
    "/foo2.html method=POST contents='Post data'\n"
    "\t/pict3.gif\n"
    "\t/pict4.gif\n"
    "\n"
    "# session 2 definition\n"
    "/foo3.html method=POST contents=\"Multiline\\ndata\"\n"
    "/foo4.html method=HEAD\n";

TEST(Workload, SessionLogReadsTheManPageExample) {
  const auto sessions = parse_session_log(kManPageLog, 0.5);
  ASSERT_EQ(sessions.size(), 2u);
  const LoggedSession& s1 = sessions[0];
  ASSERT_EQ(s1.bursts.size(), 2u);
  EXPECT_EQ(s1.bursts[0].think_s, 2.0);
  ASSERT_EQ(s1.bursts[0].requests.size(), 3u);
  EXPECT_EQ(s1.bursts[0].requests[0], (LoggedRequest{"GET", "/foo.html", ""}));
  EXPECT_EQ(s1.bursts[0].requests[1].uri, "/pict1.gif");
  EXPECT_EQ(s1.bursts[0].requests[2].uri, "/pict2.gif");
  EXPECT_EQ(s1.bursts[1].think_s, 0.5);  // the default X
  ASSERT_EQ(s1.bursts[1].requests.size(), 3u);
  EXPECT_EQ(s1.bursts[1].requests[0], (LoggedRequest{"POST", "/foo2.html", "Post data"}));
  EXPECT_EQ(s1.bursts[1].requests[2].uri, "/pict4.gif");
  const LoggedSession& s2 = sessions[1];
  ASSERT_EQ(s2.bursts.size(), 2u);
  EXPECT_EQ(s2.bursts[0].requests[0], (LoggedRequest{"POST", "/foo3.html", "Multiline\ndata"}));
  EXPECT_EQ(s2.bursts[1].requests[0], (LoggedRequest{"HEAD", "/foo4.html", ""}));
}

TEST(Workload, SessionLogContentsQuotingAndContinuation) {
  const auto sessions = parse_session_log(
      "/a contents=\"it's \\\"quoted\\\"\" method=PUT\n"
      "/b contents='tab\\there' think=1.5\n"
      "/c contents=\"first line\\\n"
      "second line\"\n"
      "/d contents=plain\\ word\r\n",
      0.0);
  ASSERT_EQ(sessions.size(), 1u);
  const auto& b = sessions[0].bursts;
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].requests[0], (LoggedRequest{"PUT", "/a", "it's \"quoted\""}));
  EXPECT_EQ(b[1].requests[0].body, "tab\there");
  EXPECT_EQ(b[1].think_s, 1.5);
  EXPECT_EQ(b[2].requests[0].body, "first line\nsecond line");
  EXPECT_EQ(b[3].requests[0].body, "plain word");
}

TEST(Workload, SessionLogBlankLinesAndLeadingWhitespace) {
  // Several blank lines make one boundary; whitespace-only lines count as blank; a session
  // whose first line is indented still starts with a burst.
  const auto sessions = parse_session_log("\n\n  \t\n\t/x\n\t/y\n\n\n \n/z\n# c\n\t/w\n", 0.0);
  ASSERT_EQ(sessions.size(), 2u);
  ASSERT_EQ(sessions[0].bursts.size(), 1u);
  EXPECT_EQ(sessions[0].bursts[0].requests.size(), 2u);
  ASSERT_EQ(sessions[1].bursts.size(), 1u);
  EXPECT_EQ(sessions[1].bursts[0].requests.size(), 2u);  // the comment does not split
}

TEST(Workload, SessionLogErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"/a\n/b method=FETCH\n", "s.log:2: unknown method 'FETCH'"},
      {"/a think=-1\n", "s.log:1: think=-1: not a number"},
      {"/a think=x\n", "s.log:1: think=x"},
      {"/a color=red\n", "s.log:1: unknown option 'color=red'"},
      {"\n/a contents='open\n/b\n", "s.log:2: unterminated quote"},
      {"/a contents=\"x\\\n", "s.log:1: contents= continues past the end of the file"},
      {"# nothing\n\n", "s.log: no session"},
      {"/a\x01\n", "s.log:1: URI contains a control character"},
  };
  for (const Case& c : cases) {
    const std::string err = error_of([&] { parse_session_log(c.text, 0.0, "s.log"); });
    EXPECT_NE(err.find(c.want), std::string::npos) << c.text << " -> " << err;
  }
}

TEST(Workload, SessionLogSourceGoesRoundRobinUpToN) {
  SessionLogSource src(parse_session_log(kManPageLog, 0.25), 5, "man.log");
  SessionPlan plan;
  ASSERT_TRUE(src.plan_session(0, plan));
  ASSERT_EQ(plan.calls.size(), 6u);
  ASSERT_EQ(plan.bursts.size(), 2u);
  EXPECT_EQ(plan.bursts[0].first, 0u);
  EXPECT_EQ(plan.bursts[0].count, 3u);
  EXPECT_EQ(plan.bursts[0].think_s, 2.0);
  EXPECT_EQ(plan.bursts[1].first, 3u);
  EXPECT_EQ(plan.bursts[1].count, 3u);
  EXPECT_EQ(plan.bursts[1].think_s, 0.25);
  EXPECT_EQ(plan.calls[3].method, "POST");
  EXPECT_EQ(plan.calls[3].body, "Post data");
  ASSERT_TRUE(src.plan_session(3, plan));  // 3 % 2 == 1: the second session
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/foo3.html", "/foo4.html"}));
  EXPECT_TRUE(src.plan_session(4, plan));
  EXPECT_FALSE(src.plan_session(5, plan));
  EXPECT_EQ(src.session_limit(), 5u);
  EXPECT_THROW(SessionLogSource({}, 1), WorkloadError);
}

// ---- factory ----

class WorkloadFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("weft_workload_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view content) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }
  std::filesystem::path dir_;
};

TEST_F(WorkloadFiles, FactoryBuildsEachKind) {
  SessionPlan plan;
  WorkloadSpec spec;
  spec.uri = "/u";
  spec.num_calls = 2;
  auto fixed = make_uri_source(spec);
  ASSERT_TRUE(fixed->plan_session(0, plan));
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/u", "/u"}));

  spec.kind = WorkloadSpec::Kind::kZipf;
  spec.files = write("set.txt", "# weft-fileset v1\n/only\t5\t1\n");
  auto zipf = make_uri_source(spec);
  ASSERT_TRUE(zipf->plan_session(0, plan));
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/only", "/only"}));
  EXPECT_EQ(plan.calls[0].expected_size, 5u);

  spec.kind = WorkloadSpec::Kind::kWlog;
  spec.wlog_file = write("w.log", "/p\0/q\0/r\0"s);
  auto wlog = make_uri_source(spec);
  ASSERT_TRUE(wlog->plan_session(1, plan));
  EXPECT_EQ(uris_of(plan), (std::vector<std::string>{"/r"}));

  spec.kind = WorkloadSpec::Kind::kSessionLog;
  spec.sesslog_file = write("s.log", "/s1\n\t/s2 think=3\n");
  spec.sesslog_sessions = 4;
  auto slog = make_uri_source(spec);
  EXPECT_EQ(slog->session_limit(), 4u);
  ASSERT_TRUE(slog->plan_session(3, plan));
  EXPECT_EQ(plan.bursts.at(0).think_s, 3.0);
}

TEST_F(WorkloadFiles, FactoryErrorsNameTheFile) {
  WorkloadSpec spec;
  spec.kind = WorkloadSpec::Kind::kWlog;
  spec.wlog_file = (dir_ / "missing.log").string();
  const std::string err = error_of([&] { make_uri_source(spec); });
  EXPECT_NE(err.find("missing.log"), std::string::npos) << err;
  spec.kind = WorkloadSpec::Kind::kZipf;
  spec.files = write("bad.txt", "# weft-fileset v1\n/a\t1\t2\n");
  const std::string bad = error_of([&] { make_uri_source(spec); });
  EXPECT_NE(bad.find("bad.txt:2: rank 2"), std::string::npos) << bad;
}

}  // namespace
}  // namespace weft::load
