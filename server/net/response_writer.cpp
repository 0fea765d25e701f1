#include "server/net/response_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "runtime/io.hpp"
#include "server/core/processor.hpp"
#include "server/files/page_cache.hpp"
#include "server/handler/response_head.hpp"
#include "server/http/http_date.hpp"
#include "server/http/multipart.hpp"
#include "server/http/status.hpp"
#include "server/ops/log_throttle.hpp"
#include "server/ops/metrics.hpp"

namespace weft::http {

namespace io = weft::rt::io;

rt::TimePoint ResponseWriter::send_deadline() const {
  return rt::coarse_now() + ctx_.config.timeouts_send;
}

bool ResponseWriter::write(const Reply& reply, const Request* req, bool close,
                           const RequestNote& note) {
  HeadBuffer h;
  build_head(h, HeadOrigin{ctx_.config.server_name, ctx_.dates}, reply, req, close, *work_);
  if (h.overflowed()) {
    // The handler keeps client-sized fields (a redirect's Location) within the buffer, so
    // this is the server's own fields (a very long server_name): say so, answer 500, and end
    // the connection.
    static LogThrottle overflowed{10};
    overflowed.log(spdlog::level::err, "{}: the head of a {} overflowed {} bytes; answering 500",
                   peer_, reply.status, HeadBuffer::kCapacity);
    write(Reply::error_page(500), req, true, note);
    return false;
  }
  bool head_only = req && req->method() == Method::head;
  Outgoing o{.status = reply.status, .head = h.size(), .note = note};
  switch (reply.kind) {
    case Reply::Kind::error:
      if (head_only) break;
      o.body = error_body(reply.status).size();
      return queue(o, h.view(), error_body(reply.status).data(), {});
    case Reply::Kind::options:
    case Reply::Kind::not_modified:
      break;
    case Reply::Kind::file:
    case Reply::Kind::error_file:
      if (head_only || reply.length == 0) break;
      if (!reply.boundary.empty()) return stream(reply, h.view(), note);
      if (reply.file->has_bytes()) {
        o.body = reply.length;
        return queue(o, h.view(), reply.file->bytes.get() + reply.offset, reply.file);
      }
      return stream(reply, h.view(), note);
    case Reply::Kind::page: {
      // Sent (or not asked for): a large listing's memory goes back now, not with the
      // pooled state, which keeps it for its next user (ConnectionWork::release_body).
      const bool ok = head_only ? queue(o, h.view(), nullptr, {}) : stream(reply, h.view(), note);
      work_->release_body();
      return ok;
    }
  }
  return queue(o, h.view(), nullptr, {});
}

bool ResponseWriter::queue(const Outgoing& o, std::string_view head, const char* body,
                           FileRef hold) {
  ConnectionWork& w = *work_;
  // Small bodies are copied behind their head: one contiguous slice, one plain send.
  bool copy_body = o.body > 0 && o.body <= kCopyBodyMax;
  std::size_t need = head.size() + (copy_body ? o.body : 0);
  if (w.iov_count + 2 > ConnectionWork::kMaxIov || need > ConnectionWork::kArena - w.arena_used ||
      w.outgoing_count == ConnectionWork::kMaxOutgoing) {
    if (!flush()) {
      owner_.on_finished(o, 0);  // never queued: finished unsent
      return false;
    }
  }
  if (need > ConnectionWork::kArena) copy_body = false;  // cannot happen with our heads; be safe
  char* h = w.arena() + w.arena_used;
  std::memcpy(h, head.data(), head.size());
  std::size_t slice = head.size();
  if (copy_body) {
    std::memcpy(h + slice, body, o.body);
    slice += o.body;
  }
  w.arena_used += slice;
  // Merge with the previous slice when adjacent in the arena (consecutive responses).
  iovec* last = w.iov_count > 0 ? &w.iov[w.iov_count - 1] : nullptr;
  if (last && static_cast<char*>(last->iov_base) + last->iov_len == h) {
    last->iov_len += slice;
  } else {
    w.iov[w.iov_count++] = {h, slice};
  }
  if (o.body > 0 && !copy_body) {
    w.hold[w.iov_count] = std::move(hold);
    w.iov[w.iov_count++] = {const_cast<char*>(body), o.body};
  }
  w.outgoing[w.outgoing_count++] = o;
  return true;
}

bool ResponseWriter::flush(int flags) {
  ConnectionWork& w = *work_;
  if (w.iov_count == 0) {
    // Records held by an earlier MSG_MORE must not wait while the client waits for them.
    if (tls_ && !broken_ && !(flags & MSG_MORE) && tls_->flush(send_deadline(), &token_) < 0) {
      broken_ = true;
    }
    return !broken_;
  }
  uint64_t sent = 0;
  int64_t n = broken_ ? -EPIPE
              : tls_  ? tls_->writev_all(w.iov, w.iov_count, (flags & MSG_MORE) != 0,
                                         send_deadline(), &token_, &sent)
              : w.iov_count == 1
                  ? io::send_all(fd_, w.iov[0].iov_base, w.iov[0].iov_len, flags, send_deadline(),
                                 &token_, &sent)
                  : io::sendv_all(fd_, w.iov, w.iov_count, flags, send_deadline(), &token_, &sent);
  clear_slices();
  if (n < 0) broken_ = true;
  finish_sent(sent, n >= 0);
  return n >= 0;
}

void ResponseWriter::finish_sent(uint64_t sent, bool ok) {
  // The queue's bytes went out in order: each response's head, then its queued body. A
  // response whose body streams after the queue stays in flight when the queue went out.
  ConnectionWork& w = *work_;
  int kept = 0;
  for (int i = 0; i < w.outgoing_count; ++i) {
    Outgoing& o = w.outgoing[i];
    uint64_t head = std::min<uint64_t>(sent, o.head);
    sent -= head;
    uint64_t body = std::min(sent, o.body);
    sent -= body;
    if (ok && o.streams) {
      w.outgoing[kept++] = o;
    } else {
      owner_.on_finished(o, body);
    }
  }
  w.outgoing_count = kept;
}

void ResponseWriter::abandon() {
  if (!work_) return;
  clear_slices();
  finish_sent(0, false);
}

void ResponseWriter::clear_slices() {
  ConnectionWork& w = *work_;
  for (int i = 0; i < w.iov_count; ++i) w.hold[i].reset();
  w.iov_count = 0;
  w.arena_used = 0;
}

bool ResponseWriter::stream(const Reply& reply, std::string_view head, const RequestNote& note) {
  // A large body: flush what is queued with this head, then stream the body. MSG_MORE keeps
  // the head in the socket until the body's bytes join it, as NGINX's tcp_nopush does:
  // without it TCP_NODELAY sends the head as a segment of its own, one more packet (and one
  // more wake-up of the client) per response.
  Outgoing o{.status = reply.status, .head = head.size(), .streams = true, .note = note};
  if (!queue(o, head, nullptr, {}) || !flush(MSG_MORE)) return false;
  uint64_t sent = 0;
  bool ok;
  if (reply.kind == Reply::Kind::page && tls_) {
    ok = send_bytes(work_->body.data(), work_->body.size(), 0, &sent);
  } else if (reply.kind == Reply::Kind::page) {
    ok = io::send_all(fd_, work_->body.data(), work_->body.size(), 0, send_deadline(), &token_,
                      &sent) >= 0;
    if (!ok) broken_ = true;
  } else if (!reply.boundary.empty()) {
    ok = send_parts(reply, &sent);
  } else {
    ok = send_file_body(*reply.file, reply.offset, reply.length, false, &sent);
  }
  // The streamed response is the only one in flight now.
  owner_.on_finished(work_->outgoing[0], sent);
  work_->outgoing_count = 0;
  return ok;
}

bool ResponseWriter::send_parts(const Reply& reply, uint64_t* sent) {
  // Each part's head is text made here; its bytes go out as a single range's would: from
  // memory for a cached file (one sendmsg with the head), else with sendfile or splice.
  // MSG_MORE everywhere but on the close delimiter: the pieces join into full segments.
  const FileEntry& file = *reply.file;
  HeadBuffer h;
  for (const ByteRange& part : reply.range.parts) {
    h.clear();
    append_part_head(h, reply.boundary, file.content_type, part, file.size);
    if (file.has_bytes()) {
      iovec iov[2] = {{const_cast<char*>(h.data()), h.size()},
                      {file.bytes.get() + part.offset, part.length}};
      if (!send_bytes(iov, 2, MSG_MORE, sent)) return false;
      continue;
    }
    if (!send_bytes(const_cast<char*>(h.data()), h.size(), MSG_MORE, sent)) return false;
    if (!send_file_body(file, part.offset, part.length, true, sent)) return false;
  }
  h.clear();
  append_close_delimiter(h, reply.boundary);
  return send_bytes(const_cast<char*>(h.data()), h.size(), 0, sent);
}

bool ResponseWriter::send_bytes(char* data, std::size_t size, int flags, uint64_t* sent) {
  iovec iov{data, size};
  return send_bytes(&iov, 1, flags, sent);
}

bool ResponseWriter::send_bytes(iovec* iov, int count, int flags, uint64_t* sent) {
  uint64_t n = 0;
  bool ok = tls_ ? tls_->writev_all(iov, count, (flags & MSG_MORE) != 0, send_deadline(), &token_,
                                    &n) >= 0
                 : io::sendv_all(fd_, iov, count, flags, send_deadline(), &token_, &n) >= 0;
  *sent += n;
  if (!ok) broken_ = true;  // the peer is gone or stuck, as for any other send
  return ok;
}

bool ResponseWriter::send_file_body(const FileEntry& file, uint64_t offset, uint64_t length,
                                    bool more, uint64_t* sent) {
  if (tls_) return send_tls_file(file, offset, length, sent);
  switch (ctx_.config.body) {
    case BodyPath::splice:
      return send_with_splice(file, offset, length, more, sent);
    case BodyPath::sendfile:
      return send_with_sendfile(file, offset, length, sent);
    case BodyPath::automatic:
      break;
  }
  return send_auto(file, offset, length, more, sent);
}

bool ResponseWriter::send_auto(const FileEntry& file, uint64_t offset, uint64_t length, bool more,
                               uint64_t* sent) {
  // Each piece is asked about just before it goes, however long the body takes: a slow
  // reader's later pages may be evicted after its first ones were found cached, and a
  // sendfile of them would wait for the disk on the processor. A file partly cached goes
  // inline where it can.
  const int64_t start = rt::to_ns(rt::coarse_now());
  const bool whole = offset == 0 && length == file.size;
  bool all_resident = true;
  while (length > 0) {
    const uint64_t n = std::min(length, kResidencyRange);
    const bool resident = piece_resident(file, offset, n);
    all_resident = all_resident && resident;
    const int64_t done = resident ? send_resident_piece(file, offset, n, sent)
                                  : send_cold_piece(file, offset, length, more, sent);
    if (done < 0) return false;
    if (done > 0) {
      ctx_.processor_metrics().on_body_range(resident, resident ? 0 : static_cast<uint64_t>(done));
    }
    offset += static_cast<uint64_t>(done);
    length -= static_cast<uint64_t>(done);
  }
  // Wholly cached as of the start: the oldest time every piece can vouch for.
  if (whole && all_resident) file.resident_ns.store(start, std::memory_order_relaxed);
  return true;
}

bool ResponseWriter::piece_resident(const FileEntry& file, uint64_t offset, uint64_t length) {
  // A file found wholly cached a moment ago is still cached: its pages were just used, so
  // they are the last the kernel would evict. Skipping the question then keeps the cost
  // of "auto" off hot files. Looked at per piece: the memo lapses during a long body.
  const bool recent =
      rt::to_ns(rt::coarse_now()) - file.resident_ns.load(std::memory_order_relaxed) <
      kResidentMemoNs;
  return recent || range_resident(file.fd, offset, length);
}

int64_t ResponseWriter::send_resident_piece(const FileEntry& file, uint64_t offset, uint64_t length,
                                            uint64_t* sent) {
  int64_t n = io::try_sendfile(fd_, file.fd, static_cast<int64_t>(offset), length);
  if (n == -EAGAIN) {
    // Full: wait for room with no sendfile pending, so that the pages are asked about
    // again when it comes (however long the client takes).
    const int ready = io::poll(fd_, POLLOUT, send_deadline(), &token_);
    if (ready >= 0) return 0;
    n = ready;
  }
  if (n <= 0) {
    // The Content-Length can no longer be honoured: end the connection rather than send
    // something else.
    on_body_error(file, n);
    return -1;
  }
  *sent += static_cast<uint64_t>(n);
  return n;
}

int64_t ResponseWriter::send_room() const {
  int buffer = 0;
  socklen_t len = sizeof buffer;
  int queued = 0;
  if (::getsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buffer, &len) != 0 ||
      ::ioctl(fd_, SIOCOUTQ, &queued) != 0) {
    return -1;
  }
  return std::max<int64_t>(0, int64_t{buffer} - queued);
}

