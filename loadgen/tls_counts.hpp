// weft::load TlsCounts: what a run's TLS handshakes came to (--tls), for the reports.
#pragma once

#include <cstdint>

namespace weft::load {

/// Handshakes made in a run, how many of them offered a kept session (--tls-resume), and how
/// many resumed one.
struct TlsCounts {
  std::uint64_t handshakes = 0;
  std::uint64_t offered = 0;
  std::uint64_t resumed = 0;
};

}  // namespace weft::load
