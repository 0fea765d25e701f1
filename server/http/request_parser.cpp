// RequestParser: llhttp in strict mode, paused at the end of the head and at the end of each
// message, plus the checks llhttp 8.1 leaves to its user (see request_parser.hpp).
#include "server/http/request_parser.hpp"

#include <algorithm>
#include <cassert>
#include <limits>
#include <optional>

#include "server/core/ascii.hpp"

namespace weft::http {

// llhttp's C callbacks, forwarding to the parser that owns the llhttp_t.
struct ParserCallbacks {
  static RequestParser& self(llhttp_t* p) { return *static_cast<RequestParser*>(p->data); }

  static int on_url(llhttp_t* p, const char* at, std::size_t n) { return self(p).on_url(at, n); }
  static int on_url_complete(llhttp_t* p) {
    self(p).url_done_ = true;
    return 0;
  }
  static int on_version(llhttp_t* p, const char* at, std::size_t n) {
    return self(p).on_version(at, n);
  }
  static int on_version_complete(llhttp_t* p) { return self(p).on_version_complete(); }
  static int on_header_field(llhttp_t* p, const char* at, std::size_t n) {
    return self(p).on_header_field(at, n);
  }
  static int on_header_field_complete(llhttp_t* p) { return self(p).on_header_field_complete(); }
  static int on_header_value(llhttp_t* p, const char* at, std::size_t n) {
    return self(p).on_header_value(at, n);
  }
  static int on_header_value_complete(llhttp_t* p) { return self(p).on_header_value_complete(); }
  static int on_headers_complete(llhttp_t* p) {
    // Pause so that parse() learns where the head ends (llhttp_get_error_pos) and checks it
    // before a single body byte is read.
    self(p).head_done_ = true;
    return HPE_PAUSED;
  }
  static int on_chunk_header(llhttp_t* p) { return self(p).on_chunk_header(); }
  static int on_chunk_extension(llhttp_t* p, const char*, std::size_t n) {
    return self(p).on_metadata(n);
  }
  static int on_message_complete(llhttp_t* p) { return self(p).on_message_complete(); }

