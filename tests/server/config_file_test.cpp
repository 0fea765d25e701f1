// Tests server/config_file.cpp: the shipped config, every kind of rejection, -T and reloads.
#include "server/config_file.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/server/temp_dir.hpp"
#include "tests/server/tls/test_cert.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;

fs::path source_dir() {
  const char* dir = std::getenv("WEFT_SOURCE_DIR");
  return dir ? fs::path{dir} : fs::current_path();
}

// Expects parse_config(text) to throw, with every fragment present in the message.
void expect_rejected(std::string_view text, std::initializer_list<std::string_view> fragments) {
  try {
    parse_config(text, "/etc/weft/test.toml");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    for (auto f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << msg << " lacks " << f;
  }
}

TEST(Config, ShippedConfigLoadsAndChecks) {
  Config c = load_config(source_dir() / "conf/weft.toml");
  EXPECT_NO_THROW(check_config(c));
  ASSERT_EQ(c.listen.size(), 1u);
  EXPECT_EQ(c.listen[0].to_string(), "127.0.0.1:8080");
  EXPECT_EQ(c.root, (source_dir() / "conf/../www-fixtures/site").lexically_normal());
  EXPECT_EQ(c.max_header_bytes, 8192u);
  EXPECT_EQ(c.timeouts_header, Millis{10'000});
  EXPECT_EQ(c.stack_size, 64u * 1024);
}

// Every default in conf/weft.toml must equal the built-in default, so that deleting a key
// changes nothing (the file promises this).
TEST(Config, ShippedConfigStatesTheBuiltInDefaults) {
  Config file = load_config(source_dir() / "conf/weft.toml");
  Config empty = parse_config("", source_dir() / "conf/weft.toml");
  EXPECT_EQ(file.listen[0].to_string(), empty.listen[0].to_string());
  EXPECT_EQ(file.index, empty.index);
  EXPECT_EQ(file.backlog, empty.backlog);
  EXPECT_EQ(file.reuseport, empty.reuseport);
  EXPECT_EQ(file.directory_listing, empty.directory_listing);
  EXPECT_EQ(file.symlinks, empty.symlinks);
  EXPECT_EQ(file.server_name, empty.server_name);
  EXPECT_EQ(file.default_type, empty.default_type);
  EXPECT_EQ(file.backend, empty.backend);
  EXPECT_EQ(file.pin_processors, empty.pin_processors);
  EXPECT_EQ(file.fd_cache_revalidate, empty.fd_cache_revalidate);
  EXPECT_EQ(file.error_log, empty.error_log);
  EXPECT_EQ(file.access_format, empty.access_format);
  EXPECT_EQ(file.processors, empty.processors);
  EXPECT_EQ(file.stack_size, empty.stack_size);
  EXPECT_EQ(file.spin, empty.spin);
  EXPECT_EQ(file.help_age, empty.help_age);
  EXPECT_EQ(file.iowq_bounded, empty.iowq_bounded);
  EXPECT_EQ(file.iowq_unbounded, empty.iowq_unbounded);
  EXPECT_EQ(file.ring_entries, empty.ring_entries);
  EXPECT_EQ(file.body, empty.body);
  EXPECT_EQ(file.pipe_size, empty.pipe_size);
  EXPECT_EQ(file.max_header_bytes, empty.max_header_bytes);
  EXPECT_EQ(file.max_uri_bytes, empty.max_uri_bytes);
  EXPECT_EQ(file.max_headers, empty.max_headers);
  EXPECT_EQ(file.max_body_bytes, empty.max_body_bytes);
  EXPECT_EQ(file.max_connections, empty.max_connections);
  EXPECT_EQ(file.max_requests_per_connection, empty.max_requests_per_connection);
  EXPECT_EQ(file.timeouts_header, empty.timeouts_header);
  EXPECT_EQ(file.timeouts_keepalive, empty.timeouts_keepalive);
  EXPECT_EQ(file.timeouts_send, empty.timeouts_send);
  EXPECT_EQ(file.timeouts_shutdown_grace, empty.timeouts_shutdown_grace);
  EXPECT_EQ(file.fd_cache, empty.fd_cache);
  EXPECT_EQ(file.fd_cache_max_entries, empty.fd_cache_max_entries);
  EXPECT_EQ(file.fd_cache_max_bytes, empty.fd_cache_max_bytes);
  EXPECT_EQ(file.fd_cache_max_file_bytes, empty.fd_cache_max_file_bytes);
  EXPECT_EQ(file.fd_cache_valid, empty.fd_cache_valid);
  EXPECT_EQ(file.fd_cache_errors_valid, empty.fd_cache_errors_valid);
  EXPECT_EQ(file.fd_cache_inactive, empty.fd_cache_inactive);
  EXPECT_EQ(file.log_level, empty.log_level);
  EXPECT_EQ(file.access_log, empty.access_log);
  EXPECT_EQ(file.metrics, empty.metrics);
  EXPECT_EQ(file.metrics_listen.to_string(), empty.metrics_listen.to_string());
}

// Every key of the schema, not just those listed above: the same check through the schema.
TEST(Config, ShippedConfigStatesEveryBuiltInDefault) {
  Config file = load_config(source_dir() / "conf/weft.toml");
  Config empty = parse_config("", source_dir() / "conf/weft.toml");
  std::vector<std::string> differ = changed_keys(file, empty);
  // The root and the MIME map are the two paths the shipped file points at on purpose.
  EXPECT_EQ(differ, (std::vector<std::string>{"server.root", "server.mime_types"}));
  // The two limits sized from RLIMIT_NOFILE stay unset in the shipped file.
  EXPECT_TRUE(file.max_connections_auto);
  EXPECT_TRUE(file.fd_cache_max_entries_auto);
}

TEST(Config, OriginsNameTheFileLineAndColumn) {
  Config c =
      parse_config("[server]\nbacklog = 64\n\n[limits]\nmax_connections = 5\n", "/etc/weft/x.toml");
  EXPECT_EQ(c.origins.at("server.backlog"), "/etc/weft/x.toml:2:11");
  EXPECT_EQ(c.origins.at("limits.max_connections"), "/etc/weft/x.toml:5:19");
  EXPECT_FALSE(c.origins.contains("server.listen"));
  EXPECT_FALSE(c.max_connections_auto);
  EXPECT_TRUE(c.fd_cache_max_entries_auto);
}

// The dump is TOML that parses back to the same values, and says where each came from.
TEST(Config, DumpParsesBackToTheSameValues) {
  Config c = parse_config(R"(
[server]
listen = ["[::1]:8443", "*:80"]
index = ["index.htm", "it's \"quoted\".html"]
server_name = "weft 'test'"
[runtime]
help_age = "250us"
[limits]
max_queue_wait = "2s"
max_body_bytes = "1m"
[log]
access_format = "json"
)",
                          "/etc/weft/x.toml");
  std::string text = dump_config(c);
  EXPECT_NE(text.find("# configuration file /etc/weft/x.toml"), std::string::npos) << text;
  EXPECT_NE(text.find("help_age = '250us'  # /etc/weft/x.toml:7:"), std::string::npos) << text;
  EXPECT_NE(text.find("backlog = 511  # default\n"), std::string::npos) << text;
  Config again = parse_config(text, "/etc/weft/x.toml");
  EXPECT_EQ(changed_keys(c, again), std::vector<std::string>{}) << text;
  EXPECT_EQ(changed_keys(c, Config{}).size(), 8u);  // the seven set, and the root (its folder)
}

// Issue 33: the site rules and pages, as the issue writes them.
TEST(Config, ParsesSiteRulesPagesAndVhosts) {
  Config c = parse_config(R"(
[server]
fallback_page = "/index.html"
error_pages = { "404" = "/404.html", "500" = "/50x.html" }

[[headers]]
source = "/assets/**"
set = { "Cache-Control" = "public, max-age=31536000, immutable" }

[[headers]]
source = "/**"
set = { "X-Content-Type-Options" = "nosniff", "X-Frame-Options" = "DENY" }
always = true

[[redirects]]
source = "/old"
destination = "/assets/app.css"
status = 301

[[redirects]]
source = "/blog/*"
destination = "/news/$1"

[[vhosts]]
host = "B.test"
root = "b"
precompressed = "on"
error_pages = { "404" = "/missing.html" }
headers = [{ source = "/**", set = { "X-Site" = "b" } }]
redirects = [{ source = "/x", destination = "/y", status = 308 }]

[[vhosts]]
host = "*.c.test"
root = "/srv/c"
)",
                          "/etc/weft/x.toml");
  EXPECT_EQ(c.pages.fallback, "/index.html");
  EXPECT_EQ(c.pages.error_pages,
            (std::map<int, std::string>{{404, "/404.html"}, {500, "/50x.html"}}));
  ASSERT_EQ(c.headers.size(), 2u);
  EXPECT_EQ(c.headers[0].source, "/assets/**");
  EXPECT_EQ(c.headers[0].set.at(0).first, "Cache-Control");
  EXPECT_FALSE(c.headers[0].always);
  EXPECT_EQ(c.headers[1].set.size(), 2u);
  EXPECT_TRUE(c.headers[1].always);
  EXPECT_EQ(c.headers[1].origin, "/etc/weft/x.toml:10:1");
  ASSERT_EQ(c.redirects.size(), 2u);
  EXPECT_EQ(c.redirects[1].status, 301);  // the default
  EXPECT_EQ(c.redirects[1].destination, "/news/$1");
  ASSERT_EQ(c.vhosts.size(), 2u);
  EXPECT_EQ(c.vhosts[0].host, "b.test");  // lower case
  EXPECT_EQ(c.vhosts[0].root, fs::path{"/etc/weft/b"});
  EXPECT_EQ(c.vhosts[0].precompressed, Precompressed::on);
  EXPECT_FALSE(c.vhosts[0].index);  // unset: [server]'s
  EXPECT_EQ(c.vhosts[0].pages.error_pages.at(404), "/missing.html");
  EXPECT_EQ(c.vhosts[0].headers.at(0).set.at(0).second, "b");
  EXPECT_EQ(c.vhosts[0].redirects.at(0).status, 308);
  EXPECT_EQ(c.vhosts[1].host, "*.c.test");

  // weft -T writes them back so that they parse to the same configuration.
  const std::string text = dump_config(c);
  EXPECT_NE(text.find("[[headers]]  # /etc/weft/x.toml:6:1"), std::string::npos) << text;
  EXPECT_NE(text.find("[[vhosts]]"), std::string::npos) << text;
  Config again = parse_config(text, "/etc/weft/x.toml");
  EXPECT_EQ(changed_keys(c, again), std::vector<std::string>{}) << text;
  EXPECT_EQ(changed_keys(c, Config{}).size(), 6u);  // root, both pages, the three lists
}

TEST(Config, ParsesAndChecksCompression) {
  Config c = parse_config(
      "[compression]\nenabled = false\ntypes = [\"text/*\", \"application/json\"]\n"
      "min_size = \"1k\"\nmax_file_size = \"2m\"\ncodecs = [\"gzip\", \"zstd\"]\n"
      "zstd_level = 3\nbr_level = 5\ngzip_level = 6\ncache_size = \"8m\"\nworkers = 2\n"
      "max_queued = 10\nprefer_smallest = false\n",
      "/etc/weft/test.toml");
  EXPECT_FALSE(c.compression);
  EXPECT_EQ(c.compression_types, (std::vector<std::string>{"text/*", "application/json"}));
  EXPECT_EQ(c.compression_min_size, 1024u);
  EXPECT_EQ(c.compression_max_file_size, 2u << 20);
  EXPECT_EQ(c.compression_codecs, (std::vector<std::string>{"gzip", "zstd"}));
  EXPECT_EQ(c.compression_zstd_level, 3u);
  EXPECT_EQ(c.compression_br_level, 5u);
  EXPECT_EQ(c.compression_gzip_level, 6u);
  EXPECT_EQ(c.compression_cache_size, 8u << 20);
  EXPECT_EQ(c.compression_workers, 2u);
  EXPECT_EQ(c.compression_max_queued, 10u);
  EXPECT_FALSE(c.compression_prefer_smallest);
  EXPECT_TRUE(Config{}.compression_prefer_smallest);
  expect_rejected("[compression]\ncodecs = [\"deflate\"]\n",
                  {":2:", "key 'compression.codecs'", "\"deflate\" is not a codec"});
  expect_rejected("[compression]\ncodecs = [\"br\", \"br\"]\n",
                  {"key 'compression.codecs'", "twice"});
  for (const char* bad :
       {"\"text\"", "\"Text/html\"", "\"text/html; charset=utf-8\"", "\"/x\"", "\"a/b/c\"", "3"}) {
    expect_rejected(std::string("[compression]\ntypes = [") + bad + "]\n",
                    {"key 'compression.types'"});
  }
  expect_rejected("[compression]\nzstd_level = 22\n", {"key 'compression.zstd_level'"});
  expect_rejected("[compression]\nbr_level = 12\n", {"key 'compression.br_level'"});
  expect_rejected("[compression]\ngzip_level = 0\n", {"key 'compression.gzip_level'"});
  expect_rejected("[compression]\nworkers = 0\n", {"key 'compression.workers'"});
  expect_rejected("[compression]\ncache_size = \"lots\"\n", {"key 'compression.cache_size'"});
  expect_rejected("[compression]\nlevel = 3\n", {"unknown key 'compression.level'"});
}

TEST(Config, RejectsBadRulesNamingFileLineAndKey) {
  const char* h = "/etc/weft/test.toml:";
  expect_rejected("[[headers]]\nsource = \"/a\"\nset = { \"Content-Length\" = \"1\" }\n",
                  {h, ":3:7: key 'headers.set'", "Content-Length"});
  expect_rejected("[[headers]]\nsource = \"/a\"\nset = { \"Transfer-Encoding\" = \"chunked\" }\n",
                  {"key 'headers.set'", "Transfer-Encoding"});
  expect_rejected("[[headers]]\nsource = \"/a\"\nset = { \"Connection\" = \"close\" }\n",
                  {"key 'headers.set'", "Connection"});
  expect_rejected("[[headers]]\nsource = \"/a\"\nset = { \"X-A\" = \"a\\r\\nSet-Cookie: b\" }\n",
                  {":3:7: key 'headers.set'", "control byte"});
  expect_rejected("[[headers]]\nsource = \"/a\"\nset = { \"X-A\" = \"a\\u0000\" }\n",
                  {"key 'headers.set'", "control byte"});
  expect_rejected("[[headers]]\nsource = \"/a\"\nset = { \"X A\" = \"1\" }\n",
                  {"key 'headers.set'", "not a token"});
  expect_rejected("[[headers]]\nsource = \"a/**\"\nset = { \"X-A\" = \"1\" }\n",
                  {":2:10: key 'headers.source'", "must start with '/'"});
  expect_rejected("[[headers]]\nsource = \"/{a\"\nset = { \"X-A\" = \"1\" }\n",
                  {"key 'headers.source'", "not closed"});
  expect_rejected("[[headers]]\nset = { \"X-A\" = \"1\" }\n",
                  {":1:1: key 'headers.source' is required"});
  expect_rejected("[[headers]]\nsource = \"/a\"\nsett = {}\n",
                  {":3:1: unknown key 'headers.sett'"});
  expect_rejected("[headers]\nsource = \"/a\"\n", {"key 'headers' must be an array of tables"});
  expect_rejected("[[redirects]]\nsource = \"/a\"\ndestination = \"/b\"\nstatus = 304\n",
                  {":4:10: key 'redirects.status'", "301, 302, 303, 307, 308"});
  expect_rejected("[[redirects]]\nsource = \"/a/*\"\ndestination = \"/b/$2\"\n",
                  {":3:15: key 'redirects.destination'", "uses $2"});
  expect_rejected("[[redirects]]\nsource = \"/blog**\"\ndestination = \"https://b.test$1\"\n",
                  {":3:15: key 'redirects.destination'", "puts $1 before the path"});
  expect_rejected("[[redirects]]\nsource = \"/a\"\ndestination = \"/b\\r\\nX: y\"\n",
                  {"key 'redirects.destination'", "must be a URI"});
  expect_rejected("[server]\nfallback_page = \"index.html\"\n",
                  {":2:17: key 'server.fallback_page'", "starting with '/'"});
  expect_rejected("[server]\nerror_pages = { \"200\" = \"/x.html\" }\n",
                  {"key 'server.error_pages'", "not an error status"});
  expect_rejected("[server]\nerror_pages = { \"404\" = \"/../x.html\" }\n",
                  {"key 'server.error_pages'", "must name a file"});
  expect_rejected("[[vhosts]]\nhost = \"b.test:80\"\nroot = \"/srv\"\n",
                  {":2:8: key 'vhosts.host'", "without port"});
  expect_rejected("[[vhosts]]\nroot = \"/srv\"\n", {"key 'vhosts.host' is required"});
  expect_rejected("[[vhosts]]\nhost = \"b.test\"\n", {"key 'vhosts.root' is required"});
  expect_rejected(
      "[[vhosts]]\nhost = \"b.test\"\nroot = \"/srv\"\n\n[[vhosts]]\nhost = \"B.test\"\n"
      "root = \"/srv\"\n",
      {":6:8: key 'vhosts.host'", "already the host"});
  expect_rejected("[[vhosts]]\nhost = \"b.test\"\nroot = \"/srv\"\nlisten = [\"*:80\"]\n",
                  {":4:1: unknown key 'vhosts.listen'"});
  expect_rejected(
      "[[vhosts]]\nhost = \"b.test\"\nroot = \"/srv\"\n"
      "headers = [{ source = \"/a\", set = { \"Date\" = \"x\" } }]\n",
      {"key 'vhosts.headers.set'", "Date"});
  // Too many bytes of fields for one response head.
  std::string big =
      "[[headers]]\nsource = \"/a\"\nset = { \"X-A\" = \"" + std::string(2100, 'a') + "\" }\n";
  expect_rejected(big, {"key 'headers'", "at most 2048"});
}

TEST(Config, CheckRejectsAMissingVhostRoot) {
  Config c =
      parse_config("[[vhosts]]\nhost = \"b.test\"\nroot = \"/no/such/dir\"\n", "/etc/weft/x.toml");
  c.root = source_dir();
  try {
    check_config(c);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string{e.what()}.find("/etc/weft/x.toml:1:1: key 'vhosts.root'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Config, ParsesEveryKind) {
  Config c = parse_config(R"(
[server]
listen = ["[::1]:8443", "*:80", "9000"]
root = "site"
index = ["index.htm", "default.html"]
symlinks = "deny"
[runtime]
processors = 3
stack_size = "128k"
[io]
backend = "epoll"
body = "splice"
[limits]
max_header_bytes = 16384
[timeouts]
header = "250ms"
keepalive = 5
send = "2m"
[log]
level = "debug"
access_log = "logs/access.log"
)",
                          "/etc/weft/weft.toml");
  ASSERT_EQ(c.listen.size(), 3u);
  EXPECT_TRUE(c.listen[0].ipv6);
  EXPECT_EQ(c.listen[0].to_string(), "[::1]:8443");
  EXPECT_EQ(c.listen[1].to_string(), "0.0.0.0:80");
  EXPECT_EQ(c.listen[2].to_string(), "0.0.0.0:9000");
  EXPECT_EQ(c.root, fs::path{"/etc/weft/site"});
  EXPECT_EQ(c.index, (std::vector<std::string>{"index.htm", "default.html"}));
  EXPECT_EQ(c.symlinks, SymlinkPolicy::deny);
  EXPECT_EQ(c.processors, 3u);
  EXPECT_EQ(c.stack_size, 128u * 1024);
  EXPECT_EQ(c.backend, IoBackend::epoll);
  EXPECT_EQ(c.body, BodyPath::splice);
  EXPECT_EQ(c.max_header_bytes, 16384u);
  EXPECT_EQ(c.timeouts_header, Millis{250});
  EXPECT_EQ(c.timeouts_keepalive, Millis{5000});
  EXPECT_EQ(c.timeouts_send, Millis{120'000});
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.access_log, "/etc/weft/logs/access.log");
}

TEST(Config, RejectsBadToml) {
  expect_rejected("[server\nroot = 1\n", {"/etc/weft/test.toml:1:", "invalid TOML"});
  expect_rejected("[server]\nroot = \"a\"\nroot = \"b\"\n", {"test.toml:3:", "invalid TOML"});
}

TEST(Config, RejectsUnknownSectionAndKey) {
  expect_rejected("[srever]\n", {"test.toml:1:", "unknown section 'srever'"});
  expect_rejected("[server]\n\nlistne = [\"1.2.3.4:80\"]\n",
                  {"test.toml:3:1", "unknown key 'server.listne'"});
  expect_rejected("root = \"x\"\n", {"test.toml:1:1", "key 'root' must be inside a section"});
}

TEST(Config, RejectsWrongTypes) {
  expect_rejected("[limits]\nmax_headers = \"many\"\n",
                  {"test.toml:2:", "key 'limits.max_headers'", "integer"});
  expect_rejected("[server]\ndirectory_listing = 1\n",
                  {"key 'server.directory_listing'", "true or false"});
  expect_rejected("[server]\nlisten = \"127.0.0.1:80\"\n", {"key 'server.listen'", "array"});
  expect_rejected("[server]\nindex = [1]\n", {"key 'server.index'"});
  expect_rejected("[timeouts]\nheader = true\n", {"key 'timeouts.header'", "duration"});
}

TEST(Config, RejectsOutOfRangeValues) {
  expect_rejected("[limits]\nmax_header_bytes = 12\n",
                  {"test.toml:2:", "key 'limits.max_header_bytes'", "between 1024 and", "12"});
  expect_rejected("[limits]\nmax_connections = 0\n", {"key 'limits.max_connections'"});
  expect_rejected("[runtime]\nprocessors = -1\n", {"key 'runtime.processors'"});
  expect_rejected("[timeouts]\nheader = \"0ms\"\n", {"key 'timeouts.header'", "between"});
  expect_rejected("[timeouts]\nheader = \"ten seconds\"\n", {"not a valid duration"});
  expect_rejected("[runtime]\nstack_size = \"1k\"\n", {"key 'runtime.stack_size'"});
  expect_rejected("[io]\nbackend = \"kqueue\"\n",
                  {"key 'io.backend'", "\"auto\"", "\"epoll\"", "kqueue"});
  expect_rejected("[server]\nlisten = [\"127.0.0.1:99999\"]\n", {"127.0.0.1:99999"});
  expect_rejected("[server]\nlisten = [\"::1:80\"]\n", {"::1:80"});
  expect_rejected("[log]\nlevel = \"loud\"\n", {"key 'log.level'"});
  expect_rejected("[server]\nindex = [\"a/b.html\"]\n", {"must be a file name"});
}

TEST(Config, CheckRejectsMissingOrNonDirectoryRoot) {
  Config c = parse_config("[server]\nroot = \"/nonexistent/weft-root\"\n", "/etc/weft/t.toml");
  try {
    check_config(c);
    ADD_FAILURE() << "missing root accepted";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("/etc/weft/t.toml: key 'server.root'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
  }
  c.root = "/etc/hostname";
  EXPECT_THROW(check_config(c), ConfigError);
}

TEST(Config, LoadReportsMissingFile) {
  try {
    load_config("/nonexistent/weft.toml");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string{e.what()}.find("/nonexistent/weft.toml: cannot open"), std::string::npos);
  }
}

TEST(Config, HelpAgeTakesMicrosecondsAndZero) {
  EXPECT_EQ(parse_config("[runtime]\nhelp_age = \"250us\"\n", "t.toml").help_age, Micros{250});
  EXPECT_EQ(parse_config("[runtime]\nhelp_age = \"0s\"\n", "t.toml").help_age, Micros{0});
  try {
    parse_config("[runtime]\nhelp_age = \"2s\"\n", "t.toml");
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string{e.what()}.find("must be between 0us and 1000000us (got 2000000us)"),
              std::string::npos)
        << e.what();
  }
}

// [tls] and server.listen_tls: paths resolved against the config's folder, the protocols
// checked by name, each vhost's own pair; listen_tls alone serves TLS only.
TEST(Config, TlsKeysParse) {
  Config c = parse_config(R"(
[server]
listen_tls = ["127.0.0.1:8443"]
[tls]
certificate = "certs/a.crt"
key = "/abs/a.key"
protocols = ["TLSv1.3"]
ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256"
session_tickets = false
session_cache = 0
session_ticket_keys = ["keys/new.key", "/abs/old.key"]
stapling_file = "ocsp/a.der"
ktls = "off"
[[vhosts]]
host = "b.test"
root = "/srv/b"
certificate = "b.crt"
key = "b.key"
stapling_file = "b.der"
)",
                          "/etc/weft/weft.toml");
  ASSERT_EQ(c.listen_tls.size(), 1u);
  EXPECT_EQ(c.listen_tls[0].to_string(), "127.0.0.1:8443");
  EXPECT_TRUE(c.listen.empty());  // TLS only
  EXPECT_EQ(c.tls_certificate, fs::path{"/etc/weft/certs/a.crt"});
  EXPECT_EQ(c.tls_key, fs::path{"/abs/a.key"});
  EXPECT_EQ(c.tls_protocols, std::vector<std::string>{"TLSv1.3"});
  EXPECT_EQ(c.tls_ciphers, "ECDHE-ECDSA-AES128-GCM-SHA256");
  EXPECT_FALSE(c.tls_session_tickets);
  EXPECT_EQ(c.tls_session_cache, 0u);
  EXPECT_EQ(c.tls_session_ticket_keys,
            (std::vector<fs::path>{"/etc/weft/keys/new.key", "/abs/old.key"}));
  EXPECT_EQ(c.vhosts.at(0).certificate, fs::path{"/etc/weft/b.crt"});
  EXPECT_EQ(c.vhosts.at(0).key, fs::path{"/etc/weft/b.key"});
  EXPECT_EQ(c.tls_stapling_file, fs::path{"/etc/weft/ocsp/a.der"});
  EXPECT_EQ(c.tls_ktls, KernelTls::off);
  EXPECT_EQ(c.vhosts.at(0).stapling_file, fs::path{"/etc/weft/b.der"});
  const std::string text = dump_config(c);
  EXPECT_NE(text.find("ktls = 'off'"), std::string::npos) << text;
  EXPECT_NE(text.find("stapling_file = '/etc/weft/b.der'"), std::string::npos) << text;
  EXPECT_NE(text.find("listen_tls = ['127.0.0.1:8443']"), std::string::npos) << text;
  EXPECT_NE(text.find("certificate = '/etc/weft/b.crt'"), std::string::npos) << text;
  EXPECT_NE(text.find("listen = []  # none: server.listen_tls alone"), std::string::npos) << text;
  // Both kinds of address when both are given; the defaults without [tls].
  Config both = parse_config(
      "[server]\nlisten = [\"*:80\"]\nlisten_tls = [\"*:443\"]\n[tls]\ncertificate = \"a\"\n"
      "key = \"b\"\n",
      "/etc/weft/weft.toml");
  EXPECT_EQ(both.listen.size(), 1u);
  Config plain = parse_config("", "/etc/weft/weft.toml");
  EXPECT_TRUE(plain.listen_tls.empty());
  EXPECT_EQ(plain.tls_protocols, (std::vector<std::string>{"TLSv1.2", "TLSv1.3"}));
  EXPECT_TRUE(plain.tls_session_tickets);
  EXPECT_EQ(plain.tls_ktls, KernelTls::automatic);
  EXPECT_TRUE(plain.tls_stapling_file.empty());
}

TEST(Config, TlsMistakesAreRefused) {
  expect_rejected("[tls]\nprotocols = [\"TLSv1.2\", \"TLSv1.1\"]\n",
                  {":2:13: key 'tls.protocols'", "\"TLSv1.1\" is not a protocol"});
  expect_rejected("[tls]\nprotocols = []\n", {"key 'tls.protocols'", "non-empty"});
  expect_rejected("[server]\nlisten_tls = [\"127.0.0.1:8443\"]\n",
                  {":2:14: key 'server.listen_tls' needs [tls] certificate and key"});
  expect_rejected("[server]\nlisten_tls = [\"127.0.0.1:8443\"]\n[tls]\ncertificate = \"a.crt\"\n",
                  {"key 'server.listen_tls' needs [tls] certificate and key"});
  expect_rejected("[server]\nlisten = []\n", {"key 'server.listen' is empty", "nothing to listen"});
  expect_rejected("[server]\nlisten_tls = [\"nowhere\"]\n", {"key 'server.listen_tls'", "nowhere"});
  expect_rejected("[[vhosts]]\nhost = \"b.test\"\nroot = \"/srv\"\ncertificate = \"b.crt\"\n",
                  {"key 'vhosts.certificate'", "needs both certificate and key"});
  expect_rejected("[tls]\nsession_tickets = \"yes\"\n", {"key 'tls.session_tickets'"});
  expect_rejected("[tls]\nktls = \"always\"\n",
                  {"key 'tls.ktls'", "must be one of \"auto\", \"on\", \"off\""});
  expect_rejected("[[vhosts]]\nhost = \"b.test\"\nroot = \"/srv\"\nstapling_file = \"b.der\"\n",
                  {"key 'vhosts.stapling_file'", "has no certificate of its own"});
}

// check_config (so weft -t) loads the certificates: a key of another certificate, or a file
// that is missing, is named.
TEST(Config, CheckLoadsTheCertificates) {
  const fs::path dir = make_test_dir("config-tls");
  const auto a = testing::make_cert(dir, "a", "a.test");
  const auto b = testing::make_cert(dir, "b", "b.test");
  auto config_with = [&](const fs::path& cert, const fs::path& key) {
    Config c = parse_config("[server]\nlisten_tls = [\"127.0.0.1:8443\"]\n[tls]\ncertificate = \"" +
                                cert.string() + "\"\nkey = \"" + key.string() + "\"\n",
                            dir / "weft.toml");
    c.root = source_dir();
    return c;
  };
  EXPECT_NO_THROW(check_config(config_with(a.certificate, a.key)));
  auto expect_named = [&](const Config& c, const std::string& named) {
    try {
      check_config(c);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string{e.what()}.find(named), std::string::npos) << e.what();
    }
  };
  expect_named(config_with(a.certificate, b.key), "tls key " + b.key.string());
  expect_named(config_with(dir / "none.crt", a.key),
               "tls certificate " + (dir / "none.crt").string());
  fs::remove_all(dir);
}

// GNUInstallDirs' rule, as cmake/WeftInstallLayout.cmake applies it when installing
// (tests/package/test_install.py checks the two agree on real installs).
TEST(InstalledConfigDir, Table) {
  EXPECT_EQ(installed_config_dir("/usr"), "/etc/weft");
  EXPECT_EQ(installed_config_dir("/usr/"), "/etc/weft");
  EXPECT_EQ(installed_config_dir("/opt/weft"), "/etc/opt/weft/weft");
  EXPECT_EQ(installed_config_dir("/usr/local"), "/usr/local/etc/weft");
  EXPECT_EQ(installed_config_dir("/srv/a/../b"), "/srv/b/etc/weft");
  EXPECT_EQ(installed_config_dir("/home/u/.local"), "/home/u/.local/etc/weft");
}

}  // namespace
}  // namespace weft::http
