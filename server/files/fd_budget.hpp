// FdBudget: how the descriptor limit (RLIMIT_NOFILE) is shared out, for every generation (at
// start and at each reload, with that configuration's limits).
//
// Every connection needs its socket (and a pipe pair while it splices), listeners, rings,
// logs and the like need a reserve (limits.fd_reserve, plus the listeners and four per
// processor), and the fd cache holds one descriptor per entry. When they do not all fit, the
// cache gives way, down to kMinCacheEntries, so that the server can still take
// limits.max_connections clients; the operator is told (see describe()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/core/config.hpp"

namespace weft::http {

struct FdBudget {
  static constexpr std::size_t kMinCacheEntries = 16;

  uint64_t limit = 0;             // RLIMIT_NOFILE in force
  std::size_t connections = 0;    // descriptors the connections may need
  std::size_t reserve = 0;        // for everything else
  std::size_t cache_wanted = 0;   // fd_cache.max_entries
  std::size_t cache_entries = 0;  // what the cache gets
  bool lowered() const { return cache_entries < cache_wanted; }

  /// Returns one line for the error log: the sum, and what to change when the cache was lowered.
  std::string describe() const;
};

/// Sizes the limits that `config` left unset (max_connections_auto, fd_cache_max_entries_auto)
/// to what `limit` descriptors hold after the reserve, at most the built-in 10,000 each:
/// two thirds of the room for connections and the rest for the cache when both are unset,
/// else what the explicit one leaves (connections keep at least half). So a default start
/// fits its limit and logs no warning; explicit values are left for plan_fd_budget to check.
void size_from_fd_limit(Config& config, uint64_t limit, std::size_t listeners, unsigned processors);

/// Shares `limit` descriptors between `config`'s connections and fd cache, keeping a reserve
/// for `listeners` listening sockets on `processors` processors.
FdBudget plan_fd_budget(const Config& config, uint64_t limit, std::size_t listeners,
                        unsigned processors);

}  // namespace weft::http
