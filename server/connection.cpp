#include "server/connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/scheduler.hpp"
#include "server/access_log.hpp"
#include "server/conditional.hpp"
#include "server/metrics.hpp"
#include "server/path.hpp"
#include "server/range.hpp"
#include "server/status.hpp"

namespace weft::http {

namespace io = weft::rt::io;

namespace {

constexpr std::string_view kAllow = "GET, HEAD, OPTIONS";
// Lingering close: after our last response, read and discard what the client still sends
// for up to this long, so that it sees the response instead of a reset.
constexpr auto kLingerTime = std::chrono::milliseconds(500);
constexpr std::size_t kLingerBytes = 64 * 1024;

bool is_unreserved_path_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("-._~/!$&'()*+,;=:@", c) != nullptr;
}

// Percent-encodes a decoded path for a Location header.
void encode_path(std::string_view path, std::string& out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : path) {
    if (c && is_unreserved_path_byte(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

std::string_view query_of(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return {};
  auto f = target.find('#', q);
  return target.substr(q, f == std::string_view::npos ? std::string_view::npos : f - q);
}

int64_t unix_now() {
  return static_cast<int64_t>(std::time(nullptr));
}

}  // namespace

struct Connection::Reply {
  int status = 200;
  FileRef file;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool head_only = false;
  bool close = false;
  bool not_modified = false;
  RangeResult range;
};

Connection::Connection(ServerContext& ctx, int fd, const sockaddr_storage& peer, bool rejected)
    : ctx_(ctx), fd_(fd), rejected_(rejected) {
  if (peer.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(peer).sin_addr, peer_, sizeof peer_);
  } else if (peer.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr, peer_,
              sizeof peer_);
  }
  ctx_.open_connections.fetch_add(1, std::memory_order_relaxed);
  ctx_.connections.add(1);
  ctx_.enroll(this);
}

Connection::~Connection() {
  ctx_.withdraw(this);
  release_work();
  if (fd_ >= 0) ::close(fd_);
  ctx_.open_connections.fetch_sub(1, std::memory_order_relaxed);
  if (ctx_.metrics && !rejected_) {
    rt::Processor* p = rt::Processor::current();
    ctx_.metrics->on_connection_close(p ? p->index() : 0);
  }
  ctx_.connections.done();
}

void Connection::start(Connection* c) {
  if (c->run() == Outcome::closed) delete c;
}

void Connection::on_ready(void* arg, int result) {
  auto* c = static_cast<Connection*>(arg);
  c->idle_.store(false, std::memory_order_release);
  // Timed out or cancelled (shutdown) while idle: close quietly.
  if (result < 0 || c->ctx_.draining.load(std::memory_order_acquire)) {
    delete c;
    return;
  }
  start(c);
}

void Connection::drain() {
  if (idle_.load(std::memory_order_acquire)) token_.cancel();
}

void Connection::acquire_work() {
  if (!work_) work_ = ctx_.pool().take_work();
}

void Connection::release_work() {
  if (!work_) return;
  for (int i = 0; i < iov_count_; ++i) work_->hold[i].reset();
  iov_count_ = 0;
  arena_used_ = 0;
  queued_bytes_ = 0;
  ctx_.pool().give_work(std::exchange(work_, nullptr));
}

rt::TimePoint Connection::send_deadline() const {
  return rt::coarse_now() + ctx_.config.send_timeout;
}

Connection::Outcome Connection::run() {
  acquire_work();
  if (rejected_) {
    respond_error(503, nullptr, true);
    log_access(nullptr, 503, error_body(503).size(), rt::coarse_now());
    lingering_close();
    return Outcome::closed;
  }
  const Config& cfg = ctx_.config;
  while (true) {
    ParseResult r = work_->parser.parse({work_->read_area(), have_});
    if (r.status == ParseStatus::need_more) {
      have_ = r.keep;
      if (!flush()) return Outcome::closed;
      bool idle = have_ == 0;
      rt::TimePoint deadline;
      if (idle) {
        if (ctx_.draining.load(std::memory_order_acquire) || closing_) return Outcome::closed;
        // A fresh connection waits for its first request for timeouts.header, a kept-alive
        // one for its next for timeouts.keepalive; both counted from when the wait began.
        if (idle_deadline_ == rt::TimePoint{}) {
          idle_deadline_ =
              rt::coarse_now() + (requests_ == 0 ? cfg.header_timeout : cfg.keepalive_timeout);
        }
        // Wait briefly with this fiber (a busy client's next request comes within
        // milliseconds); past that, go idle without a fiber, stack or buffer.
        deadline = std::min(idle_deadline_, rt::coarse_now() + kActiveWait);
        idle_.store(true, std::memory_order_release);
        // Shutdown may have begun between the check and the store: look again.
        if (ctx_.draining.load(std::memory_order_acquire)) return Outcome::closed;
      } else {
        deadline = request_started_ + cfg.header_timeout;
      }
      // After an answer the client's next request cannot be here yet (it waits for the
      // answer), so the wait comes first: no recv that fails with EAGAIN. A fresh connection
      // may well hold its request already, and a partial one may have the rest coming.
      char* into = work_->read_area() + have_;
      std::size_t room = work_->read_cap - have_;
      int64_t n = idle && requests_ > 0 ? io::recv_when_ready(fd_, into, room, 0, deadline, &token_)
                                        : io::recv(fd_, into, room, 0, deadline, &token_);
      idle_.store(false, std::memory_order_release);
      if (n == 0) return Outcome::closed;  // the client closed
      if (n < 0) {
        if (n == -ETIMEDOUT && idle && rt::coarse_now() < idle_deadline_) return go_idle();
        if (n == -ETIMEDOUT && !idle) {
          respond_error(408, nullptr, true);
          log_access(nullptr, 408, error_body(408).size(), request_started_);
          lingering_close();
        }
        return Outcome::closed;
      }
      if (have_ == 0) {
        request_started_ = rt::coarse_now();
        idle_deadline_ = {};
      }
      have_ += static_cast<std::size_t>(n);
      continue;
    }
    if (r.status == ParseStatus::error) {
      spdlog::debug("{}: bad request ({}): {}", peer_, r.http_status, r.reason);
      respond_error(r.http_status, nullptr, true);
      log_access(nullptr, r.http_status, error_body(r.http_status).size(), request_started_);
      flush();
      lingering_close();
      return Outcome::closed;
    }
    if (request_started_ == rt::TimePoint{}) request_started_ = rt::coarse_now();
    bool keep = serve(work_->parser.request(), request_started_);
    std::size_t used = work_->parser.consumed();
    if (used < have_) std::memmove(work_->read_area(), work_->read_area() + used, have_ - used);
    have_ -= used;
    request_started_ = have_ > 0 ? rt::coarse_now() : rt::TimePoint{};
    if (!keep) {
      flush();
      lingering_close();
      return Outcome::closed;
    }
    if (have_ == 0 && !flush()) return Outcome::closed;
  }
}

Connection::Outcome Connection::go_idle() {
  release_work();
  idle_.store(true, std::memory_order_release);
  if (ctx_.draining.load(std::memory_order_acquire)) return Outcome::closed;
  // From here the connection belongs to the readiness wait: on_ready runs it again (or closes
  // it) on a new fiber, possibly before this fiber has returned. Touch nothing after arming.
  int rc =
      io::when_ready(ready_, fd_, POLLIN, idle_deadline_, &token_, &Connection::on_ready, this);
  if (rc < 0) {
    idle_.store(false, std::memory_order_release);
    return Outcome::closed;
  }
  return Outcome::idle;
}

void Connection::begin_head(HeadBuffer& h, int status, bool close, const Request* req) {
  h.append(status_line(status));
  h.field("Server", ctx_.config.server_name);
  HttpDateBuffer date;
  h.field("Date", ctx_.dates.get(date));
  if (close) {
    h.append("Connection: close\r\n");
  } else if (req && req->version() == Version::http_1_0) {
    h.append("Connection: keep-alive\r\n");  // 1.0 keeps alive only when told so
  }
}

bool Connection::respond_error(int status, const Request* req, bool close, std::string_view extra) {
  HeadBuffer h;
  begin_head(h, status, close, req);
  std::string_view body = error_body(status);
  h.append("Content-Type: text/html\r\n");
  h.field("Content-Length", body.size());
  h.append(extra);
  h.append("\r\n");
  bool head_only = req && req->method() == Method::head;
  if (ctx_.metrics) ctx_.metrics->on_request(rt::Processor::current()->index(), status, 0);
  return queue(h.view(), head_only ? nullptr : body.data(), head_only ? 0 : body.size(), {});
}

bool Connection::respond_listing(const Request& req, bool close, uint64_t* sent) {
  // Reads the directory with plain system calls on this processor: listings are off by
  // default, and small directories read from the page cache take microseconds.
  std::string rel = work_->path.size() > 1 ? work_->path.substr(1) : std::string(".");
  int dfd = ::openat(ctx_.root_fd, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0) return false;
  DIR* dir = ::fdopendir(dfd);
  if (!dir) {
    ::close(dfd);
    return false;
  }
  std::vector<std::pair<std::string, bool>> names;  // name, is a directory
  while (dirent* d = ::readdir(dir)) {
    std::string_view name = d->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    bool is_dir =
        d->d_type == DT_DIR ||
        (d->d_type == DT_UNKNOWN && ::fstatat(dfd, d->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode));
    names.emplace_back(std::string(name), is_dir);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  auto html_escape = [](std::string_view in, std::string& out) {
    for (char c : in) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out += c;
      }
    }
  };
  std::string body = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ";
  html_escape(work_->path, body);
  body += "</title></head>\n<body><h1>Index of ";
  html_escape(work_->path, body);
  body += "</h1><ul>\n<li><a href=\"../\">../</a></li>\n";
  std::string href;
  for (const auto& [name, is_dir] : names) {
    href.clear();
    encode_path(name, href);
    body += "<li><a href=\"";
    html_escape(href, body);
    if (is_dir) body += '/';
    body += "\">";
    html_escape(name, body);
    if (is_dir) body += '/';
    body += "</a></li>\n";
  }
  body += "</ul></body></html>\n";
  HeadBuffer h;
  begin_head(h, 200, close, &req);
  h.append("Content-Type: text/html\r\n");
  h.field("Content-Length", body.size());
  h.append("\r\n");
  bool head_only = req.method() == Method::head;
  if (ctx_.metrics) ctx_.metrics->on_request(rt::Processor::current()->index(), 200, body.size());
  // The body is a local string: send it now rather than leave it queued.
  bool ok = queue(h.view(), nullptr, 0, {}) && flush();
  if (ok && !head_only) {
    ok = io::send_all(fd_, body.data(), body.size(), 0, send_deadline(), &token_) >= 0;
    if (!ok) closing_ = true;
  }
  *sent = ok && !head_only ? body.size() : (ok ? 0 : 1);
  return ok;
}

