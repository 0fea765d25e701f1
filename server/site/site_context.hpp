// weft::http::SiteContext: one site the server answers for: the default site ([server]) or a
// virtual host ([[vhosts]]), with its document root, its fd cache over that root, and what
// its configuration says about answering (index files, listing, precompressed variants, the
// fallback and error pages, the compiled header and redirect rules).
//
// Every site of a generation lives in its ServerContext (server_context.hpp) and is built
// with it, so its rules are compiled once per configuration; a reload builds new sites. Each
// site's fd cache has its own root and its own change watch (so a vhost root is kept as
// fresh as the main one), and shares the process's limits: the fd budget's cache entries
// are split between the sites, and fd_cache.max_bytes is one count for all of them.
//
// Threads: immutable after construction but for its fd cache (which is thread-safe); any
// fiber reads it while its generation lives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/core/config.hpp"
#include "server/files/fd_cache.hpp"
#include "server/site/site_rules.hpp"

namespace weft::http {

class Compressor;

struct SiteContext {
  std::string name;     // the vhost's host as configured ("*.b.test"); "" for the default site
  uint16_t number = 0;  // 0: the default site; vhosts from 1 in file order
  std::filesystem::path root;
  int root_fd = -1;                // O_PATH descriptor of the root, owned
  std::unique_ptr<FdCache> files;  // over root_fd
  std::vector<std::string> index;
  bool directory_listing = false;
  unsigned max_listing_entries = 10000;  // limits.max_listing_entries: the process's, per listing
  unsigned max_ranges = 16;              // limits.max_ranges: the process's, per Range field
  Precompressed precompressed = Precompressed::off;
  Compressor* compressor = nullptr;  // [compression]: the server's, shared by its sites
  SitePages pages;
  HeaderRules headers;
  RedirectRules redirects;

  /// The default site of `config` (its [server] keys and top-level rules); no root opened.
  explicit SiteContext(const Config& config);
  /// Virtual host `vhost` of `config` (unset keys from [server]); no root opened.
  SiteContext(const Config& config, const VhostConfig& vhost, uint16_t number);
  ~SiteContext();
  SiteContext(const SiteContext&) = delete;
  SiteContext& operator=(const SiteContext&) = delete;

  /// Opens the root and makes the fd cache (entries at most `max_entries`, small-file bytes
  /// counted in `bytes`: shared by the sites); returns 0 or -errno of opening the root.
  int open(const Config& config, const MimeMap& mime, Metrics* metrics, std::size_t max_entries,
           std::shared_ptr<std::atomic<uint64_t>> bytes);

  /// Returns the error page configured for `status`, or "" when there is none.
  std::string_view error_page(int status) const {
    auto it = pages.error_pages.find(status);
    return it == pages.error_pages.end() ? std::string_view{} : std::string_view(it->second);
  }
};

}  // namespace weft::http
