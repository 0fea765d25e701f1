#include "server/metrics_endpoint.hpp"

#include "server/metrics.hpp"
#include "server/path.hpp"

namespace weft::http {

Reply handle_metrics(ServerContext& ctx, const Request& req, ConnectionWork& work) {
  if (req.method() != Method::get && req.method() != Method::head) return method_reply(req);
  TargetStatus ts = normalize_target(req.target(), work.path);
  if (ts != TargetStatus::ok) return Reply::error_page(http_status(ts));
  if (work.path != "/metrics" || !ctx.metrics) return Reply::error_page(404);
  work.body = ctx.metrics->render();
  return page_reply(kMetricsContentType);
}

}  // namespace weft::http
