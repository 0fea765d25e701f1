// The benchmark file-set manifest: which URL paths exist, how big each file is, and how popular.
//
// Format (fixed; www-fixtures' generator writes it), UTF-8 text, one record per line:
//
//   # weft-fileset v1 <anything>        first line: the magic and version
//   # any comment                       lines starting with '#' are comments
//   PATH<TAB>SIZE<TAB>RANK              PATH: URL path, starts with '/', no space, tab or
//                                       control byte; SIZE: bytes, decimal; RANK: popularity,
//                                       1 = most popular, decimal
//
// The ranks of the N records must be exactly 1..N, each once. Empty lines are skipped and a
// trailing '\r' is ignored (a file passed through a Windows editor). Entries come back indexed
// by rank - 1, so a Zipf rank picks its file with one subscript. Any problem throws
// ManifestError naming the source and line: "set.txt:12: duplicate rank 7 (first on line 3)".
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace weft::load {

/// A malformed or unreadable manifest; what() is one line naming the file and line.
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ManifestEntry {
  std::string path;    // URL path, starts with '/'
  std::uint64_t size;  // bytes
};

struct Manifest {
  std::string header;                  // the first line, e.g. "# weft-fileset v1 seed=1 ..."
  std::vector<ManifestEntry> entries;  // entries[rank - 1]
  std::uint64_t total_bytes = 0;       // sum of the sizes
};

/// Parses manifest text; `source` names it in errors. Throws ManifestError on any problem.
Manifest parse_manifest(std::string_view text, std::string_view source = "manifest");

/// Reads and parses the manifest file at `path`. Throws ManifestError on any problem.
Manifest load_manifest(const std::filesystem::path& path);

/// Reads a whole file into a string; throws std::runtime_error "PATH: REASON" when it cannot.
std::string read_file(const std::filesystem::path& path);

}  // namespace weft::load
