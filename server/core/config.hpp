// weft::http::Config: the server's whole configuration as a plain struct.
//
// The handler, listener and runtime read this struct and nothing else; parsing (TOML file,
// command-line overrides) lives in server/config_file.cpp and server/cli.cpp. Every resource limit
// is a named field with its documented default here and in conf/weft.toml. Durations are
// milliseconds, sizes bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io_backend.hpp"

namespace weft::http {

/// One address to listen on, as written ("127.0.0.1:8080", "[::1]:8080", "*:8080").
struct ListenAddress {
  std::string host;  // numeric IPv4 or IPv6 text; "0.0.0.0" / "::" for the wildcard
  uint16_t port = 0;
  bool ipv6 = false;

  /// Returns the address as "host:port", with brackets around an IPv6 host.
  std::string to_string() const;
};

/// Parses "HOST:PORT", "[V6]:PORT", "*:PORT" or "PORT"; returns nullopt when malformed.
std::optional<ListenAddress> parse_listen_address(std::string_view text);

using IoBackend = rt::IoBackendKind;  // io.backend
enum class BodyPath { automatic, splice, sendfile };
enum class SymlinkPolicy { follow, inside_root, deny };
enum class AccessLogFormat { combined, json };

/// When TLS sessions hand their records to the kernel (kTLS): `automatic` where the kernel has
/// the "tls" ULP, `on` always asking (the library keeps the records itself for a connection
/// the kernel refuses), `off` never.
enum class KernelTls { automatic, on, off };
enum class Revalidation { statx, inotify };
enum class Precompressed { off, on, always };   // server.precompressed, like gzip_static
enum class LingeringClose { on, always, off };  // server.lingering_close, like NGINX's

/// One [[headers]] rule as written: fields added to responses whose path matches `source`.
struct HeaderRuleConfig {
  std::string source;                                    // a glob (glob.hpp)
  std::vector<std::pair<std::string, std::string>> set;  // name, value; in file order
  bool always = false;  // every status, not only those NGINX's add_header covers
  std::string origin;   // "FILE:LINE:COL" of the rule, for weft -T
};

/// One [[redirects]] rule as written: a path matching `source` is sent to `destination`.
struct RedirectRuleConfig {
  std::string source;       // a glob; its captures are $1, $2 ... in the destination
  std::string destination;  // a path or an absolute URL
  int status = 301;         // 301, 302, 303, 307 or 308
  std::string origin;
};

/// The pages a site answers with instead of the built-in ones (server.fallback_page,
/// server.error_pages): normalised paths under the site's root.
struct SitePages {
  std::string fallback;                    // "": none
  std::map<int, std::string> error_pages;  // status -> page
};

/// One [[vhosts]] table: a site chosen by the Host header. Unset optional keys take the
/// [server] values; the rest belong to the vhost alone.
struct VhostConfig {
  std::string host;  // lower case: "b.test", or "*.b.test" for any name under b.test
  std::filesystem::path root;
  std::optional<std::vector<std::string>> index;
  std::optional<bool> directory_listing;
  std::optional<Precompressed> precompressed;
  SitePages pages;
  std::vector<HeaderRuleConfig> headers;
  std::vector<RedirectRuleConfig> redirects;
  // A certificate chain and key of its own, served to TLS clients that ask for `host` by
  // SNI (both or neither; empty: [tls]'s).
  std::filesystem::path certificate;
  std::filesystem::path key;
  std::filesystem::path stapling_file;  // a DER OCSP response for `certificate`; empty: none
  std::string origin;
};

using Millis = std::chrono::milliseconds;
using Micros = std::chrono::microseconds;

struct Config {
  std::filesystem::path source;  // the file this came from; empty for built-in defaults
  // Where each key set explicitly came from ("section.key" -> "FILE:LINE:COL" or "--root"),
  // for weft -T; a key absent here has its built-in default (or is sized, below).
  std::map<std::string, std::string, std::less<>> origins;
  // Set by parse_config and builtin_config when the key was not given: the server sizes
  // these two from RLIMIT_NOFILE (size_from_fd_limit in fd_budget.hpp) instead of warning
  // that the defaults do not fit. A Config built in code keeps its values as they are.
  bool max_connections_auto = false;
  bool fd_cache_max_entries_auto = false;

