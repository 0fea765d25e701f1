#include "server/h2/session.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>

#include "server/h2/request_fields.hpp"
#include "server/h2/response_fields.hpp"
#include "server/http/multipart.hpp"
#include "server/http/status.hpp"
#include "server/ops/log_throttle.hpp"

namespace weft::http {

// One stream: its request's fields, then its response and the body still to send.
struct H2Stream {
  H2Stream(int32_t stream_id, const Config& c)
      : id(stream_id), fields(c.max_headers, c.h2_max_header_list_size) {}

  // A slice of the body: of `text`, of the cached file's bytes, or read from its fd.
  struct Piece {
    enum class Kind : uint8_t { text, bytes, file } kind;
    uint64_t offset;
    uint64_t length;
  };

  int32_t id;
  RequestFields fields;
  rt::TimePoint started{};
  rt::TimePoint progress{};  // the request, or the last DATA frame sent
  bool answered = false;
  bool reset = false;  // RST_STREAM sent for a stall
  int status = 0;
  FileRef file;
  std::string text;  // a page's body, a multipart's framing, an error page
  std::vector<Piece> pieces;
  std::size_t piece = 0;
  uint64_t piece_done = 0;
  uint64_t body_sent = 0;
  RequestNote note;
  std::string notes;

  // Makes this (closed) stream the new stream `stream_id`, keeping its strings' capacity.
  void reuse(int32_t stream_id) {
    id = stream_id;
    fields.clear();
    answered = reset = false;
    status = 0;
    file.reset();
    text.clear();
    pieces.clear();
    piece = 0;
    piece_done = 0;
    body_sent = 0;
    note = {};
    notes.clear();
  }

  // Returns whether it holds little enough memory to be kept for reuse.
  bool small() const {
    return fields.capacity() <= kSmallStream && text.capacity() <= kSmallStream &&
           notes.capacity() <= kSmallStream;
  }

  // What a kept stream may hold in each of its strings. Picked: a browser's request fields
  // and an error page fit.
  static constexpr std::size_t kSmallStream = 4096;
};

// nghttp2's callbacks, each given the session as user_data.
struct H2Callbacks {
  static H2Session& self(void* user) { return *static_cast<H2Session*>(user); }

  static int on_begin_headers(nghttp2_session* s, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    H2Session& h = self(user);
    H2Stream* stream = h.take_stream(frame->hd.stream_id);
    nghttp2_session_set_stream_user_data(s, frame->hd.stream_id, stream);
    return 0;
  }

