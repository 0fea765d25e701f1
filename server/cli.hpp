// The weft command line: which config file, test-only mode, and overrides of common keys.
//
// Overrides are applied after the file is parsed and before the config is checked, so a
// value given on the command line wins and is validated like one from the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/core/config.hpp"

namespace weft::http {

struct CliOptions {
  // -c; without it: $WEFT_CONFIG, else default_config_path() if it exists, else the
  // built-in defaults.
  std::optional<std::string> config_file;
  bool test_only = false;  // -t: check the configuration and exit
  bool dump = false;       // -T: check it, print it as TOML with where each value came from
  // -s: send this to the running server named by the configuration's server.pid_file
  // ("reload", "stop", "quit" or "reopen", as nginx -s) and exit.
  std::optional<std::string> signal;
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

/// Loads the configuration the options lead to (see CliOptions::config_file), applies the
/// overrides and checks the result; throws ConfigError with one clear message on any problem.
Config load_effective_config(const CliOptions& options);

/// Sends the signal named by options.signal to the process in `config`'s pid file; returns
/// the exit status (0 when sent) after printing one line on failure.
int send_signal(const Config& config, const CliOptions& options);

/// Names what load_effective_config reads for `options`: a file, or "built-in defaults".
std::string config_source_name(const CliOptions& options);

}  // namespace weft::http
