#include "server/server.hpp"

#include <spdlog/spdlog.h>

namespace weft::http {

int run_server(const Config& config) {
  spdlog::info("weft: root {}, {} listen address(es)", config.root.string(), config.listen.size());
  spdlog::error("weft: serving needs the runtime I/O layer, which this build does not have yet");
  return 1;
}

}  // namespace weft::http
