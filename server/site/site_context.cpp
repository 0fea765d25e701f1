// Sites: built from the configuration, their roots opened and their fd caches made.
#include "server/site/site_context.hpp"

#include <cerrno>

#include <fcntl.h>
#include <unistd.h>

namespace weft::http {

SiteContext::SiteContext(const Config& config)
    : root(config.root),
      index(config.index),
      directory_listing(config.directory_listing),
      max_listing_entries(config.max_listing_entries),
      max_ranges(config.max_ranges),
      precompressed(config.precompressed),
      pages(config.pages),
      headers(config.headers),
      redirects(config.redirects) {}

SiteContext::SiteContext(const Config& config, const VhostConfig& vhost, uint16_t n)
    : name(vhost.host),
      number(n),
      root(vhost.root),
      index(vhost.index.value_or(config.index)),
      directory_listing(vhost.directory_listing.value_or(config.directory_listing)),
      max_listing_entries(config.max_listing_entries),
      max_ranges(config.max_ranges),
      precompressed(vhost.precompressed.value_or(config.precompressed)),
      pages(vhost.pages),
      headers(vhost.headers),
      redirects(vhost.redirects) {}

SiteContext::~SiteContext() {
  files.reset();
  if (root_fd >= 0) ::close(root_fd);
}

int SiteContext::open(const Config& config, const MimeMap& mime, Metrics* metrics,
                      std::size_t max_entries, std::shared_ptr<std::atomic<uint64_t>> bytes) {
  root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return -errno;
  files = std::make_unique<FdCache>(config, root_fd, mime, metrics, max_entries, std::move(bytes));
  return 0;
}

}  // namespace weft::http
