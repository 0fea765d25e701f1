#include "loadgen/manifest.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/core.h>

namespace weft::load {

namespace {

constexpr std::string_view kMagic = "# weft-fileset v1";

std::optional<std::uint64_t> parse_decimal(std::string_view s) {
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return value;
}

// Returns why `path` is not a usable URL path, or an empty view when it is.
std::string_view path_problem(std::string_view path) {
  if (path.empty()) return "empty path";
  if (path.front() != '/') return "path must start with '/'";
  for (unsigned char c : path) {
    if (c == ' ') return "path contains a space";
    if (c < 0x20 || c == 0x7f) return "path contains a control character";
  }
  return {};
}

struct Record {
  std::size_t line;
  std::uint64_t rank;
};

// Builds the error for line `line` of `source`, in the "FILE:LINE: WHAT" form callers grep for.
ManifestError manifest_error(std::string_view source, std::size_t line, const std::string& what) {
  return ManifestError(fmt::format("{}:{}: {}", source, line, what));
}

// Checks that the first line is the v1 magic, naming the version when it is another one.
void check_header(std::string_view line, std::string_view source) {
  // The magic must be followed by the end of the line or a space: "v10" is not "v1".
  const bool magic = line.substr(0, kMagic.size()) == kMagic &&
                     (line.size() == kMagic.size() || line[kMagic.size()] == ' ');
  if (magic) return;
  if (line.starts_with("# weft-fileset ")) {
    throw manifest_error(source, 1,
                         fmt::format("unsupported manifest version '{}' (this weft-load reads "
                                     "'{}')",
                                     line, kMagic));
  }
  throw manifest_error(source, 1,
                       fmt::format("not a weft file-set manifest: the first line must start "
                                   "with '{}'",
                                   kMagic));
}

// Parses one PATH<TAB>SIZE<TAB>RANK record into `m` (in file order) and `records`.
void parse_record(std::string_view line, std::size_t line_no, std::string_view source, Manifest& m,
                  std::vector<Record>& records) {
  const std::size_t tab1 = line.find('\t');
  const std::size_t tab2 = tab1 == std::string_view::npos ? tab1 : line.find('\t', tab1 + 1);
  if (tab2 == std::string_view::npos || line.find('\t', tab2 + 1) != std::string_view::npos) {
    throw manifest_error(source, line_no,
                         "expected PATH<TAB>SIZE<TAB>RANK (three fields separated by tabs)");
  }
  const std::string_view path = line.substr(0, tab1);
  const std::string_view size_text = line.substr(tab1 + 1, tab2 - tab1 - 1);
  const std::string_view rank_text = line.substr(tab2 + 1);
  if (auto problem = path_problem(path); !problem.empty()) {
    throw manifest_error(source, line_no, fmt::format("{}: '{}'", problem, path));
  }
  const auto size = parse_decimal(size_text);
  if (!size) {
    throw manifest_error(source, line_no, fmt::format("SIZE '{}' is not a byte count", size_text));
  }
  const auto rank = parse_decimal(rank_text);
  if (!rank || *rank == 0) {
    throw manifest_error(source, line_no,
                         fmt::format("RANK '{}' is not a rank (1, 2, ...)", rank_text));
  }
  m.entries.push_back(ManifestEntry{std::string{path}, *size});
  m.total_bytes += *size;
  records.push_back(Record{line_no, *rank});
}

// Returns the smallest rank in 1..n that no record claims (n + 1 when all are claimed).
std::size_t smallest_missing_rank(const std::vector<Record>& records, std::size_t n) {
  std::size_t missing = 1;
  std::vector<bool> seen(n + 1, false);
  for (const Record& other : records) {
    if (other.rank <= n) seen[other.rank] = true;
  }
  while (missing <= n && seen[missing]) ++missing;
  return missing;
}

// Reorders m.entries (in file order, one per record) so that entry i has rank i + 1.
void order_by_rank(Manifest& m, const std::vector<Record>& records, std::string_view source) {
  // Place each entry at rank - 1. With N entries, every rank must be in 1..N and unique; then
  // none can be missing (pigeonhole), so the errors below cover all three kinds of mistake.
  const std::size_t n = records.size();
  std::vector<std::size_t> line_of_rank(n, 0);
  std::vector<ManifestEntry> by_rank(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Record& r = records[i];
    if (r.rank > n) {
      // Report the smallest rank nobody claims, which is what the reader must look for.
      const std::size_t missing = smallest_missing_rank(records, n);
      throw manifest_error(source, r.line,
                           fmt::format("rank {} is larger than the number of entries ({}); ranks "
                                       "must be 1..{} each once, and rank {} is missing",
                                       r.rank, n, n, missing));
    }
    std::size_t& first = line_of_rank[r.rank - 1];
    if (first != 0) {
      throw manifest_error(source, r.line,
                           fmt::format("duplicate rank {} (first on line {})", r.rank, first));
    }
    first = r.line;
    by_rank[r.rank - 1] = std::move(m.entries[i]);
  }
  m.entries = std::move(by_rank);
}

}  // namespace

Manifest parse_manifest(std::string_view text, std::string_view source) {
  Manifest m;
  std::vector<Record> records;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

    if (line_no == 1) {
      check_header(line, source);
      m.header = std::string{line};
      continue;
    }
    if (line.empty() || line.front() == '#') continue;
    parse_record(line, line_no, source, m, records);
  }
  if (line_no == 0) throw manifest_error(source, 1, "empty file: not a weft file-set manifest");
  if (records.empty()) throw manifest_error(source, line_no, "no entries");
  order_by_rank(m, records, source);
  return m;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read error", path.string()));
  return std::move(out).str();
}

Manifest load_manifest(const std::filesystem::path& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::runtime_error& e) {
    throw ManifestError(e.what());
  }
  return parse_manifest(text, path.string());
}

}  // namespace weft::load
