#include "server/net/finish_request.hpp"

#include <chrono>
#include <ctime>

#include "server/net/server_context.hpp"
#include "server/ops/access_log.hpp"

namespace weft::http {

namespace {

// Fills what the access log shows of a request from its note: when it started, how long it
// took, the site that answered and, when it was parsed, its request line and fields.
void describe(const ServerContext& ctx, const RequestNote& n, std::string_view notes,
              AccessRecord& rec) {
  rec.time_unix = n.started_unix;
  rec.request_time_s = std::chrono::duration<double>(rt::now() - n.started).count();
  rec.content_encoding = n.coding;
  if (!ctx.vhosts.empty()) {
    rec.vhost_field = true;
    rec.vhost = ctx.site(n.site).name;
  }
  if (!n.parsed) return;
  std::string_view text = notes.substr(n.text_at);
  auto take = [&text](uint32_t len) {
    std::string_view s = text.substr(0, len);
    text.remove_prefix(len);
    return s;
  };
  rec.method = take(n.method_len);
  rec.target = take(n.target_len);
  rec.protocol = n.version == Version::http_1_0 ? "HTTP/1.0"
                 : n.version == Version::http_2 ? "HTTP/2.0"
                                                : "HTTP/1.1";
  rec.referer = take(n.referer_len);
  rec.user_agent = take(n.agent_len);
}

}  // namespace

void finish_request(ServerContext& ctx, const FinishedRequest& r) {
  ctx.processor_metrics().on_request(r.status, r.body_sent);
  if (!ctx.access_log) return;
  AccessRecord rec;
  rec.remote_addr = r.peer;
  rec.status = r.status;
  rec.body_bytes = r.body_sent;
  if (r.note) {
    describe(ctx, *r.note, r.notes, rec);
  } else {
    rec.time_unix = static_cast<int64_t>(std::time(nullptr));
  }
  ctx.access_log->log(rec);
}

}  // namespace weft::http
