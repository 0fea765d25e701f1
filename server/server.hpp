// The server as a whole: runtime, listeners, connections, logs and signals.
#pragma once

#include "server/config.hpp"

namespace weft::http {

/// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (so in every thread it starts)
/// and ignores SIGPIPE; call first thing in main.
void block_server_signals();

/// Runs the server with `config` until SIGTERM or SIGINT (graceful) and returns the process
/// exit status: 0 after a clean shutdown, 1 when it could not start.
int run_server(const Config& config);

}  // namespace weft::http
