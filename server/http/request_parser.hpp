// weft::http::RequestParser: HTTP/1.x requests of one connection, parsed with llhttp.
//
// Error model: parse() returns `error` with the status to answer and a reason for the log,
// after which the parser only repeats that error and the connection must close, since the
// start of the next request can no longer be trusted.
//
// The caller's side of the contract (the parser never allocates, never copies, and never
// reads ahead into the next request):
//   - Pass `data` that starts at the first byte of the current request and holds the bytes
//     received since, contiguous. The caller may move or compact its buffer between calls as
//     long as this holds; the parser remembers offsets, not pointers.
//   - need_more: keep data[0, result.keep) and append what arrives next. Once the head is
//     complete, `keep` is the head's length: the body bytes after it have been read and thrown
//     away (a GET body is never stored), so a body of any length passes through a buffer the
//     size of the head plus one read.
//   - ready: the whole request (head and body) has been read. request() describes it, as views
//     into `data`; consumed() says how many bytes of `data` it took. Drop those, then call
//     parse() with what follows: the next pipelined request, or nothing yet.
//
// States: head (reading request line and fields) → body (discarding it) → done (ready
// returned; the next parse() starts a new request), or → failed from either.
//
// llhttp is built in strict mode (LLHTTP_STRICT_MODE, cmake/Llhttp.cmake: without it llhttp
// 8.1 takes any byte after a CR for the LF, so "\r\n\rX" ends a head) and runs with no
// lenient flag; weft adds what llhttp 8.1 lets through even so: a bare CR, a bare LF when
// accept_bare_lf is off (on, a lone LF ends a line of the head as RFC 9112 §2.2 allows; chunk
// framing stays CRLF-only, as llhttp's strict mode has it), obs-fold, whitespace before the colon,
// an empty field name, extra spaces in the request line, control bytes in the target, a missing or
// repeated or malformed Host in HTTP/1.1, Transfer-Encoding in HTTP/1.0, unknown transfer codings
// (501), and versions other than 1.0 and 1.1 (505), a CONNECT target not in authority-form (400),
// and a request line with an unknown method (501 when the line is well-formed, else 400). llhttp
// itself rejects Content-Length with Transfer-Encoding, repeated or malformed Content-Length,
// "chunked" not last, bad chunk sizes, and control bytes in values.
//
// Limits (from Config): the head (request line and fields, through the empty line) is at most
// max_header_bytes (431; 414 when the request line is not even complete); the target at most
// max_uri_bytes (414); at most max_headers field lines (431); the decoded body at most
// max_body_bytes (413, decided from Content-Length or each chunk size before reading it), and
// chunk extensions plus trailer fields at most max_header_bytes (413).
//
// A request that sends "Expect: 100-continue" with a body is answered without reading the
// body: ready comes at the end of the head with keep_alive() false, and consumed() covers
// only the head (RFC 9110 §10.1.1 lets a server answer before the content and close). The
// caller should close with a lingering close so the client sees the response. CONNECT is
// parsed (it gets 405) and also closes the connection: its "body" would be another protocol.
//
// One parser per connection, used by one fiber at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include <llhttp.h>

#include "server/core/config.hpp"
#include "server/http/request.hpp"

namespace weft::http {

/// What parse() found.
enum class ParseStatus : std::uint8_t {
  need_more,  // keep data[0, keep) and call again with more bytes appended
  ready,      // request() and consumed() describe a complete request
  error,      // answer http_status and close
};

/// The result of one parse() call.
struct ParseResult {
  ParseStatus status = ParseStatus::need_more;
  std::size_t keep = 0;     // need_more: bytes of data to keep; the rest was discarded body
  int http_status = 0;      // error: 400, 413, 414, 431, 501 or 505
  bool close = false;       // error: always true; ready: !request().keep_alive()
  std::string_view reason;  // error: what was wrong, for the error log (static text)
};

/// The request parser of one connection (see the top of this file for the contract).
class RequestParser {
 public:
  /// Makes a parser with the [limits] of `config`; allocates its header table once, here.
  explicit RequestParser(const Config& config);

  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  /// Parses `data` (the current request's bytes, from its first) and says whether a request
  /// is ready, more bytes are needed, or the request is bad; never allocates.
  ParseResult parse(std::span<const char> data);

