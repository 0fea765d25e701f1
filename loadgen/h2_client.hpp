// weft::load H2Client: one HTTP/2 client connection of weft-load (--http2), the protocol
// only: nghttp2 (Debian's libnghttp2) does the framing, HPACK and flow control; this class
// turns a session's calls into streams and their frames into weft-load's reply samples. It
// never touches the socket: the engine hands it what it received (feed) and sends what it
// has to send (take_output), over TCP or TLS, so one fiber drives it as it drives HTTP/1.1.
//
// A stream is one call. Its reply is complete when the stream closes after END_STREAM; a
// stream reset by the server (RST_STREAM), or left open when the server sends GOAWAY or the
// connection ends, failed. Header bytes are the HEADERS (and CONTINUATION) frames' lengths
// as received, HPACK-compressed: what crossed the wire, as HTTP/1.1's header bytes are.
//
// Threads: one fiber owns an H2Client; nothing is shared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "loadgen/response_parser.hpp"
#include "loadgen/workload.hpp"

namespace weft::load {

class H2Client {
 public:
  /// What became of one stream.
  struct Stream {
    std::uint32_t call = 0;           // index of the call in the session's plan
    std::int32_t id = -1;             // the stream id, once submitted
    Response response;                // status, header and body bytes, content-length
    std::int64_t first_ns = 0;        // when its first response frame arrived (0: none yet)
    std::int64_t last_ns = 0;         // when it closed
    std::uint32_t request_bytes = 0;  // its HEADERS frame (and body) as sent
    bool sent = false;                // its request went out (on_frame_send)
    bool closed = false;              // ended: complete when `reset` is false
    bool reset = false;               // ended by RST_STREAM or a stream error
    bool head = false;                // a HEAD request: no body by rule
    std::string_view body;            // the request body left to send
    std::int64_t sent_ns = 0;         // when its request went out (the engine stamps it)
    bool recorded = false;            // the engine has counted its outcome
  };

  /// Makes a client session announcing `max_streams` concurrent streams of its own and large
  /// windows (weft-load measures the server, not flow control); `authority` and `scheme`
  /// fill every request's pseudo-headers, and `extra` follows user-agent in each (names in
  /// lower case, as HTTP/2 wants). Throws std::bad_alloc when nghttp2 cannot.
  H2Client(std::string authority, std::string scheme, std::string user_agent,
           std::vector<ExtraHeader> extra = {});
  ~H2Client();
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  /// Submits call `index` as a new stream (its frames go out with the next take_output);
  /// returns false when nghttp2 refuses one (after GOAWAY, or the stream ids ran out).
  bool submit(const Call& call, std::uint32_t index);

  /// Returns the bytes the session has to send now (the preface and SETTINGS first, then
  /// HEADERS, WINDOW_UPDATEs, acks), moved out of the session; empty when none.
  std::string_view take_output();

  /// Feeds `n` received bytes arrived at `now_ns`; returns false when the connection is
  /// broken beyond use (a protocol error: nghttp2 queued a GOAWAY for take_output).
  bool feed(const char* data, std::size_t n, std::int64_t now_ns);

  /// Returns how many submitted streams are still open.
  std::size_t open_streams() const { return open_; }

  /// Returns how many more streams may be opened at once (the server's limit minus those open).
  std::size_t room() const;

  /// Returns whether the server sent GOAWAY (no new stream will be accepted).
  bool going_away() const { return goaway_; }

  /// Returns the streams of this round, in submission order.
  std::vector<Stream>& streams() { return streams_; }

  /// Forgets the streams of the last round (their ids stay used); the session goes on.
  void reset_round() { streams_.clear(); }

 private:
  static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                       void* user);
  static int on_data_chunk(nghttp2_session*, uint8_t flags, int32_t stream_id, const uint8_t* data,
                           size_t len, void* user);
  static int on_stream_close(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user);
  static ssize_t read_body(nghttp2_session*, int32_t stream_id, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source* source, void* user);

  Stream* stream_of(int32_t id);

  nghttp2_session* session_ = nullptr;
  std::string authority_;
  std::string scheme_;
  std::string user_agent_;
  std::vector<ExtraHeader> extra_;  // --add-header, names lowered
  std::vector<nghttp2_nv> nva_;     // one request's fields, reused
  std::string out_;
  std::vector<Stream> streams_;
  std::size_t open_ = 0;
  std::int64_t now_ns_ = 0;
  bool goaway_ = false;
};

}  // namespace weft::load