  static const llhttp_settings_t& settings() {
    static const llhttp_settings_t s = [] {
      llhttp_settings_t st;
      llhttp_settings_init(&st);
      st.on_url = on_url;
      st.on_url_complete = on_url_complete;
      st.on_version = on_version;
      st.on_version_complete = on_version_complete;
      st.on_header_field = on_header_field;
      st.on_header_field_complete = on_header_field_complete;
      st.on_header_value = on_header_value;
      st.on_header_value_complete = on_header_value_complete;
      st.on_headers_complete = on_headers_complete;
      st.on_chunk_header = on_chunk_header;
      st.on_chunk_extension_name = on_chunk_extension;
      st.on_chunk_extension_value = on_chunk_extension;
      st.on_message_complete = on_message_complete;
      return st;
    }();
    return s;
  }
};

namespace {

ParseResult need_more(std::size_t keep) {
  ParseResult r;
  r.keep = keep;
  return r;
}

// Host = uri-host [ ":" port ] (RFC 9110 §7.2): reg-name, IPv4 or IP-literal characters.
bool is_valid_host(std::string_view host) {
  constexpr std::string_view kSymbols =
      "-._~"         // unreserved
      "!$&'()*+,;="  // sub-delims
      ":[]%";        // port, IP-literal, pct-encoded
  for (char c : host) {
    if (!ascii::is_alpha(c) && !ascii::is_digit(c) && kSymbols.find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

struct Verdict {
  int status = 0;  // 0: acceptable
  std::string_view reason;
};

// RFC 9112 §6.1 and §6.3: the codings must end in chunked, applied once; weft decodes no other
// coding, and answers 501 to one (it would only discard the body, but a coding it does not
// know may change the framing the client and any intermediary assume).
Verdict check_transfer_coding(FieldLines lines) {
  int chunked = 0;
  int others = 0;
  bool last_chunked = false;
  for (std::string_view line : lines) {
    while (!line.empty()) {
      const std::size_t comma = line.find(',');
      const std::string_view element = ascii::trim_ows(line.substr(0, comma));
      line = comma == std::string_view::npos ? std::string_view{} : line.substr(comma + 1);
      if (element.empty()) continue;
      const std::string_view coding = ascii::trim_ows(element.substr(0, element.find(';')));
      last_chunked = ascii::iequals(coding, "chunked");
      ++(last_chunked ? chunked : others);
    }
  }
  if (!last_chunked) return {400, "Transfer-Encoding whose final coding is not chunked"};
  if (chunked > 1) return {400, "Transfer-Encoding applies chunked more than once"};
  if (others > 0) return {501, "Transfer-Encoding with a coding other than chunked"};
  return {};
}

bool expects_continue(FieldLines lines) {
  for (std::string_view line : lines) {
    if (ascii::iequals(ascii::trim_ows(line), "100-continue")) return true;
  }
  return false;
}

Method classify_method(std::uint8_t m) {
  switch (m) {
    case HTTP_GET:
      return Method::get;
    case HTTP_HEAD:
      return Method::head;
    case HTTP_OPTIONS:
      return Method::options;
    default:
      return Method::other;
  }
}

// authority-form = uri-host ":" port (RFC 9112 §3.2.3), the only target CONNECT may have;
// the port is required (RFC 9110 §9.3.6).
bool is_authority_form(std::string_view target) {
  const std::size_t colon = target.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == target.size()) return false;
  const std::string_view host = target.substr(0, colon);
  const std::string_view port = target.substr(colon + 1);
  if (!std::all_of(port.begin(), port.end(), [](char c) { return ascii::is_digit(c); })) {
    return false;
  }
  if (host.front() == '[') return host.back() == ']' && host.size() > 2;
  return host.find_first_of(":[]%") == std::string_view::npos && is_valid_host(host);
}

// "target SP HTTP/d.d": what follows the method in a well-formed request line.
bool is_request_line_tail(std::string_view rest) {
  const std::size_t sp = rest.find(' ');
  if (sp == 0 || sp == std::string_view::npos) return false;
  for (char c : rest.substr(0, sp)) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
  }
  const std::string_view v = rest.substr(sp + 1);
  return v.size() == 8 && v.starts_with("HTTP/") && ascii::is_digit(v[5]) && v[6] == '.' &&
         ascii::is_digit(v[7]);
}

std::uint32_t offset(const char* base, const char* at) {
  return static_cast<std::uint32_t>(at - base);
}

}  // namespace

RequestParser::RequestParser(const Config& config)
    : max_header_bytes_(std::min<std::size_t>(config.max_header_bytes,
                                              std::numeric_limits<std::uint32_t>::max())),
      max_uri_bytes_(config.max_uri_bytes),
      max_headers_(std::min(config.max_headers, 65535u)),
      max_body_bytes_(config.max_body_bytes),
      accept_bare_lf_(config.accept_bare_lf),
      slots_(std::make_unique<HeaderSpan[]>(max_headers_)),
      headers_(std::make_unique<Header[]>(max_headers_)) {
  llhttp_init(&llhttp_, HTTP_REQUEST, &ParserCallbacks::settings());
  llhttp_.data = this;
  start_request();
}

void RequestParser::reset() {
  start_request();
}

void RequestParser::start_request() {
  llhttp_reset(&llhttp_);  // also forgets llhttp's upgrade or "closed" state: we decide those
  phase_ = Phase::head;
  fed_ = head_bytes_ = consumed_ = 0;
  body_bytes_ = 0;
  metadata_bytes_ = 0;
  head_done_ = force_close_ = keep_alive_ = body_unread_ = false;
  url_begin_ = url_end_ = 0;
  url_started_ = url_done_ = false;
  version_begin_ = version_end_ = 0;
  nslots_ = 0;
  in_field_ = in_value_ = false;
  error_status_ = 0;
  error_reason_ = {};
  request_ = Request{};
}

ParseResult RequestParser::parse(std::span<const char> data) {
  if (phase_ == Phase::done) start_request();
  if (phase_ == Phase::failed) {
    return {ParseStatus::error, 0, error_status_, true, error_reason_};
  }
  llhttp_.data = this;
  base_ = data.data();
  if (phase_ == Phase::bad_method) return judge_method(data);

  if (phase_ == Phase::head) {
    assert(data.size() >= fed_ && "parse(): data must hold every byte fed before");
    // Never give llhttp more than max_header_bytes of head: the limit holds whatever the
    // size of the caller's reads.
    const std::size_t limit = std::min(data.size(), max_header_bytes_);
    if (limit > fed_) {
      const llhttp_errno_t err = execute_head(data, limit);
      if (err == HPE_PAUSED) {  // on_headers_complete
        head_bytes_ = static_cast<std::size_t>(llhttp_get_error_pos(&llhttp_) - data.data());
        fed_ = head_bytes_;
        llhttp_resume(&llhttp_);
        if (auto r = on_head(data)) return *r;
      } else if (err != HPE_OK) {
        return fail_llhttp(err, data);
      }
    }
    if (phase_ == Phase::head) {
      if (fed_ >= max_header_bytes_) {
        return url_done_ ? fail(431, "request head longer than max_header_bytes")
                         : fail(414, "request line longer than max_header_bytes");
      }
      return need_more(data.size());
    }
  }
  return parse_body(data);
}

llhttp_errno_t RequestParser::execute_head(std::span<const char> data, std::size_t limit) {
  // llhttp 8.1's strict mode takes a lone LF after the request line and the last field but
  // not after a field value, and its lenient-headers flag would also let control bytes and
  // "Name :" through. So with accept_bare_lf, llhttp is given a CR of its own before each
  // lone LF: it sees CRLF everywhere, while every view stays in `data` (spans split at the
  // CR are joined by offset; the empty span llhttp reports inside the CR is ignored).
  static constexpr char kCr = '\r';
  while (fed_ < limit) {
    std::size_t end = limit;
    if (accept_bare_lf_) {
      const std::string_view s(data.data(), limit);
      for (std::size_t i = s.find('\n', fed_); i != std::string_view::npos;
           i = s.find('\n', i + 1)) {
        if (i == 0 || s[i - 1] != '\r') {
          end = i;
          break;
        }
      }
    }
    if (end > fed_) {
      const llhttp_errno_t err = llhttp_execute(&llhttp_, data.data() + fed_, end - fed_);
      fed_ = end;
      if (err != HPE_OK) return err;
    }
    if (end < limit) {
      if (const llhttp_errno_t err = llhttp_execute(&llhttp_, &kCr, 1); err != HPE_OK) return err;
      // The LF itself goes to llhttp with the next piece.
      if (const llhttp_errno_t err = llhttp_execute(&llhttp_, data.data() + end, 1);
          err != HPE_OK) {
        fed_ = end + 1;
        return err;
      }
      fed_ = end + 1;
    }
  }
  return HPE_OK;
}

std::optional<ParseResult> RequestParser::on_head(std::span<const char> data) {
  const std::string_view head(data.data(), head_bytes_);

  if (auto r = check_line_endings(head)) return r;

  // Version: llhttp accepts 0.9 (no version at all) and 2.0 here; weft speaks 1.0 and 1.1.
  if (llhttp_.http_major != 1 || llhttp_.http_minor > 1) {
    return fail(505, "HTTP version other than 1.0 and 1.1");
  }

  // Request line: exactly "method SP target SP version" (llhttp skips runs of spaces).
  const std::size_t line_begin = head.find_first_not_of("\r\n");
  const std::string_view line =
      head.substr(line_begin, head.find_first_of("\r\n", line_begin) - line_begin);
  if (std::count(line.begin(), line.end(), ' ') != 2) {
    return fail(400, "request line with extra whitespace");
  }
  for (char c : view(data, url_begin_, url_end_)) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return fail(400, "control character in the request target");
  }

