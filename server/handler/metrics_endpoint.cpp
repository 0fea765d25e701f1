#include "server/handler/metrics_endpoint.hpp"

#include "server/handler/connection_work.hpp"
#include "server/http/path.hpp"
#include "server/ops/metrics.hpp"

namespace weft::http {

Reply handle_metrics(Metrics* metrics, const Request& req, ConnectionWork& work) {
  if (req.method() != Method::get && req.method() != Method::head) return method_reply(req);
  TargetStatus ts = normalize_target(req.target(), work.path);
  if (ts != TargetStatus::ok) return Reply::error_page(http_status(ts));
  if (work.path != "/metrics" || !metrics) return Reply::error_page(404);
  work.body = metrics->render();
  return page_reply(kMetricsContentType);
}

}  // namespace weft::http
