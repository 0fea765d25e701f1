// weft::http directory listings: the HTML page for a directory without an index file.
//
// render_listing() opens the directory under the document root with the fd cache's resolve
// rules (the same symlink policy as every file it serves, checked on every listing, never a
// cached verdict), reads its names, and writes a page that lists them sorted, directories
// with a trailing "/". Hostile names are safe: every text is HTML-escaped, and every href is
// the percent-encoded name behind "./", so a name such as "javascript:x" is a relative link.
//
// Reads the directory with plain system calls on the calling processor: listings are off by
// default, and small directories read from the page cache take microseconds.
#pragma once

#include <string>
#include <string_view>

#include "server/fd_cache.hpp"

namespace weft::http {

/// Writes the listing page of the directory at normalized `path` (ending in "/") into
/// `body` (cleared first); returns false when the directory cannot be opened or read.
bool render_listing(const FdCache& files, std::string_view path, std::string& body);

/// Appends `in` to `out` escaped for HTML text and attribute values (& < > " ').
void append_html_escaped(std::string_view in, std::string& out);

}  // namespace weft::http
