#include "server/files/listing.hpp"

#include <algorithm>
#include <cerrno>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/fiber.hpp"
#include "server/files/listing_page.hpp"
#include "server/http/accept.hpp"

namespace weft::http {

namespace {

EntryType type_of_mode(mode_t mode) {
  if (S_ISDIR(mode)) return EntryType::directory;
  if (S_ISREG(mode)) return EntryType::file;
  if (S_ISLNK(mode)) return EntryType::symlink;
  return EntryType::other;
}

EntryType type_of_dirent(unsigned char d_type) {
  switch (d_type) {
    case DT_DIR:
      return EntryType::directory;
    case DT_REG:
      return EntryType::file;
    case DT_LNK:
      return EntryType::symlink;
    default:
      return EntryType::other;
  }
}

template <typename T>
int three_way(T a, T b) {
  return a < b ? -1 : b < a ? 1 : 0;
}

}  // namespace

ListingOrder parse_listing_order(std::string_view query) {
  if (!query.empty() && query.front() == '?') query.remove_prefix(1);
  ListingOrder out;
  bool seen_sort = false, seen_order = false;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const std::size_t eq = param.find('=');
    const std::string_view name = param.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view{} : param.substr(eq + 1);
    if (name == "sort" && !seen_sort) {
      seen_sort = true;
      if (value == "size") out.key = ListingKey::size;
      if (value == "date") out.key = ListingKey::date;
    } else if (name == "order" && !seen_order) {
      seen_order = true;
      out.descending = value == "desc";
    }
  }
  return out;
}

ListingFormat listing_format(std::span<const Header> headers) {
  return accept_weight(headers, "application/json") > accept_weight(headers, "text/html")
             ? ListingFormat::json
             : ListingFormat::html;
}

bool read_listing(int dfd, std::size_t max_entries, Listing& out) {
  out.names.clear();
  out.entries.clear();
  out.truncated = false;
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    ::close(dfd);
    return false;
  }
  std::size_t looked_at = 0;
  while (dirent* d = ::readdir(dir)) {
    const std::string_view name = d->d_name;
    if (name == "." || name == "..") continue;
    if (out.entries.size() == max_entries) {
      out.truncated = true;  // one entry more than the bound: enough to know
      break;
    }
    // The processor's other fibers run between batches: a 10,000-entry listing is 10,000
    // fstatat calls (each may wait for the disk), which must not hold them all that long.
    if (++looked_at % kListingStatsPerTurn == 0) rt::yield();
    ListingEntry e;
    // Relative to the directory's descriptor (no path to build or resolve again), never
    // following a symlink (nothing outside the root is looked at) nor triggering an
    // automount.
    struct stat st {};
    if (::fstatat(::dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT) == 0) {
      e.type = type_of_mode(st.st_mode);
      e.known = true;
      e.size = e.type == EntryType::file ? static_cast<std::uint64_t>(st.st_size) : 0;
      e.mtime = st.st_mtim.tv_sec;
    } else if (errno == ENOENT) {
      continue;  // removed since readdir saw it
    } else {
      e.type = type_of_dirent(d->d_type);  // a directory without search permission
    }
    e.name_at = static_cast<std::uint32_t>(out.names.size());
    e.name_len = static_cast<std::uint16_t>(name.size());
    out.names.append(name);
    out.entries.push_back(e);
  }
  ::closedir(dir);
  return true;
}

void sort_listing(Listing& listing, ListingOrder order) {
  std::sort(listing.entries.begin(), listing.entries.end(),
            [&](const ListingEntry& a, const ListingEntry& b) {
              const bool a_dir = a.type == EntryType::directory;
              if (a_dir != (b.type == EntryType::directory)) return a_dir;
              const std::string_view an = listing.name(a), bn = listing.name(b);
              int c = 0;
              switch (order.key) {
                case ListingKey::name:
                  c = an.compare(bn);
                  break;
                case ListingKey::size:  // a directory's st_size means nothing: by name
                  c = a_dir ? an.compare(bn) : three_way(a.size, b.size);
                  break;
                case ListingKey::date:
                  c = three_way(a.mtime, b.mtime);
                  break;
              }
              if (c != 0) return order.descending ? c > 0 : c < 0;
              return an < bn;
            });
}

bool render_listing(const FdCache& files, std::string_view path, const ListingOptions& options,
                    std::string& body) {
  int dfd = files.open_directory(path);
  if (dfd < 0) return false;
  Listing listing;
  if (!read_listing(dfd, options.max_entries, listing)) return false;
  sort_listing(listing, options.order);
  if (options.format == ListingFormat::json) {
    write_listing_json(listing, path, body);
  } else {
    write_listing_html(listing, path, options.order, body);
  }
  return true;
}

}  // namespace weft::http
