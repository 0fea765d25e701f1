#include "loadgen/h2_client.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <new>

namespace weft::load {
namespace {

// Our windows: large, so that a stream's transfer is never held back by weft-load's own flow
// control (16 MiB per stream, 64 MiB per connection; HTTP/2's default is 64 KiB).
constexpr int32_t kStreamWindow = 16 << 20;
constexpr int32_t kConnectionWindow = 64 << 20;
// The concurrent streams we announce we accept from the server: none (no push), but the
// setting bounds what we would have to track.
constexpr uint32_t kOurMaxStreams = 100;

nghttp2_nv field(std::string_view name, std::string_view value) {
  // nghttp2 copies names and values unless told not to; NO_COPY: the strings outlive the call.
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

}  // namespace

H2Client::H2Client(std::string authority, std::string scheme, std::string user_agent,
                   std::vector<ExtraHeader> extra)
    : authority_(std::move(authority)),
      scheme_(std::move(scheme)),
      user_agent_(std::move(user_agent)),
      extra_(std::move(extra)) {
  for (ExtraHeader& h : extra_) {
    for (char& c : h.name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  nghttp2_session_callbacks* cbs = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) throw std::bad_alloc();
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &H2Client::on_frame_send);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &H2Client::on_frame_recv);
  nghttp2_session_callbacks_set_on_header_callback(cbs, &H2Client::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &H2Client::on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &H2Client::on_stream_close);
  const int rc = nghttp2_session_client_new(&session_, cbs, this);
  nghttp2_session_callbacks_del(cbs);
  if (rc != 0) throw std::bad_alloc();
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, kOurMaxStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
}

H2Client::~H2Client() {
  nghttp2_session_del(session_);
}

bool H2Client::submit(const Call& call, std::uint32_t index) {
  Stream s;
  s.call = index;
  s.head = call.method == "HEAD";
  s.body = call.body;
  const std::string_view path = call.uri.empty() ? std::string_view{"/"} : call.uri;
  nva_.assign({field(":method", call.method), field(":scheme", scheme_),
               field(":authority", authority_), field(":path", path),
               field("user-agent", user_agent_)});
  for (const ExtraHeader& h : extra_) nva_.push_back(field(h.name, h.value));
  nghttp2_data_provider body{};
  body.read_callback = &H2Client::read_body;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nva_.data(), nva_.size(),
                                            call.body.empty() ? nullptr : &body, nullptr);
  if (id < 0) return false;
  s.id = id;
  streams_.push_back(s);
  ++open_;
  return true;
}

std::string_view H2Client::take_output() {
  out_.clear();
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n <= 0) break;  // nothing more, or an error (the connection is then unusable)
    out_.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
  return out_;
}

bool H2Client::feed(const char* data, std::size_t n, std::int64_t now_ns) {
  now_ns_ = now_ns;
  const ssize_t rc = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(data), n);
  return rc >= 0;
}

std::size_t H2Client::room() const {
  const uint32_t limit =
      nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return limit > open_ ? limit - open_ : 0;
}

H2Client::Stream* H2Client::stream_of(int32_t id) {
  for (Stream& s : streams_) {
    if (s.id == id) return &s;
  }
  return nullptr;  // a stream of an earlier round, or one the server opened
}

int H2Client::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<H2Client*>(user);
  Stream* s = self->stream_of(frame->hd.stream_id);
  if (s && (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA ||
            frame->hd.type == NGHTTP2_CONTINUATION)) {
    s->request_bytes += static_cast<std::uint32_t>(frame->hd.length);
    s->sent = true;
  }
  return 0;
}

int H2Client::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<H2Client*>(user);
  if (frame->hd.type == NGHTTP2_GOAWAY) {
    self->goaway_ = true;
    return 0;
  }
  Stream* s = self->stream_of(frame->hd.stream_id);
  if (!s) return 0;
  if (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_CONTINUATION) {
    if (s->first_ns == 0) s->first_ns = self->now_ns_;
    s->response.header_bytes += frame->hd.length;
  }
  return 0;
}

int H2Client::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                        size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                        void* user) {
  auto* self = static_cast<H2Client*>(user);
  Stream* s = self->stream_of(frame->hd.stream_id);
  if (!s) return 0;
  const std::string_view n{reinterpret_cast<const char*>(name), namelen};
  const std::string_view v{reinterpret_cast<const char*>(value), valuelen};
  std::uint64_t number = 0;
  const bool is_number =
      std::from_chars(v.data(), v.data() + v.size(), number).ptr == v.data() + v.size();
  if (n == ":status" && is_number) {
    // An interim 1xx is followed by the final HEADERS: the last status is the reply's.
    if (number >= 100 && number < 200) ++s->response.interim;
    s->response.status = static_cast<int>(number);
  } else if (n == "content-length" && is_number) {
    s->response.content_length = number;
  }
  return 0;
}

int H2Client::on_data_chunk(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t*,
                            size_t len, void* user) {
  auto* self = static_cast<H2Client*>(user);
  if (Stream* s = self->stream_of(stream_id)) {
    if (s->first_ns == 0) s->first_ns = self->now_ns_;
    s->response.body_bytes += len;
  }
  return 0;
}

int H2Client::on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                              void* user) {
  auto* self = static_cast<H2Client*>(user);
  Stream* s = self->stream_of(stream_id);
  if (!s || s->closed) return 0;
  s->closed = true;
  s->last_ns = self->now_ns_;
  // NO_ERROR after the response ended is a normal close; anything else reset the stream
  // (a status seen or not: the reply did not arrive whole).
  s->reset = error_code != NGHTTP2_NO_ERROR || s->response.status == 0;
  const int st = s->response.status;
  s->response.bodyless = s->head || (st >= 100 && st < 200) || st == 204 || st == 304;
  s->response.keep_alive = true;
  if (self->open_ > 0) --self->open_;
  return 0;
}

ssize_t H2Client::read_body(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                            uint32_t* flags, nghttp2_data_source*, void* user) {
  auto* self = static_cast<H2Client*>(user);
  Stream* s = self->stream_of(stream_id);
  if (!s) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  const std::size_t n = std::min(length, s->body.size());
  std::memcpy(buf, s->body.data(), n);
  s->body.remove_prefix(n);
  if (s->body.empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

}  // namespace weft::load
