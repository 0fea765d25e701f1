"""Traversal corpus against the live server, with the exact answer for each case and what
happens to the connection: encoded and double-encoded dot segments, overlong UTF-8, backslashes,
NUL, absolute-form targets naming other hosts, and Host header tricks. A canary file sits next
to the document root (weft_site.CANARY) and must never appear in any answer.

test_traversal.py sends a broad list of attacks and accepts 400 or 404; here every case says
which, because the answer tells how the target was understood (400: it climbed above the root
or was malformed; 404: it was decoded into a name that does not exist under the root; 200: it
named a file inside the root). A well-framed request keeps the connection alive whatever its
status (RFC 9112 §9.3); an invalid Host is a bad message (RFC 9112 §3.2) and closes it."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import per_backend  # noqa: E402

GET_HELLO = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"

# (target, status). Host is "x". The connection stays open after each.
TARGETS = [
    # Plain and percent-encoded dot-dot: above the root is 400.
    (b"/../canary.txt", 400),
    (b"/%2e%2e/canary.txt", 400),
    (b"/%2E%2e/canary.txt", 400),
    (b"/.%2e/canary.txt", 400),
    (b"/%2e%2e%2fcanary.txt", 400),          # an encoded slash is a slash
    (b"/dir/..%2f..%2fcanary.txt", 400),
    (b"/dir/sub/%2e%2e/%2e%2e/%2e%2e/canary.txt", 400),
    (b"/./.././canary.txt", 400),
    # Dot segments that stay inside the root are resolved.
    (b"/dir/../hello.txt", 200),
    (b"/dir/%2e%2e/hello.txt", 200),
    (b"/dir/sub/../../hello.txt", 200),
    (b"/./hello.txt", 200),
    (b"//hello.txt", 200),
    # Decoded exactly once: a double encoding is a name containing "%2e", which does not exist.
    (b"/%252e%252e/canary.txt", 404),
    (b"/%252e%252e%252fcanary.txt", 404),
    (b"/%25252e%25252e/canary.txt", 404),
    (b"/dir/%252e%252e/hello.txt", 404),
    # Overlong and look-alike UTF-8 are bytes, never dots or slashes.
    (b"/%c0%ae%c0%ae/canary.txt", 404),
    (b"/%c0%ae%c0%ae%c0%afcanary.txt", 404),
    (b"/%e0%80%ae%e0%80%ae/canary.txt", 404),
    (b"/%c1%9c..%c1%9ccanary.txt", 404),
    (b"/%ef%bc%8e%ef%bc%8e/canary.txt", 404),   # full-width full stops
    (b"/\xc0\xae\xc0\xae/canary.txt", None),     # raw bytes over 0x7F: not a URI
    # Backslashes are file-name bytes on Linux.
    (b"/..\\canary.txt", 404),
    (b"/..%5ccanary.txt", 404),
    (b"/%5c..%5c..%5ccanary.txt", 404),
    (b"/dir\\..\\hello.txt", 404),
    # Malformed escapes and NUL: 400.
    (b"/%2", 400),
    (b"/%g0", 400),
    (b"/%u002e%u002e/canary.txt", 400),
    (b"/%%32%65", 400),
    (b"/hello.txt%00", 400),
    (b"/%00../canary.txt", 400),
    # Names that only look like traversal.
    (b"/...", 404),
    (b"/..canary.txt", 404),
    (b"/.. /canary.txt", None),  # a space in the target: a malformed request line
    (b"/..%20/canary.txt", 404),
    (b"/canary.txt", 404),
    (b"/hello.txt/..", 200),      # "/hello.txt/.." is "/", the index
    # Absolute-form: the target's authority wins over Host (RFC 9112 §3.2.2), and weft serves
    # its one site whatever the host named: never a file of another "host".
    (b"http://evil.example/hello.txt", 200),
    (b"http://evil.example/../canary.txt", 400),
    (b"http://evil.example/%2e%2e/canary.txt", 400),
    (b"http://evil.example/%252e%252e/canary.txt", 404),
    (b"http://localhost:8080/..%2fcanary.txt", 400),
    (b"http://127.0.0.1/hello.txt?../../canary.txt", 200),
    (b"http://evil.example", 200),  # the root: its index
    (b"HTTP://EVIL.EXAMPLE/hello.txt", 200),
    (b"http://user:pw@evil.example/hello.txt", 400),
    (b"http:///hello.txt", 400),
    # The authority is "..", the path "/canary.txt" (inside the root, where no canary lives).
    (b"http://../canary.txt", 404),
    (b"file:///etc/passwd", 400),
    # A network-path reference is an origin-form path to weft: "/evil.example/../canary.txt"
    # is "/canary.txt" under the root.
    (b"//evil.example/../canary.txt", 404),
    (b"//evil.example/../../canary.txt", 400),
]

# (Host value, status, closes). The target is /hello.txt. weft serves one site: a valid Host
# never changes which file is served; an invalid one is 400 and closes (a bad message).
HOSTS = [
    (b"../../", 400, True),
    (b"..", 200, False),
    (b"%2e%2e", 200, False),
    (b"x/../../canary.txt", 400, True),
    (b"x\\..\\..", 400, True),
    (b"evil.example:80", 200, False),
    (b"[::1]:8080", 200, False),
    (b"x y", 400, True),
    (b"x@y", 400, True),
    (b"x\x01", 400, True),
    (b"x\x00", 400, True),
    (b"", 200, False),
]


class TraversalCorpus:
    def assert_confined(self, r):
        self.assertNotIn(site.CANARY, r.body)
        self.assertNotIn(site.CANARY, r.head)
        self.assertNotIn(site.OUTSIDE, r.body)
        self.assertNotIn(b"root:x:0:0", r.body)

    def assert_kept(self, c):
        """The connection still serves a request."""
        c.send(GET_HELLO)
        r = c.response()
        self.assertEqual((r.status, r.body), (200, site.HELLO))

    def test_targets(self):
        for target, status in TARGETS:
            with self.subTest(target=target):
                with self.srv.client() as c:
                    c.send(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
                    r = c.response()
                    self.assert_confined(r)
                    if status is None:  # a malformed request line: 400 and close
                        self.assertEqual(r.status, 400, r)
                        self.assertTrue(c.closed())
                        continue
                    self.assertEqual(r.status, status, r)
                    self.assertNotEqual(r.header("Connection"), "close", r)
                    if status == 200:
                        self.assertIn(r.body, (site.HELLO, site.INDEX))
                    self.assert_kept(c)

    def test_targets_head_and_http10(self):
        # The same answers for HEAD, and for HTTP/1.0 (which closes after each).
        for target, status in TARGETS:
            if status is None:
                continue
            with self.subTest(target=target):
                r = self.srv.exchange(b"HEAD " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                                      ("HEAD",))[0]
                self.assertEqual(r.status, status, r)
                self.assert_confined(r)
                with self.srv.client() as c:
                    c.send(b"GET " + target + b" HTTP/1.0\r\n\r\n")
                    r = c.response()
                    self.assertEqual(r.status, status, r)
                    self.assert_confined(r)
                    self.assertTrue(c.closed())

    def test_host_tricks(self):
        for host, status, closes in HOSTS:
            with self.subTest(host=host):
                with self.srv.client() as c:
                    c.send(b"GET /hello.txt HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
                    r = c.response()
                    self.assert_confined(r)
                    self.assertEqual(r.status, status, r)
                    if status == 200:
                        self.assertEqual(r.body, site.HELLO)
                    if closes:
                        self.assertEqual(r.header("Connection"), "close")
                        self.assertTrue(c.closed())
                        self.assertEqual(bytes(c.buf), b"")
                    else:
                        self.assert_kept(c)

    def test_host_does_not_pick_the_root(self):
        # With an absolute-form target naming one host and a Host naming another, still the
        # one root: the file, never something outside.
        with self.srv.client() as c:
            c.send(b"GET http://a.example/dir/sub/deep.txt HTTP/1.1\r\nHost: ../../\r\n\r\n")
            r = c.response()
            # The Host is invalid whatever the target says: 400, close.
            self.assertEqual(r.status, 400)
            self.assertTrue(c.closed())
        r = self.srv.exchange(b"GET http://a.example/dir/sub/deep.txt HTTP/1.1\r\n"
                              b"Host: b.example\r\n\r\n")[0]
        self.assertEqual((r.status, r.body), (200, site.DEEP))


per_backend(globals(), TraversalCorpus)

if __name__ == "__main__":
    unittest.main()
