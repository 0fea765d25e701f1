// weft::http virtual hosts: which site answers a request, by the name it was sent to.
//
// The name is the request target's authority when the target is in absolute form (RFC 9112
// §3.2.2: it wins over Host), else the Host field's; without its port and a trailing dot,
// compared case-insensitively. A vhost's host is an exact name ("b.test") or a wildcard
// ("*.b.test": any name ending in ".b.test", at any depth, not "b.test" itself), as NGINX's
// server_name; an exact name wins over a wildcard, and the longest wildcard over a shorter
// one. A request whose name no vhost has, or that has none (HTTP/1.0 without Host), gets the
// default site. Choosing allocates nothing; with no vhost configured it is one branch.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "server/http/request.hpp"
#include "server/site/site_context.hpp"

namespace weft::http {

/// Returns the host name a request was sent to (see the top), or "" when it names none.
std::string_view request_host(const Request& req);

/// Returns `authority` ("b.test:8080", "[::1]:80", "B.test.") without its port and a
/// trailing dot.
std::string_view host_without_port(std::string_view authority);

/// Returns whether host `name` is named by vhost host `pattern` (exact, or "*.suffix"),
/// ignoring case.
bool host_matches(std::string_view pattern, std::string_view name);

/// Returns the site among `vhosts` that answers for host `name` (exact first, then the
/// longest wildcard), or `fallback` when none does.
const SiteContext& choose_site(const std::vector<std::unique_ptr<SiteContext>>& vhosts,
                               std::string_view name, const SiteContext& fallback);

}  // namespace weft::http
