// Tests loadgen/errors.hpp: httperf's names, the errno table, status classes, counts.
#include "loadgen/errors.hpp"

#include <cerrno>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace weft::load {
namespace {

TEST(Errors, NamesAreHttperfsAndUnique) {
  const char* expected[] = {"client-timo", "socket-timo", "connrefused", "connreset",
                            "fd-unavail",  "addrunavail", "ftab-full",   "other",
                            "http-4xx",    "http-5xx",    "bad-length"};
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < kErrorClassCount; ++i) {
    const auto c = static_cast<ErrorClass>(i);
    EXPECT_EQ(error_class_name(c), expected[i]);
    EXPECT_EQ(error_class_from_name(expected[i]), c);
    seen.insert(error_class_name(c));
  }
  EXPECT_EQ(seen.size(), kErrorClassCount);
  EXPECT_FALSE(error_class_from_name("timeout"));
}

TEST(Errors, ErrnoTable) {
  struct Row {
    int err;
    ErrorClass want;
  };
  const Row rows[] = {
      {EMFILE, ErrorClass::kFdUnavail},
      {ENFILE, ErrorClass::kFtabFull},
      {ECONNREFUSED, ErrorClass::kConnRefused},
      {ETIMEDOUT, ErrorClass::kSocketTimo},
      {ECONNRESET, ErrorClass::kConnReset},
      {EPIPE, ErrorClass::kConnReset},
      {ECONNABORTED, ErrorClass::kConnReset},
      {EADDRNOTAVAIL, ErrorClass::kAddrUnavail},
      {ETIME, ErrorClass::kClientTimo},
      {ECANCELED, ErrorClass::kClientTimo},
      {EINVAL, ErrorClass::kOther},
      {ENETUNREACH, ErrorClass::kOther},
      {EHOSTUNREACH, ErrorClass::kOther},
      {0, ErrorClass::kOther},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(error_class_from_errno(r.err), r.want) << "errno " << r.err;
  }
}

TEST(Errors, StatusClasses) {
  EXPECT_EQ(error_class_from_status(400), ErrorClass::kHttp4xx);
  EXPECT_EQ(error_class_from_status(404), ErrorClass::kHttp4xx);
  EXPECT_EQ(error_class_from_status(499), ErrorClass::kHttp4xx);
  EXPECT_EQ(error_class_from_status(500), ErrorClass::kHttp5xx);
  EXPECT_EQ(error_class_from_status(503), ErrorClass::kHttp5xx);
  EXPECT_FALSE(error_class_from_status(200));
  EXPECT_FALSE(error_class_from_status(304));
  EXPECT_FALSE(error_class_from_status(399));
  EXPECT_FALSE(error_class_from_status(600));
}

TEST(Errors, CountsTotalsAndMerge) {
  ErrorCounts a;
  a.add(ErrorClass::kConnReset, 3);
  a.add(ErrorClass::kHttp5xx, 2);
  a.add(ErrorClass::kOther);
  EXPECT_EQ(a.httperf_total(), 4u);  // the extra classes are not httperf's
  EXPECT_EQ(a.total(), 6u);
  ErrorCounts b;
  b.add(ErrorClass::kConnReset);
  b.add(ErrorClass::kBadLength, 5);
  a.merge(b);
  EXPECT_EQ(a[ErrorClass::kConnReset], 4u);
  EXPECT_EQ(a[ErrorClass::kBadLength], 5u);
  EXPECT_EQ(a.total(), 12u);
}

}  // namespace
}  // namespace weft::load