std::optional<int64_t> ResponseWriter::wait_for_room(const FileEntry& file) {
  // Room first: a client that reads slowly waits here holding no buffer, and what is read
  // is what the socket takes, so the buffer goes back as soon as the send returns.
  int64_t room = send_room();
  if (room >= 0 && static_cast<uint64_t>(room) < kMinColdPiece) {
    const int ready = io::poll(fd_, POLLOUT, send_deadline(), &token_);
    if (ready < 0) {
      on_body_error(file, ready);
      return std::nullopt;
    }
    room = send_room();
  }
  return room;
}

uint64_t ResponseWriter::piece_size(uint64_t length, int64_t room) const {
  uint64_t want = std::min<uint64_t>(length, ctx_.config.cold_read_size);
  if (room >= 0)
    want = std::min(want, std::max<uint64_t>(static_cast<uint64_t>(room), kMinColdPiece));
  return want;
}

int64_t ResponseWriter::send_cold_piece(const FileEntry& file, uint64_t offset, uint64_t length,
                                        bool more, uint64_t* sent) {
  const std::optional<int64_t> room = wait_for_room(file);
  if (!room) return -1;
  const uint64_t want = piece_size(length, *room);
  ResourcePool& pool = ctx_.pool();
  std::unique_ptr<char[]> buf = pool.take_buffer(send_deadline());  // at most max_lent_buffers()
  if (!buf) {
    on_body_error(file, -ETIMEDOUT);
    return -1;
  }
  // The driver parks this fiber while the disk works; its processor runs the others.
  const auto at = static_cast<int64_t>(offset);
  const int64_t n = ctx_.config.cold_offload
                        ? io::read_cold(file.fd, buf.get(), want, at, send_deadline(), &token_)
                        : io::read(file.fd, buf.get(), want, at, send_deadline(), &token_);
  bool ok = n > 0;
  if (!ok) {
    on_body_error(file, n);  // 0: the file shrank under us
  } else {
    const auto got = static_cast<uint64_t>(n);
    ok = send_bytes(buf.get(), got, got < length || more ? MSG_MORE : 0, sent);
  }
  pool.give_buffer(std::move(buf));
  return ok ? n : -1;
}