  build_request(data);  // for the checks below
  const Request& req = request_;

  // Host: RFC 9112 §3.2 says 400 for none in HTTP/1.1, more than one, or an invalid one.
  const std::size_t hosts = req.count(Field::host);
  if (hosts > 1) return fail(400, "more than one Host");
  if (hosts == 0 && req.version() == Version::http_1_1) return fail(400, "HTTP/1.1 without Host");
  if (hosts == 1 && !is_valid_host(*req.host())) return fail(400, "invalid Host");

  const bool chunked = (llhttp_.flags & F_CHUNKED) != 0;
  if (req.count(Field::transfer_encoding) > 0) {
    // RFC 9112 §6.1: HTTP/1.0 framing with Transfer-Encoding is faulty by definition.
    if (req.version() == Version::http_1_0) {
      return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    }
    if (Verdict v = check_transfer_coding(req.lines(Field::transfer_encoding)); v.status != 0) {
      return fail(v.status, v.reason);
    }
  } else if (llhttp_.flags & F_CONTENT_LENGTH) {
    body_bytes_ = llhttp_.content_length;
    if (body_bytes_ > max_body_bytes_) return fail(413, "Content-Length over max_body_bytes");
  }

  force_close_ = llhttp_.method == HTTP_CONNECT;
  if (force_close_ && !is_authority_form(req.target())) {
    return fail(400, "CONNECT target not in authority-form (host:port)");
  }
  phase_ = Phase::body;
  const bool has_body = chunked || body_bytes_ > 0;
  if (has_body && expects_continue(req.lines(Field::expect))) {
    // Answer now, without "100 Continue" and without the body, then close.
    phase_ = Phase::done;
    consumed_ = head_bytes_;
    keep_alive_ = false;
    body_unread_ = true;
    return ready(data);
  }
  return std::nullopt;  // go on with the body
}

std::optional<ParseResult> RequestParser::check_line_endings(std::string_view head) {
  // llhttp 8.1 (strict) takes a lone LF in the head for a line end and folds obs-fold lines
  // into the value. A lone CR is what a peer may frame differently (smuggling), so it is
  // refused whatever accept_bare_lf says; a lone LF only where the operator asks for it.
  for (std::size_t i = head.find('\r'); i != std::string_view::npos; i = head.find('\r', i + 1)) {
    if (i + 1 == head.size() || head[i + 1] != '\n') return fail(400, "bare CR in the head");
  }
  for (std::size_t i = head.find('\n'); i != std::string_view::npos; i = head.find('\n', i + 1)) {
    if (!accept_bare_lf_ && (i == 0 || head[i - 1] != '\r'))
      return fail(400, "bare LF line ending");
    if (i + 1 < head.size() && ascii::is_ows(head[i + 1])) {
      return fail(400, "obs-fold (a header line starting with whitespace)");
    }
  }
  return std::nullopt;
}

ParseResult RequestParser::parse_body(std::span<const char> data) {
  const llhttp_errno_t err =
      llhttp_execute(&llhttp_, data.data() + head_bytes_, data.size() - head_bytes_);
  if (err == HPE_PAUSED) {  // on_message_complete
    consumed_ = static_cast<std::size_t>(llhttp_get_error_pos(&llhttp_) - data.data());
    phase_ = Phase::done;
    return ready(data);
  }
  if (err != HPE_OK) return fail_llhttp(err, data);
  // llhttp took every byte after the head: body bytes, now thrown away.
  return need_more(head_bytes_);
}

ParseResult RequestParser::judge_method(std::span<const char> data) {
  // llhttp stops at the first byte that no method it knows can continue with. RFC 9110 §9.1
  // and RFC 9112 §3: a well-formed request line whose method the server does not implement
  // gets 501; a malformed line is 400. The line is judged once its end is in `data`, so the
  // answer does not depend on how the bytes arrived.
  const std::string_view s(data.data(), data.size());
  const std::size_t begin = std::min(s.find_first_not_of("\r\n"), s.size());
  std::size_t end = begin;
  while (end < s.size() && ascii::is_tchar(s[end])) ++end;
  if (end < s.size() && (end == begin || s[end] != ' ')) return fail(400, "invalid method");
  const std::size_t eol = s.find('\n', end);
  if (eol == std::string_view::npos) {
    if (s.size() >= max_header_bytes_)
      return fail(414, "request line longer than max_header_bytes");
    return need_more(data.size());
  }
  std::string_view rest = s.substr(end + 1, eol - end - 1);  // "target SP version [CR]"
  if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
  if (is_request_line_tail(rest)) return fail(501, "method not implemented");
  return fail(400, "malformed request line");
}

void RequestParser::build_request(std::span<const char> data) {
  // Views are built from offsets against this call's `data`: the caller may have moved the
  // buffer since the head was parsed.
  Request& r = request_;
  r.method_ = classify_method(llhttp_.method);
  r.method_text_ = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_.method));
  r.version_ = llhttp_.http_minor == 0 ? Version::http_1_0 : Version::http_1_1;
  r.keep_alive_ = keep_alive_;
  r.target_ = view(data, url_begin_, url_end_);
  r.first_.fill(0);
  r.count_.fill(0);
  for (std::uint32_t i = 0; i < nslots_; ++i) {
    const HeaderSpan& s = slots_[i];
    headers_[i] = {view(data, s.name_begin, s.name_end), view(data, s.value_begin, s.value_end),
                   s.field};
    const auto f = Request::index(s.field);
    if (r.count_[f]++ == 0) r.first_[f] = static_cast<std::uint16_t>(i);
  }
  r.headers_ = {headers_.get(), nslots_};
}

