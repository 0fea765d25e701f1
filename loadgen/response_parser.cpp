#include "loadgen/response_parser.hpp"

namespace weft::load {

ResponseParser::ResponseParser() {
  llhttp_settings_init(&settings_);
  settings_.on_message_begin = &ResponseParser::on_message_begin;
  settings_.on_headers_complete = &ResponseParser::on_headers_complete;
  settings_.on_body = &ResponseParser::on_body;
  settings_.on_message_complete = &ResponseParser::on_message_complete;
  reset();
}

void ResponseParser::reset() {
  llhttp_init(&parser_, HTTP_RESPONSE, &settings_);
  parser_.data = this;
  response_ = Response{};
  error_ = ParseError::kNone;
  reason_ = "";
  pause_ = Pause::kNone;
  head_ = false;
  in_message_ = false;
  finishing_ = false;
  closed_ = false;
  message_bytes_ = 0;
  interim_bytes_ = 0;
  interim_count_ = 0;
}

int ResponseParser::on_message_begin(llhttp_t* p) {
  ResponseParser& s = self(p);
  s.in_message_ = true;
  s.response_ = Response{};
  return 0;
}

int ResponseParser::on_headers_complete(llhttp_t* p) {
  ResponseParser& s = self(p);
  const int status = p->status_code;
  if (status == 101) {
    s.error_ = ParseError::kUpgrade;
    s.reason_ = "101 Switching Protocols, but no upgrade was requested";
    return -1;  // llhttp turns this into an error and stops
  }
  Response& r = s.response_;
  r.status = status;
  if (p->flags & F_CONTENT_LENGTH) r.content_length = p->content_length;
  r.chunked = (p->flags & F_CHUNKED) != 0;
  r.bodyless = s.head_ || status / 100 == 1 || status == 204 || status == 304;
  if (r.bodyless) {
    // What returning 1 ("skip body") would do; we return HPE_PAUSED instead to learn where
    // the headers end, so set the flag ourselves. llhttp itself would read a Content-Length
    // body after a 304 or 204, which RFC 9110 forbids.
    p->flags |= F_SKIPBODY;
  }
  s.pause_ = Pause::kHeaders;
  return HPE_PAUSED;
}

int ResponseParser::on_body(llhttp_t* p, const char* /*at*/, std::size_t length) {
  self(p).response_.body_bytes += length;
  return 0;
}

int ResponseParser::on_message_complete(llhttp_t* p) {
  ResponseParser& s = self(p);
  s.response_.keep_alive = llhttp_should_keep_alive(p) != 0;
  s.pause_ = Pause::kMessage;
  // llhttp_finish() passes a pause on as an error code, so only pause inside llhttp_execute().
  return s.finishing_ ? 0 : HPE_PAUSED;
}

ResponseParser::Result ResponseParser::fail(ParseError e, const char* reason,
                                            std::size_t consumed) {
  error_ = e;
  reason_ = reason;
  return Result{Status::kError, consumed};
}

ResponseParser::Result ResponseParser::feed(std::string_view data) {
  if (error_ != ParseError::kNone) return Result{Status::kError, 0};
  if (closed_ && !data.empty()) {
    return fail(ParseError::kProtocol, "data after a response that closes the connection", 0);
  }
  std::size_t off = 0;
  for (;;) {
    pause_ = Pause::kNone;
    const char* start = data.data() + off;
    const std::size_t left = data.size() - off;
    const llhttp_errno_t err = llhttp_execute(&parser_, start, left);
    if (err == HPE_OK) {
      message_bytes_ += left;
      return Result{Status::kIncomplete, data.size()};
    }
    const char* pos = llhttp_get_error_pos(&parser_);
    const std::size_t used =
        pos != nullptr && pos >= start ? static_cast<std::size_t>(pos - start) : 0;
    if (err != HPE_PAUSED) {
      if (error_ == ParseError::kUpgrade) return Result{Status::kError, off + used};
      const char* reason = llhttp_get_error_reason(&parser_);
      return fail(ParseError::kProtocol, reason != nullptr ? reason : llhttp_errno_name(err),
                  off + used);
    }
    message_bytes_ += used;
    off += used;
    llhttp_resume(&parser_);
    if (pause_ == Pause::kHeaders) {
      response_.header_bytes = interim_bytes_ + message_bytes_;
      // Run llhttp again even with no bytes left: a bodyless response completes without
      // another byte, and the server will send none before our next request.
      continue;
    }
    // pause_ == kMessage: one message is over.
    if (response_.status / 100 == 1) {
      // An interim response: its bytes become header bytes of the final one.
      interim_bytes_ += message_bytes_;
      ++interim_count_;
      message_bytes_ = 0;
      continue;
    }
    response_.footer_bytes =
        interim_bytes_ + message_bytes_ - response_.header_bytes - response_.body_bytes;
    response_.interim = interim_count_;
    in_message_ = false;
    head_ = false;
    closed_ = !response_.keep_alive;
    message_bytes_ = interim_bytes_ = 0;
    interim_count_ = 0;
    return Result{Status::kComplete, off};
  }
}

ResponseParser::Result ResponseParser::finish() {
  if (error_ != ParseError::kNone) return Result{Status::kError, 0};
  if (!in_message_) return Result{Status::kClosed, 0};
  pause_ = Pause::kNone;
  finishing_ = true;
  const llhttp_errno_t err = llhttp_finish(&parser_);
  finishing_ = false;
  if (err == HPE_OK && pause_ == Pause::kMessage) {
    // A body delimited by the end of the connection is complete now.
    response_.footer_bytes =
        interim_bytes_ + message_bytes_ - response_.header_bytes - response_.body_bytes;
    response_.interim = interim_count_;
    response_.keep_alive = false;
    closed_ = true;
    in_message_ = false;
    head_ = false;
    message_bytes_ = interim_bytes_ = 0;
    interim_count_ = 0;
    return Result{Status::kComplete, 0};
  }
  return fail(ParseError::kTruncated, "the connection closed inside a response", 0);
}

std::optional<ErrorClass> classify_response(const Response& r,
                                            std::optional<std::uint64_t> expected_size) {
  if (auto c = error_class_from_status(r.status)) return c;
  if (r.bodyless) return std::nullopt;
  if (r.content_length && *r.content_length != r.body_bytes) return ErrorClass::kBadLength;
  if (r.status == 200 && expected_size && *expected_size != r.body_bytes) {
    return ErrorClass::kBadLength;
  }
  return std::nullopt;
}

}  // namespace weft::load