  // [server]
  // Plain HTTP; empty when only listen_tls was given (TLS only).
  std::vector<ListenAddress> listen{{"127.0.0.1", 8080, false}};
  std::vector<ListenAddress> listen_tls;  // HTTPS ([tls] certificate and key required)
  std::filesystem::path root = ".";
  std::vector<std::string> index{"index.html"};
  bool directory_listing = false;
  SymlinkPolicy symlinks = SymlinkPolicy::inside_root;
  std::string server_name = "weft";
  std::filesystem::path mime_types;  // empty: /etc/mime.types
  std::string default_type = "application/octet-stream";
  int backlog = 511;
  bool reuseport = true;       // one SO_REUSEPORT socket per processor and address, else one shared
  bool accept_bare_lf = true;  // a lone LF ends a line of the head (RFC 9112 §2.2); false: 400
  Precompressed precompressed = Precompressed::off;  // f.br / f.gz next to f
  std::filesystem::path pid_file;  // written at start, removed at exit (weft -s); empty: none
  LingeringClose lingering_close = LingeringClose::on;  // see conf/weft.toml
  bool defer_accept = true;  // TCP_DEFER_ACCEPT on the listeners (see conf/weft.toml)
  SitePages pages;           // fallback_page, error_pages
  bool http2 = true;         // ALPN offers h2 (then http/1.1) on every listen_tls address
  bool h2c = false;          // cleartext HTTP/2 with prior knowledge on the plain addresses

  // [[headers]], [[redirects]] (of the default site) and [[vhosts]]
  std::vector<HeaderRuleConfig> headers;
  std::vector<RedirectRuleConfig> redirects;
  std::vector<VhostConfig> vhosts;

  // [runtime]
  unsigned processors = 0;  // 0: one per online CPU
  bool pin_processors = false;
  std::size_t stack_size = 64 * 1024;
  unsigned spin = 20;     // see conf/weft.toml
  Micros help_age{100};   // 0: processors take work from each other only when they run dry
  Millis pool_idle{500};  // pooled stacks and buffers unused this long go back; 0: never

  // [io]
  IoBackend backend = IoBackend::automatic;
  unsigned iowq_bounded = 4;
  unsigned iowq_unbounded = 4;
  unsigned ring_entries = 1024;
  BodyPath body = BodyPath::automatic;
  std::size_t pipe_size = 64 * 1024;
  std::size_t cold_read_size = 128 * 1024;
  bool cold_offload = true;

  // [limits]
  std::size_t max_header_bytes = 8 * 1024;
  std::size_t max_uri_bytes = 4 * 1024;
  unsigned max_headers = 100;
  std::size_t max_body_bytes = 64 * 1024;
  unsigned max_connections = 10000;
  unsigned accept_batch = 1;    // see conf/weft.toml
  Millis max_queue_wait{1000};  // 0: never shed; see conf/weft.toml
  Millis queue_target{500};     // the admission gate (see conf/weft.toml); 0: no gate
  unsigned max_requests_per_connection = 1000;
  std::size_t max_linger_bytes = 64 * 1024;  // read and dropped after the last response
  unsigned fd_reserve = 64;                  // descriptors kept for everything but clients
  unsigned max_ranges = 16;  // range-specs in one Range; more: the whole file (0: no ranges)
  unsigned max_listing_entries = 10000;  // entries one directory listing reads; more: cut

