// weft::http::MimeMap: file extension → Content-Type, from mime.types files.
//
// Files are in the Apache/Debian format: one "type ext ext..." per line, blank lines and
// "#" comments ignored. The first file to name an extension wins, so weft loads the
// configured map (server.mime_types: conf/mime.types in the repository) first and
// /etc/mime.types after it, for what the configured one lacks. Extensions are compared
// without case; a name without an extension gets server.default_type.
//
// A MimeMap is built once at startup and then only read, from any thread; lookups do not
// allocate.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/core/config.hpp"

namespace weft::http {

/// The system-wide map read after the configured one.
inline constexpr std::string_view kSystemMimeTypes = "/etc/mime.types";

/// Extension → media type, with a default.
class MimeMap {
 public:
  /// Makes an empty map answering `default_type` for everything.
  explicit MimeMap(std::string default_type);

  /// Adds every "type ext..." line of `text` whose extensions are not known yet; returns how
  /// many extensions were added.
  std::size_t add_text(std::string_view text);

  /// Adds the mappings of the mime.types file `file` (see add_text); returns false, adding
  /// nothing, when the file cannot be read.
  bool add_file(const std::filesystem::path& file);

  /// Returns the media type for the last extension of the last segment of `path`
  /// ("/a/b.tar.GZ" → the type of "gz"), or the default type.
  std::string_view lookup(std::string_view path) const;

  /// Returns the type used when no extension matches.
  std::string_view default_type() const { return default_type_; }

  /// Returns how many extensions are known.
  std::size_t size() const { return types_.size(); }

 private:
  // Hashes std::string and std::string_view alike, so find() takes a view (no allocation).
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::string default_type_;
  std::unordered_map<std::string, std::string, Hash, std::equal_to<>> types_;  // lower-case ext
};

/// Builds the map of `config`: config.mime_types (when set) then `system_file`, with
/// config.default_type; throws ConfigError when the configured file cannot be read (a missing
/// system file is fine: minimal containers have none).
MimeMap load_mime_map(const Config& config,
                      const std::filesystem::path& system_file = kSystemMimeTypes);

}  // namespace weft::http
