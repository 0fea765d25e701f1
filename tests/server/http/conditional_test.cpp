// Tests server/http/conditional.cpp: ETags, a table of preconditions in RFC 9110 §13.2.2 order,
// and If-Range.
#include "server/http/conditional.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/http/http_date.hpp"

namespace weft::http {
namespace {

constexpr std::int64_t kMtime = 784111777;  // Sun, 06 Nov 1994 08:49:37 GMT
constexpr std::int64_t kNow = 1'700'000'000;
constexpr const char* kMtimeText = "Sun, 06 Nov 1994 08:49:37 GMT";
constexpr const char* kBefore = "Sun, 06 Nov 1994 08:49:36 GMT";
constexpr const char* kAfter = "Sun, 06 Nov 1994 08:49:38 GMT";
constexpr const char* kFuture = "Fri, 31 Dec 9999 23:59:59 GMT";
constexpr const char* kTag = "\"2ebc98a1-400\"";  // make_etag(kMtime, 0, 1024)

TEST(ETag, MadeLikeNginx) {
  EXPECT_EQ(make_etag(kMtime, 0, 1024).view(), kTag);
  // Two versions of one second, of one size, get different tags.
  EXPECT_EQ(make_etag(kMtime, 500'000'000, 1024).view(), "\"2ebc98a1.1dcd6500-400\"");
  EXPECT_NE(make_etag(kMtime, 1, 1024).view(), make_etag(kMtime, 2, 1024).view());
  EXPECT_EQ(make_etag(INT64_MAX, 999'999'999, UINT64_MAX).view(),
            "\"7fffffffffffffff.3b9ac9ff-ffffffffffffffff\"");
  EXPECT_EQ(make_etag(0, 0, 0).view(), "\"0-0\"");
  EXPECT_EQ(make_etag(-5, 7, 1).view(), "\"0-1\"");
  EXPECT_EQ(make_etag(INT64_MAX, 0, UINT64_MAX).view(), "\"7fffffffffffffff-ffffffffffffffff\"");
}

// A request's conditional fields, built from header lines it owns.
struct Fields {
  std::vector<std::pair<Field, std::string>> lines;
  std::vector<Header> headers;  // views of `lines`, made by preconditions()

  Fields& add(Field f, std::string value) {
    lines.emplace_back(f, std::move(value));
    return *this;
  }