  static int on_header(nghttp2_session* s, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void*) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto* stream =
        static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(s, frame->hd.stream_id));
    if (stream) {
      stream->fields.add({reinterpret_cast<const char*>(name), namelen},
                         {reinterpret_cast<const char*>(value), valuelen});
    }
    return 0;
  }

  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    H2Session& h = self(user);
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS:
        // The whole header block is in (CONTINUATIONs included): answer without waiting
        // for a body a static server drops anyway.
        if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) h.ready_.push_back(frame->hd.stream_id);
        break;
      case NGHTTP2_WINDOW_UPDATE:
        if (++h.window_updates_ > h.config_.h2_max_window_updates) {
          spdlog::debug("{}: HTTP/2: over {} WINDOW_UPDATEs with no DATA sent; GOAWAY",
                        h.wire_.peer, h.config_.h2_max_window_updates);
          h.calm_ = true;
          return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        break;
      default:
        break;
    }
    return 0;
  }

  static int on_frame_send(nghttp2_session* s, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      // Also those nghttp2 decides itself (a protocol error, Rapid Reset, a flood).
      H2Session& h = self(user);
      h.goaway_ = true;
      if (frame->goaway.error_code != NGHTTP2_NO_ERROR) {
        spdlog::debug("{}: HTTP/2: GOAWAY {} sent", h.wire_.peer,
                      nghttp2_http2_strerror(frame->goaway.error_code));
      }
      return 0;
    }
    if (frame->hd.type != NGHTTP2_DATA) return 0;
    self(user).window_updates_ = 0;
    auto* stream =
        static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(s, frame->hd.stream_id));
    if (stream) {
      stream->body_sent += frame->hd.length;
      stream->progress = rt::coarse_now();
    }
    return 0;
  }

  static int on_stream_close(nghttp2_session* s, int32_t id, uint32_t, void* user) {
    auto* stream = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(s, id));
    if (stream) self(user).close_stream(stream);
    return 0;
  }

  // Tells nghttp2 how much of the body the next DATA frame carries; the bytes go into the
  // send batch in send_data, straight from the file or memory (NO_COPY: nghttp2 would copy
  // them into its own buffer first, and produce() into the batch again).
  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t*, size_t length, uint32_t* flags,
                           nghttp2_data_source* source, void*) {
    const auto& s = *static_cast<H2Stream*>(source->ptr);
    uint64_t left = 0;
    for (std::size_t i = s.piece; i < s.pieces.size(); ++i) left += s.pieces[i].length;
    left -= s.piece_done;
    const uint64_t n = std::min<uint64_t>(length, left);
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == left) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  // Appends one whole DATA frame (its 9-byte header, then `length` body bytes; weft never
  // pads) to the batch produce() is filling. A file that cannot be read resets the stream.
  static int send_data(nghttp2_session*, nghttp2_frame*, const uint8_t* framehd, size_t length,
                       nghttp2_data_source* source, void* user) {
    H2Session& h = self(user);
    auto& s = *static_cast<H2Stream*>(source->ptr);
    SendBatch& out = *h.sink_;
    const std::size_t start = out.size();
    char* frame = out.extend(9 + length);
    std::memcpy(frame, framehd, 9);
    char* into = frame + 9;
    std::size_t filled = 0;
    while (filled < length) {
      const int64_t n = fill(h, s, into + filled, length - filled);
      if (n <= 0) {
        out.truncate(start);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
      filled += static_cast<std::size_t>(n);
    }
    return 0;
  }

  // Copies up to `want` bytes of stream `s`'s body from its current piece into `into`;
  // returns the count, or 0 or -errno (logged) when its file could not be read.
  static int64_t fill(H2Session& h, H2Stream& s, char* into, std::size_t want) {
    const H2Stream::Piece& p = s.pieces[s.piece];
    uint64_t n = std::min<uint64_t>(want, p.length - s.piece_done);
    const uint64_t at = p.offset + s.piece_done;
    switch (p.kind) {
      case H2Stream::Piece::Kind::text:
        std::memcpy(into, s.text.data() + at, n);
        break;
      case H2Stream::Piece::Kind::bytes:
        std::memcpy(into, s.file->bytes.get() + at, n);
        break;
      case H2Stream::Piece::Kind::file: {
        // Through the connection: a read the disk must serve parks this fiber only.
        const int64_t r = h.service_.read_file(*s.file, into, n, at);
        if (r <= 0) {
          static LogThrottle failed{10};
          failed.log(spdlog::level::warn, "{}: HTTP/2: reading {:?}: {}; resetting the stream",
                     h.wire_.peer, s.file->path,
                     r == 0 ? "it shrank" : std::strerror(static_cast<int>(-r)));
          return r;
        }
        n = static_cast<uint64_t>(r);
        break;
      }
    }
    s.piece_done += n;
    if (s.piece_done == p.length) {
      ++s.piece;
      s.piece_done = 0;
    }
    return static_cast<int64_t>(n);
  }
};

H2Session::H2Session(const Config& config, HeadOrigin origin, H2Wire wire, ConnectionWork& work,
                     H2Service& service)
    : config_(config), origin_(origin), wire_(wire), work_(work), service_(service) {}

H2Session::~H2Session() {
  // nghttp2_session_del calls no callback: the streams left (the connection ended under
  // them) are ended here, with the bytes framed for them.
  if (session_) nghttp2_session_del(session_);
  for (H2Stream* s : streams_) {
    if (s->answered) service_.finished(s->status, s->body_sent, s->note, s->notes);
    delete s;
  }
  for (H2Stream* s : spare_) delete s;
}