ParseResult RequestParser::ready(std::span<const char> data) {
  build_request(data);
  return {ParseStatus::ready, 0, 0, !keep_alive_, {}};
}

ParseResult RequestParser::fail(int status, std::string_view reason) {
  phase_ = Phase::failed;
  error_status_ = status;
  error_reason_ = reason;
  return {ParseStatus::error, 0, status, true, reason};
}

ParseResult RequestParser::fail_llhttp(llhttp_errno_t err, std::span<const char> data) {
  // A callback of ours refused: its status stands, whatever code llhttp wrapped it in.
  if (error_status_ != 0) return fail(error_status_, error_reason_);
  switch (err) {
    case HPE_INVALID_METHOD:
      phase_ = Phase::bad_method;
      return judge_method(data);
    case HPE_INVALID_VERSION: {
      // "HTTP/1.2", "HTTP/3.0": well-formed but not ours, 505; "HTTP/11.1": malformed, 400;
      // "HTTP/1.1 x": our version with junk after it (llhttp reports that here too), 400.
      const std::string_view v = view(data, version_begin_, version_end_);
      if (v.size() == 3 && ascii::is_digit(v[0]) && v[1] == '.' && ascii::is_digit(v[2]) &&
          v != "1.0" && v != "1.1") {
        return fail(505, "HTTP version other than 1.0 and 1.1");
      }
      break;
    }
    case HPE_PAUSED_H2_UPGRADE:
      return fail(505, "HTTP/2 connection preface");
    default:
      break;
  }
  return fail(400, llhttp_get_error_reason(&llhttp_));
}