  // Returns the preconditions, as views into this object.
  Preconditions preconditions() {
    headers.clear();
    for (const auto& [f, v] : lines) headers.push_back({"", v, f});
    Preconditions p;
    p.if_match = FieldLines(headers, Field::if_match);
    p.if_none_match = FieldLines(headers, Field::if_none_match);
    for (const Header& h : headers) {
      if (h.field == Field::if_modified_since) p.if_modified_since = h.value;
      if (h.field == Field::if_unmodified_since) p.if_unmodified_since = h.value;
    }
    return p;
  }
};

struct Case {
  const char* note;
  Fields fields;
  Precondition get;    // for GET (and HEAD)
  Precondition other;  // for another method (PUT, DELETE...)
};

constexpr auto kProceed = Precondition::proceed;
constexpr auto k304 = Precondition::not_modified;
constexpr auto k412 = Precondition::failed;

std::vector<Case> cases() {
  using F = Field;
  return {
      {"no conditions", Fields{}, kProceed, kProceed},

      // If-Match: strong comparison.
      {"If-Match matching", Fields{}.add(F::if_match, kTag), kProceed, kProceed},
      {"If-Match other tag", Fields{}.add(F::if_match, "\"x\""), k412, k412},
      {"If-Match star", Fields{}.add(F::if_match, "*"), kProceed, kProceed},
      {"If-Match list", Fields{}.add(F::if_match, "\"x\", " + std::string(kTag)), kProceed,
       kProceed},
      {"If-Match weak never matches", Fields{}.add(F::if_match, "W/" + std::string(kTag)), k412,
       k412},
      {"If-Match on a second line", Fields{}.add(F::if_match, "\"x\"").add(F::if_match, kTag),
       kProceed, kProceed},
      {"If-Match malformed", Fields{}.add(F::if_match, "garbage"), k412, k412},
      {"If-Match unquoted tag", Fields{}.add(F::if_match, "2ebc98a1-400"), k412, k412},

      // If-Unmodified-Since, only without If-Match.
      {"IUS equal", Fields{}.add(F::if_unmodified_since, kMtimeText), kProceed, kProceed},
      {"IUS later", Fields{}.add(F::if_unmodified_since, kAfter), kProceed, kProceed},
      {"IUS earlier", Fields{}.add(F::if_unmodified_since, kBefore), k412, k412},
      {"IUS invalid is ignored", Fields{}.add(F::if_unmodified_since, "yesterday"), kProceed,
       kProceed},
      {"IUS ignored when If-Match present",
       Fields{}.add(F::if_match, kTag).add(F::if_unmodified_since, kBefore), kProceed, kProceed},

      // If-None-Match: weak comparison; 304 for GET/HEAD, 412 otherwise.
      {"INM matching", Fields{}.add(F::if_none_match, kTag), k304, k412},
      {"INM weak matches weakly", Fields{}.add(F::if_none_match, "W/" + std::string(kTag)), k304,
       k412},
      {"INM other tag", Fields{}.add(F::if_none_match, "\"x\""), kProceed, kProceed},
      {"INM star", Fields{}.add(F::if_none_match, "*"), k304, k412},
      {"INM list", Fields{}.add(F::if_none_match, "\"a\",W/\"b\" , " + std::string(kTag)), k304,
       k412},
      {"INM list with empty elements",
       Fields{}.add(F::if_none_match, " , ,\"x\"," + std::string(kTag)), k304, k412},
      {"INM on a second line", Fields{}.add(F::if_none_match, "\"x\"").add(F::if_none_match, kTag),
       k304, k412},
      {"INM malformed element stops the list",
       Fields{}.add(F::if_none_match, "\"x\", bad, " + std::string(kTag)), kProceed, kProceed},
      {"INM tag prefix does not match", Fields{}.add(F::if_none_match, "\"2ebc98a1-40\""), kProceed,
       kProceed},
      {"INM unterminated quote", Fields{}.add(F::if_none_match, "\"2ebc98a1-400"), kProceed,
       kProceed},

      // If-Modified-Since: GET/HEAD only, only without If-None-Match.
      {"IMS equal", Fields{}.add(F::if_modified_since, kMtimeText), k304, kProceed},
      {"IMS later", Fields{}.add(F::if_modified_since, kAfter), k304, kProceed},
      {"IMS earlier", Fields{}.add(F::if_modified_since, kBefore), kProceed, kProceed},
      {"IMS in the future is invalid", Fields{}.add(F::if_modified_since, kFuture), kProceed,
       kProceed},
      {"IMS invalid", Fields{}.add(F::if_modified_since, "not a date"), kProceed, kProceed},
      {"IMS RFC 850", Fields{}.add(F::if_modified_since, "Sunday, 06-Nov-94 08:49:37 GMT"), k304,
       kProceed},
      {"IMS asctime", Fields{}.add(F::if_modified_since, "Sun Nov  6 08:49:37 1994"), k304,
       kProceed},
      {"IMS ignored when INM present (INM does not match)",
       Fields{}.add(F::if_none_match, "\"x\"").add(F::if_modified_since, kAfter), kProceed,
       kProceed},

      // Order: If-Match failing wins over If-None-Match.
      {"If-Match fails before INM", Fields{}.add(F::if_match, "\"x\"").add(F::if_none_match, kTag),
       k412, k412},
      {"If-Match passes, INM matches", Fields{}.add(F::if_match, kTag).add(F::if_none_match, kTag),
       k304, k412},
      {"IUS fails before IMS",
       Fields{}.add(F::if_unmodified_since, kBefore).add(F::if_modified_since, kAfter), k412, k412},
  };
}

TEST(Preconditions, Table) {
  const Validators v{kTag, kMtime};
  for (Case c : cases()) {
    SCOPED_TRACE(c.note);
    const Preconditions p = c.fields.preconditions();
    EXPECT_EQ(evaluate_preconditions(p, v, Method::get, kNow), c.get) << "GET";
    EXPECT_EQ(evaluate_preconditions(p, v, Method::head, kNow), c.get) << "HEAD";
    EXPECT_EQ(evaluate_preconditions(p, v, Method::other, kNow), c.other) << "other";
  }
}

TEST(Preconditions, WithoutAnETagOnlyStarMatches) {
  const Validators v{"", kMtime};
  EXPECT_EQ(evaluate_preconditions(Fields{}.add(Field::if_match, "*").preconditions(), v,
                                   Method::get, kNow),
            kProceed);
  EXPECT_EQ(evaluate_preconditions(Fields{}.add(Field::if_match, kTag).preconditions(), v,
                                   Method::get, kNow),
            k412);
  EXPECT_EQ(evaluate_preconditions(Fields{}.add(Field::if_none_match, kTag).preconditions(), v,
                                   Method::get, kNow),
            kProceed);
}

TEST(Preconditions, WeakOwnTagMatchesOnlyWeakly) {
  const std::string weak = "W/" + std::string(kTag);
  const Validators v{weak, kMtime};
  EXPECT_EQ(evaluate_preconditions(Fields{}.add(Field::if_match, kTag).preconditions(), v,
                                   Method::get, kNow),
            k412);
  EXPECT_EQ(evaluate_preconditions(Fields{}.add(Field::if_none_match, kTag).preconditions(), v,
                                   Method::get, kNow),
            k304);
}

TEST(Preconditions, OfRequestReadsItsFields) {
  Header headers[] = {
      {"If-Match", "\"a\"", Field::if_match},
      {"If-None-Match", "\"b\"", Field::if_none_match},
  };
  Preconditions p;
  p.if_match = FieldLines(headers, Field::if_match);
  EXPECT_EQ(*p.if_match.begin(), "\"a\"");
  EXPECT_TRUE(Preconditions::of(Request{}).if_match.empty());
  EXPECT_FALSE(Preconditions::of(Request{}).if_modified_since);
}

TEST(IfRange, Table) {
  const Validators v{kTag, kMtime};
  struct Row {
    const char* note;
    std::optional<std::string_view> if_range;
    bool allows;
  };
  const Row rows[] = {
      {"absent", std::nullopt, true},
      {"matching strong tag", kTag, true},
      {"other tag", "\"x\"", false},
      {"weak tag never", "W/\"2ebc98a1-400\"", false},
      {"tag with trailing junk", "\"2ebc98a1-400\"x", false},
      {"exact date", kMtimeText, true},
      {"later date", kAfter, false},
      {"earlier date", kBefore, false},
      {"RFC 850 exact date", "Sunday, 06-Nov-94 08:49:37 GMT", true},
      {"garbage", "yesterday", false},
      {"empty", "", false},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(if_range_allows(r.if_range, v, kNow), r.allows) << r.note;
  }
  EXPECT_FALSE(if_range_allows(kTag, Validators{"W/\"2ebc98a1-400\"", kMtime}, kNow))
      << "a weak validator never satisfies If-Range";
  // A date is a strong validator only when the file was seen after its second ended
  // (RFC 9110 §13.1.5): otherwise an older version of the same second could be resumed.
  const Validators fresh{kTag, kMtime, /*mtime_strong=*/false};
  EXPECT_FALSE(if_range_allows(kMtimeText, fresh, kNow));
  EXPECT_TRUE(if_range_allows(kTag, fresh, kNow)) << "the tag still decides";
}

}  // namespace
}  // namespace weft::http