bool H2Session::open() {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_option* opt = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) return false;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, H2Callbacks::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, H2Callbacks::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, H2Callbacks::on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, H2Callbacks::on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, H2Callbacks::on_stream_close);
  nghttp2_session_callbacks_set_send_data_callback(cb, H2Callbacks::send_data);
  int rc = nghttp2_option_new(&opt);
  if (rc == 0) {
    nghttp2_option_set_max_outbound_ack(opt, config_.h2_max_queued_control_frames);
    nghttp2_option_set_stream_reset_rate_limit(opt, config_.h2_max_resets,
                                               config_.h2_resets_per_second);
    nghttp2_option_set_max_continuations(opt, config_.h2_max_continuations);
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, config_.h2_header_table_size);
    nghttp2_option_set_no_closed_streams(opt, 1);  // no RFC 7540 tree to keep them for
    rc = nghttp2_session_server_new2(&session_, cb, this, opt);
    nghttp2_option_del(opt);
  }
  nghttp2_session_callbacks_del(cb);
  if (rc != 0) return false;
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, config_.h2_max_concurrent_streams},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<uint32_t>(config_.h2_max_header_list_size)},
      {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, static_cast<uint32_t>(config_.h2_header_table_size)},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  return nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings,
                                 sizeof settings / sizeof settings[0]) == 0;
}

bool H2Session::take(const char* data, std::size_t size) {
  const auto rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(data), size);
  if (rv >= 0) return true;
  // A connection error nghttp2 did not answer itself (it queues GOAWAY for most protocol
  // errors and returns 0): the client preface was not HTTP/2's, a flood, a callback's refusal.
  const auto code = static_cast<int>(rv);
  const bool flood =
      calm_ || code == NGHTTP2_ERR_FLOODED || code == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
  terminate(flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR, nghttp2_strerror(code));
  return false;
}

void H2Session::terminate(uint32_t code, std::string_view why) {
  spdlog::debug("{}: HTTP/2: GOAWAY {} ({})", wire_.peer, nghttp2_http2_strerror(code), why);
  nghttp2_session_terminate_session(session_, code);
  goaway_ = true;
}

void H2Session::begin_drain() {
  draining_ = true;
  goaway_ = true;
  // The last stream id this session took: the client may retry any later one elsewhere.
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

bool H2Session::feed(std::span<const char> bytes) {
  const bool go_on = take(bytes.data(), bytes.size());
  answer_ready();
  return go_on;
}

int64_t H2Session::produce(SendBatch& out, std::size_t limit) {
  const std::size_t before = out.size();
  sink_ = &out;  // where send_data puts DATA frames, in order with the other frames
  while (out.size() < limit) {
    const uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      spdlog::debug("{}: HTTP/2: {}", wire_.peer, nghttp2_strerror(static_cast<int>(n)));
      return -1;
    }
    if (n == 0) break;
    out.append(data, static_cast<std::size_t>(n));
  }
  return static_cast<int64_t>(out.size() - before);
}

bool H2Session::active() const {
  return nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0;
}

void H2Session::answer_ready() {
  // Answered here, not in the callback: the handler may wait for the disk, and nghttp2 is
  // not to be re-entered from inside mem_recv.
  for (std::size_t i = 0; i < ready_.size(); ++i) {
    auto* s = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(session_, ready_[i]));
    if (s && !s->answered) answer(*s);
  }
  ready_.clear();
}

void H2Session::answer(H2Stream& s) {
  const int refusal = s.fields.refusal();
  const Request req = s.fields.build();
  const Request* parsed = refusal == 0 ? &req : nullptr;
  s.note = service_.note(parsed, s.started, s.notes);
  Reply reply = parsed ? service_.answer(req, work_) : Reply::error_page(refusal);
  s.note.site = reply.site;
  s.note.coding = reply.encoding;
  HeadBuffer h;
  build_head(h, origin_, reply, parsed, /*close=*/false, work_);
  // nghttp2_submit_response copies the fields: one ResponseFields serves every stream.
  if (h.overflowed() || !response_.assign(h.view())) {
    reply = Reply::error_page(500);
    h.clear();
    build_head(h, origin_, reply, parsed, false, work_);
    response_.assign(h.view());
  }
  s.status = reply.status;
  s.answered = true;
  s.progress = rt::coarse_now();
  if (s.fields.method() != "HEAD") make_body(s, reply);
  nghttp2_data_provider body{};
  body.source.ptr = &s;
  body.read_callback = H2Callbacks::read_body;
  const auto& nv = response_.list();
  nghttp2_submit_response(session_, s.id, nv.data(), nv.size(), s.pieces.empty() ? nullptr : &body);
}

