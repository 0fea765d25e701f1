// Parses conf/weft.toml into weft::http::Config with toml++, against one schema table, so
// that an unknown key, a wrong type and an out-of-range value all produce the same kind of
// message: "FILE:LINE:COL: key 'section.key': what is wrong".
#include "server/config_file.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <functional>
#include <sstream>

#include <arpa/inet.h>
#include <fmt/core.h>
#include <toml++/toml.h>

#include "server/core/ascii.hpp"
#include "server/http/path.hpp"
#include "server/http/status.hpp"
#include "server/site/glob.hpp"
#include "server/site/site_rules.hpp"
#include "server/tls/tls_config.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;

// Applies one TOML value to the config; returns an error message, or empty on success.
using Apply = std::function<std::string(const toml::node&, Config&, const fs::path& base)>;
// Writes the config's value of one key as TOML text (for weft -T).
using Show = std::function<std::string(const Config&)>;

// How one key is read and written: both directions come from the same builder, so the
// dump can never name a value the parser would not take.
struct Rule {
  Apply apply;
  Show show;
};

struct Field {
  std::string_view section;
  std::string_view key;
  Rule rule;
};

// A TOML basic string with its escapes (toml++ writes it).
std::string toml_quoted(std::string_view text) {
  std::ostringstream out;
  out << toml::value<std::string>(std::string{text});
  return out.str();
}

template <typename T>
std::string range_error(T lo, T hi, T got) {
  return fmt::format("must be between {} and {} (got {})", lo, hi, got);
}

template <typename T>
Rule integer(T Config::*member, int64_t lo, int64_t hi) {
  return {[=](const toml::node& n, Config& c, const fs::path&) -> std::string {
            auto v = n.value_exact<int64_t>();
            if (!v) return "must be an integer";
            if (*v < lo || *v > hi) return range_error(lo, hi, *v);
            c.*member = static_cast<T>(*v);
            return {};
          },
          [=](const Config& c) { return fmt::format("{}", c.*member); }};
}

Rule boolean(bool Config::*member) {
  return {[=](const toml::node& n, Config& c, const fs::path&) -> std::string {
            auto v = n.value_exact<bool>();
            if (!v) return "must be true or false";
            c.*member = *v;
            return {};
          },
          [=](const Config& c) { return std::string{c.*member ? "true" : "false"}; }};
}

Rule string(std::string Config::*member, bool allow_empty = false) {
  return {[=](const toml::node& n, Config& c, const fs::path&) -> std::string {
            auto v = n.value_exact<std::string>();
            if (!v) return "must be a string";
            if (v->empty() && !allow_empty) return "must not be empty";
            c.*member = *v;
            return {};
          },
          [=](const Config& c) { return toml_quoted(c.*member); }};
}

// A relative path is taken relative to the config file's folder, so the file means the same
// whatever the working directory.
Rule path(fs::path Config::*member) {
  return {[=](const toml::node& n, Config& c, const fs::path& base) -> std::string {
            auto v = n.value_exact<std::string>();
            if (!v) return "must be a string (a path)";
            if (v->empty()) {
              c.*member = fs::path{};
              return {};
            }
            fs::path p{*v};
            c.*member = p.is_absolute() ? p : (base / p).lexically_normal();
            return {};
          },
          [=](const Config& c) { return toml_quoted((c.*member).string()); }};
}

template <typename E>
Rule choice(E Config::*member, std::vector<std::pair<std::string_view, E>> names) {
  return {[=](const toml::node& n, Config& c, const fs::path&) -> std::string {
            auto v = n.value_exact<std::string>();
            std::string all;
            for (auto& [name, value] : names) {
              all += fmt::format("{}\"{}\"", all.empty() ? "" : ", ", name);
            }
            if (!v) return "must be one of " + all;
            for (auto& [name, value] : names) {
              if (*v == name) {
                c.*member = value;
                return {};
              }
            }
            return fmt::format("must be one of {} (got \"{}\")", all, *v);
          },
          [=](const Config& c) {
            for (auto& [name, value] : names) {
              if (c.*member == value) return toml_quoted(name);
            }
            return std::string{"\"?\""};
          }};
}

template <typename D>
const char* unit_name() {
  return std::is_same_v<D, Micros> ? "us" : "ms";
}

template <typename D>
Rule duration(D Config::*member, D lo, D hi) {
  Apply apply = [=](const toml::node& n, Config& c, const fs::path&) -> std::string {
    std::optional<Micros> us;
    if (auto i = n.value_exact<int64_t>()) {
      if (*i >= 0 && *i < int64_t{1} << 40) us = Micros{*i * 1'000'000};
    } else if (auto s = n.value_exact<std::string>()) {
      us = parse_duration_us(*s);
    } else {
      return "must be a duration such as \"10s\", \"500ms\", \"2m\" or a number of seconds";
    }
    if (!us) return "is not a valid duration (use e.g. \"10s\", \"500ms\", \"2m\")";
    D d = std::chrono::round<D>(*us);
    if (d < lo || d > hi) {
      const char* u = unit_name<D>();
      return fmt::format("must be between {}{} and {}{} (got {}{})", lo.count(), u, hi.count(), u,
                         d.count(), u);
    }
    c.*member = d;
    return {};
  };
  return {apply, [=](const Config& c) {
            return toml_quoted(fmt::format("{}{}", (c.*member).count(), unit_name<D>()));
          }};
}

Rule size(std::size_t Config::*member, std::size_t lo, std::size_t hi) {
  Apply apply = [=](const toml::node& n, Config& c, const fs::path&) -> std::string {
    std::optional<std::size_t> s;
    if (auto i = n.value_exact<int64_t>()) {
      if (*i >= 0) s = static_cast<std::size_t>(*i);
    } else if (auto t = n.value_exact<std::string>()) {
      s = parse_size(*t);
    } else {
      return "must be a size such as 8192, \"64k\" or \"16m\"";
    }
    if (!s) return "is not a valid size (use e.g. 8192, \"64k\", \"16m\")";
    if (*s < lo || *s > hi) return range_error(lo, hi, *s);
    c.*member = *s;
    return {};
  };
  return {apply, [=](const Config& c) { return fmt::format("{}", c.*member); }};
}

// A TOML array of the given texts, each quoted.
std::string toml_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& i : items) out += (out.size() > 1 ? ", " : "") + toml_quoted(i);
  return out + "]";
}