int RequestParser::user_error(int status, const char* reason) {
  error_status_ = status;
  error_reason_ = reason;
  llhttp_set_error_reason(&llhttp_, reason);
  return HPE_USER;
}

std::string_view RequestParser::view(std::span<const char> data, std::uint32_t b,
                                     std::uint32_t e) const {
  return {data.data() + b, e - b};
}

int RequestParser::on_url(const char* at, std::size_t n) {
  if (n == 0) return 0;  // an empty span (inside execute_head's CR) adds nothing
  const std::uint32_t off = offset(base_, at);
  if (!url_started_) {
    url_started_ = true;
    url_begin_ = off;
  }
  url_end_ = off + static_cast<std::uint32_t>(n);
  if (url_end_ - url_begin_ > max_uri_bytes_) {
    return user_error(414, "request target longer than max_uri_bytes");
  }
  return 0;
}

int RequestParser::on_version(const char* at, std::size_t n) {
  if (n == 0) return 0;
  const std::uint32_t off = offset(base_, at);
  if (version_end_ == 0) version_begin_ = off;  // offsets are never 0: the method comes first
  version_end_ = off + static_cast<std::uint32_t>(n);
  return 0;
}

int RequestParser::on_version_complete() {
  // Refuse HTTP/2.0 (and its "PRI * HTTP/2.0" preface) before reading any field.
  if (llhttp_.http_major != 1 || llhttp_.http_minor > 1) {
    return user_error(505, "HTTP version other than 1.0 and 1.1");
  }
  return 0;
}