void H2Session::make_body(H2Stream& s, const Reply& reply) {
  using Kind = H2Stream::Piece::Kind;
  auto add_text = [&s](std::string_view t) {
    if (t.empty()) return;
    s.pieces.push_back({Kind::text, s.text.size(), t.size()});
    s.text.append(t);
  };
  auto add_file = [&s](uint64_t offset, uint64_t length) {
    if (length == 0) return;
    s.pieces.push_back({s.file->has_bytes() ? Kind::bytes : Kind::file, offset, length});
  };
  switch (reply.kind) {
    case Reply::Kind::error:
      add_text(error_body(reply.status));
      break;
    case Reply::Kind::options:
    case Reply::Kind::not_modified:
      break;
    case Reply::Kind::page:
      add_text(work_.body);
      break;
    case Reply::Kind::file:
    case Reply::Kind::error_file:
      if (reply.length == 0) break;
      s.file = reply.file;
      if (reply.boundary.empty()) {
        add_file(reply.offset, reply.length);
        break;
      }
      // multipart/byteranges: each part's head, its bytes, then the close delimiter.
      for (const ByteRange& part : reply.range.parts) {
        HeadBuffer h;
        append_part_head(h, reply.boundary, s.file->content_type, part, s.file->size);
        add_text(h.view());
        add_file(part.offset, part.length);
      }
      {
        HeadBuffer h;
        append_close_delimiter(h, reply.boundary);
        add_text(h.view());
      }
      break;
  }
}

rt::TimePoint H2Session::next_deadline() const {
  if (streams_.empty()) return last_recv_ + config_.h2_idle_timeout;
  rt::TimePoint first = rt::kNoDeadline;
  for (const H2Stream* s : streams_) {
    if (!s->reset) first = std::min(first, s->progress + config_.h2_stalled_stream_timeout);
  }
  return first;
}

void H2Session::on_timeout() {
  const rt::TimePoint now = rt::coarse_now();
  if (streams_.empty()) {
    if (now >= last_recv_ + config_.h2_idle_timeout) terminate(NGHTTP2_NO_ERROR, "idle");
    return;
  }
  for (H2Stream* s : streams_) {
    if (s->reset || now < s->progress + config_.h2_stalled_stream_timeout) continue;
    spdlog::debug("{}: HTTP/2: stream {} made no progress for {} ms; RST_STREAM", wire_.peer, s->id,
                  config_.h2_stalled_stream_timeout.count());
    s->reset = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
  }
}

H2Stream* H2Session::take_stream(int32_t id) {
  H2Stream* s = nullptr;
  if (spare_.empty()) {
    s = new H2Stream(id, config_);
  } else {
    s = spare_.back();
    spare_.pop_back();
    s->reuse(id);
  }
  s->started = s->progress = rt::coarse_now();
  streams_.push_back(s);
  return s;
}

void H2Session::close_stream(H2Stream* s) {
  nghttp2_session_set_stream_user_data(session_, s->id, nullptr);
  if (s->answered) service_.finished(s->status, s->body_sent, s->note, s->notes);
  streams_.erase(std::find(streams_.begin(), streams_.end(), s));
  // Kept for the next stream (its strings keep their capacity: no allocation per request),
  // unless a large request or page grew them.
  if (spare_.size() < kSpareStreams && s->small()) {
    s->file.reset();  // the file's bytes are not held by a stream that is gone
    spare_.push_back(s);
  } else {
    delete s;
  }
}

}  // namespace weft::http