Rule path_list(std::vector<fs::path> Config::*member) {
  return {[=](const toml::node& n, Config& c, const fs::path& base) -> std::string {
            const auto* arr = n.as_array();
            if (!arr) return "must be an array of strings (paths)";
            std::vector<fs::path> out;
            for (const auto& e : *arr) {
              auto v = e.value_exact<std::string>();
              if (!v || v->empty()) return "must be an array of non-empty strings (paths)";
              fs::path p{*v};
              out.push_back(p.is_absolute() ? p : (base / p).lexically_normal());
            }
            c.*member = std::move(out);
            return {};
          },
          [=](const Config& c) {
            std::vector<std::string> texts;
            for (const auto& p : c.*member) texts.push_back(p.string());
            return toml_list(texts);
          }};
}

Rule string_list(std::vector<std::string> Config::*member) {
  Apply apply = [=](const toml::node& n, Config& c, const fs::path&) -> std::string {
    const auto* arr = n.as_array();
    if (!arr) return "must be an array of strings";
    std::vector<std::string> out;
    for (const auto& e : *arr) {
      auto v = e.value_exact<std::string>();
      if (!v || v->empty()) return "must be an array of non-empty strings";
      if (v->find('/') != std::string::npos) return fmt::format("\"{}\" must be a file name", *v);
      out.push_back(*v);
    }
    c.*member = std::move(out);
    return {};
  };
  return {apply, [=](const Config& c) { return toml_list(c.*member); }};
}

// server.listen and server.listen_tls: an empty list is taken (listen = [] with listen_tls:
// TLS only); parse_config refuses a server with no address at all.
Rule listen_list(std::vector<ListenAddress> Config::*member) {
  Apply apply = [=](const toml::node& n, Config& c, const fs::path&) -> std::string {
    const auto* arr = n.as_array();
    if (!arr) return "must be an array of \"HOST:PORT\" strings";
    std::vector<ListenAddress> out;
    for (const auto& e : *arr) {
      auto v = e.value_exact<std::string>();
      if (!v) return "must be an array of \"HOST:PORT\" strings";
      auto a = parse_listen_address(*v);
      if (!a) return fmt::format("\"{}\" is not HOST:PORT, [IPV6]:PORT, *:PORT or PORT", *v);
      out.push_back(*a);
    }
    c.*member = std::move(out);
    return {};
  };
  return {apply, [=](const Config& c) {
            std::vector<std::string> texts;
            for (const auto& a : c.*member) texts.push_back(a.to_string());
            return toml_list(texts);
          }};
}

// tls.protocols: a subset of the versions weft offers.
Rule tls_protocols() {
  Apply apply = [](const toml::node& n, Config& c, const fs::path&) -> std::string {
    const auto* arr = n.as_array();
    if (!arr || arr->empty()) return "must be a non-empty array such as [\"TLSv1.2\", \"TLSv1.3\"]";
    std::vector<std::string> out;
    for (const auto& e : *arr) {
      auto v = e.value_exact<std::string>();
      if (!v || (*v != "TLSv1.2" && *v != "TLSv1.3")) {
        return fmt::format("\"{}\" is not a protocol weft offers (\"TLSv1.2\", \"TLSv1.3\")",
                           v ? *v : std::string{"(not a string)"});
      }
      out.push_back(*v);
    }
    c.tls_protocols = std::move(out);
    return {};
  };
  return {apply, [](const Config& c) { return toml_list(c.tls_protocols); }};
}

// compression.codecs: the server's order, each of "zstd", "br", "gzip" at most once; empty:
// none compressed on the fly.
Rule compression_codecs() {
  Apply apply = [](const toml::node& n, Config& c, const fs::path&) -> std::string {
    const auto* arr = n.as_array();
    if (!arr) return "must be an array such as [\"zstd\", \"br\", \"gzip\"]";
    std::vector<std::string> out;
    for (const auto& e : *arr) {
      auto v = e.value_exact<std::string>();
      if (!v || (*v != "zstd" && *v != "br" && *v != "gzip")) {
        return fmt::format("\"{}\" is not a codec weft has (\"zstd\", \"br\", \"gzip\")",
                           v ? *v : std::string{"(not a string)"});
      }
      if (std::find(out.begin(), out.end(), *v) != out.end()) {
        return fmt::format("lists \"{}\" twice", *v);
      }
      out.push_back(*v);
    }
    c.compression_codecs = std::move(out);
    return {};
  };
  return {apply, [](const Config& c) { return toml_list(c.compression_codecs); }};
}

// compression.types: media types without parameters, "type/subtype" or "type/*", lower case.
Rule compression_types() {
  Apply apply = [](const toml::node& n, Config& c, const fs::path&) -> std::string {
    const auto* arr = n.as_array();
    if (!arr) return "must be an array of media types such as \"text/*\"";
    std::vector<std::string> out;
    for (const auto& e : *arr) {
      auto v = e.value_exact<std::string>();
      const std::size_t slash = v ? v->find('/') : std::string::npos;
      const bool ok = v && slash != std::string::npos && slash > 0 && slash + 1 < v->size() &&
                      v->find('/', slash + 1) == std::string::npos &&
                      std::all_of(v->begin(), v->end(), [](char ch) {
                        return ch == '/' || (ascii::is_tchar(ch) && !(ch >= 'A' && ch <= 'Z'));
                      });
      if (!ok) {
        return fmt::format(
            "\"{}\" is not a lower-case media type (\"type/subtype\" or "
            "\"type/*\", no parameters)",
            v ? *v : std::string{"(not a string)"});
      }
      out.push_back(*v);
    }
    c.compression_types = std::move(out);
    return {};
  };
  return {apply, [](const Config& c) { return toml_list(c.compression_types); }};
}

Rule single_listen(ListenAddress Config::*member) {
  return {[=](const toml::node& n, Config& c, const fs::path&) -> std::string {
            auto v = n.value_exact<std::string>();
            if (!v) return "must be a \"HOST:PORT\" string";
            auto a = parse_listen_address(*v);
            if (!a) {
              return fmt::format("\"{}\" is not HOST:PORT, [IPV6]:PORT, *:PORT or PORT", *v);
            }
            c.*member = *a;
            return {};
          },
          [=](const Config& c) { return toml_quoted((c.*member).to_string()); }};
}

