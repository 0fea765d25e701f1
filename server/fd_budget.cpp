#include "server/fd_budget.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace weft::http {

FdBudget plan_fd_budget(const Config& config, uint64_t limit, std::size_t listeners,
                        unsigned processors) {
  FdBudget b;
  b.limit = limit;
  std::size_t per_connection = config.body == BodyPath::splice ? 3 : 1;  // socket (+ pipe pair)
  b.connections = std::size_t{config.max_connections} * per_connection;
  b.reserve = config.fd_reserve + listeners + 4 * std::size_t{processors};
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
