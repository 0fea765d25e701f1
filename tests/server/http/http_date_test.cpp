// Tests server/http/http_date.cpp: formatting, the three parse forms, invalid dates, and the Date
// cache's refresh rule with an injected clock (and many readers, for TSan).
#include "server/http/http_date.hpp"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

constexpr std::int64_t kRfcExample = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
constexpr std::int64_t kNow = 1'700'000'000;     // Tue, 14 Nov 2023 22:13:20 GMT

std::string format(std::int64_t t) {
  HttpDateBuffer buf;
  return std::string(format_http_date(t, buf));
}

TEST(HttpDate, FormatsImfFixdate) {
  EXPECT_EQ(format(kRfcExample), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(format(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(format(kNow), "Tue, 14 Nov 2023 22:13:20 GMT");
  EXPECT_EQ(format(951782400), "Tue, 29 Feb 2000 00:00:00 GMT");
  EXPECT_EQ(format(-1), "Wed, 31 Dec 1969 23:59:59 GMT");
  EXPECT_EQ(format(253402300799), "Fri, 31 Dec 9999 23:59:59 GMT");
  EXPECT_EQ(format(253402300800), "Fri, 31 Dec 9999 23:59:59 GMT");  // clamped
  EXPECT_EQ(format(INT64_MIN), "Sat, 01 Jan 0000 00:00:00 GMT");     // clamped
}

TEST(HttpDate, RoundTrips) {
  for (std::int64_t t : {std::int64_t{0}, kRfcExample, kNow, std::int64_t{951782400},
                         std::int64_t{4102444799}, std::int64_t{-86400}}) {
    EXPECT_EQ(parse_http_date(format(t), kNow), t) << t;
  }
  // Every day of a leap year and a non-leap year, at a few times of day.
  for (std::int64_t day = 0; day < 2 * 366; ++day) {
    const std::int64_t t = 946684800 + day * 86400 + (day * 7919) % 86400;  // from 2000-01-01
    ASSERT_EQ(parse_http_date(format(t), kNow), t) << format(t);
  }
}

TEST(HttpDate, ParsesTheThreeForms) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", kNow), kRfcExample);
  EXPECT_EQ(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", kNow), kRfcExample);
  EXPECT_EQ(parse_http_date("Sun Nov  6 08:49:37 1994", kNow), kRfcExample);
  EXPECT_EQ(parse_http_date("Thu Nov 16 08:49:37 1994", kNow), kRfcExample + 10 * 86400);
}

TEST(HttpDate, Rfc850TwoDigitYearsFollowTheFiftyYearRule) {
  // Relative to 2023: up to 2073 is ahead, later means the previous century.
  EXPECT_EQ(format(*parse_http_date("Sunday, 01-Jan-73 00:00:00 GMT", kNow)),
            "Sun, 01 Jan 2073 00:00:00 GMT");
  EXPECT_EQ(format(*parse_http_date("Tuesday, 01-Jan-74 00:00:00 GMT", kNow)),
            "Tue, 01 Jan 1974 00:00:00 GMT");
  EXPECT_EQ(format(*parse_http_date("Friday, 01-Jan-99 00:00:00 GMT", kNow)),
            "Fri, 01 Jan 1999 00:00:00 GMT");
  EXPECT_EQ(format(*parse_http_date("Saturday, 01-Jan-00 00:00:00 GMT", kNow)),
            "Sat, 01 Jan 2000 00:00:00 GMT");
}

TEST(HttpDate, DayNamesAreSpellingOnly) {
  // The day name is checked against the list, not against the date (a wrong one is harmless).
  EXPECT_EQ(parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT", kNow), kRfcExample);
}

TEST(HttpDate, AcceptsLeapSecondAndLeapDay) {
  EXPECT_TRUE(parse_http_date("Sat, 31 Dec 2016 23:59:60 GMT", kNow));
  EXPECT_TRUE(parse_http_date("Tue, 29 Feb 2000 00:00:00 GMT", kNow));
  EXPECT_TRUE(parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT", kNow));
}

TEST(HttpDate, RejectsInvalidForms) {
  const char* bad[] = {
      "",
      "Sun",
      "Sun, 06 Nov 1994 08:49:37",         // no zone
      "Sun, 06 Nov 1994 08:49:37 UTC",     // wrong zone
      "Sun, 06 Nov 1994 08:49:37 gmt",     // case-sensitive
      "sun, 06 Nov 1994 08:49:37 GMT",     // case-sensitive day
      "Sun, 06 nov 1994 08:49:37 GMT",     // case-sensitive month
      "Sun, 6 Nov 1994 08:49:37 GMT",      // one-digit day
      "Sun, 06 Nov 94 08:49:37 GMT",       // two-digit year in IMF
      "Sun, 06 Nov 1994 8:49:37 GMT",      // one-digit hour
      "Sun, 06 Nov 1994 08:49:37 GMT ",    // trailing space
      " Sun, 06 Nov 1994 08:49:37 GMT",    // leading space
      "Sun,  06 Nov 1994 08:49:37 GMT",    // double space
      "Sun, 06 Nov 1994 08-49-37 GMT",     // time separators
      "Sun, 32 Jan 1994 08:49:37 GMT",     // day 32
      "Sun, 00 Jan 1994 08:49:37 GMT",     // day 0
      "Sun, 29 Feb 1900 08:49:37 GMT",     // not a leap year
      "Sun, 31 Apr 1994 08:49:37 GMT",     // April has 30 days
      "Sun, 06 Nov 1994 24:00:00 GMT",     // hour 24
      "Sun, 06 Nov 1994 08:60:00 GMT",     // minute 60
      "Sun, 06 Nov 1994 08:49:61 GMT",     // second 61
      "Sun, 06 Foo 1994 08:49:37 GMT",     // month
      "Xyz, 06 Nov 1994 08:49:37 GMT",     // day name
      "Sunday, 06 Nov 1994 08:49:37 GMT",  // long day name in IMF
      "Sun, 06-Nov-94 08:49:37 GMT",       // short day name in RFC 850
      "Sunday, 06-Nov-1994 08:49:37 GMT",  // four-digit year in RFC 850
      "Sunday, 6-Nov-94 08:49:37 GMT",
      "Sun Nov 6 08:49:37 1994",  // asctime needs two characters of day
      "Sun Nov 06 08:49:37 1994x",
      "Sun Nov  6 08:49:37 94",
      "1994-11-06T08:49:37Z",  // ISO 8601
      "784111777",
  };
  for (const char* s : bad) EXPECT_FALSE(parse_http_date(s, kNow)) << s;
}

// A clock the test moves by hand.
struct FakeClock {
  std::atomic<std::int64_t> now{kNow};
  DateCache::Clock clock() {
    return [this] { return now.load(); };
  }
};

std::string get(DateCache& cache) {
  HttpDateBuffer buf;
  return std::string(cache.get(buf));
}

TEST(DateCache, FormatsAtConstructionAndOncePerSecond) {
  FakeClock fake;
  DateCache cache(fake.clock());
  EXPECT_EQ(cache.refreshes(), 1u);
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 22:13:20 GMT");
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 22:13:20 GMT");
  EXPECT_EQ(cache.refreshes(), 1u);  // same second: no formatting

  fake.now = kNow + 1;
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 22:13:21 GMT");
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 22:13:21 GMT");
  EXPECT_EQ(cache.refreshes(), 2u);

  fake.now = kNow + 3600;
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 23:13:20 GMT");
  EXPECT_EQ(cache.refreshes(), 3u);
}

TEST(DateCache, ALateReaderDoesNotMoveTheValueBack) {
  FakeClock fake;
  DateCache cache(fake.clock());
  fake.now = kNow + 1;
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 22:13:21 GMT");
  fake.now = kNow;  // a thread that read the clock just before the second turned
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 22:13:21 GMT");
  EXPECT_EQ(cache.refreshes(), 2u);
  fake.now = kNow - 60;  // the clock was stepped back: follow it
  EXPECT_EQ(get(cache), "Tue, 14 Nov 2023 22:12:20 GMT");
  EXPECT_EQ(cache.refreshes(), 3u);
}

TEST(DateCache, SystemClockGivesAPlausibleDate) {
  DateCache cache;
  HttpDateBuffer buf;
  const std::string_view v = cache.get(buf);
  ASSERT_EQ(v.size(), kHttpDateLength);
  const auto t = parse_http_date(v, DateCache::system_seconds());
  ASSERT_TRUE(t);
  EXPECT_LE(*t, DateCache::system_seconds());
  EXPECT_GT(*t, kNow);
}

TEST(DateCache, ManyReadersSeeWholeValuesWhileTheClockMoves) {
  FakeClock fake;
  DateCache cache(fake.clock());
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      HttpDateBuffer buf;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string_view v = cache.get(buf);
        const auto t = parse_http_date(v, kNow);
        if (!t || *t < kNow || *t > kNow + 100'000) torn.fetch_add(1);
      }
    });
  }
  for (int step = 1; step <= 2000; ++step) {
    fake.now = kNow + step;
    HttpDateBuffer buf;
    cache.get(buf);
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(get(cache), format(kNow + 2000));
}

}  // namespace
}  // namespace weft::http