bool ResponseWriter::send_tls_file(const FileEntry& file, uint64_t offset, uint64_t length,
                                   uint64_t* sent) {
  while (length > 0) {
    const int64_t n = send_tls_piece(file, offset, length, sent);
    if (n < 0) return false;
    offset += static_cast<uint64_t>(n);
    length -= static_cast<uint64_t>(n);
  }
  return true;
}

int64_t ResponseWriter::send_tls_piece(const FileEntry& file, uint64_t offset, uint64_t length,
                                       uint64_t* sent) {
  const std::optional<int64_t> room = wait_for_room(file);
  if (!room) return -1;
  const uint64_t want = piece_size(length, *room);
  // Cached pages are copied on the processor (a read that cannot wait for the disk); the
  // others go the cold path's way, so a processor never waits for the disk here either.
  const bool resident = piece_resident(file, offset, want);
  ResourcePool& pool = ctx_.pool();
  std::unique_ptr<char[]> buf = pool.take_buffer(send_deadline());
  if (!buf) {
    on_body_error(file, -ETIMEDOUT);
    return -1;
  }
  const auto at = static_cast<int64_t>(offset);
  const int64_t n = !resident && ctx_.config.cold_offload
                        ? io::read_cold(file.fd, buf.get(), want, at, send_deadline(), &token_)
                        : io::read(file.fd, buf.get(), want, at, send_deadline(), &token_);
  // The records hold the bytes now: the buffer goes back before the send waits for the client.
  const int64_t sealed = n > 0 ? tls_->seal(buf.get(), static_cast<std::size_t>(n)) : n;
  pool.give_buffer(std::move(buf));
  const int64_t r = sealed > 0 ? tls_->flush(send_deadline(), &token_) : sealed;
  if (r < 0 || sealed <= 0) {
    on_body_error(file, r < 0 ? r : sealed);  // 0: the file shrank under us
    return -1;
  }
  ctx_.processor_metrics().on_body_range(resident, resident ? 0 : static_cast<uint64_t>(n));
  *sent += static_cast<uint64_t>(n);
  return n;
}

