// FileFields: the representation fields of a file response, built once per file (by the fd
// cache, when it loads the file) and sent as they are with every 200 and 206 of it:
//
//   Content-Type: ..\r\n  [Last-Modified: ..\r\n]  ETag: ..\r\n  Accept-Ranges: ..\r\n
//                         `------------ validators ------------'
//
// A 304 repeats the validators alone; a precompressed variant sends the original's type with
// its own coding and validators (variant_validators) and the rest as they are; a multipart
// 206 replaces the Content-Type by its own. The head of each is written in
// handler/response_head.cpp from these slices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::http {

struct FileFields {
  std::string text;                // the fields, in the order above
  std::size_t validators_at = 0;   // where Last-Modified (or ETag) begins in `text`
  std::size_t validators_end = 0;  // where Accept-Ranges begins

  /// Builds the fields of a file of `content_type` with entity-tag `etag` (quoted), with
  /// Last-Modified `mtime` (Unix seconds) only when `mtime_strong` (see FileEntry), and
  /// "Accept-Ranges: none" when `ranges` is false (limits.max_ranges = 0), else "bytes".
  void build(std::string_view content_type, std::string_view etag, int64_t mtime, bool mtime_strong,
             bool ranges);

  /// Returns the Last-Modified and ETag lines (what a 304 repeats).
  std::string_view validators() const {
    return std::string_view(text).substr(validators_at, validators_end - validators_at);
  }

  /// Returns the fields after the validators (Accept-Ranges).
  std::string_view after_validators() const {
    return std::string_view(text).substr(validators_end);
  }
};

/// Writes into `out` the validator fields `validators` (a variant's FileFields::validators())
/// with its entity-tag `etag` given `tag_suffix` inside the quotes ("-br", "-gz": not hex, so
/// no identity tag can equal it); returns that tag, a view into `out`.
std::string_view variant_validators(std::string& out, std::string_view validators,
                                    std::string_view etag, std::string_view tag_suffix);

}  // namespace weft::http
