#include "server/static_handler.hpp"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iterator>
#include <optional>

#include <spdlog/spdlog.h>

#include "server/conditional.hpp"
#include "server/listing.hpp"
#include "server/log_throttle.hpp"
#include "server/multipart.hpp"
#include "server/path.hpp"
#include "server/response.hpp"
#include "server/status.hpp"

namespace weft::http {

namespace {

// Room kept in a redirect's head for everything but its Location (status line, Server, Date,
// Content-Type, Content-Length, Connection): about 200 bytes with a short server_name.
constexpr std::size_t kHeadFieldsReserve = 512;

std::string_view query_of(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return {};
  auto f = target.find('#', q);
  return target.substr(q, f == std::string_view::npos ? std::string_view::npos : f - q);
}

// The first index file of the directory `work.path` that exists, or an error other than
// "not there" on one (EACCES on the index is reported, not skipped), or nothing.
FileRef find_index(ServerContext& ctx, ConnectionWork& work) {
  unsigned shard = ServerContext::shard();
  for (const std::string& index : ctx.config.index) {
    work.scratch.assign(work.path).append(index);
    FileRef candidate = ctx.files->lookup(work.scratch, shard);
    if (!candidate->error && !candidate->directory) return candidate;
    if (candidate->error && candidate->error != ENOENT && candidate->error != ENOTDIR) {
      return candidate;
    }
  }
  return {};
}

// A directory: redirect to its name with a slash, or its index file, or its listing.
Reply directory_reply(ServerContext& ctx, const Request& req, ConnectionWork& work, FileRef& file) {
  if (!names_directory(work.path)) {
    work.scratch.assign("Location: ");
    append_encoded_path(work.path, work.scratch);
    work.scratch.append("/").append(query_of(req.target())).append("\r\n");
    // The Location repeats the target (encoded, with its query): one too long for the head
    // buffer, beside the other fields, is refused as a target too long to redirect.
    if (work.scratch.size() > HeadBuffer::kCapacity - kHeadFieldsReserve) {
      return Reply::error_page(414);
    }
    return Reply::error_page(301, work.scratch);
  }
  if (FileRef index = find_index(ctx, work)) {
    file = std::move(index);
    return {};  // go on with the index file
  }
  if (!ctx.config.directory_listing) return Reply::error_page(403);
  if (!render_listing(*ctx.files, work.path, work.body)) return Reply::error_page(403);
  return page_reply("text/html");
}

// Turns `r` (200, the whole file) into the answer to its Range: 206 for one range or for a
// multipart body of several, 416 (returned) for none that is satisfiable; returns nothing
// when `r` stands.
std::optional<Reply> apply_range(const ServerContext& ctx, std::string_view range,
                                 ConnectionWork& work, Reply& r) {
  const FileEntry& file = *r.file;
  r.range = parse_range(range, file.size, ctx.config.max_ranges, work.ranges);
  switch (r.range.kind) {
    case RangeResult::Kind::none:
      break;
    case RangeResult::Kind::unsatisfiable: {
      ContentRangeBuffer cr;
      work.scratch.assign("Content-Range: ")
          .append(format_content_range(r.range, cr))
          .append("\r\n");
      return Reply::error_page(416, work.scratch);
    }
    case RangeResult::Kind::single:
      r.status = 206;
      r.offset = r.range.offset;
      r.length = r.range.length;
      break;
    case RangeResult::Kind::multi: {
      const std::string_view boundary = make_boundary(work.boundary);
      auto length = multipart_length(boundary, file.content_type, r.range.parts, file.size);
      if (!length) {  // a type too long for a part's head: the whole file (Range is optional)
        r.range = {};
        break;
      }
      r.status = 206;
      r.length = *length;
      r.boundary = boundary;
      break;
    }
  }
  return std::nullopt;
}

// A found file: preconditions, then ranges.
Reply file_reply(const ServerContext& ctx, const Request& req, ConnectionWork& work, FileRef file) {
  int64_t now_s = static_cast<int64_t>(std::time(nullptr));
  Validators v{file->etag.view(), file->mtime, file->mtime_strong};
  Reply r;
  r.kind = Reply::Kind::file;
  r.status = 200;
  r.length = file->size;
  switch (evaluate_preconditions(Preconditions::of(req), v, req.method(), now_s)) {
    case Precondition::not_modified:
      r.kind = Reply::Kind::not_modified;
      r.status = 304;
      r.length = 0;
      r.file = std::move(file);
      return r;
    case Precondition::failed:
      return Reply::error_page(412);
    case Precondition::proceed:
      break;
  }
  r.file = std::move(file);
  if (auto range = req.range(); range && if_range_allows(req.if_range(), v, now_s)) {
    if (auto answer = apply_range(ctx, *range, work, r)) return *answer;
  }
  return r;
}

// One error-log line for a lookup that failed, at most ten a second per level from info up:
// a client can ask for a refused symlink or an unreadable file on every request.
void log_lookup_error(const ErrnoStatus& es, std::string_view peer, const Request& req,
                      std::string_view path, int err) {
  static LogThrottle throttles[] = {LogThrottle{10}, LogThrottle{10}, LogThrottle{10},
                                    LogThrottle{10}, LogThrottle{10}, LogThrottle{10},
                                    LogThrottle{10}};
  static_assert(std::size(throttles) == spdlog::level::n_levels);
  if (es.level < spdlog::level::info) {  // debugging: every line, as asked for
    spdlog::log(es.level, "{}: {} {:?}: {}", peer, req.method_text(), path, std::strerror(err));
    return;
  }
  // The path is decoded client input: quoted and escaped ("{:?}"), so that a "%0a" in it
  // cannot start a forged line in the error log.
  throttles[static_cast<std::size_t>(es.level)].log(es.level, "{}: {} {:?}: {}", peer,
                                                    req.method_text(), path, std::strerror(err));
}

}  // namespace

Reply method_reply(const Request& req) {
  if (req.method() == Method::options) {
    Reply r;
    r.kind = Reply::Kind::options;
    r.status = 200;
    return r;
  }
  static const std::string kAllowLine = "Allow: " + std::string(kAllowedMethods) + "\r\n";
  return Reply::error_page(405, kAllowLine);
}

Reply handle_static(ServerContext& ctx, const Request& req, ConnectionWork& work,
                    std::string_view peer) {
  if (req.method() != Method::get && req.method() != Method::head) return method_reply(req);
  TargetStatus ts = normalize_target(req.target(), work.path);
  if (ts != TargetStatus::ok) return Reply::error_page(http_status(ts));
  FileRef file = ctx.files->lookup(work.path, ServerContext::shard());
  if (!file->error && !file->directory && names_directory(work.path)) {
    // A trailing "/" names a directory (path.hpp), but the cache opens the name without it:
    // answer a file there as open(2) would have, ENOTDIR, rather than serve it.
    return Reply::error_page(status_from_errno(ENOTDIR).status);
  }
  if (file->directory) {
    Reply r = directory_reply(ctx, req, work, file);
    if (file->directory) return r;  // a redirect, a listing or an error: no index file
  }
  if (file->error) {
    ErrnoStatus es = status_from_errno(file->error);
    log_lookup_error(es, peer, req, work.path, file->error);
    return Reply::error_page(es.status);
  }
  return file_reply(ctx, req, work, std::move(file));
}

}  // namespace weft::http
