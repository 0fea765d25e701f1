"""Conditional requests (RFC 9110 §13): If-None-Match, If-Modified-Since, If-Match,
If-Unmodified-Since, and the order in which they are evaluated (§13.2.2)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import error_page, http_date, per_backend  # noqa: E402

ETAG = site.etag(len(site.HELLO))
OTHER = '"0-0"'
LAST_MODIFIED = http_date(site.MTIME)
EARLIER = http_date(site.MTIME - 3600)
LATER = http_date(site.MTIME + 3600)  # after the file changed, before now
FUTURE = http_date(4102444800)  # 2100: later than the server's clock, so invalid


class Conditional:
    def request(self, headers, method="GET", path="/hello.txt"):
        lines = "".join("%s: %s\r\n" % kv for kv in headers)
        data = ("%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (method, path, lines)).encode()
        return self.srv.exchange(data, (method,))[0]

    def check(self, headers, status, method="GET"):
        r = self.request(headers, method)
        self.assertEqual(r.status, status, (headers, r))
        if status == 304:
            self.assertEqual(r.body, b"")
            self.assertEqual(r.header("ETag"), ETAG)
            self.assertEqual(r.header("Last-Modified"), LAST_MODIFIED)
            self.assertIsNone(r.header("Content-Length"))
            self.assertIsNone(r.header("Content-Type"))
        elif status == 412:
            page = error_page(412, "Precondition Failed")
            self.assertEqual(r.body, page if method == "GET" else b"")
            self.assertEqual(r.header("Content-Length"), str(len(page)))
            self.assertEqual(r.header("Content-Type"), "text/html")
        elif status == 200:
            self.assertEqual(r.body, site.HELLO if method == "GET" else b"")
        return r

    def test_if_none_match(self):
        for value in (ETAG, '"a", %s' % ETAG, '"a",%s , "b"' % ETAG, "*", "W/" + ETAG,
                      "W/\"x\", W/%s" % ETAG):
            with self.subTest(value=value):
                self.check([("If-None-Match", value)], 304)
                self.check([("If-None-Match", value)], 304, "HEAD")
        for value in (OTHER, '"a", "b"', ETAG[1:-1], "W/" + OTHER):
            with self.subTest(value=value):
                self.check([("If-None-Match", value)], 200)
        # A list split over two field lines.
        self.check([("If-None-Match", OTHER), ("If-None-Match", ETAG)], 304)

    def test_if_modified_since(self):
        self.check([("If-Modified-Since", LAST_MODIFIED)], 304)
        self.check([("If-Modified-Since", LATER)], 304)
        self.check([("If-Modified-Since", LATER)], 304, "HEAD")
        self.check([("If-Modified-Since", EARLIER)], 200)
        self.check([("If-Modified-Since", FUTURE)], 200)  # invalid: ignored
        self.check([("If-Modified-Since", "yesterday")], 200)  # invalid: ignored
        # The obsolete date formats are accepted too (RFC 9110 §5.6.7).
        self.check([("If-Modified-Since", "Thursday, 02-Jan-20 03:04:05 GMT")], 304)
        self.check([("If-Modified-Since", "Thu Jan  2 03:04:05 2020")], 304)

    def test_if_match(self):
        self.check([("If-Match", OTHER)], 412)
        self.check([("If-Match", OTHER)], 412, "HEAD")
        self.check([("If-Match", ETAG)], 200)
        self.check([("If-Match", '"a", %s' % ETAG)], 200)
        self.check([("If-Match", "*")], 200)
        self.check([("If-Match", "W/" + ETAG)], 412)  # strong comparison

    def test_if_unmodified_since(self):
        self.check([("If-Unmodified-Since", EARLIER)], 412)
        self.check([("If-Unmodified-Since", LAST_MODIFIED)], 200)
        self.check([("If-Unmodified-Since", LATER)], 200)
        self.check([("If-Unmodified-Since", "garbage")], 200)  # invalid: ignored

    def test_precedence(self):
        # 1. If-Match decides; If-Unmodified-Since is then not looked at.
        self.check([("If-Match", ETAG), ("If-Unmodified-Since", EARLIER)], 200)
        self.check([("If-Match", OTHER), ("If-Unmodified-Since", LATER)], 412)
        # A failed step 1 or 2 wins over a matching If-None-Match.
        self.check([("If-Match", OTHER), ("If-None-Match", ETAG)], 412)
        self.check([("If-Unmodified-Since", EARLIER), ("If-None-Match", ETAG)], 412)
        # 3. If-None-Match decides; If-Modified-Since is then not looked at.
        self.check([("If-None-Match", OTHER), ("If-Modified-Since", LAST_MODIFIED)], 200)
        self.check([("If-None-Match", ETAG), ("If-Modified-Since", EARLIER)], 304)
        # Both steps passing: 304 from step 3.
        self.check([("If-Match", ETAG), ("If-None-Match", ETAG)], 304)
        # A 304 or 412 comes before a Range is looked at.
        self.check([("If-None-Match", ETAG), ("Range", "bytes=0-1")], 304)
        self.check([("If-Match", OTHER), ("Range", "bytes=0-1")], 412)

    def test_with_curl(self):
        r = self.srv.curl("/hello.txt", "-H", "If-None-Match: " + ETAG)
        self.assertEqual((r.status, r.body, r.header("ETag")), (304, b"", ETAG))
        r = self.srv.curl("/hello.txt", "-z", LATER)  # If-Modified-Since
        self.assertEqual((r.status, r.body), (304, b""))
        r = self.srv.curl("/hello.txt", "-z", EARLIER)
        self.assertEqual((r.status, r.body), (200, site.HELLO))
        r = self.srv.curl("/hello.txt", "-H", "If-Match: " + OTHER)
        self.assertEqual(r.status, 412)
        r = self.srv.curl("/hello.txt", "-z", "-" + LATER)  # If-Unmodified-Since
        self.assertEqual((r.status, r.body), (200, site.HELLO))
        r = self.srv.curl("/hello.txt", "-z", "-" + EARLIER)
        self.assertEqual(r.status, 412)

    def test_conditionals_on_errors(self):
        # A missing file is 404 whatever the preconditions say.
        r = self.request([("If-None-Match", "*")], path="/nope")
        self.assertEqual(r.status, 404)


per_backend(globals(), Conditional)

if __name__ == "__main__":
    unittest.main()
