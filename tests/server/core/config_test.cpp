// Tests server/core/config.cpp: the value parsers (durations, sizes, listen addresses).
#include "server/core/config.hpp"

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(ParseDuration, Table) {
  EXPECT_EQ(parse_duration("10s"), Millis{10'000});
  EXPECT_EQ(parse_duration("1.5s"), Millis{1'500});
  EXPECT_EQ(parse_duration("250ms"), Millis{250});
  EXPECT_EQ(parse_duration("2m"), Millis{120'000});
  EXPECT_EQ(parse_duration("1h"), Millis{3'600'000});
  EXPECT_EQ(parse_duration("3"), Millis{3'000});
  EXPECT_EQ(parse_duration(""), std::nullopt);
  EXPECT_EQ(parse_duration("s"), std::nullopt);
  EXPECT_EQ(parse_duration("-1s"), std::nullopt);
  EXPECT_EQ(parse_duration("5 s"), std::nullopt);
  EXPECT_EQ(parse_duration("5d"), std::nullopt);
  EXPECT_EQ(parse_duration("1500us"), Millis{2});  // rounded to the key's millisecond
}

TEST(ParseDuration, Microseconds) {
  EXPECT_EQ(parse_duration_us("100us"), Micros{100});
  EXPECT_EQ(parse_duration_us("0.25ms"), Micros{250});
  EXPECT_EQ(parse_duration_us("2s"), Micros{2'000'000});
  EXPECT_EQ(parse_duration_us("us"), std::nullopt);
  EXPECT_EQ(parse_duration_us("-5us"), std::nullopt);
}

TEST(ParseSize, Table) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("64k"), 65536u);
  EXPECT_EQ(parse_size("16M"), 16u << 20);
  EXPECT_EQ(parse_size("1g"), std::size_t{1} << 30);
  EXPECT_EQ(parse_size("k"), std::nullopt);
  EXPECT_EQ(parse_size("12q"), std::nullopt);
  EXPECT_EQ(parse_size("99999999999999999999g"), std::nullopt);
}

TEST(ParseListenAddress, Table) {
  EXPECT_EQ(parse_listen_address("127.0.0.1:8080")->to_string(), "127.0.0.1:8080");
  EXPECT_EQ(parse_listen_address("[::1]:8080")->to_string(), "[::1]:8080");
  EXPECT_EQ(parse_listen_address("[::]:80")->to_string(), "[::]:80");
  EXPECT_EQ(parse_listen_address("*:80")->to_string(), "0.0.0.0:80");
  EXPECT_EQ(parse_listen_address("localhost:81")->to_string(), "127.0.0.1:81");
  EXPECT_EQ(parse_listen_address("8080")->to_string(), "0.0.0.0:8080");
  EXPECT_FALSE(parse_listen_address("127.0.0.1"));
  EXPECT_FALSE(parse_listen_address("127.0.0.1:0"));
  EXPECT_FALSE(parse_listen_address("127.0.0.1:65536"));
  EXPECT_FALSE(parse_listen_address("1.2.3:80"));
  EXPECT_FALSE(parse_listen_address("[::1]8080"));
  EXPECT_FALSE(parse_listen_address("[::1:8080"));
  EXPECT_FALSE(parse_listen_address("example.com:80"));
  EXPECT_FALSE(parse_listen_address("127.0.0.1:80x"));
}

}  // namespace
}  // namespace weft::http
