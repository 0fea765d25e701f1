// HTTP-date formatting and parsing (RFC 9110 §5.6.7) and the Date header cache.
#include "server/http/http_date.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>

#include "server/core/ascii.hpp"

namespace weft::http {
namespace {

constexpr std::int64_t kSecondsPerDay = 86'400;

constexpr std::array<std::string_view, 7> kDayNames = {"Sun", "Mon", "Tue", "Wed",
                                                       "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 7> kLongDayNames = {
    "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr std::array<std::string_view, 12> kMonthNames = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146'097 + static_cast<std::int64_t>(doe) - 719'468;
}

struct Civil {
  std::int64_t year;
  unsigned month;  // 1-12
  unsigned day;    // 1-31
};

// The date of a day number (Howard Hinnant's civil_from_days).
constexpr Civil civil_from_days(std::int64_t z) {
  z += 719'468;
  const std::int64_t era = (z >= 0 ? z : z - 146'096) / 146'097;
  const auto doe = static_cast<unsigned>(z - era * 146'097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

constexpr bool is_leap(std::int64_t y) {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

constexpr unsigned days_in_month(std::int64_t y, unsigned m) {
  constexpr std::array<unsigned, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

constexpr std::int64_t kMinTime = days_from_civil(0, 1, 1) * kSecondsPerDay;
constexpr std::int64_t kMaxTime = days_from_civil(9999, 12, 31) * kSecondsPerDay + 86'399;

static_assert(days_from_civil(1970, 1, 1) == 0);

// Whether the cached second must be replaced by `now`. A thread that read the clock just
// before another thread's refresh may arrive with the previous second; it must not move the
// value back. A clock stepped back by two seconds or more (NTP) does.
constexpr bool is_stale(std::int64_t cached, std::int64_t now) {
  return now > cached || now < cached - 1;
}
static_assert(civil_from_days(days_from_civil(2000, 2, 29)).day == 29);

void put2(char* p, unsigned v) {
  p[0] = static_cast<char>('0' + v / 10);
  p[1] = static_cast<char>('0' + v % 10);
}

// A cursor over the date text; every take_* returns false (and the parse fails) on mismatch.
class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  bool done() const { return s_.empty(); }

  bool take(std::string_view lit) {
    if (s_.substr(0, lit.size()) != lit) return false;
    s_.remove_prefix(lit.size());
    return true;
  }

  // Takes exactly `n` digits.
  bool take_digits(std::size_t n, unsigned& out) {
    if (s_.size() < n) return false;
    unsigned v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (!ascii::is_digit(s_[i])) return false;
      v = v * 10 + static_cast<unsigned>(s_[i] - '0');
    }
    s_.remove_prefix(n);
    out = v;
    return true;
  }

  // Takes one of `names` (case-sensitive, as RFC 9110 says); returns its index or -1.
  template <std::size_t N>
  int take_name(const std::array<std::string_view, N>& names) {
    for (std::size_t i = 0; i < N; ++i) {
      if (take(names[i])) return static_cast<int>(i);
    }
    return -1;
  }

  // Takes "HH:MM:SS".
  bool take_time(unsigned& h, unsigned& m, unsigned& sec) {
    return take_digits(2, h) && take(":") && take_digits(2, m) && take(":") && take_digits(2, sec);
  }

 private:
  std::string_view s_;
};

std::optional<std::int64_t> to_unix(std::int64_t year, int month0, unsigned day, unsigned h,
                                    unsigned m, unsigned s) {
  if (month0 < 0) return std::nullopt;
  const auto month = static_cast<unsigned>(month0 + 1);
  // Second 60 is a leap second, which the grammar allows.
  if (day < 1 || day > days_in_month(year, month) || h > 23 || m > 59 || s > 60) {
    return std::nullopt;
  }
  return days_from_civil(year, month, day) * kSecondsPerDay + h * 3600 + m * 60 + s;
}

// "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<std::int64_t> parse_imf_fixdate(std::string_view text) {
  Scanner sc(text);
  unsigned day = 0, year = 0, h = 0, m = 0, s = 0;
  if (sc.take_name(kDayNames) < 0 || !sc.take(", ") || !sc.take_digits(2, day) || !sc.take(" "))
    return std::nullopt;
  const int month = sc.take_name(kMonthNames);
  if (month < 0 || !sc.take(" ") || !sc.take_digits(4, year) || !sc.take(" ") ||
      !sc.take_time(h, m, s) || !sc.take(" GMT") || !sc.done()) {
    return std::nullopt;
  }
  return to_unix(year, month, day, h, m, s);
}

// "Sunday, 06-Nov-94 08:49:37 GMT"
std::optional<std::int64_t> parse_rfc850(std::string_view text, std::int64_t now) {
  Scanner sc(text);
  unsigned day = 0, yy = 0, h = 0, m = 0, s = 0;
  if (sc.take_name(kLongDayNames) < 0 || !sc.take(", ") || !sc.take_digits(2, day) || !sc.take("-"))
    return std::nullopt;
  const int month = sc.take_name(kMonthNames);
  if (month < 0 || !sc.take("-") || !sc.take_digits(2, yy) || !sc.take(" ") ||
      !sc.take_time(h, m, s) || !sc.take(" GMT") || !sc.done()) {
    return std::nullopt;
  }
  // RFC 9110 §5.6.7: a two-digit year that would be more than 50 years in the future is the
  // most recent past year with the same last two digits.
  const std::int64_t now_year = civil_from_days(now / kSecondsPerDay).year;
  std::int64_t year = now_year - now_year % 100 + yy;
  if (year > now_year + 50) year -= 100;
  return to_unix(year, month, day, h, m, s);
}

// "Sun Nov  6 08:49:37 1994"
std::optional<std::int64_t> parse_asctime(std::string_view text) {
  Scanner sc(text);
  unsigned day = 0, year = 0, h = 0, m = 0, s = 0;
  if (sc.take_name(kDayNames) < 0 || !sc.take(" ")) return std::nullopt;
  const int month = sc.take_name(kMonthNames);
  if (month < 0 || !sc.take(" ")) return std::nullopt;
  if (!(sc.take(" ") ? sc.take_digits(1, day) : sc.take_digits(2, day))) return std::nullopt;
  if (!sc.take(" ") || !sc.take_time(h, m, s) || !sc.take(" ") || !sc.take_digits(4, year) ||
      !sc.done()) {
    return std::nullopt;
  }
  return to_unix(year, month, day, h, m, s);
}

}  // namespace

std::string_view format_http_date(std::int64_t unix_seconds, HttpDateBuffer& out) {
  const std::int64_t t = std::clamp(unix_seconds, kMinTime, kMaxTime);
  // Floor division, so that times before 1970 land on the right day.
  std::int64_t days = t / kSecondsPerDay;
  std::int64_t secs = t % kSecondsPerDay;
  if (secs < 0) {
    secs += kSecondsPerDay;
    days -= 1;
  }
  const Civil c = civil_from_days(days);
  const auto weekday = static_cast<std::size_t>(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
  const auto year = static_cast<unsigned>(c.year);
  const auto sod = static_cast<unsigned>(secs);

  char* p = out.data();
  std::memcpy(p, kDayNames[weekday].data(), 3);
  std::memcpy(p + 3, ", ", 2);
  put2(p + 5, c.day);
  p[7] = ' ';
  std::memcpy(p + 8, kMonthNames[c.month - 1].data(), 3);
  p[11] = ' ';
  put2(p + 12, year / 100);
  put2(p + 14, year % 100);
  p[16] = ' ';
  put2(p + 17, sod / 3600);
  p[19] = ':';
  put2(p + 20, sod / 60 % 60);
  p[22] = ':';
  put2(p + 23, sod % 60);
  std::memcpy(p + 25, " GMT", 4);
  return {out.data(), out.size()};
}

std::optional<std::int64_t> parse_http_date(std::string_view text, std::int64_t now) {
  if (text.size() < 4) return std::nullopt;
  // The forms differ at the fourth byte: "Sun," (IMF), "Sun " (asctime), "Sund" (RFC 850).
  if (text[3] == ',') return parse_imf_fixdate(text);
  if (text[3] == ' ') return parse_asctime(text);
  return parse_rfc850(text, now);
}

std::int64_t DateCache::system_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return ts.tv_sec;
}

DateCache::DateCache(Clock clock) : clock_(std::move(clock)) {
  refresh(clock_());
}

std::string_view DateCache::get(HttpDateBuffer& out) {
  const std::int64_t now = clock_();
  if (is_stale(text_.second(), now)) refresh(now);
  SecondText<kHttpDateLength>::Buffer copy;
  std::int64_t second = 0;
  while (!text_.read(copy, second)) {
    // A writer is mid-update: a few stores, so spin.
  }
  std::memcpy(out.data(), copy.data(), kHttpDateLength);
  return {out.data(), out.size()};
}

std::uint64_t DateCache::refreshes() const {
  return text_.publications();
}

void DateCache::refresh(std::int64_t now) {
  // A thread that loses the race to publish keeps reading the previous second's value,
  // which is at most a second stale.
  HttpDateBuffer text;
  format_http_date(now, text);
  text_.publish(now, text.data(), [now](std::int64_t cached) { return is_stale(cached, now); });
}

}  // namespace weft::http
