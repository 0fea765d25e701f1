#include "server/cli.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "server/config_file.hpp"
#include "server/tls/tls_library.hpp"

#include "weft_version.hpp"

namespace weft::http {

CliParse parse_command_line(int argc, const char* const* argv) {
  CliOptions o;
  CLI::App app{"weft: a static HTTP/1.1 and HTTP/2 file server on an M:N io_uring runtime", "weft"};
  // The TLS library on the first line too: a build may link wolfSSL instead of OpenSSL.
  app.set_version_flag("-v,--version",
                       std::string{"weft "} + kWeftVersion + " (TLS: " + kTlsLibrary + ")");
  app.add_option("-c,--config", o.config_file,
                 "configuration file (TOML); default $WEFT_CONFIG, else " +
                     default_config_path().string() + " if it exists, else built-in defaults");
  app.add_flag("-t,--test", o.test_only, "check the configuration and exit");
  app.add_flag("-T,--dump", o.dump,
               "check the configuration, print it as TOML with each value's source, and exit");
  app.add_option("-s,--signal", o.signal,
                 "send reload, stop, quit or reopen to the running server (server.pid_file)")
      ->check(CLI::IsMember({"reload", "stop", "quit", "reopen"}));
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
  if (!o.listen.empty()) config.origins["server.listen"] = "--listen";
  if (o.root) config.origins["server.root"] = "--root";
  if (o.processors) config.origins["runtime.processors"] = "--processors";
  if (o.log_level) config.origins["log.level"] = "--log-level";
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
  // Relative to the working directory, like any shell path; made absolute so that -T shows
  // and a reload reads the same folder whatever happens to the working directory.
  if (o.root) config.root = std::filesystem::absolute(*o.root).lexically_normal();
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

namespace {

// The file the options name, if any: -c, then $WEFT_CONFIG (both must exist), then the
// installed default if it exists; nullopt means the built-in defaults.
std::optional<std::string> config_file_for(const CliOptions& o) {
  if (o.config_file) return o.config_file;
  if (const char* env = std::getenv("WEFT_CONFIG"); env && *env) return std::string{env};
  std::error_code ec;
  if (std::filesystem::exists(default_config_path(), ec)) return default_config_path().string();
  return std::nullopt;
}

}  // namespace

Config load_effective_config(const CliOptions& o) {
  auto file = config_file_for(o);
  Config c = file ? load_config(*file) : builtin_config();
  apply_overrides(c, o);
  check_config(c);
  return c;
}

int send_signal(const Config& config, const CliOptions& o) {
  // nginx -s: stop is SIGTERM, quit SIGQUIT (both graceful in weft), reopen SIGUSR1.
  const std::string& name = *o.signal;
  const int sig = name == "reload" ? SIGHUP
                  : name == "stop" ? SIGTERM
                  : name == "quit" ? SIGQUIT
                                   : SIGUSR1;
  if (config.pid_file.empty()) {
    fmt::print(stderr, "weft: -s {}: no server.pid_file in {}\n", name, config_source_name(o));
    return 1;
  }
  std::ifstream in(config.pid_file);
  long pid = 0;
  if (!(in >> pid) || pid <= 1) {
    fmt::print(stderr, "weft: -s {}: cannot read a process id from {} (is weft running?)\n", name,
               config.pid_file.string());
    return 1;
  }
  if (::kill(static_cast<pid_t>(pid), sig) != 0) {
    fmt::print(stderr, "weft: -s {}: kill {}: {}\n", name, pid, std::strerror(errno));
    return 1;
  }
  return 0;
}

std::string config_source_name(const CliOptions& o) {
  return config_file_for(o).value_or("built-in defaults");
}

}  // namespace weft::http