// A page of the site (server.fallback_page, an error page): a path under its root, as a
// request would name it; stored normalised.
std::string read_page(const toml::node& n, std::string& out) {
  auto v = n.value_exact<std::string>();
  if (!v) return "must be a string (a path such as \"/index.html\")";
  if (v->empty()) {
    out.clear();
    return {};
  }
  if (v->front() != '/' || v->find_first_of("?#") != std::string::npos) {
    return fmt::format("\"{}\" must be a path under the root, starting with '/'", *v);
  }
  std::string normal;
  if (normalize_target(*v, normal) != TargetStatus::ok || names_directory(normal)) {
    return fmt::format("\"{}\" must name a file under the root", *v);
  }
  out = std::move(normal);
  return {};
}

// server.error_pages: { "404" = "/404.html", ... }, for the error statuses weft answers with.
std::string read_error_pages(const toml::node& n, std::map<int, std::string>& out) {
  const auto* table = n.as_table();
  if (!table) return "must be a table such as { \"404\" = \"/404.html\" }";
  std::map<int, std::string> pages;
  for (auto&& [key, value] : *table) {
    int status = 0;
    const std::string_view k = key.str();
    auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), status);
    const auto known = known_statuses();
    if (ec != std::errc{} || end != k.data() + k.size() || status < 400 ||
        std::find(known.begin(), known.end(), status) == known.end()) {
      return fmt::format("\"{}\" is not an error status weft answers with (400 to 505)", k);
    }
    std::string page;
    if (auto err = read_page(value, page); !err.empty()) return fmt::format("\"{}\" {}", k, err);
    if (!page.empty()) pages[status] = std::move(page);
  }
  out = std::move(pages);
  return {};
}

std::string show_error_pages(const std::map<int, std::string>& pages) {
  std::string out = "{";
  for (const auto& [status, page] : pages) {
    out += fmt::format("{} \"{}\" = {}", out.size() > 1 ? "," : "", status, toml_quoted(page));
  }
  return out + (pages.empty() ? "}" : " }");
}

Rule fallback_page() {
  return {[](const toml::node& n, Config& c, const fs::path&) {
            return read_page(n, c.pages.fallback);
          },
          [](const Config& c) { return toml_quoted(c.pages.fallback); }};
}

Rule error_pages() {
  return {[](const toml::node& n, Config& c, const fs::path&) {
            return read_error_pages(n, c.pages.error_pages);
          },
          [](const Config& c) { return show_error_pages(c.pages.error_pages); }};
}

Rule log_level() {
  Apply apply = [](const toml::node& n, Config& c, const fs::path&) -> std::string {
    static constexpr std::string_view kLevels[] = {"trace", "debug",    "info", "warn",
                                                   "error", "critical", "off"};
    auto v = n.value_exact<std::string>();
    if (v) {
      for (auto l : kLevels) {
        if (*v == l) {
          c.log_level = *v;
          return {};
        }
      }
    }
    return "must be one of \"trace\", \"debug\", \"info\", \"warn\", \"error\", \"critical\", "
           "\"off\"";
  };
  return {apply, [](const Config& c) { return toml_quoted(c.log_level); }};
}

// The schema is one table of every key weft knows, kept in step with conf/weft.toml (which
// documents each); it is built from three parts only to keep each function short.

// [server], [runtime] and [io].
std::vector<Field> process_fields() {
  return {
      {"server", "listen", listen_list(&Config::listen)},
      {"server", "listen_tls", listen_list(&Config::listen_tls)},
      {"server", "root", path(&Config::root)},
      {"server", "index", string_list(&Config::index)},
      {"server", "directory_listing", boolean(&Config::directory_listing)},
      {"server", "symlinks",
       choice(&Config::symlinks, {{"follow", SymlinkPolicy::follow},
                                  {"inside_root", SymlinkPolicy::inside_root},
                                  {"deny", SymlinkPolicy::deny}})},
      {"server", "server_name", string(&Config::server_name)},
      {"server", "mime_types", path(&Config::mime_types)},
      {"server", "default_type", string(&Config::default_type)},
      {"server", "backlog", integer(&Config::backlog, 1, 65535)},
      {"server", "reuseport", boolean(&Config::reuseport)},
      {"server", "accept_bare_lf", boolean(&Config::accept_bare_lf)},
      {"server", "pid_file", path(&Config::pid_file)},
      {"server", "defer_accept", boolean(&Config::defer_accept)},
      {"server", "lingering_close",
       choice(&Config::lingering_close, {{"on", LingeringClose::on},
                                         {"always", LingeringClose::always},
                                         {"off", LingeringClose::off}})},
      {"server", "precompressed",
       choice(&Config::precompressed, {{"off", Precompressed::off},
                                       {"on", Precompressed::on},
                                       {"always", Precompressed::always}})},
      {"server", "http2", boolean(&Config::http2)},
      {"server", "h2c", boolean(&Config::h2c)},
      {"server", "fallback_page", fallback_page()},
      {"server", "error_pages", error_pages()},

      {"runtime", "processors", integer(&Config::processors, 0, 1024)},
      {"runtime", "pin_processors", boolean(&Config::pin_processors)},
      {"runtime", "stack_size", size(&Config::stack_size, 16 * 1024, 64 * 1024 * 1024)},
      {"runtime", "spin", integer(&Config::spin, 0, 1'000'000)},
      {"runtime", "help_age", duration(&Config::help_age, Micros{0}, Micros{1'000'000})},
      {"runtime", "pool_idle", duration(&Config::pool_idle, Millis{0}, Millis{3'600'000})},

      {"io", "backend",
       choice(&Config::backend, {{"auto", IoBackend::automatic},
                                 {"io_uring", IoBackend::io_uring},
                                 {"epoll", IoBackend::epoll}})},
      {"io", "iowq_bounded", integer(&Config::iowq_bounded, 1, 4096)},
      {"io", "iowq_unbounded", integer(&Config::iowq_unbounded, 1, 4096)},
      {"io", "ring_entries", integer(&Config::ring_entries, 64, 32768)},
      {"io", "body",
       choice(&Config::body, {{"auto", BodyPath::automatic},
                              {"splice", BodyPath::splice},
                              {"sendfile", BodyPath::sendfile}})},
      {"io", "pipe_size", size(&Config::pipe_size, 4096, 1024 * 1024)},
      {"io", "cold_read_size", size(&Config::cold_read_size, 4096, 16 * 1024 * 1024)},
      {"io", "cold_offload", boolean(&Config::cold_offload)},
  };
}

