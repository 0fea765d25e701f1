#include "server/cli.hpp"

#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "weft_version.hpp"

namespace weft::http {

CliParse parse_command_line(int argc, const char* const* argv) {
  CliOptions o;
  CLI::App app{"weft: a static HTTP/1.1 file server on an M:N io_uring runtime", "weft"};
  app.set_version_flag("-v,--version", std::string{"weft "} + kWeftVersion);
  app.add_option("-c,--config", o.config_file, "configuration file (TOML)")
      ->default_val(o.config_file);
  app.add_flag("-t,--test", o.test_only, "check the configuration and exit");
  app.add_option("-l,--listen", o.listen,
                 "listen address HOST:PORT or [IPV6]:PORT (repeatable; replaces server.listen)");
  app.add_option("-r,--root", o.root, "document root (replaces server.root)");
  app.add_option("-p,--processors", o.processors,
                 "kernel threads running fibers; 0 = one per online CPU");
  app.add_option("--log-level", o.log_level, "error log level (trace..off)");

  CliParse result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out;
    std::ostringstream err;
    // CLI11 returns its own codes (e.g. 109); usage errors exit 2, like most Unix tools.
    result.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;
    result.output = out.str() + err.str();
    return result;
  }
  result.options = std::move(o);
  return result;
}

void apply_overrides(Config& config, const CliOptions& o) {
  if (!o.listen.empty()) {
    config.listen.clear();
    for (const auto& text : o.listen) {
      auto a = parse_listen_address(text);
      if (!a) {
        throw ConfigError(
            fmt::format("--listen {}: not HOST:PORT, [IPV6]:PORT, *:PORT or PORT", text));
      }
      config.listen.push_back(*a);
    }
  }
  if (o.root) config.root = *o.root;  // relative to the working directory, like any shell path
  if (o.processors) {
    if (*o.processors > 1024) {
      throw ConfigError(fmt::format("--processors {}: must be between 0 and 1024", *o.processors));
    }
    config.processors = *o.processors;
  }
  if (o.log_level) {
    for (auto l : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
      if (*o.log_level == l) {
        config.log_level = *o.log_level;
        return;
      }
    }
    throw ConfigError(
        fmt::format("--log-level {}: must be one of trace, debug, info, warn, "
                    "error, critical, off",
                    *o.log_level));
  }
}

Config load_effective_config(const CliOptions& o) {
  Config c = load_config(o.config_file);
  apply_overrides(c, o);
  check_config(c);
  return c;
}

}  // namespace weft::http