bool Connection::serve(const Request& req, rt::TimePoint started) {
  const Config& cfg = ctx_.config;
  ++requests_;
  bool close = !req.keep_alive() || ctx_.draining.load(std::memory_order_acquire) ||
               requests_ >= cfg.max_requests_per_connection;
  Method method = req.method();
  auto done = [&](int status, uint64_t body, bool ok) {
    log_access(&req, status, body, started);
    return ok && !close;
  };
  // An error page; the access log counts its bytes, as NGINX's $body_bytes_sent does.
  auto fail = [&](int status, std::string_view extra = {}) {
    bool ok = respond_error(status, &req, close, extra);
    uint64_t page = method == Method::head ? 0 : error_body(status).size();
    return done(status, ok ? page : 0, ok);
  };

  if (method == Method::other) {
    std::string extra = "Allow: " + std::string(kAllow) + "\r\n";
    return fail(405, extra);
  }
  if (method == Method::options) {
    HeadBuffer h;
    begin_head(h, 200, close, &req);
    h.field("Allow", kAllow);
    h.append("Content-Length: 0\r\n\r\n");
    if (ctx_.metrics) ctx_.metrics->on_request(rt::Processor::current()->index(), 200, 0);
    return done(200, 0, queue(h.view(), nullptr, 0, {}));
  }

  TargetStatus ts = normalize_target(req.target(), work_->path);
  if (ts != TargetStatus::ok) {
    int status = http_status(ts);
    return fail(status);
  }
  unsigned shard = rt::Processor::current()->index();
  FileRef file = ctx_.files->lookup(work_->path, shard);
  if (!file->error && !file->directory && work_->path.back() == '/') {
    // A trailing "/" names a directory (path.hpp), but the cache opens the name without it:
    // answer a file there as open(2) would have, ENOTDIR, rather than serve it.
    return fail(status_from_errno(ENOTDIR).status);
  }
  if (file->directory) {
    if (work_->path.back() != '/') {
      work_->scratch.assign("Location: ");
      encode_path(work_->path, work_->scratch);
      work_->scratch.append("/");
      work_->scratch.append(query_of(req.target()));
      work_->scratch.append("\r\n");
      return fail(301, work_->scratch);
    }
    FileRef found;
    for (const std::string& index : cfg.index) {
      work_->scratch.assign(work_->path).append(index);
      FileRef candidate = ctx_.files->lookup(work_->scratch, shard);
      if (!candidate->error && !candidate->directory) {
        found = std::move(candidate);
        break;
      }
      if (candidate->error && candidate->error != ENOENT && candidate->error != ENOTDIR) {
        found = std::move(candidate);  // e.g. EACCES on the index: report that
        break;
      }
    }
    if (!found) {
      if (!cfg.directory_listing) return fail(403);
      uint64_t sent = 0;
      bool ok = respond_listing(req, close, &sent);
      if (!ok && sent == 0) return fail(403);  // unreadable directory
      return done(200, sent, ok);
    }
    file = std::move(found);
  }
  if (file->error) {
    ErrnoStatus es = status_from_errno(file->error);
    // The path is decoded client input: quoted and escaped ("{:?}"), so that a "%0a" in it
    // cannot start a forged line in the error log.
    spdlog::log(es.level, "{}: {} {:?}: {}", peer_, req.method_text(), work_->path,
                std::strerror(file->error));
    return fail(es.status);
  }

  Reply rep;
  rep.close = close;
  rep.head_only = method == Method::head;
  int64_t now_s = unix_now();
  Validators v{file->etag.view(), file->mtime};
  switch (evaluate_preconditions(Preconditions::of(req), v, method, now_s)) {
    case Precondition::not_modified:
      rep.status = 304;
      rep.not_modified = true;
      break;
    case Precondition::failed:
      return fail(412);
    case Precondition::proceed:
      break;
  }
  rep.length = file->size;
  if (!rep.not_modified) {
    if (auto range = req.range(); range && if_range_allows(req.if_range(), v, now_s)) {
      rep.range = parse_range(*range, file->size);
      if (rep.range.kind == RangeResult::Kind::unsatisfiable) {
        ContentRangeBuffer cr;
        work_->scratch.assign("Content-Range: ")
            .append(format_content_range(rep.range, cr))
            .append("\r\n");
        return fail(416, work_->scratch);
      }
      if (rep.range.kind == RangeResult::Kind::single) {
        rep.status = 206;
        rep.offset = rep.range.offset;
        rep.length = rep.range.length;
      }
    }
  }
  rep.file = std::move(file);
  uint64_t body = rep.head_only || rep.not_modified ? 0 : rep.length;
  bool ok = send_reply(rep, &req);
  return done(rep.status, ok ? body : 0, ok);
}

