// The weft command line: which config file, test-only mode, and overrides of common keys.
//
// Overrides are applied after the file is parsed and before the config is checked, so a
// value given on the command line wins and is validated like one from the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/config.hpp"

namespace weft::http {

struct CliOptions {
  std::string config_file = "conf/weft.toml";
  bool test_only = false;  // -t: check the configuration and exit
  std::vector<std::string> listen;
  std::optional<std::string> root;
  std::optional<unsigned> processors;
  std::optional<std::string> log_level;
};

/// Outcome of parsing argv: either options to run with, or an exit code and text to print.
struct CliParse {
  std::optional<CliOptions> options;
  int exit_code = 0;
  std::string output;  // help, version or error text
};

/// Parses weft's command line; --help, --version and usage errors come back as output+exit.
CliParse parse_command_line(int argc, const char* const* argv);

/// Applies the command-line overrides to `config`, or throws ConfigError naming the option.
void apply_overrides(Config& config, const CliOptions& options);

/// Loads the file named by the options, applies overrides and checks the result; throws
/// ConfigError with one clear message on any problem.
Config load_effective_config(const CliOptions& options);

}  // namespace weft::http