void ResponseWriter::on_body_error(const FileEntry& file, int64_t result) {
  // The head is out, so the only honest end is to close. 0: the file is shorter than promised
  // (truncated under us). The client going away or stalling is routine; anything else is the
  // file (EIO from the disk, say) and deserves a loud line. The path is client input: quoted.
  switch (result) {
    case 0:
      static LogThrottle shrank{10};
      shrank.log(spdlog::level::warn, "{}: {:?} shrank while being sent; closing", peer_,
                 file.path);
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
      static LogThrottle failed{10};
      failed.log(spdlog::level::err, "{}: sending {:?}: {}; closing", peer_, file.path,
                 std::strerror(static_cast<int>(-result)));
      break;
  }
  broken_ = true;
}

bool ResponseWriter::send_with_sendfile(const FileEntry& file, uint64_t offset, uint64_t length,
                                        uint64_t* sent) {
  while (length > 0) {
    // Each call may make progress; the deadline is "no progress for timeouts_send".
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
    *sent += static_cast<uint64_t>(n);
  }
  return true;
}

bool ResponseWriter::send_with_splice(const FileEntry& file, uint64_t offset, uint64_t length,
                                      bool more, uint64_t* sent) {
  ResourcePool& pool = ctx_.pool();
  auto pipe = pool.take_pipe();
  if (pipe.first < 0) return send_with_sendfile(file, offset, length, sent);
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
    int64_t m = io::splice(pipe.first, -1, fd_, -1, in_pipe,
                           SPLICE_F_MOVE | (length > 0 || more ? SPLICE_F_MORE : 0),
                           send_deadline(), &token_);
    if (m <= 0) {
      if (m < 0) on_body_error(file, m);
      ok = false;
      break;
    }
    in_pipe -= static_cast<uint64_t>(m);
    *sent += static_cast<uint64_t>(m);
  }
  pool.give_pipe(pipe, ok && in_pipe == 0);
  if (!ok) broken_ = true;
  return ok;
}

}  // namespace weft::http
