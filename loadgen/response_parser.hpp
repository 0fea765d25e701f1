// An incremental HTTP/1.1 response parser for the client side, over llhttp (HTTP_RESPONSE).
//
// Feed it the bytes of a connection as they arrive, in pieces of any size. It stops at the end
// of each response and says how many bytes that took, so keep-alive and pipelined responses
// are taken one at a time: before each response, expect() says whether the request was HEAD
// (the one fact a response parser cannot know by itself). Bodies are counted, never stored,
// and nothing is allocated per response: a parser lives as long as its connection.
//
// What it reports per response: the status, the Content-Length header if any, the body bytes
// actually received, header/body/footer byte counts (footer = chunk framing and trailers, so
// the three add up to the bytes on the wire), and whether the connection may carry another
// request. Bodies end as HTTP/1.1 says: none for HEAD, 1xx, 204 and 304 (even with a
// Content-Length); Content-Length bytes; chunked to the last chunk; else at end of
// connection (finish()). Interim 1xx responses (100 Continue, 103 Early Hints) are absorbed:
// their bytes count as header bytes of the final response, which also reports how many there
// were. 101 Switching Protocols is an error: weft-load never asks to upgrade.
//
// Error model in one sentence: once feed() or finish() returns kError, the connection is
// unusable, error() says why, and the partial response (e.g. body bytes of a truncated body)
// stays readable in response().
//
// States: between responses (idle) -> in a response -> complete (feed returns kComplete) ->
// idle again; or -> error, final until reset(). After a response that does not keep the
// connection alive, any further byte is an error (llhttp alone would silently drop it).
// One thread uses a parser at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include <llhttp.h>

#include "loadgen/errors.hpp"

namespace weft::load {

/// What the parser learned about one response.
struct Response {
  int status = 0;
  std::optional<std::uint64_t> content_length;  // the header's value, when present
  std::uint64_t body_bytes = 0;    // body bytes received (decoded chunk data when chunked)
  std::uint64_t header_bytes = 0;  // status line and headers, with any interim 1xx responses
  std::uint64_t footer_bytes = 0;  // chunk-size lines, chunk CRLFs and trailers
  std::uint32_t interim = 0;       // 1xx responses absorbed before this one
  bool chunked = false;
  bool bodyless = false;    // no body by rule: HEAD request, 1xx, 204 or 304
  bool keep_alive = false;  // the connection may carry another request after this response

  /// Returns every byte of the response on the wire.
  std::uint64_t total_bytes() const { return header_bytes + body_bytes + footer_bytes; }
};

/// Why parsing stopped for good.
enum class ParseError : std::uint8_t {
  kNone,
  kProtocol,   // the bytes are not a valid HTTP/1.x response (llhttp's reason in error_reason)
  kTruncated,  // the connection ended inside a response
  kUpgrade,    // 101 Switching Protocols, which weft-load never requests
};

class ResponseParser {
 public:
  enum class Status : std::uint8_t {
    kIncomplete,  // every byte was used and the response is not over: feed more
    kComplete,    // a response ended after `consumed` bytes: read response(), then feed the rest
    kClosed,      // finish() only: the connection ended cleanly between responses
    kError,       // see error(); the connection cannot be used any more
  };

  struct Result {
    Status status;
    std::size_t consumed;  // bytes of the input used (the rest belongs to the next response)
  };

  /// Creates a parser for a new connection, expecting a response to a non-HEAD request.
  ResponseParser();
  ResponseParser(const ResponseParser&) = delete;  // llhttp keeps a pointer back to us
  ResponseParser& operator=(const ResponseParser&) = delete;

  /// Says whether the next response answers a HEAD request; call it before the response's
  /// first byte (it applies to one response, then reverts to "not HEAD").
  void expect(bool head_request) { head_ = head_request; }

  /// Parses `data` up to the end of the current response at most.
  Result feed(std::string_view data);

  /// Tells the parser the connection has ended: completes a body that runs to the end of the
  /// connection (kComplete), reports kClosed between responses, or kError (kTruncated) inside
  /// one.
  Result finish();

  /// Returns the response completed last, or the one in progress (partial counts).
  const Response& response() const { return response_; }

  /// Returns why parsing stopped (kNone unless a call returned kError).
  ParseError error() const { return error_; }

  /// Returns a static human-readable reason for the error ("" when there is none).
  const char* error_reason() const { return reason_; }

  /// Returns true when a response has begun and not yet completed.
  bool in_response() const { return in_message_; }

  /// Prepares the parser for a new connection, forgetting any state and error.
  void reset();

 private:
  enum class Pause : std::uint8_t { kNone, kHeaders, kMessage };

  static int on_message_begin(llhttp_t* p);
  static int on_headers_complete(llhttp_t* p);
  static int on_body(llhttp_t* p, const char* at, std::size_t length);
  static int on_message_complete(llhttp_t* p);
  static ResponseParser& self(llhttp_t* p) { return *static_cast<ResponseParser*>(p->data); }

  Result fail(ParseError e, const char* reason, std::size_t consumed);

  llhttp_settings_t settings_;
  llhttp_t parser_;
  Response response_;
  ParseError error_ = ParseError::kNone;
  const char* reason_ = "";
  Pause pause_ = Pause::kNone;
  bool head_ = false;
  bool in_message_ = false;
  bool finishing_ = false;
  bool closed_ = false;              // the last response ended the connection (keep_alive false)
  std::uint64_t message_bytes_ = 0;  // wire bytes of the current message so far
  std::uint64_t interim_bytes_ = 0;  // wire bytes of 1xx responses before the current one
  std::uint32_t interim_count_ = 0;
};

/// Returns the error class a complete response counts under, or nullopt when it is fine:
/// http-5xx, http-4xx, else bad-length when a body that should be there disagrees with its
/// Content-Length or, for a 200, with `expected_size` (the manifest's size of the file).
std::optional<ErrorClass> classify_response(const Response& r,
                                            std::optional<std::uint64_t> expected_size);

}  // namespace weft::load
