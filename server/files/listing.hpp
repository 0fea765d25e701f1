// weft::http directory listings: what a directory without an index file is answered with.
//
// render_listing() opens the directory under the document root with the fd cache's resolve
// rules (the same symlink policy as every file it serves, checked on every listing, never a
// cached verdict) and reads its entries, each with its type, size and modification time
// from one fstatat relative to the directory's descriptor (no path is built per entry).
// That fstatat never follows a symlink, so nothing outside the root is ever looked at: a
// link is listed as the link it is, without a size, whatever it points at. The entries are
// sorted, directories first, by the order the query string asks for (parse_listing_order),
// and written as an HTML page or a JSON document (listing_page.hpp: the escaping that keeps
// hostile names inert).
//
// Bounded: at most `max_entries` entries (limits.max_listing_entries) are read, so the time
// (one getdents per batch, one fstatat per entry, one sort) and the memory (the names, up
// to 255 bytes each, and a page of at most a few KB per entry for names of escaped bytes)
// stay in proportion to it. A directory with more is cut: the first `max_entries` entries
// in the order the file system returns them, sorted among themselves, and both formats say
// so. Reads with plain system calls on the calling processor (listings are off by default,
// and a directory read from the page cache takes microseconds per entry), yielding to the
// processor's other fibers after every kListingStatsPerTurn entries, so that a large or cold
// directory holds them for one batch at a time, not for the whole listing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/files/fd_cache.hpp"
#include "server/http/request.hpp"

namespace weft::http {

/// Entries read_listing looks at (one fstatat each) before it lets the processor's other
/// fibers run (picked: 64 cached fstatat take about 50 us here, a cold one about 0.15 ms).
inline constexpr std::size_t kListingStatsPerTurn = 64;

/// What a listing is sorted by (?sort=name|size|date).
enum class ListingKey : std::uint8_t { name, size, date };

/// The order of a listing: by name ascending unless the query string asks otherwise.
struct ListingOrder {
  ListingKey key = ListingKey::name;
  bool descending = false;  // ?order=desc
};

/// The two forms of a listing.
enum class ListingFormat : std::uint8_t { html, json };

/// The Content-Type of each form.
inline constexpr std::string_view kListingHtmlType = "text/html; charset=utf-8";
inline constexpr std::string_view kListingJsonType = "application/json";

/// What an entry is, as lstat says (a symlink is never followed to decide it).
enum class EntryType : std::uint8_t { directory, file, symlink, other };

/// One entry of a listing; its name lives in Listing::names.
struct ListingEntry {
  std::uint32_t name_at = 0;
  std::uint16_t name_len = 0;
  EntryType type = EntryType::other;
  bool known = false;      // size and mtime are known (the entry's fstatat succeeded)
  std::uint64_t size = 0;  // a regular file's size; 0 for every other type
  std::int64_t mtime = 0;  // seconds since the epoch
};

/// The entries of one directory, with their names in one buffer (no allocation per entry).
struct Listing {
  std::string names;
  std::vector<ListingEntry> entries;
  bool truncated = false;  // the directory has more entries than were read

  /// Returns the name of `e`, one of this listing's entries.
  std::string_view name(const ListingEntry& e) const {
    return {names.data() + e.name_at, e.name_len};
  }
};

/// What a request asks of a listing, and its bound.
struct ListingOptions {
  ListingOrder order;
  ListingFormat format = ListingFormat::html;
  std::size_t max_entries = 10000;
};

/// Returns the order that `query` (the target's query, with or without its "?") asks for:
/// the first "sort" and "order" parameters, each of which falls back to its default (name,
/// ascending) when absent or not exactly one of the values it takes.
ListingOrder parse_listing_order(std::string_view query);

/// Returns the form the Accept lines among `headers` ask for: JSON when they give
/// application/json more weight than text/html, else HTML (a tie, "*/*", no Accept).
ListingFormat listing_format(std::span<const Header> headers);

/// Reads the entries of the open directory `dfd` (which this closes) into `out` (cleared
/// first), at most `max_entries` of them (more: out.truncated), yielding every
/// kListingStatsPerTurn entries when called on a fiber; returns false when the
/// directory cannot be read. An entry gone before its fstatat is left out; one that cannot
/// be looked at otherwise (EACCES) is listed by its name and dirent type, without size or date.
bool read_listing(int dfd, std::size_t max_entries, Listing& out);

/// Sorts `listing`'s entries: directories first, each group by `order` (directories by name
/// when the key is size), ties by name ascending; names compare as bytes, as NGINX does.
void sort_listing(Listing& listing, ListingOrder order);

/// Writes the listing of the directory at normalized `path` (ending in "/") into `body`
/// (cleared first) in the form and order of `options`; returns false when the directory
/// cannot be opened or read.
bool render_listing(const FdCache& files, std::string_view path, const ListingOptions& options,
                    std::string& body);

}  // namespace weft::http