bool Connection::send_reply(Reply& r, const Request* req) {
  HeadBuffer h;
  const FileEntry& f = *r.file;
  begin_head(h, r.status, r.close, req);
  if (r.not_modified) {
    HttpDateBuffer lm;
    h.field("Last-Modified", format_http_date(f.mtime, lm));
    h.field("ETag", f.etag.view());
    h.append("\r\n");
    if (ctx_.metrics) ctx_.metrics->on_request(rt::Processor::current()->index(), 304, 0);
    return queue(h.view(), nullptr, 0, {});
  }
  h.append(f.headers);
  h.field("Content-Length", r.length);
  if (r.status == 206) {
    ContentRangeBuffer cr;
    h.field("Content-Range", format_content_range(r.range, cr));
  }
  h.append("\r\n");
  if (h.overflowed()) return respond_error(500, req, true);
  if (ctx_.metrics) {
    ctx_.metrics->on_request(rt::Processor::current()->index(), r.status,
                             r.head_only ? 0 : r.length);
  }
  if (r.head_only || r.length == 0) return queue(h.view(), nullptr, 0, {});
  if (f.has_bytes()) {
    const char* body = f.bytes.get() + r.offset;
    return queue(h.view(), body, r.length, r.file);
  }
  // A large body: flush what is queued with this head, then stream the file. MSG_MORE keeps
  // the head in the socket until the file's bytes join it, as NGINX's tcp_nopush does:
  // without it TCP_NODELAY sends the head as a segment of its own, one more packet (and one
  // more wake-up of the client) per response.
  if (!queue(h.view(), nullptr, 0, {}) || !flush(MSG_MORE)) return false;
  return send_file_body(f, r.offset, r.length);
}

