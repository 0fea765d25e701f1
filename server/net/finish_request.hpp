// The one place a request ends: it is counted in the metrics and written to the access log,
// whether a connection served it (the ResponseWriter tells the Connection when its bytes are
// out, or never will be) or the acceptor turned its connection away with a 503 before any
// request (listener.cpp's refuse()).
#pragma once

#include <cstdint>
#include <string_view>

#include "server/handler/connection_work.hpp"

namespace weft::http {

struct ServerContext;

/// What is known of a request when it ends.
struct FinishedRequest {
  std::string_view peer;  // the client's address text
  int status = 0;
  uint64_t body_sent = 0;  // body bytes the client was sent
  // Packed when the request arrived (its text is in `notes`, ConnectionWork::notes); null
  // for a connection refused at accept: no request, no site, no time taken.
  const RequestNote* note = nullptr;
  std::string_view notes;
};

/// Counts `r` in ctx's metrics and writes its access-log line, each when the server keeps it.
void finish_request(ServerContext& ctx, const FinishedRequest& r);

}  // namespace weft::http
