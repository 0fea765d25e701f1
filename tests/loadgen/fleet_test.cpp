// Tests loadgen/fleet.cpp: --client and --start-at parsing, the clock check, and that the
// instances of a split test together run exactly the sessions of the whole test.
#include "loadgen/fleet.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "loadgen/options.hpp"

namespace weft::load {
namespace {

TEST(Fleet, ClientSharesParse) {
  std::string error;
  struct Row {
    const char* text;
    bool ok;
    std::uint32_t i, n;
    const char* note;
  };
  for (const Row& r : {Row{"0/1", true, 0, 1, "one instance"}, Row{"3/4", true, 3, 4, "last"},
                       Row{"4/4", false, 0, 0, "I == N"}, Row{"0/0", false, 0, 0, "N == 0"},
                       Row{"1", false, 0, 0, "no slash"}, Row{"-1/4", false, 0, 0, "negative"},
                       Row{"1/4x", false, 0, 0, "trailing text"}, Row{"/4", false, 0, 0, "no I"}}) {
    const auto share = parse_client(r.text, error);
    EXPECT_EQ(share.has_value(), r.ok) << r.note;
    if (share) {
      EXPECT_EQ(*share, (ClientShare{r.i, r.n})) << r.note;
    }
  }
}

TEST(Fleet, EveryInstanceOwnsADisjointShareAndTogetherAll) {
  for (std::uint32_t n : {1u, 2u, 3u, 4u}) {
    std::set<std::uint64_t> seen;
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint64_t s = 0; s < 1'000; ++s) {
        if (ClientShare{i, n}.owns(s)) {
          EXPECT_TRUE(seen.insert(s).second) << s;
        }
      }
    }
    EXPECT_EQ(seen.size(), 1'000u) << n;
  }
}

TEST(Fleet, StartTimesParse) {
  std::string error;
  EXPECT_EQ(parse_start_at("1764871200.5", error), 1764871200.5);
  EXPECT_EQ(parse_start_at("2026-12-04T18:00:00Z", error), 1796407200.0);
  EXPECT_EQ(parse_start_at("2026-12-04T18:00:00.25Z", error), 1796407200.25);
  for (const char* bad : {"", "soon", "2026-12-04 18:00:00", "2026-12-04T18:00:00+01:00",
                          "2026-13-04T18:00:00Z", "-5", "inf"}) {
    EXPECT_FALSE(parse_start_at(bad, error)) << bad;
    EXPECT_NE(error.find("--start-at"), std::string::npos);
  }
}

TEST(Fleet, TheClockCheckRefusesAnUnsynchronisedOrImpreciseClock) {
  EXPECT_FALSE(check_clock({true, 2.0}, 10.0));
  const auto unsynced = check_clock({false, 2.0}, 10.0);
  ASSERT_TRUE(unsynced);
  EXPECT_NE(unsynced->find("not synchronised"), std::string::npos);
  const auto loose = check_clock({true, 16.5}, 10.0);
  ASSERT_TRUE(loose);
  EXPECT_NE(loose->find("16.500 ms"), std::string::npos);
}

TEST(Fleet, AStartTimeLongPastIsRefused) {
  std::string error;
  EXPECT_EQ(sleep_until_wall_clock(1'000'000'000.0, 0.01, error), -1);
  EXPECT_NE(error.find("passed"), std::string::npos);
}

TEST(Fleet, OptionsCarryTheShareAndTheTestIdentityLeavesItOut) {
  const char* argv[] = {"weft-load", "--rate", "10", "--num-conns", "20", "--client", "1/3"};
  const auto parsed = parse_options(7, argv);
  ASSERT_TRUE(parsed.options) << parsed.output;
  EXPECT_EQ(parsed.options->client, (ClientShare{1, 3}));
  EXPECT_NE(httperf_command_line(*parsed.options).find("--client=1/3"), std::string::npos);
  EXPECT_NE(test_identity(*parsed.options).find("--client=0/1"), std::string::npos);

  const char* sequential[] = {"weft-load", "--num-conns", "20", "--client", "1/3"};
  const auto refused = parse_options(5, sequential);
  EXPECT_FALSE(refused.options);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.output.find("--client splits a timed schedule"), std::string::npos);
}

}  // namespace
}  // namespace weft::load
