"""Issue 33, on both backends: response headers by path ([[headers]]), redirects
([[redirects]]), custom error pages (server.error_pages) and the single-page-application
fallback (server.fallback_page), each compared with what NGINX's add_header, return,
error_page and try_files do."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import error_page, per_backend  # noqa: E402

PAGE_404 = b"<h1>our own 404</h1>\n"
PAGE_500 = b"<h1>our own 50x</h1>\n"


def add_files(root, files):
    for name, data in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.utime(path, (site.MTIME, site.MTIME))


class Client:
    def get(self, path, headers=(), method="GET", host="x"):
        lines = "".join("%s: %s\r\n" % kv for kv in headers)
        data = ("%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (method, path, host, lines)).encode()
        return self.srv.exchange(data, (method,), timeout=10)[0]

    def names(self, r):
        return [k.lower() for k, _ in r.fields]


class Headers(Client):
    @classmethod
    def extra_toml(cls):
        return """
[[headers]]
source = "/**"
set = { "X-Content-Type-Options" = "nosniff" }
always = true

[[headers]]
source = "/**/*.{css,js}"
set = { "Cache-Control" = "public, max-age=31536000, immutable", "Access-Control-Allow-Origin" = "*" }

[[headers]]
source = "/dir/**"
set = { "X-Dir" = "yes" }
"""

    def test_every_matching_rule_in_file_order(self):
        r = self.get("/style.css")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.header("Cache-Control"), "public, max-age=31536000, immutable")
        self.assertEqual(r.header("Access-Control-Allow-Origin"), "*")
        self.assertEqual(r.header("X-Content-Type-Options"), "nosniff")
        names = self.names(r)
        self.assertLess(names.index("x-content-type-options"), names.index("cache-control"))
        # (Within one rule's `set`, TOML tables have no order: weft writes them by name.)
        self.assertLess(names.index("x-content-type-options"),
                        names.index("access-control-allow-origin"))
        self.assertEqual(r.header("Content-Length"), str(len(r.body)))
        r = self.get("/dir/")
        self.assertEqual(r.body, site.DIR_INDEX)
        self.assertEqual(r.header("X-Dir"), "yes")
        self.assertIsNone(r.header("Cache-Control"))

    def test_head_304_and_ranges_carry_them(self):
        r = self.get("/style.css", method="HEAD")
        self.assertEqual(r.header("Cache-Control"), "public, max-age=31536000, immutable")
        etag = r.header("ETag")
        r = self.get("/style.css", [("If-None-Match", etag)])
        self.assertEqual(r.status, 304)
        self.assertEqual(r.header("Cache-Control"), "public, max-age=31536000, immutable")
        r = self.get("/style.css", [("Range", "bytes=0-3")])
        self.assertEqual((r.status, r.body), (206, b"body"))
        self.assertEqual(r.header("Access-Control-Allow-Origin"), "*")

    def test_errors_get_only_always_rules(self):
        # NGINX's add_header skips 4xx and 5xx unless "always": no year-long 404.
        r = self.get("/missing.css")
        self.assertEqual(r.status, 404)
        self.assertIsNone(r.header("Cache-Control"))
        self.assertEqual(r.header("X-Content-Type-Options"), "nosniff")
        self.assertEqual(r.body, error_page(404, "Not Found"))

    def test_options_gets_cors_fields(self):
        r = self.get("/app.js", method="OPTIONS")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.header("Access-Control-Allow-Origin"), "*")

    def test_pipelined_keep_alive_responses_stay_framed(self):
        req = b"GET /style.css HTTP/1.1\r\nHost: x\r\n\r\n" * 5
        for r in self.srv.exchange(req, ("GET",) * 5):
            self.assertEqual(r.status, 200)
            self.assertEqual(r.body, site.FILES["style.css"])


class Redirects(Client):
    @classmethod
    def extra_toml(cls):
        return """
[[redirects]]
source = "/old"
destination = "/hello.txt"
status = 301

[[redirects]]
source = "/blog/*/**"
destination = "https://news.test/$1/$2"
status = 308

[[redirects]]
source = "/style.css"
destination = "/moved.css"
status = 302

