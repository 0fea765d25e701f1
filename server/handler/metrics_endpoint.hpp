// The metrics endpoint: what a connection on the metrics listener (metrics.listen) answers.
//
// Connections there are served by the same Connection loop and ResponseWriter as the site,
// with the same parser, limits and timeouts; only the handler differs. GET or HEAD /metrics
// (any query) gets the Prometheus text exposition (Metrics::render()), OPTIONS gets Allow,
// any other path 404 and any other method 405.
#pragma once

#include "server/handler/static_handler.hpp"
#include "server/http/request.hpp"

namespace weft::http {

class Metrics;

/// The Content-Type of the exposition, text format 0.0.4.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4";

/// Decides the answer to `req` on the metrics listener; renders into `work.body`.
Reply handle_metrics(Metrics* metrics, const Request& req, ConnectionWork& work);

}  // namespace weft::http