  // [timeouts]
  Millis timeouts_header{10'000};
  Millis timeouts_keepalive{75'000};
  Millis timeouts_send{60'000};
  Millis timeouts_shutdown_grace{10'000};
  Millis timeouts_linger{500};  // lingering close: how long the client's late bytes are read
  Millis timeouts_active_wait{
      100};  // a kept-alive connection keeps its fiber this long, then idles

  // [fd_cache]
  bool fd_cache = true;
  unsigned fd_cache_max_entries = 10000;
  std::size_t fd_cache_max_bytes = 64 * 1024 * 1024;
  std::size_t fd_cache_max_file_bytes = 16 * 1024;
  Millis fd_cache_valid{0};         // 0: never serve a changed file (see fd_cache.hpp)
  Millis fd_cache_errors_valid{0};  // for failures inotify does not cover
  Millis fd_cache_inactive{60'000};
  Revalidation fd_cache_revalidate = Revalidation::inotify;
  unsigned fd_cache_max_watches = 10000;  // inotify watches per site; beyond: statx revalidation

  // [log]
  std::string log_level = "info";
  std::string error_log = "stderr";  // "stderr", "stdout" or a file path
  std::string access_log = "off";    // "off", "stdout", "stderr" or a file path
  AccessLogFormat access_format = AccessLogFormat::combined;

  // [tls]: the default certificate of listen_tls, and the protocol settings of every one
  std::filesystem::path tls_certificate;  // PEM: the leaf first, then its chain
  std::filesystem::path tls_key;          // PEM: the leaf's private key
  std::vector<std::string> tls_protocols{"TLSv1.2", "TLSv1.3"};
  std::string tls_ciphers;       // TLS 1.2 cipher list (OpenSSL syntax); empty: the library's
  std::string tls_ciphersuites;  // TLS 1.3 suites; empty: the library's
  bool tls_session_tickets = true;
  unsigned tls_session_cache = 20480;  // sessions kept for resumption by id; 0: none
  // The largest ClientHello taken (its bytes gathered before the library sees them): real
  // ones are 0.5-2 KB, with a post-quantum key share about 3 KB.
  std::size_t tls_max_client_hello = 16 * 1024;
  // Files of session-ticket keys (NGINX's ssl_session_ticket_key format: 80 or 48 bytes): the
  // first encrypts new tickets, every one decrypts; empty: a random key per configuration.
  std::vector<std::filesystem::path> tls_session_ticket_keys;
  // A DER OCSP response for tls_certificate, stapled for clients that ask; empty: none.
  std::filesystem::path tls_stapling_file;
  KernelTls tls_ktls = KernelTls::automatic;

  // [http2]: the limits of one HTTP/2 connection (NGINX's or H2O's defaults; see conf/weft.toml)
  unsigned h2_max_concurrent_streams = 128;         // SETTINGS_MAX_CONCURRENT_STREAMS (NGINX)
  std::size_t h2_max_header_list_size = 32 * 1024;  // a request's fields, decoded (NGINX)
  std::size_t h2_header_table_size = 4096;          // SETTINGS_HEADER_TABLE_SIZE (RFC default)
  unsigned h2_max_resets = 1000;                    // client stream resets, burst (nghttp2)
  unsigned h2_resets_per_second = 33;               // ... refilled at this rate (nghttp2)
  unsigned h2_max_continuations = 8;                // CONTINUATION frames per header block
  unsigned h2_max_queued_control_frames = 1000;     // PING/SETTINGS acks queued unsent
  unsigned h2_max_window_updates = 1000;            // WINDOW_UPDATEs with no DATA sent between
  Millis h2_idle_timeout{75'000};                   // no open stream and nothing received
  Millis h2_stalled_stream_timeout{60'000};         // a stream whose window stays shut this long
  // [compression]: responses compressed on the fly, once per file and coding (compress/)
  bool compression = true;
  std::vector<std::string> compression_types{
      "text/*",
      "application/javascript",
      "application/json",
      "application/xml",
      "application/wasm",
      "image/svg+xml",
      "font/ttf",
      "font/otf",
      "font/collection",
      "font/sfnt",
      "application/vnd.ms-fontobject"};                     // "type/*" or exact, no parameters
  std::size_t compression_min_size = 256;                   // smaller files are sent as they are
  std::size_t compression_max_file_size = 4 * 1024 * 1024;  // larger ones too
  std::vector<std::string> compression_codecs{"zstd", "br", "gzip"};  // the server's order
  bool compression_prefer_smallest = true;  // of codings weighed equally, the smallest made
  unsigned compression_zstd_level = 19;
  unsigned compression_br_level = 11;
  unsigned compression_gzip_level = 9;
  std::size_t compression_cache_size = 64 * 1024 * 1024;  // compressed bytes kept, LRU
  unsigned compression_workers = 1;      // threads that compress (never the processors)
  unsigned compression_max_queued = 64;  // compressions waiting for a worker; more: none

  // [metrics]
  bool metrics = false;
  ListenAddress metrics_listen{"127.0.0.1", 9100, false};
};

/// A configuration that cannot be used; what() names the file, line and key.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses "10s", "250ms", "2m", "1h" (or a bare number of seconds); nullopt when malformed.
/// "500us" parses too, rounded to the nearest millisecond.
std::optional<Millis> parse_duration(std::string_view text);

/// parse_duration to the microsecond, for the keys that take one ("100us").
std::optional<Micros> parse_duration_us(std::string_view text);

/// Parses "512", "64k", "16m", "1g" (binary units); nullopt when malformed.
std::optional<std::size_t> parse_size(std::string_view text);

}  // namespace weft::http
