// Virtual hosts: the request's host name, and the site that answers for it.
#include "server/site/vhost.hpp"

#include "server/core/ascii.hpp"

namespace weft::http {

std::string_view host_without_port(std::string_view authority) {
  if (auto at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);  // userinfo of an absolute-form target
  }
  std::string_view host = authority;
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    host = close == std::string_view::npos ? host : host.substr(0, close + 1);
  } else if (auto colon = host.find(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  return host;
}

std::string_view request_host(const Request& req) {
  std::string_view target = req.target();
  if (!target.empty() && target.front() != '/') {
    // Absolute form: "scheme://authority/path"; its authority wins over Host.
    if (auto scheme_end = target.find("://"); scheme_end != std::string_view::npos) {
      std::string_view rest = target.substr(scheme_end + 3);
      return host_without_port(rest.substr(0, rest.find_first_of("/?#")));
    }
  }
  return host_without_port(req.host().value_or(""));
}

bool host_matches(std::string_view pattern, std::string_view name) {
  if (pattern.starts_with("*.")) {
    const std::string_view suffix = pattern.substr(1);  // ".b.test"
    return name.size() > suffix.size() &&
           ascii::iequals(name.substr(name.size() - suffix.size()), suffix);
  }
  return ascii::iequals(pattern, name);
}

const SiteContext& choose_site(const std::vector<std::unique_ptr<SiteContext>>& vhosts,
                               std::string_view name, const SiteContext& fallback) {
  if (name.empty()) return fallback;
  const SiteContext* best = nullptr;
  for (const auto& site : vhosts) {
    const std::string_view pattern = site->name;
    if (!host_matches(pattern, name)) continue;
    if (!pattern.starts_with("*.")) return *site;  // an exact name wins
    if (!best || pattern.size() > best->name.size()) best = site.get();
  }
  return best ? *best : fallback;
}

}  // namespace weft::http