// [limits] and [timeouts].
std::vector<Field> limit_fields() {
  constexpr int64_t kMaxInt = 1 << 30;
  return {
      {"limits", "max_header_bytes", size(&Config::max_header_bytes, 1024, 1024 * 1024)},
      {"limits", "max_uri_bytes", size(&Config::max_uri_bytes, 256, 1024 * 1024)},
      {"limits", "max_headers", integer(&Config::max_headers, 1, 10000)},
      {"limits", "max_body_bytes", size(&Config::max_body_bytes, 0, std::size_t{1} << 40)},
      {"limits", "max_connections", integer(&Config::max_connections, 1, 10'000'000)},
      {"limits", "accept_batch", integer(&Config::accept_batch, 1, 4096)},
      {"limits", "max_queue_wait", duration(&Config::max_queue_wait, Millis{0}, Millis{3'600'000})},
      {"limits", "queue_target", duration(&Config::queue_target, Millis{0}, Millis{3'600'000})},
      {"limits", "max_requests_per_connection",
       integer(&Config::max_requests_per_connection, 1, kMaxInt)},
      {"limits", "max_linger_bytes", size(&Config::max_linger_bytes, 0, std::size_t{1} << 30)},
      {"limits", "fd_reserve", integer(&Config::fd_reserve, 16, 1'000'000)},
      {"limits", "max_ranges", integer(&Config::max_ranges, 0, 100)},
      {"limits", "max_listing_entries", integer(&Config::max_listing_entries, 1, 1'000'000)},

      {"timeouts", "header", duration(&Config::timeouts_header, Millis{1}, Millis{86'400'000})},
      {"timeouts", "keepalive",
       duration(&Config::timeouts_keepalive, Millis{0}, Millis{86'400'000})},
      {"timeouts", "send", duration(&Config::timeouts_send, Millis{1}, Millis{86'400'000})},
      {"timeouts", "shutdown_grace",
       duration(&Config::timeouts_shutdown_grace, Millis{0}, Millis{3'600'000})},
      {"timeouts", "linger", duration(&Config::timeouts_linger, Millis{0}, Millis{60'000})},
      {"timeouts", "active_wait",
       duration(&Config::timeouts_active_wait, Millis{0}, Millis{60'000})},
  };
}

// [fd_cache], [log], [tls], [http2] and [metrics].
std::vector<Field> cache_and_log_fields() {
  return {
      {"fd_cache", "enabled", boolean(&Config::fd_cache)},
      {"fd_cache", "max_entries", integer(&Config::fd_cache_max_entries, 1, 10'000'000)},
      {"fd_cache", "max_bytes", size(&Config::fd_cache_max_bytes, 0, std::size_t{1} << 40)},
      {"fd_cache", "max_file_bytes", size(&Config::fd_cache_max_file_bytes, 0, 64 * 1024 * 1024)},
      {"fd_cache", "valid", duration(&Config::fd_cache_valid, Millis{0}, Millis{86'400'000})},
      {"fd_cache", "errors_valid",
       duration(&Config::fd_cache_errors_valid, Millis{0}, Millis{86'400'000})},
      {"fd_cache", "inactive", duration(&Config::fd_cache_inactive, Millis{0}, Millis{86'400'000})},
      {"fd_cache", "max_watches", integer(&Config::fd_cache_max_watches, 1, 10'000'000)},
      {"fd_cache", "revalidate",
       choice(&Config::fd_cache_revalidate,
              {{"statx", Revalidation::statx}, {"inotify", Revalidation::inotify}})},

      {"log", "level", log_level()},
      {"log", "error_log", string(&Config::error_log)},
      {"log", "access_log", string(&Config::access_log)},
      {"log", "access_format",
       choice(&Config::access_format,
              {{"combined", AccessLogFormat::combined}, {"json", AccessLogFormat::json}})},

      {"tls", "certificate", path(&Config::tls_certificate)},
      {"tls", "key", path(&Config::tls_key)},
      {"tls", "protocols", tls_protocols()},
      {"tls", "ciphers", string(&Config::tls_ciphers, true)},
      {"tls", "ciphersuites", string(&Config::tls_ciphersuites, true)},
      {"tls", "session_tickets", boolean(&Config::tls_session_tickets)},
      {"tls", "session_cache", integer(&Config::tls_session_cache, 0, 10'000'000)},
      {"tls", "max_client_hello", size(&Config::tls_max_client_hello, 512, 128 * 1024)},
      {"tls", "session_ticket_keys", path_list(&Config::tls_session_ticket_keys)},
      {"tls", "stapling_file", path(&Config::tls_stapling_file)},
      {"tls", "ktls",
       choice(&Config::tls_ktls,
              {{"auto", KernelTls::automatic}, {"on", KernelTls::on}, {"off", KernelTls::off}})},

      {"http2", "max_concurrent_streams", integer(&Config::h2_max_concurrent_streams, 1, 100'000)},
      {"http2", "max_header_list_size",
       size(&Config::h2_max_header_list_size, 1024, 16 * 1024 * 1024)},
      {"http2", "header_table_size", size(&Config::h2_header_table_size, 0, 1024 * 1024)},
      {"http2", "max_resets", integer(&Config::h2_max_resets, 1, 1'000'000)},
      {"http2", "resets_per_second", integer(&Config::h2_resets_per_second, 1, 1'000'000)},
      {"http2", "max_continuations", integer(&Config::h2_max_continuations, 1, 10'000)},
      {"http2", "max_queued_control_frames",
       integer(&Config::h2_max_queued_control_frames, 1, 1'000'000)},
      {"http2", "max_window_updates", integer(&Config::h2_max_window_updates, 1, 1'000'000)},
      {"http2", "idle_timeout", duration(&Config::h2_idle_timeout, Millis{1}, Millis{86'400'000})},
      {"http2", "stalled_stream_timeout",
       duration(&Config::h2_stalled_stream_timeout, Millis{1}, Millis{86'400'000})},
      {"compression", "enabled", boolean(&Config::compression)},
      {"compression", "types", compression_types()},
      {"compression", "min_size", size(&Config::compression_min_size, 0, std::size_t{1} << 30)},
      {"compression", "max_file_size",
       size(&Config::compression_max_file_size, 0, std::size_t{1} << 30)},
      {"compression", "codecs", compression_codecs()},
      {"compression", "prefer_smallest", boolean(&Config::compression_prefer_smallest)},
      {"compression", "zstd_level", integer(&Config::compression_zstd_level, 1, 19)},
      {"compression", "br_level", integer(&Config::compression_br_level, 0, 11)},
      {"compression", "gzip_level", integer(&Config::compression_gzip_level, 1, 9)},
      {"compression", "cache_size", size(&Config::compression_cache_size, 0, std::size_t{1} << 40)},
      {"compression", "workers", integer(&Config::compression_workers, 1, 256)},
      {"compression", "max_queued", integer(&Config::compression_max_queued, 1, 1'000'000)},

      {"metrics", "enabled", boolean(&Config::metrics)},
      {"metrics", "listen", single_listen(&Config::metrics_listen)},
  };
}

// The schema, in the order -T prints it.
const std::vector<Field>& schema() {
  static const std::vector<Field> fields = [] {
    std::vector<Field> all = process_fields();
    for (std::vector<Field> part : {limit_fields(), cache_and_log_fields()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return fields;
}

std::string where(const fs::path& source, const toml::source_region& r) {
  return fmt::format("{}:{}:{}", source.string(), r.begin.line, r.begin.column);
}

// A log file path is relative to the config file, like every other path in it.
void resolve_log_path(std::string& value, const fs::path& base) {
  if (value == "off" || value == "stdout" || value == "stderr" || value.empty()) return;
  fs::path p{value};
  if (p.is_relative()) value = (base / p).lexically_normal().string();
}

// The schema's arrays of tables: [[headers]], [[redirects]] and [[vhosts]] (whose tables may
// hold headers and redirects of their own). Each table is read against the list of its keys,
// as sections are against schema(): an unknown key, a wrong type and a bad value all give
// "FILE:LINE:COL: key 'headers.set' what is wrong", at the value (at the table for a key
// that is missing).

// Where the tables being read come from: the file (messages) and its folder (paths).
struct Origin {
  const fs::path& source;
  const fs::path& base;
};

template <typename Item>
struct ItemKey {
  std::string_view key;
  bool required;
  std::function<std::string(const toml::node&, Item&, const Origin&)> apply;
};

[[noreturn]] void refuse(const Origin& o, const toml::source_region& at, std::string_view section,
                         std::string_view key, std::string_view what) {
  throw ConfigError(fmt::format("{}: key '{}.{}' {}", where(o.source, at), section, key, what));
}

template <typename Item>
Item read_item(const toml::table& t, std::string_view section,
               const std::vector<ItemKey<Item>>& keys, const Origin& o) {
  Item item;
  item.origin = where(o.source, t.source());
  for (auto&& [k, node] : t) {
    // Named apart: clang before 16 cannot capture a structured binding.
    const std::string_view name = k.str();
    auto it =
        std::find_if(keys.begin(), keys.end(), [&](const auto& ik) { return ik.key == name; });
    if (it == keys.end()) {
      throw ConfigError(
          fmt::format("{}: unknown key '{}.{}'", where(o.source, k.source()), section, k.str()));
    }
    if (auto err = it->apply(node, item, o); !err.empty()) {
      refuse(o, node.source(), section, k.str(), err);
    }
  }
  for (const auto& ik : keys) {
    if (ik.required && !t.contains(ik.key)) {
      refuse(o, t.source(), section, ik.key, fmt::format("is required in each [[{}]]", section));
    }
  }
  return item;
}

template <typename Item>
std::string read_items(const toml::node& n, std::string_view section,
                       const std::vector<ItemKey<Item>>& keys, const Origin& o,
                       std::vector<Item>& out) {
  const auto* arr = n.as_array();
  if (!arr) return fmt::format("must be an array of tables ([[{}]])", section);
  std::vector<Item> items;
  for (const auto& e : *arr) {
    const auto* t = e.as_table();
    if (!t) return fmt::format("must be an array of tables ([[{}]])", section);
    items.push_back(read_item(*t, section, keys, o));
  }
  out = std::move(items);
  return {};
}

std::string read_glob(const toml::node& n, std::string& out, std::size_t* captures = nullptr) {
  auto v = n.value_exact<std::string>();
  if (!v) return "must be a string (a path or a glob such as \"/assets/**\")";
  std::string error;
  auto glob = Glob::compile(*v, error);
  if (!glob) return fmt::format("\"{}\" {}", *v, error);
  if (captures) *captures = glob->captures();
  out = *v;
  return {};
}

std::string read_fields(const toml::node& n, HeaderRuleConfig& rule) {
  const auto* table = n.as_table();
  if (!table || table->empty()) return "must be a table of fields such as { \"X-A\" = \"b\" }";
  rule.set.clear();
  for (auto&& [name, value] : *table) {
    if (auto err = check_rule_field_name(name.str()); !err.empty()) return err;
    auto v = value.value_exact<std::string>();
    if (!v) return fmt::format("field '{}' must have a string value", name.str());
    if (auto err = check_rule_field_value(*v); !err.empty()) {
      return fmt::format("field '{}' {}", name.str(), err);
    }
    rule.set.emplace_back(name.str(), *v);
  }
  return {};
}

const std::vector<ItemKey<HeaderRuleConfig>>& header_rule_keys() {
  static const std::vector<ItemKey<HeaderRuleConfig>> keys = {
      {"source", true,
       [](const toml::node& n, HeaderRuleConfig& r, const Origin&) {
         return read_glob(n, r.source);
       }},
      {"set", true,
       [](const toml::node& n, HeaderRuleConfig& r, const Origin&) { return read_fields(n, r); }},
      {"always", false,
       [](const toml::node& n, HeaderRuleConfig& r, const Origin&) -> std::string {
         auto v = n.value_exact<bool>();
         if (!v) return "must be true or false";
         r.always = *v;
         return {};
       }},
  };
  return keys;
}

const std::vector<ItemKey<RedirectRuleConfig>>& redirect_rule_keys() {
  static const std::vector<ItemKey<RedirectRuleConfig>> keys = {
      {"source", true,
       [](const toml::node& n, RedirectRuleConfig& r, const Origin&) {
         return read_glob(n, r.source);
       }},
      {"destination", true,
       [](const toml::node& n, RedirectRuleConfig& r, const Origin&) -> std::string {
         auto v = n.value_exact<std::string>();
         if (!v) return "must be a string (a path or a URL)";
         if (auto err = check_redirect_destination(*v, GlobCaptures::kMax); !err.empty())
           return err;
         r.destination = *v;
         return {};
       }},
      {"status", false,
       [](const toml::node& n, RedirectRuleConfig& r, const Origin&) -> std::string {
         auto v = n.value_exact<int64_t>();
         if (!v || !is_redirect_status(static_cast<int>(*v))) {
           return "must be one of 301, 302, 303, 307, 308";
         }
         r.status = static_cast<int>(*v);
         return {};
       }},
  };
  return keys;
}

// Reads a list of header rules; refuses one whose fields would crowd the response head.
std::string read_header_rules(const toml::node& n, std::string_view section, const Origin& o,
                              std::vector<HeaderRuleConfig>& out) {
  if (auto err = read_items(n, section, header_rule_keys(), o, out); !err.empty()) return err;
  std::size_t bytes = 0;
  for (const auto& r : out) {
    for (const auto& [name, value] : r.set) bytes += name.size() + value.size() + 4;
  }
  if (bytes > kMaxRuleFieldBytes) {
    return fmt::format("sets {} bytes of fields in all; at most {} fit a response head", bytes,
                       kMaxRuleFieldBytes);
  }
  return {};
}

// Reads a list of redirects; a destination may only use the captures its source has.
std::string read_redirect_rules(const toml::node& n, std::string_view section, const Origin& o,
                                std::vector<RedirectRuleConfig>& out) {
  if (auto err = read_items(n, section, redirect_rule_keys(), o, out); !err.empty()) return err;
  const auto* arr = n.as_array();
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::string error;
    const std::size_t captures = Glob::compile(out[i].source, error)->captures();
    if (auto err = check_redirect_destination(out[i].destination, captures); !err.empty()) {
      const auto& t = *arr->get(i)->as_table();
      refuse(o, t["destination"].node()->source(), section, "destination", err);
    }
  }
  return {};
}

std::string read_host(const toml::node& n, std::string& out) {
  auto v = n.value_exact<std::string>();
  if (!v || v->empty()) return "must be a host name such as \"b.test\" or \"*.b.test\"";
  std::string host;
  std::string_view name = *v;
  if (name.starts_with("*.")) {
    host = "*.";
    name.remove_prefix(2);
  }
  for (char c : name) {
    if (!(ascii::is_alpha(c) || ascii::is_digit(c) || c == '-' || c == '.')) {
      return fmt::format(
          "\"{}\" must be a host name without port (letters, digits, '-', '.'), "
          "or \"*.\" and one",
          *v);
    }
    host.push_back(ascii::to_lower(c));
  }
  if (name.empty()) return fmt::format("\"{}\" names no host", *v);
  out = std::move(host);
  return {};
}

using VhostApply = std::function<std::string(const toml::node&, VhostConfig&, const Origin&)>;

// A [[vhosts]] key read like the `section` key of the same name, through a scratch Config.
VhostApply like_key(std::string_view section, std::string_view key,
                    std::function<void(VhostConfig&, Config&)> take) {
  const Field* field = nullptr;
  for (const auto& f : schema()) {
    if (f.section == section && f.key == key) field = &f;
  }
  return [field, take](const toml::node& n, VhostConfig& v, const Origin& o) -> std::string {
    Config scratch;
    if (auto err = field->rule.apply(n, scratch, o.base); !err.empty()) return err;
    take(v, scratch);
    return {};
  };
}

VhostApply like_server(std::string_view key, std::function<void(VhostConfig&, Config&)> take) {
  return like_key("server", key, std::move(take));
}

// A [[vhosts]] certificate or key, read (and resolved) like [tls]'s.
VhostApply like_tls(std::string_view key, std::function<void(VhostConfig&, Config&)> take) {
  return like_key("tls", key, std::move(take));
}

const std::vector<ItemKey<VhostConfig>>& vhost_keys() {
  static const std::vector<ItemKey<VhostConfig>> keys = {
      {"host", true,
       [](const toml::node& n, VhostConfig& v, const Origin&) { return read_host(n, v.host); }},
      {"root", true, like_server("root", [](VhostConfig& v, Config& c) { v.root = c.root; })},
      {"index", false, like_server("index", [](VhostConfig& v, Config& c) { v.index = c.index; })},
      {"directory_listing", false,
       like_server("directory_listing",
                   [](VhostConfig& v, Config& c) { v.directory_listing = c.directory_listing; })},
      {"precompressed", false,
       like_server("precompressed",
                   [](VhostConfig& v, Config& c) { v.precompressed = c.precompressed; })},
      {"fallback_page", false,
       [](const toml::node& n, VhostConfig& v, const Origin&) {
         return read_page(n, v.pages.fallback);
       }},
      {"error_pages", false,
       [](const toml::node& n, VhostConfig& v, const Origin&) {
         return read_error_pages(n, v.pages.error_pages);
       }},
      {"headers", false,
       [](const toml::node& n, VhostConfig& v, const Origin& o) {
         return read_header_rules(n, "vhosts.headers", o, v.headers);
       }},
      {"redirects", false,
       [](const toml::node& n, VhostConfig& v, const Origin& o) {
         return read_redirect_rules(n, "vhosts.redirects", o, v.redirects);
       }},
      {"certificate", false,
       like_tls("certificate",
                [](VhostConfig& v, Config& c) { v.certificate = c.tls_certificate; })},
      {"key", false, like_tls("key", [](VhostConfig& v, Config& c) { v.key = c.tls_key; })},
      {"stapling_file", false,
       like_tls("stapling_file",
                [](VhostConfig& v, Config& c) { v.stapling_file = c.tls_stapling_file; })},
  };
  return keys;
}

std::string read_vhosts(const toml::node& n, const Origin& o, std::vector<VhostConfig>& out) {
  if (auto err = read_items(n, "vhosts", vhost_keys(), o, out); !err.empty()) return err;
  for (std::size_t i = 0; i < out.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (out[i].host == out[j].host) {
        const auto& t = *n.as_array()->get(i)->as_table();
        refuse(o, t["host"].node()->source(), "vhosts", "host",
               fmt::format("\"{}\" is already the host of the [[vhosts]] at {}", out[i].host,
                           out[j].origin));
      }
    }
  }
  return {};
}

// Reads the array of tables `section` at the top of the file into `c`; returns false when
// `section` is not one.
bool read_list_section(std::string_view section, const toml::node& n, Config& c, const Origin& o) {
  std::string err;
  if (section == "headers") {
    err = read_header_rules(n, section, o, c.headers);
  } else if (section == "redirects") {
    err = read_redirect_rules(n, section, o, c.redirects);
  } else if (section == "vhosts") {
    err = read_vhosts(n, o, c.vhosts);
  } else {
    return false;
  }
  if (!err.empty()) {
    throw ConfigError(fmt::format("{}: key '{}' {}", where(o.source, n.source()), section, err));
  }
  c.origins[std::string{section}] = where(o.source, n.source());
  return true;
}

// weft -T's text of the rules: inline tables, one per rule.
std::string show_fields(const HeaderRuleConfig& r) {
  std::string fields;
  for (const auto& [name, value] : r.set) {
    fields +=
        fmt::format("{}{} = {}", fields.empty() ? "" : ", ", toml_quoted(name), toml_quoted(value));
  }
  return fmt::format("{{ {} }}", fields);
}

std::string show_header_rule(const HeaderRuleConfig& r) {
  return fmt::format("{{ source = {}, set = {}{} }}", toml_quoted(r.source), show_fields(r),
                     r.always ? ", always = true" : "");
}

std::string show_redirect_rule(const RedirectRuleConfig& r) {
  return fmt::format("{{ source = {}, destination = {}, status = {} }}", toml_quoted(r.source),
                     toml_quoted(r.destination), r.status);
}

template <typename Item, typename ShowItem>
std::string show_list(const std::vector<Item>& items, ShowItem show) {
  std::string out = "[";
  for (const auto& i : items) out += (out.size() > 1 ? ", " : "") + show(i);
  return out + "]";
}

std::string show_vhost(const VhostConfig& v) {
  std::string out =
      fmt::format("host = {}\nroot = {}\n", toml_quoted(v.host), toml_quoted(v.root.string()));
  if (v.index) out += fmt::format("index = {}\n", toml_list(*v.index));
  if (v.directory_listing) {
    out += fmt::format("directory_listing = {}\n", *v.directory_listing ? "true" : "false");
  }
  if (v.precompressed) {
    static constexpr std::string_view kNames[] = {"off", "on", "always"};
    out += fmt::format("precompressed = \"{}\"\n", kNames[static_cast<int>(*v.precompressed)]);
  }
  if (!v.pages.fallback.empty())
    out += fmt::format("fallback_page = {}\n", toml_quoted(v.pages.fallback));
  if (!v.pages.error_pages.empty()) {
    out += fmt::format("error_pages = {}\n", show_error_pages(v.pages.error_pages));
  }
  if (!v.headers.empty())
    out += fmt::format("headers = {}\n", show_list(v.headers, show_header_rule));
  if (!v.redirects.empty()) {
    out += fmt::format("redirects = {}\n", show_list(v.redirects, show_redirect_rule));
  }
  if (!v.certificate.empty())
    out += fmt::format("certificate = {}\n", toml_quoted(v.certificate.string()));
  if (!v.key.empty()) out += fmt::format("key = {}\n", toml_quoted(v.key.string()));
  if (!v.stapling_file.empty())
    out += fmt::format("stapling_file = {}\n", toml_quoted(v.stapling_file.string()));
  return out;
}

// The arrays of tables as weft -T writes them, each table with where it came from.
std::string show_lists(const Config& c) {
  std::string out;
  for (const auto& r : c.headers) {
    out += fmt::format("\n[[headers]]  # {}\nsource = {}\nset = {}\n{}", r.origin,
                       toml_quoted(r.source), show_fields(r), r.always ? "always = true\n" : "");
  }
  for (const auto& r : c.redirects) {
    out += fmt::format("\n[[redirects]]  # {}\nsource = {}\ndestination = {}\nstatus = {}\n",
                       r.origin, toml_quoted(r.source), toml_quoted(r.destination), r.status);
  }
  for (const auto& v : c.vhosts)
    out += fmt::format("\n[[vhosts]]  # {}\n{}", v.origin, show_vhost(v));
  return out;
}

// What no one key can say: that there is an address to listen on, and that the TLS ones have
// a certificate. listen_tls without listen serves TLS only (the default plain address would
// be a surprise).
void check_addresses(Config& c, const fs::path& source) {
  if (!c.listen_tls.empty() && !c.origins.contains("server.listen")) {
    c.listen.clear();
    c.origins["server.listen"] = "none: server.listen_tls alone";
  }
  auto at = [&](const std::string& key) {
    auto it = c.origins.find(key);
    return it != c.origins.end() ? it->second : source.string();
  };
  if (c.listen.empty() && c.listen_tls.empty()) {
    throw ConfigError(
        fmt::format("{}: key 'server.listen' is empty and no server.listen_tls is "
                    "given: nothing to listen on",
                    at("server.listen")));
  }
  if (!c.listen_tls.empty() && (c.tls_certificate.empty() || c.tls_key.empty())) {
    throw ConfigError(fmt::format("{}: key 'server.listen_tls' needs [tls] certificate and key",
                                  at("server.listen_tls")));
  }
  for (const auto& v : c.vhosts) {
    if (v.certificate.empty() != v.key.empty()) {
      throw ConfigError(fmt::format(
          "{}: key 'vhosts.certificate': the [[vhosts]] \"{}\" needs both certificate and key",
          v.origin, v.host));
    }
    if (!v.stapling_file.empty() && v.certificate.empty()) {
      throw ConfigError(fmt::format(
          "{}: key 'vhosts.stapling_file': the [[vhosts]] \"{}\" has no certificate of its own "
          "(a staple answers for one certificate: [tls] stapling_file is the default one's)",
          v.origin, v.host));
    }
  }
}

}  // namespace

Config parse_config(std::string_view text, const fs::path& source) {
  toml::table doc;
  try {
    doc = toml::parse(text, source.string());
  } catch (const toml::parse_error& e) {
    throw ConfigError(
        fmt::format("{}: invalid TOML: {}", where(source, e.source()), e.description()));
  }
  Config c;
  c.source = source;
  const fs::path base = source.has_parent_path() ? source.parent_path() : fs::path{"."};
  c.root = base;  // the default root: the config file's own folder

  for (auto&& [section_key, section_node] : doc) {
    std::string_view section = section_key.str();
    if (read_list_section(section, section_node, c, Origin{source, base})) continue;
    const auto* table = section_node.as_table();
    if (!table) {
      throw ConfigError(fmt::format("{}: key '{}' must be inside a section such as [server]",
                                    where(source, section_key.source()), section));
    }
    bool known_section = false;
    for (const auto& f : schema()) known_section |= f.section == section;
    if (!known_section) {
      throw ConfigError(
          fmt::format("{}: unknown section '{}'", where(source, section_node.source()), section));
    }
    for (auto&& [key, node] : *table) {
      const Field* field = nullptr;
      for (const auto& f : schema()) {
        if (f.section == section && f.key == key.str()) field = &f;
      }
      if (!field) {
        throw ConfigError(fmt::format("{}: unknown key '{}.{}'", where(source, key.source()),
                                      section, key.str()));
      }
      if (auto err = field->rule.apply(node, c, base); !err.empty()) {
        throw ConfigError(fmt::format("{}: key '{}.{}' {}", where(source, node.source()), section,
                                      key.str(), err));
      }
      c.origins[fmt::format("{}.{}", section, key.str())] = where(source, node.source());
    }
  }
  check_addresses(c, source);
  resolve_log_path(c.error_log, base);
  resolve_log_path(c.access_log, base);
  c.max_connections_auto = !c.origins.contains("limits.max_connections");
  c.fd_cache_max_entries_auto = !c.origins.contains("fd_cache.max_entries");
  return c;
}

namespace {

// The prefix of the install this binary runs from (PREFIX/bin/weft), or empty when
// /proc/self/exe cannot be read. An install may be moved or made under another prefix than
// the build was configured with (cmake --install --prefix): its files are found from here.
fs::path own_prefix() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return {};
  return exe.parent_path().parent_path();
}

// share/weft of the install this binary runs from when there is one, else of the configured
// prefix.
fs::path data_dir() {
  std::error_code ec;
  if (const fs::path prefix = own_prefix(); !prefix.empty()) {
    fs::path own = prefix / "share" / "weft";
    if (fs::is_directory(own, ec)) return own;
  }
  return fs::path{WEFT_DATADIR};
}

}  // namespace

Config builtin_config() {
  Config c;
  const fs::path data = data_dir();
  std::error_code ec;
  c.root = data / "www";
  if (fs::is_regular_file(data / "mime.types", ec)) c.mime_types = data / "mime.types";
  c.max_connections_auto = true;
  c.fd_cache_max_entries_auto = true;
  return c;
}

fs::path installed_config_dir(const fs::path& prefix) {
  fs::path p = prefix.lexically_normal();
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "/usr/" is "/usr"
  if (p == "/usr") return "/etc/weft";
  if (p.string().starts_with("/opt/")) return fs::path{"/etc"} / p.relative_path() / "weft";
  return p / "etc" / "weft";
}

fs::path default_config_path() {
  std::error_code ec;
  if (const fs::path prefix = own_prefix(); !prefix.empty()) {
    fs::path own = installed_config_dir(prefix) / "weft.toml";
    if (fs::exists(own, ec)) return own;
  }
  return fs::path{WEFT_SYSCONFDIR} / "weft.toml";
}

std::vector<std::string> changed_keys(const Config& a, const Config& b) {
  std::vector<std::string> out;
  for (const auto& f : schema()) {
    if (f.rule.show(a) != f.rule.show(b)) out.push_back(fmt::format("{}.{}", f.section, f.key));
  }
  auto compare = [&out](std::string_view name, const std::string& x, const std::string& y) {
    if (x != y) out.emplace_back(name);
  };
  compare("headers", show_list(a.headers, show_header_rule),
          show_list(b.headers, show_header_rule));
  compare("redirects", show_list(a.redirects, show_redirect_rule),
          show_list(b.redirects, show_redirect_rule));
  std::string va, vb;
  for (const auto& v : a.vhosts) va += show_vhost(v);
  for (const auto& v : b.vhosts) vb += show_vhost(v);
  compare("vhosts", va, vb);
  return out;
}

std::string dump_config(const Config& c) {
  std::string out = c.source.empty() ? std::string{"# built-in defaults (no configuration file)\n"}
                                     : fmt::format("# configuration file {}\n", c.source.string());
  std::string_view section;
  for (const auto& f : schema()) {
    if (f.section != section) {
      section = f.section;
      out += fmt::format("\n[{}]\n", section);
    }
    const std::string name = fmt::format("{}.{}", f.section, f.key);
    std::string origin = "default";
    if (auto it = c.origins.find(name); it != c.origins.end()) {
      origin = it->second;
    } else if ((name == "limits.max_connections" && c.max_connections_auto) ||
               (name == "fd_cache.max_entries" && c.fd_cache_max_entries_auto)) {
      origin = "default, sized from RLIMIT_NOFILE at start";
    }
    out += fmt::format("{} = {}  # {}\n", f.key, f.rule.show(c), origin);
  }
  return out + show_lists(c);
}

Config load_config(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw ConfigError(fmt::format("{}: cannot open the configuration file: {}", file.string(),
                                  std::error_code(errno, std::generic_category()).message()));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), file);
}

void check_config(const Config& c) {
  std::error_code ec;
  auto status = fs::status(c.root, ec);
  std::string where_root = c.source.empty()
                               ? std::string{"root"}
                               : fmt::format("{}: key 'server.root'", c.source.string());
  if (ec || !fs::exists(status)) {
    throw ConfigError(
        fmt::format("{}: document root '{}' does not exist", where_root, c.root.string()));
  }
  if (!fs::is_directory(status)) {
    throw ConfigError(
        fmt::format("{}: document root '{}' is not a directory", where_root, c.root.string()));
  }
  for (const auto& v : c.vhosts) {
    if (!fs::is_directory(v.root, ec)) {
      throw ConfigError(
          fmt::format("{}: key 'vhosts.root': document root '{}' of vhost \"{}\" "
                      "is not a directory",
                      v.origin, v.root.string(), v.host));
    }
  }
  if (!c.mime_types.empty() && !fs::is_regular_file(c.mime_types, ec)) {
    throw ConfigError(fmt::format("{}: key 'server.mime_types': '{}' is not a readable file",
                                  c.source.string(), c.mime_types.string()));
  }
  // The certificates are loaded as the server will load them: a file that is unreadable, not
  // PEM, or a key that does not match its certificate is named here, before a start or reload.
  if (!c.listen_tls.empty()) {
    std::string error;
    if (!open_tls(c, error)) {
      throw ConfigError(fmt::format("{}: {}", c.source.empty() ? "tls" : c.source.string(), error));
    }
  }
}

}  // namespace weft::http
