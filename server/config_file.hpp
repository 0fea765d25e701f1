// Reading, checking and writing weft's configuration file (conf/weft.toml) against one schema
// table; the struct it fills, and its value parsers, are server/core/config.hpp.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/config.hpp"

namespace weft::http {

/// Parses TOML text (named `source` in messages) into a validated Config, or throws ConfigError.
Config parse_config(std::string_view text, const std::filesystem::path& source);

/// Reads and parses the TOML file at `file`, or throws ConfigError.
Config load_config(const std::filesystem::path& file);

/// Returns the built-in defaults (the values conf/weft.toml states), serving the installed
/// bundled site (share/weft/www) with the installed MIME map when they exist.
Config builtin_config();

/// The configuration file weft reads when no -c is given and $WEFT_CONFIG is unset:
/// etc/weft/weft.toml of the install this binary runs from (/etc/weft/weft.toml for the
/// package), else of the prefix the build was configured with.
std::filesystem::path default_config_path();

/// Returns the folder an install under `prefix` keeps weft.toml in, by GNUInstallDirs' rule,
/// which the install follows too (cmake/WeftInstallLayout.cmake): /etc/weft for /usr,
/// /etc/opt/X/weft for /opt/X, else prefix/etc/weft.
std::filesystem::path installed_config_dir(const std::filesystem::path& prefix);

/// Writes `config` as TOML, every key with a comment saying where its value came from.
std::string dump_config(const Config& config);

/// Returns the keys ("section.key") whose values differ between `a` and `b`, in schema order.
std::vector<std::string> changed_keys(const Config& a, const Config& b);

/// Checks what needs the filesystem (the root exists and is a directory), or throws ConfigError.
void check_config(const Config& config);

}  // namespace weft::http
