// weft: the static file server's entry point. Parses the command line and the config, sets up
// logging, and runs the server until SIGTERM/SIGINT/SIGQUIT (reloading on SIGHUP); with -s,
// signals a running one instead.
#include <cstdio>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "server/cli.hpp"
#include "server/config_file.hpp"
#include "server/ops/log.hpp"
#include "server/server.hpp"

int main(int argc, char** argv) {
  using namespace weft::http;
  // SIGTERM, SIGINT and SIGHUP are read from a signalfd (server.cpp). Block them before any
  // thread exists (spdlog's flusher, the access log writer, the processors), so that every
  // thread inherits the mask and none dies of a default action.
  block_server_signals();
  CliParse cli = parse_command_line(argc, argv);
  if (!cli.options) {
    std::fputs(cli.output.c_str(), cli.exit_code == 0 ? stdout : stderr);
    return cli.exit_code;
  }
  Config config;
  try {
    config = load_effective_config(*cli.options);
    if (cli.options->signal) return send_signal(config, *cli.options);
    if (cli.options->dump) {
      fmt::print("{}", dump_config(config));
      return 0;
    }
    if (cli.options->test_only) {
      const std::string source = config_source_name(*cli.options);
      fmt::print("weft: the configuration file {} syntax is ok\n", source);
      fmt::print("weft: configuration file {} test is successful\n", source);
      return 0;
    }
    setup_logging(config);
  } catch (const ConfigError& e) {
    fmt::print(stderr, "weft: {}\n", e.what());
    if (cli.options->test_only || cli.options->dump) {
      fmt::print(stderr, "weft: configuration file {} test failed\n",
                 config_source_name(*cli.options));
    }
    return 1;
  }
  // A reload reads the same sources again (the file, or $WEFT_CONFIG, or the defaults, with
  // the same command-line overrides), and checks them the same way.
  const CliOptions options = *cli.options;
  return run_server(std::move(config), [options] { return load_effective_config(options); });
}