bool Connection::queue(std::string_view head, const char* body, std::size_t body_len,
                       FileRef hold) {
  // Small bodies are copied behind their head: one contiguous slice, one plain send.
  bool copy_body = body_len > 0 && body_len <= kCopyBodyMax;
  std::size_t need = head.size() + (copy_body ? body_len : 0);
  if (iov_count_ + 2 > ConnectionWork::kMaxIov || need > ConnectionWork::kArena - arena_used_) {
    if (!flush()) return false;
  }
  if (need > ConnectionWork::kArena) copy_body = false;  // cannot happen with our heads; be safe
  char* h = work_->arena() + arena_used_;
  std::memcpy(h, head.data(), head.size());
  std::size_t slice = head.size();
  if (copy_body) {
    std::memcpy(h + slice, body, body_len);
    slice += body_len;
  }
  arena_used_ += slice;
  // Merge with the previous slice when adjacent in the arena (consecutive responses).
  if (iov_count_ > 0 && static_cast<char*>(work_->iov[iov_count_ - 1].iov_base) +
                                work_->iov[iov_count_ - 1].iov_len ==
                            h) {
    work_->iov[iov_count_ - 1].iov_len += slice;
  } else {
    work_->iov[iov_count_++] = {h, slice};
  }
  if (body_len > 0 && !copy_body) {
    work_->hold[iov_count_] = std::move(hold);
    work_->iov[iov_count_++] = {const_cast<char*>(body), body_len};
  }
  queued_bytes_ += head.size() + body_len;
  return true;
}

