// ConnectionWork: the working state a connection borrows from its processor's pool while it
// serves, and gives back when it goes idle, so an idle connection holds none of it.
//
// It holds the read buffer, the parser, the path strings, a Range's parts, and the response
// queue: the output slices with the references that keep cached file bytes alive, the arena
// of queued heads and small bodies, and one Outgoing record per response in flight. A
// response stays in flight from when it is queued until its bytes are sent (or the sending
// failed); only then are its metrics counted and its access line written
// (Connection::finish_request), with the bytes the client was actually sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sys/uio.h>

#include "runtime/clock.hpp"
#include "server/core/config.hpp"
#include "server/files/file_entry.hpp"
#include "server/http/multipart.hpp"
#include "server/http/range.hpp"
#include "server/http/request.hpp"
#include "server/http/request_parser.hpp"

namespace weft::http {

/// What the access log says of one request, copied out of the read buffer (which the next
/// request reuses) so that the line can be written once the response's bytes are sent.
struct RequestNote {
  rt::TimePoint started{};   // the request's first byte (zero: unknown)
  int64_t started_unix = 0;  // the same, in wall-clock seconds
  bool parsed = false;       // false: no request was parsed (400, 408, 503)
  uint16_t site = 0;         // the Site::number that answered
  std::string_view coding;   // the body's Content-Encoding (a static name); empty: none
  Version version = Version::http_1_1;
  // Method, target, referer and user agent, one after another in ConnectionWork::notes.
  uint32_t text_at = 0;
  uint32_t method_len = 0;
  uint32_t target_len = 0;
  uint32_t referer_len = 0;
  uint32_t agent_len = 0;
};

/// One response in flight.
struct Outgoing {
  int status = 0;
  std::size_t head = 0;  // bytes of its head in the queue
  uint64_t body = 0;     // bytes of its body in the queue
  bool streams = false;  // its body follows the queue (sendfile, splice, a listing page)
  RequestNote note;
};

struct ConnectionWork {
  static constexpr int kMaxIov = 32;
  static constexpr int kMaxOutgoing = 32;      // responses in flight; more flush first
  static constexpr std::size_t kArena = 4096;  // queued response heads (and small bodies)
  // A page body grown past this is freed once sent, not kept by the pooled state (picked: a
  // listing of about 1,000 plain names; 10,000 hostile names render to about 24 MB). Smaller
  // ones keep their memory, so that the next page costs no fresh pages (page faults).
  static constexpr std::size_t kKeepBodyBytes = 256 * 1024;

  ConnectionWork(const Config& config, std::size_t read_capacity)
      : parser(config), read_cap(read_capacity), buffer(new char[read_capacity + kArena]) {}

  RequestParser parser;
  std::size_t read_cap;
  std::unique_ptr<char[]> buffer;  // [read area | arena]
  std::string path;                // the normalized request path
  std::string scratch;             // index-file paths, Location values
  std::string body;                // a listing page
  std::string fields;              // a precompressed variant's validator fields
  std::string notes;               // the text of the in-flight responses' RequestNotes
  RangeParts ranges;               // a Range's parts (a multipart 206 sends them from here)
  Boundary boundary;               // a multipart 206's boundary

  // The response queue (ResponseWriter).
  iovec iov[kMaxIov];
  FileRef hold[kMaxIov];  // keeps a cached file's bytes alive while its slice is queued
  int iov_count = 0;
  std::size_t arena_used = 0;
  Outgoing outgoing[kMaxOutgoing];
  int outgoing_count = 0;

  /// Empties `body` after its page went out, giving its memory back when it grew past
  /// kKeepBodyBytes.
  void release_body() {
    if (body.capacity() > kKeepBodyBytes) {
      std::string().swap(body);
    } else {
      body.clear();
    }
  }

  char* read_area() { return buffer.get(); }
  char* arena() { return buffer.get() + read_cap; }
};

}  // namespace weft::http