int RequestParser::on_header_field(const char* at, std::size_t n) {
  if (head_done_) return on_metadata(n);  // a trailer field: counted, then ignored
  if (n == 0) return 0;
  const std::uint32_t off = offset(base_, at);
  if (!in_field_) {
    if (nslots_ == max_headers_) return user_error(431, "more header fields than max_headers");
    in_field_ = true;
    slots_[nslots_] = {off, off, off, off, Field::other};
  }
  slots_[nslots_].name_end = off + static_cast<std::uint32_t>(n);
  return 0;
}

int RequestParser::on_header_field_complete() {
  if (head_done_) return 0;
  // llhttp 8.1 accepts an empty name (": x"): it reports only an empty span, so no slot was
  // opened for it (on_header_field ignores empty spans), and slots_[nslots_] may be past
  // the end when the table is full.
  if (!in_field_) return user_error(400, "empty header field name");
  in_field_ = false;
  HeaderSpan& s = slots_[nslots_];
  const std::string_view name(base_ + s.name_begin, s.name_end - s.name_begin);
  // llhttp 8.1 accepts "Host : x" (the space ends up in the name).
  if (name.empty()) return user_error(400, "empty header field name");
  for (char c : name) {
    if (ascii::is_ows(c)) return user_error(400, "whitespace between field name and colon");
    if (!ascii::is_tchar(c)) return user_error(400, "invalid character in a field name");
  }
  s.field = classify_field(name);
  return 0;
}

int RequestParser::on_header_value(const char* at, std::size_t n) {
  if (head_done_) return on_metadata(n);
  if (n == 0) return 0;
  const std::uint32_t off = offset(base_, at);
  HeaderSpan& s = slots_[nslots_];
  if (!in_value_) {
    in_value_ = true;
    s.value_begin = off;
  }
  s.value_end = off + static_cast<std::uint32_t>(n);
  return 0;
}

int RequestParser::on_header_value_complete() {
  if (head_done_) return 0;
  HeaderSpan& s = slots_[nslots_];
  if (!in_value_) {
    s.value_begin = s.value_end = s.name_end;  // empty value
  } else {
    // llhttp drops leading whitespace; trailing whitespace is not part of the value either.
    while (s.value_end > s.value_begin && ascii::is_ows(base_[s.value_end - 1])) --s.value_end;
  }
  in_value_ = false;
  ++nslots_;
  return 0;
}

int RequestParser::on_chunk_header() {
  // Decide on the declared size before reading the chunk, so the limit does not depend on
  // how the chunk arrives.
  // body_bytes_ <= max_body_bytes_ here (else we failed earlier), so this cannot wrap.
  if (llhttp_.content_length > max_body_bytes_ - body_bytes_) {
    return user_error(413, "chunked body over max_body_bytes");
  }
  body_bytes_ += llhttp_.content_length;
  return 0;
}

int RequestParser::on_metadata(std::size_t n) {
  metadata_bytes_ += n;
  if (metadata_bytes_ > max_header_bytes_) {
    return user_error(413, "chunk extensions and trailers over max_header_bytes");
  }
  return 0;
}

int RequestParser::on_message_complete() {
  // Read here: llhttp clears its flags right after this callback.
  keep_alive_ = llhttp_should_keep_alive(&llhttp_) != 0 && !force_close_;
  return HPE_PAUSED;  // never parse ahead into the next request
}

}  // namespace weft::http