bool Connection::flush(int flags) {
  if (iov_count_ == 0) return true;
  int64_t n = iov_count_ == 1
                  ? io::send_all(fd_, work_->iov[0].iov_base, work_->iov[0].iov_len, flags,
                                 send_deadline(), &token_)
                  : io::sendv_all(fd_, work_->iov, iov_count_, flags, send_deadline(), &token_);
  for (int i = 0; i < iov_count_; ++i) work_->hold[i].reset();
  iov_count_ = 0;
  arena_used_ = 0;
  queued_bytes_ = 0;
  if (n < 0) {
    closing_ = true;
    return false;
  }
  return true;
}

bool Connection::send_file_body(const FileEntry& file, uint64_t offset, uint64_t length) {
  return ctx_.config.body == BodyPath::splice ? send_with_splice(file, offset, length)
                                              : send_with_sendfile(file, offset, length);
}

void Connection::on_body_error(const FileEntry& file, int64_t result) {
  // The head is out, so the only honest end is to close. 0: the file is shorter than promised
  // (truncated under us). The client going away or stalling is routine; anything else is the
  // file (EIO from the disk, say) and deserves a loud line. The path is client input: quoted.
  switch (result) {
    case 0:
      spdlog::warn("{}: {:?} shrank while being sent; closing", peer_, file.path);
      break;
    case -EPIPE:
    case -ECONNRESET:
    case -ENOTCONN:
    case -ETIMEDOUT:
    case -ECANCELED:
      spdlog::debug("{}: sending {:?}: {}", peer_, file.path,
                    std::strerror(static_cast<int>(-result)));
      break;
    default:
      spdlog::error("{}: sending {:?}: {}; closing", peer_, file.path,
                    std::strerror(static_cast<int>(-result)));
      break;
  }
  closing_ = true;
}

