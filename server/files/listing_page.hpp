// weft::http listing pages: the text of a directory listing (listing.hpp), as an HTML page
// or a JSON document, and the escaping that keeps hostile names inert in each.
//
// Names are bytes (a file system allows any but "/" and NUL); the two forms treat them so:
// - HTML: the text shown is HTML-escaped (& < > " '), with control characters and bytes
//   that are not UTF-8 shown as U+FFFD (the page is UTF-8); every link is the exact name,
//   percent-encoded (path.hpp), behind "./", so "javascript:x" is a relative link and every
//   link leads to its own file, whatever its bytes.
// - JSON (RFC 8259): "name" escapes quote, backslash and control characters, and < > & and
//   U+2028/2029 as \uXXXX too (inert if pasted into a page or a script); bytes that are
//   not UTF-8 become U+FFFD, so the document is always valid UTF-8. "href" is the exact
//   name, percent-encoded as in the page: the lossless way back to the file.
// Sizes: exact in JSON and in the page's title attribute; shown rounded to K, M, G ... (1024)
// below 10 with one decimal ("2.0K"), from 10 without ("15K"). Dates: UTC, "2024-03-07
// 14:03" shown, RFC 3339 ("2024-03-07T14:03:05Z") in JSON and in the page's <time>; times
// before 1970 or after 9999 are shown as the nearer of the two.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/core/utf8.hpp"  // utf8_sequence_length, used by the escapers here
#include "server/files/listing.hpp"

namespace weft::http {

/// Writes `listing` (sorted by `order`) of the directory `path` as an HTML page into `body`
/// (cleared first): a table of name, size and date, with column headers that link to the
/// other orders, and a marker when the listing was cut.
void write_listing_html(const Listing& listing, std::string_view path, ListingOrder order,
                        std::string& body);

/// Writes `listing` of the directory `path` as a JSON document into `body` (cleared first):
/// {"path": ..., "truncated": bool, "entries": [{"name", "type", "size" (files only),
/// "mtime" (when known), "href"}, ...]}.
void write_listing_json(const Listing& listing, std::string_view path, std::string& body);

/// Appends `in` to `out` escaped for HTML text and attribute values (& < > " ').
void append_html_escaped(std::string_view in, std::string& out);

/// Appends `in` to `out` as HTML text that shows it: escaped, with control characters and
/// bytes that are not UTF-8 as U+FFFD.
void append_display_text(std::string_view in, std::string& out);

/// Appends `in` to `out` as a JSON string, quotes included (see the header comment).
void append_json_string(std::string_view in, std::string& out);

/// Appends `bytes` rounded for people: "0", "1023", "1.0K", "2.5M", "15G".
void append_human_size(std::uint64_t bytes, std::string& out);

/// Appends the Unix time `t` as "YYYY-MM-DD HH:MM" (UTC), or with `rfc3339` as
/// "YYYY-MM-DDTHH:MM:SSZ"; clamped to years 1970..9999.
void append_listing_time(std::int64_t t, bool rfc3339, std::string& out);

}  // namespace weft::http
