// Parses conf/weft.toml into weft::http::Config with toml++, against one schema table, so
// that an unknown key, a wrong type and an out-of-range value all produce the same kind of
// message: "FILE:LINE:COL: key 'section.key': what is wrong".
#include "server/config.hpp"

#include <charconv>
#include <fstream>
#include <functional>
#include <sstream>

#include <arpa/inet.h>
#include <fmt/core.h>
#include <toml++/toml.h>

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

Rule listen_list() {
  Apply apply = [](const toml::node& n, Config& c, const fs::path&) -> std::string {
    const auto* arr = n.as_array();
    if (!arr || arr->empty()) return "must be a non-empty array of \"HOST:PORT\" strings";
    std::vector<ListenAddress> out;
    for (const auto& e : *arr) {
      auto v = e.value_exact<std::string>();
      if (!v) return "must be an array of \"HOST:PORT\" strings";
      auto a = parse_listen_address(*v);
      if (!a) return fmt::format("\"{}\" is not HOST:PORT, [IPV6]:PORT, *:PORT or PORT", *v);
      out.push_back(*a);
    }
    c.listen = std::move(out);
    return {};
  };
  return {apply, [](const Config& c) {
            std::vector<std::string> texts;
            for (const auto& a : c.listen) texts.push_back(a.to_string());
            return toml_list(texts);
          }};
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
      {"server", "listen", listen_list()},
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

// [fd_cache], [log] and [metrics].
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
      {"fd_cache", "revalidate",
       choice(&Config::fd_cache_revalidate,
              {{"statx", Revalidation::statx}, {"inotify", Revalidation::inotify}})},

      {"log", "level", log_level()},
      {"log", "error_log", string(&Config::error_log)},
      {"log", "access_log", string(&Config::access_log)},
      {"log", "access_format",
       choice(&Config::access_format,
              {{"combined", AccessLogFormat::combined}, {"json", AccessLogFormat::json}})},

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

}  // namespace

std::string ListenAddress::to_string() const {
  return ipv6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::optional<ListenAddress> parse_listen_address(std::string_view text) {
  ListenAddress a;
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return std::nullopt;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    a.ipv6 = true;
  } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return std::nullopt;  // v6 needs brackets
  } else {
    host = "*";
    port = text;
  }
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc{} || end != port.data() + port.size() || p == 0 || p > 65535) {
    return std::nullopt;
  }
  a.port = static_cast<uint16_t>(p);
  if (host == "*" || host.empty()) {
    a.host = a.ipv6 ? "::" : "0.0.0.0";
    return a;
  }
  if (host == "localhost") host = "127.0.0.1";
  std::string h{host};
  unsigned char buf[sizeof(in6_addr)];
  if (inet_pton(a.ipv6 ? AF_INET6 : AF_INET, h.c_str(), buf) != 1) return std::nullopt;
  a.host = std::move(h);
  return a;
}

std::optional<Micros> parse_duration_us(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || value < 0) return std::nullopt;
  std::string_view unit{end, static_cast<std::size_t>(text.data() + text.size() - end)};
  double us;
  if (unit == "us") {
    us = value;
  } else if (unit == "ms") {
    us = value * 1e3;
  } else if (unit == "s" || unit.empty()) {
    us = value * 1e6;
  } else if (unit == "m") {
    us = value * 60e6;
  } else if (unit == "h") {
    us = value * 3600e6;
  } else {
    return std::nullopt;
  }
  if (us > 1e18) return std::nullopt;
  return Micros{static_cast<int64_t>(us + 0.5)};
}

std::optional<Millis> parse_duration(std::string_view text) {
  auto us = parse_duration_us(text);
  if (!us) return std::nullopt;
  return std::chrono::round<Millis>(*us);
}

std::optional<std::size_t> parse_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{}) return std::nullopt;
  std::string_view unit{end, static_cast<std::size_t>(text.data() + text.size() - end)};
  unsigned shift = 0;
  if (unit.empty() || unit == "b" || unit == "B") {
    shift = 0;
  } else if (unit == "k" || unit == "K" || unit == "KiB") {
    shift = 10;
  } else if (unit == "m" || unit == "M" || unit == "MiB") {
    shift = 20;
  } else if (unit == "g" || unit == "G" || unit == "GiB") {
    shift = 30;
  } else {
    return std::nullopt;
  }
  if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
  return static_cast<std::size_t>(value << shift);
}

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
  return out;
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
  if (!c.mime_types.empty() && !fs::is_regular_file(c.mime_types, ec)) {
    throw ConfigError(fmt::format("{}: key 'server.mime_types': '{}' is not a readable file",
                                  c.source.string(), c.mime_types.string()));
  }
}

}  // namespace weft::http
