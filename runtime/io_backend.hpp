// IoBackendKind: which I/O driver the runtime's processors use. One enum for the runtime, the
// server's config (io.backend) and the load generator (--backend).
#pragma once

#include <cstdint>

namespace weft::rt {

enum class IoBackendKind : std::uint8_t {
  automatic,  // io_uring, or epoll when io_uring is unavailable (a seccomp profile, an old kernel)
  io_uring,   // io_uring or fail
  epoll,
};

}  // namespace weft::rt
