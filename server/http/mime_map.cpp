// mime.types loading and extension lookup.
#include "server/http/mime_map.hpp"

#include <array>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "server/core/ascii.hpp"

namespace weft::http {
namespace {

// Longest extension looked up; a longer one cannot be in any map we load in practice, and
// the bound lets lookup() lower-case into a stack buffer.
constexpr std::size_t kMaxExtension = 64;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// Splits off the next whitespace-separated word of `s`; "" at the end.
std::string_view next_word(std::string_view& s) {
  std::size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  std::size_t j = i;
  while (j < s.size() && !is_space(s[j])) ++j;
  const std::string_view word = s.substr(i, j - i);
  s.remove_prefix(j);
  return word;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii::to_lower(c);
  return out;
}

}  // namespace

MimeMap::MimeMap(std::string default_type) : default_type_(std::move(default_type)) {}

std::size_t MimeMap::add_text(std::string_view text) {
  std::size_t added = 0;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    line = line.substr(0, line.find('#'));

    const std::string_view type = next_word(line);
    if (type.empty() || type.find('/') == std::string_view::npos) continue;  // not a type
    for (std::string_view ext = next_word(line); !ext.empty(); ext = next_word(line)) {
      if (ext.size() > kMaxExtension) continue;
      if (types_.try_emplace(lower(ext), type).second) ++added;
    }
  }
  return added;
}

bool MimeMap::add_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return false;  // a directory opens, too
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return false;
  add_text(text.view());
  return true;
}

std::string_view MimeMap::lookup(std::string_view path) const {
  const std::string_view name = path.substr(path.rfind('/') + 1);  // npos + 1 == 0
  const std::size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == name.size()) return default_type_;
  const std::string_view ext = name.substr(dot + 1);
  if (ext.size() > kMaxExtension) return default_type_;
  std::array<char, kMaxExtension> buf;
  for (std::size_t i = 0; i < ext.size(); ++i) buf[i] = ascii::to_lower(ext[i]);
  const auto it = types_.find(std::string_view(buf.data(), ext.size()));
  return it == types_.end() ? std::string_view(default_type_) : std::string_view(it->second);
}

MimeMap load_mime_map(const Config& config, const std::filesystem::path& system_file) {
  MimeMap map(config.default_type);
  if (!config.mime_types.empty() && !map.add_file(config.mime_types)) {
    throw ConfigError(fmt::format("{}: key 'server.mime_types': cannot read '{}'",
                                  config.source.string(), config.mime_types.string()));
  }
  map.add_file(system_file);  // optional
  return map;
}

}  // namespace weft::http