[[redirects]]
source = "/{a,b}/*"
destination = "/letters/$1-$2"
status = 307
"""

    def test_exact_redirect(self):
        r = self.get("/old?x=1")
        self.assertEqual(r.status, 301)
        self.assertEqual(r.header("Location"), "/hello.txt")  # no query, as NGINX's return
        self.assertEqual(r.body, error_page(301, "Moved Permanently"))
        r = self.get("/old/")
        self.assertEqual(r.status, 404)  # the glob matches the whole path only

    def test_captures_are_encoded(self):
        r = self.get("/blog/2024/a%20b/c.html")
        self.assertEqual(r.status, 308)
        self.assertEqual(r.reason, "Permanent Redirect")
        self.assertEqual(r.header("Location"), "https://news.test/2024/a%20b/c.html")
        r = self.get("/b/x%0d%0aSet-Cookie:%20y")
        self.assertEqual(r.status, 307)
        self.assertEqual(r.header("Location"), "/letters/b-x%0D%0ASet-Cookie%3A%20y")
        self.assertIsNone(r.header("Set-Cookie"))

    def test_a_rule_wins_over_a_file_and_any_method_is_redirected(self):
        r = self.get("/style.css")
        self.assertEqual((r.status, r.header("Location")), (302, "/moved.css"))
        for method in ("HEAD", "POST", "DELETE", "OPTIONS"):
            r = self.get("/old", method=method)
            self.assertEqual((r.status, r.header("Location")), (301, "/hello.txt"), method)
        self.assertEqual(self.get("/hello.txt").body, site.HELLO)


class ErrorPages(Client):
    settings = {"server": {"error_pages": {"404": "/errors/404.html", "403": "/no-such.html",
                                           "405": "/errors/404.html"}}}

    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        add_files(root, {"errors/404.html": PAGE_404})
        return root

    def test_404_page_keeps_its_status(self):
        r = self.get("/nope")
        self.assertEqual(r.status, 404)
        self.assertEqual(r.body, PAGE_404)
        self.assertEqual(r.header("Content-Type"), "text/html")
        self.assertEqual(r.header("Content-Length"), str(len(PAGE_404)))
        self.assertIsNone(r.header("ETag"))
        r = self.get("/nope", method="HEAD")
        self.assertEqual((r.status, r.body), (404, b""))
        self.assertEqual(r.header("Content-Length"), str(len(PAGE_404)))

    def test_conditionals_and_ranges_do_not_apply_to_errors(self):
        etag = self.get("/errors/404.html").header("ETag")
        for h in (("If-None-Match", etag), ("If-None-Match", "*"), ("Range", "bytes=0-3")):
            r = self.get("/nope", [h])
            self.assertEqual((r.status, r.body), (404, PAGE_404), h)

    def test_missing_page_gives_the_built_in_one(self):
        r = self.get("/noindex/")
        self.assertEqual((r.status, r.body), (403, error_page(403, "Forbidden")))

    def test_fields_of_the_error_stay(self):
        r = self.get("/hello.txt", method="POST")
        self.assertEqual((r.status, r.body), (405, PAGE_404))
        self.assertEqual(r.header("Allow"), "GET, HEAD, OPTIONS")


class Fallback(Client):
    settings = {"server": {"fallback_page": "/index.html",
                           "error_pages": {"403": "/errors/403.html"}}}

    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        add_files(root, {"errors/403.html": b"<h1>our 403</h1>\n"})
        return root

    def test_a_path_that_names_nothing_gets_the_page_with_200(self):
        for path in ("/app/route", "/app/route/", "/hello.txt/", "/missing.js"):
            r = self.get(path)
            self.assertEqual((r.status, r.body), (200, site.INDEX), path)
            self.assertEqual(r.header("ETag"), site.etag(len(site.INDEX)))
        self.assertEqual(self.get("/hello.txt").body, site.HELLO)
        self.assertEqual(self.get("/dir/").body, site.DIR_INDEX)

    def test_conditionals_head_and_ranges(self):
        r = self.get("/app/route", [("If-None-Match", site.etag(len(site.INDEX)))])
        self.assertEqual(r.status, 304)
        r = self.get("/app/route", method="HEAD")
        self.assertEqual((r.status, r.body), (200, b""))
        self.assertEqual(r.header("Content-Length"), str(len(site.INDEX)))
        r = self.get("/app/route", [("Range", "bytes=0-8")])
        self.assertEqual((r.status, r.body), (206, site.INDEX[:9]))

    def test_only_get_and_head_and_not_a_directory(self):
        self.assertEqual(self.get("/app/route", method="POST").status, 405)
        r = self.get("/noindex/")  # names a directory: try_files' $uri/ is there
        self.assertEqual((r.status, r.body), (403, b"<h1>our 403</h1>\n"))


class FallbackPageRules(Client):
    """Issue 43: header rules match the page served (NGINX's internal redirect), so a removed
    hashed asset answered with index.html gets index.html's fields, never the asset rule's
    year-long immutable Cache-Control; an error page likewise gets its own path's rules."""

    settings = {"server": {"fallback_page": "/index.html",
                           "error_pages": {"403": "/errors/403.html"}}}

    @classmethod
    def extra_toml(cls):
        return """
[[headers]]
source = "/assets/**"
set = { "Cache-Control" = "public, max-age=31536000, immutable" }

[[headers]]
source = "/index.html"
set = { "Cache-Control" = "no-cache" }

[[headers]]
source = "/noindex/**"
set = { "X-Asked" = "yes" }
always = true

[[headers]]
source = "/errors/**"
set = { "X-Error-Page" = "yes" }
always = true
"""

    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        add_files(root, {"assets/app.NEWHASH.js": b"new();\n",
                         "errors/403.html": b"<h1>our 403</h1>\n"})
        return root

    def test_fallback_gets_the_pages_rules(self):
        r = self.get("/assets/app.NEWHASH.js")
        self.assertEqual(r.header("Cache-Control"), "public, max-age=31536000, immutable")
        for h in ((), [("If-None-Match", site.etag(len(site.INDEX)))]):
            r = self.get("/assets/app.OLDHASH.js", h)
            self.assertIn(r.status, (200, 304), r)
            self.assertEqual(r.header("Cache-Control"), "no-cache", r)
        self.assertEqual(self.get("/assets/app.OLDHASH.js").body, site.INDEX)

    def test_error_page_gets_its_own_rules(self):
        r = self.get("/noindex/")
        self.assertEqual((r.status, r.body), (403, b"<h1>our 403</h1>\n"))
        self.assertEqual(r.header("X-Error-Page"), "yes")
        self.assertIsNone(r.header("X-Asked"))


class FallbackMissing(Client):
    settings = {"server": {"fallback_page": "/nothing.html",
                           "error_pages": {"404": "/nothing-either.html"}}}

    def test_never_loops(self):
        r = self.get("/app/route")
        self.assertEqual((r.status, r.body), (404, error_page(404, "Not Found")))


per_backend(globals(), Headers, Redirects, ErrorPages, Fallback, FallbackPageRules,
            FallbackMissing)

if __name__ == "__main__":
    unittest.main()