bool Connection::send_with_sendfile(const FileEntry& file, uint64_t offset, uint64_t length) {
  while (length > 0) {
    // Each call may make progress; the deadline is "no progress for send_timeout".
    int64_t n = io::sendfile(fd_, file.fd, static_cast<int64_t>(offset),
                             std::min<uint64_t>(length, 1 << 30), send_deadline(), &token_);
    if (n <= 0) {
      // The Content-Length can no longer be honoured: end the connection rather than send
      // something else.
      on_body_error(file, n);
      return false;
    }
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  return true;
}

bool Connection::send_with_splice(const FileEntry& file, uint64_t offset, uint64_t length) {
  ResourcePool& pool = ctx_.pool();
  auto pipe = pool.take_pipe();
  if (pipe.first < 0) return send_with_sendfile(file, offset, length);
  bool ok = true;
  uint64_t in_pipe = 0;
  const uint64_t chunk = ctx_.config.pipe_size;
  while (length > 0 || in_pipe > 0) {
    if (length > 0 && in_pipe == 0) {
      int64_t n = io::splice(file.fd, static_cast<int64_t>(offset), pipe.second, -1,
                             std::min(length, chunk), SPLICE_F_MOVE, send_deadline(), &token_);
      if (n <= 0) {
        on_body_error(file, n);
        ok = false;
        break;
      }
      offset += static_cast<uint64_t>(n);
      length -= static_cast<uint64_t>(n);
      in_pipe += static_cast<uint64_t>(n);
    }
    int64_t m =
        io::splice(pipe.first, -1, fd_, -1, in_pipe,
                   SPLICE_F_MOVE | (length > 0 ? SPLICE_F_MORE : 0), send_deadline(), &token_);
    if (m <= 0) {
      if (m < 0) on_body_error(file, m);
      ok = false;
      break;
    }
    in_pipe -= static_cast<uint64_t>(m);
  }
  pool.give_pipe(pipe, ok && in_pipe == 0);
  if (!ok) closing_ = true;
  return ok;
}

void Connection::log_access(const Request* req, int status, uint64_t body_bytes,
                            rt::TimePoint started) {
  if (!ctx_.access_log) return;
  AccessRecord rec;
  rec.remote_addr = peer_;
  rec.time_unix = unix_now();
  rec.status = status;
  rec.body_bytes = body_bytes;
  if (started != rt::TimePoint{}) {
    rec.request_time_s = std::chrono::duration<double>(rt::now() - started).count();
  }
  if (req) {
    rec.method = req->method_text();
    rec.target = req->target();
    rec.protocol = req->version() == Version::http_1_0 ? "HTTP/1.0" : "HTTP/1.1";
    rec.referer = req->find("Referer").value_or("");
    rec.user_agent = req->find("User-Agent").value_or("");
  }
  ctx_.access_log->log(rec);
}

void Connection::lingering_close() {
  flush();
  if (closing_) return;  // the peer is gone or stuck: nothing to linger for
  io::shutdown(fd_, SHUT_WR);
  rt::TimePoint until = rt::now() + kLingerTime;
  std::size_t drained = 0;
  while (drained < kLingerBytes) {
    int64_t n = io::recv(fd_, work_->read_area(), work_->read_cap, 0, until, &token_);
    if (n <= 0) break;
    drained += static_cast<std::size_t>(n);
  }
}

}  // namespace weft::http
