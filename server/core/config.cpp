// The value parsers of weft::http::Config: listen addresses, durations and sizes, shared by
// the configuration file's parser (config_file.cpp) and the command line (cli.cpp).
#include "server/core/config.hpp"

#include <charconv>
#include <cstdint>

#include <arpa/inet.h>
#include <fmt/core.h>

namespace weft::http {

std::string ListenAddress::to_string() const {
  return ipv6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::optional<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress a;
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    a.ipv6 = true;
  } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return std::nullopt;  // v6 needs brackets
  } else {
    host = "*";
    port = text;
  }
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc{} || end != port.data() + port.size() || p == 0 || p > 65535) {
    return std::nullopt;
  }
  a.port = static_cast<uint16_t>(p);
  if (host == "*" || host.empty()) {
    a.host = a.ipv6 ? "::" : "0.0.0.0";
    return a;
  }
  if (host == "localhost") host = "127.0.0.1";
  std::string h{host};
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(a.ipv6 ? AF_INET6 : AF_INET, h.c_str(), buf) != 1) return std::nullopt;
  a.host = std::move(h);
  return a;
}

std::optional<Micros> parse_duration_us(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || value < 0) return std::nullopt;
  std::string_view unit{end, static_cast<std::size_t>(text.data() + text.size() - end)};
  double us;
  if (unit == "us") {
    us = value;
  } else if (unit == "ms") {
    us = value * 1e3;
  } else if (unit == "s" || unit.empty()) {
    us = value * 1e6;
  } else if (unit == "m") {
    us = value * 60e6;
  } else if (unit == "h") {
    us = value * 3600e6;
  } else {
    return std::nullopt;
  }
  if (us > 1e18) return std::nullopt;
  return Micros{static_cast<int64_t>(us + 0.5)};
}

std::optional<Millis> parse_duration(std::string_view text) {
  auto us = parse_duration_us(text);
  if (!us) return std::nullopt;
  return std::chrono::round<Millis>(*us);
}

std::optional<std::size_t> parse_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{}) return std::nullopt;
  std::string_view unit{end, static_cast<std::size_t>(text.data() + text.size() - end)};
  unsigned shift = 0;
  if (unit.empty() || unit == "b" || unit == "B") {
    shift = 0;
  } else if (unit == "k" || unit == "K" || unit == "KiB") {
    shift = 10;
  } else if (unit == "m" || unit == "M" || unit == "MiB") {
    shift = 20;
  } else if (unit == "g" || unit == "G" || unit == "GiB") {
    shift = 30;
  } else {
    return std::nullopt;
  }
  if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
  return static_cast<std::size_t>(value << shift);
}

}  // namespace weft::http
