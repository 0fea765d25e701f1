#include "server/files/fd_budget.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace weft::http {

namespace {

// Descriptors one connection may hold: its socket, and a pipe pair while it splices.
std::size_t per_connection(const Config& config) {
  return config.body == BodyPath::splice ? 3 : 1;
}

std::size_t reserve_for(const Config& config, std::size_t listeners, unsigned processors) {
  return config.fd_reserve + listeners + 4 * std::size_t{processors};
}

// The built-in values of the two sized limits (conf/weft.toml documents them).
constexpr std::size_t kDefaultConnections = 10000;
constexpr std::size_t kDefaultCacheEntries = 10000;

}  // namespace

void size_from_fd_limit(Config& config, uint64_t limit, std::size_t listeners,
                        unsigned processors) {
  const std::size_t reserve = reserve_for(config, listeners, processors);
  const std::size_t room = limit > reserve ? static_cast<std::size_t>(limit - reserve) : 0;
  const std::size_t per = per_connection(config);
  if (config.max_connections_auto) {
    std::size_t share =
        config.fd_cache_max_entries_auto
            ? room * 2 / 3
            : std::max(room / 2, room - std::min<std::size_t>(room, config.fd_cache_max_entries));
    config.max_connections =
        static_cast<unsigned>(std::clamp<std::size_t>(share / per, 1, kDefaultConnections));
  }
  if (config.fd_cache_max_entries_auto) {
    const std::size_t used = std::size_t{config.max_connections} * per;
    const std::size_t left = room > used ? room - used : 0;
    config.fd_cache_max_entries = static_cast<unsigned>(
        std::clamp<std::size_t>(left, FdBudget::kMinCacheEntries, kDefaultCacheEntries));
  }
}

FdBudget plan_fd_budget(const Config& config, uint64_t limit, std::size_t listeners,
                        unsigned processors) {
  FdBudget b;
  b.limit = limit;
  b.connections = std::size_t{config.max_connections} * per_connection(config);
  b.reserve = reserve_for(config, listeners, processors);
  b.cache_wanted = config.fd_cache_max_entries;
  b.cache_entries = b.cache_wanted;
  if (b.connections + b.reserve + b.cache_wanted > limit) {
    uint64_t fixed = b.connections + b.reserve;
    std::size_t room = limit > fixed ? static_cast<std::size_t>(limit - fixed) : 0;
    b.cache_entries = std::max(std::min(room, b.cache_wanted),
                               std::min(FdBudget::kMinCacheEntries, b.cache_wanted));
  }
  return b;
}

std::string FdBudget::describe() const {
  if (!lowered()) {
    return fmt::format("fd budget: limit {} >= connections {} + fd cache {} + reserve {}", limit,
                       connections, cache_entries, reserve);
  }
  return fmt::format(
      "fd budget: limit {} < connections {} + cache {} + reserve {}; fd cache lowered to {} "
      "entries (raise the hard RLIMIT_NOFILE or lower limits.max_connections)",
      limit, connections, cache_wanted, reserve, cache_entries);
}

}  // namespace weft::http