  /// Forgets any request in progress: the next parse() starts a new one (for a parser
  /// taken from a pool, or reused at a request boundary).
  void reset();

  /// Returns the request; valid after parse() returned ready, until the next parse().
  const Request& request() const { return request_; }

  /// Returns how many bytes at the start of the last `data` the ready request occupied.
  std::size_t consumed() const { return consumed_; }

  /// Returns the length of the ready request's head (request line through the empty line).
  std::size_t head_bytes() const { return head_bytes_; }

  /// Returns whether the ready request left body bytes unread on the connection (answered at
  /// the end of its head: "Expect: 100-continue", or CONNECT), so closing must linger.
  bool body_unread() const { return body_unread_ || force_close_; }

  /// Returns the decoded body length announced so far (Content-Length or the chunk sizes),
  /// for the access log.
  std::uint64_t body_bytes() const { return body_bytes_; }

 private:
  friend struct ParserCallbacks;

  enum class Phase : std::uint8_t { head, body, done, bad_method, failed };

  // One header line, as offsets from the request's first byte while the head is parsed
  // (the caller may move the buffer between calls), turned into views when ready.
  struct HeaderSpan {
    std::uint32_t name_begin, name_end, value_begin, value_end;
    Field field;
  };

  void start_request();
  ParseResult parse_body(std::span<const char> data);
  ParseResult judge_method(std::span<const char> data);
  std::optional<ParseResult> on_head(std::span<const char> data);
  std::optional<ParseResult> check_line_endings(std::string_view head);
  llhttp_errno_t execute_head(std::span<const char> data, std::size_t limit);
  void build_request(std::span<const char> data);
  ParseResult ready(std::span<const char> data);
  ParseResult fail(int status, std::string_view reason);
  ParseResult fail_llhttp(llhttp_errno_t err, std::span<const char> data);
  int user_error(int status, const char* reason);
  std::string_view view(std::span<const char> data, std::uint32_t b, std::uint32_t e) const;

  // llhttp callbacks (see ParserCallbacks in the .cpp).
  int on_url(const char* at, std::size_t n);
  int on_version(const char* at, std::size_t n);
  int on_version_complete();
  int on_header_field(const char* at, std::size_t n);
  int on_header_field_complete();
  int on_header_value(const char* at, std::size_t n);
  int on_header_value_complete();
  int on_chunk_header();
  int on_metadata(std::size_t n);
  int on_message_complete();

  // Limits.
  std::size_t max_header_bytes_;
  std::size_t max_uri_bytes_;
  std::uint32_t max_headers_;
  std::uint64_t max_body_bytes_;
  bool accept_bare_lf_;

  llhttp_t llhttp_{};
  Phase phase_ = Phase::head;
  const char* base_ = nullptr;  // data.data() of the parse() call in progress
  std::size_t fed_ = 0;         // head: bytes of the request given to llhttp so far
  std::size_t head_bytes_ = 0;
  std::size_t consumed_ = 0;
  std::uint64_t body_bytes_ = 0;
  std::size_t metadata_bytes_ = 0;  // chunk extensions and trailer fields
  bool head_done_ = false;          // on_headers_complete seen: later fields are trailers
  bool force_close_ = false;
  bool keep_alive_ = false;
  bool body_unread_ = false;

  // Request line, as offsets.
  std::uint32_t url_begin_ = 0, url_end_ = 0;
  bool url_started_ = false, url_done_ = false;
  std::uint32_t version_begin_ = 0, version_end_ = 0;

  // Header lines.
  std::unique_ptr<HeaderSpan[]> slots_;
  std::unique_ptr<Header[]> headers_;
  std::uint32_t nslots_ = 0;
  bool in_field_ = false, in_value_ = false;

  // The failure, once failed.
  int error_status_ = 0;
  std::string_view error_reason_;

  Request request_;
};

}  // namespace weft::http
