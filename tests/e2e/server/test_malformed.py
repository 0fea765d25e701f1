"""Malformed and oversized requests over raw sockets: each gets its status and error page, and
the connection closes (a bad message leaves no trustworthy start for the next one)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import error_page, per_backend  # noqa: E402

REASONS = {400: "Bad Request", 413: "Content Too Large", 414: "URI Too Long",
           431: "Request Header Fields Too Large", 501: "Not Implemented",
           505: "HTTP Version Not Supported"}
GET_HELLO = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"


class Rejecting:
    def reject(self, data, status):
        """Sends `data`; asserts one `status` response that closes the connection."""
        with self.srv.client() as c:
            c.send(data)
            r = c.response()
            self.assertEqual((r.status, r.reason), (status, REASONS[status]), data[:120])
            self.assertEqual(r.body, error_page(status, REASONS[status]))
            self.assertEqual(r.header("Connection"), "close")
            self.assertEqual(r.header("Content-Type"), "text/html")
            self.assertTrue(c.closed(), "connection left open after %d" % status)
            self.assertEqual(bytes(c.buf), b"", "bytes after the %d response" % status)

    def accept(self, data, bodies):
        """Sends `data`; asserts the responses carry `bodies` (200 each), in order."""
        with self.srv.client() as c:
            c.send(data)
            for body in bodies:
                r = c.response()
                self.assertEqual((r.status, r.body), (200, body), data[:120])


class Malformed(Rejecting):
    def test_bad_request_line(self):
        for line in (b"GET  /hello.txt HTTP/1.1", b"GET /hello.txt  HTTP/1.1",
                     b"GET /hello.txt HTTP/1.1 x", b"GET /a b HTTP/1.1", b"GET",
                     b"GET /hello.txt HTTP/x.y", b"GET /hello.txt HTTTP/1.1",
                     b"GET hello.txt HTTP/1.1", b"GET /hello\x01.txt HTTP/1.1",
                     b"G\x00T / HTTP/1.1", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
                     # RFC 9112 §3: malformed, whatever the first token is (501 is for a
                     # well-formed line with an unknown method).
                     b"Extra lineGET / HTTP/1.1", b"FOO /hello.txt", b"FOO  / HTTP/1.1",
                     # CONNECT takes authority-form with a port, nothing else.
                     b"CONNECT localhost HTTP/1.1", b"CONNECT / HTTP/1.1",
                     b"CONNECT http://x:443/ HTTP/1.1"):
            with self.subTest(line=line):
                self.reject(line + b"\r\nHost: x\r\n\r\n", 400)

    def test_bad_header_lines(self):
        for head in (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n",  # obs-fold
                     b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",  # space before the colon
                     b"GET / HTTP/1.1\r\nHost: x\r\n: empty-name\r\n\r\n",
                     b"GET / HTTP/1.1\r\nHost: x\r\nBad\x01Name: 1\r\n\r\n",
                     b"GET / HTTP/1.1\r\nHost: x\r\nX-Nul: a\x00b\r\n\r\n",
                     b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n"):
            with self.subTest(head=head):
                self.reject(head, 400)

    def test_unknown_method(self):
        self.reject(b"FOO /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n", 501)
        self.reject(b"FOO /hello.txt HTTP/1.1\nHost: x\n\n", 501)

    def test_bare_lf_accepted(self):
        # Hand-typed and scripted requests (RFC 9112 §2.2), as NGINX takes them.
        self.accept(b"GET /hello.txt HTTP/1.1\nHost: x\n\n" + b"GET /hello.txt HTTP/1.0\n\n",
                    [site.HELLO, site.HELLO])
        self.accept(b"GET /hello.txt HTTP/1.1\r\nHost: x\nX-A: 1\r\n\n", [site.HELLO])
        self.reject(b"GET /hello.txt HTTP/1.1\nHost: x\nX-A: 1\n folded\n\n", 400)
        self.reject(b"GET /hello.txt HTTP/1.1\nHost: x\rX-A: 1\n\n", 400)  # bare CR

    def test_host(self):
        self.reject(b"GET /hello.txt HTTP/1.1\r\n\r\n", 400)  # HTTP/1.1 without Host
        self.reject(b"GET /hello.txt HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400)
        self.reject(b"GET /hello.txt HTTP/1.1\r\nHost: a b\r\n\r\n", 400)
        self.accept(b"GET /hello.txt HTTP/1.1\r\nHost: \r\n\r\n", [site.HELLO])  # empty is valid
        self.accept(b"GET /hello.txt HTTP/1.0\r\n\r\n", [site.HELLO])  # 1.0 needs none

    def test_versions(self):
        for version in (b"HTTP/2.0", b"HTTP/1.2", b"HTTP/3.0", b"HTTP/0.9"):
            with self.subTest(version=version):
                self.reject(b"GET /hello.txt " + version + b"\r\nHost: x\r\n\r\n", 505)
        self.reject(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505)  # the HTTP/2 preface

    def test_content_length_and_transfer_encoding(self):
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                    b"Content-Length: 3\r\n\r\n0\r\n\r\n", 400)

    def test_duplicate_content_length(self):
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                    b"Content-Length: 4\r\n\r\nabcd", 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                    b"Content-Length: 3\r\n\r\nabc", 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc", 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", 400)

    def test_bad_chunked(self):
        te = b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        for body in (b"zz\r\nabc\r\n0\r\n\r\n",  # not hex
                     b"3\r\nabcX\r\n0\r\n\r\n",  # no CRLF after the data
                     b"-1\r\n\r\n",
                     b"3\nabc\r\n0\r\n\r\n"):  # bare LF after the size
            with self.subTest(body=body):
                self.reject(te + body, 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
                    b"0\r\n\r\n", 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400)
        self.reject(b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                    b"0\r\n\r\n", 501)

    def test_body_on_get_is_discarded(self):
        self.accept(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
                    b"GET /nope " + GET_HELLO, [site.HELLO, site.HELLO])
        self.accept(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"5;ext=1\r\nGET /\r\n0\r\nTrailer: x\r\n\r\n" + GET_HELLO,
                    [site.HELLO, site.HELLO])
        # A body of the whole max_body_bytes, larger than one read buffer, in pieces.
        n = 64 * 1024
        with self.srv.client() as c:
            c.send(b"GET /dir/ HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % n)
            for i in range(0, n, 7000):
                c.send(b"B" * min(7000, n - i))
            c.send(GET_HELLO)
            self.assertEqual(c.response().body, site.DIR_INDEX)
            self.assertEqual(c.response().body, site.HELLO)

    def test_body_over_max_body_bytes(self):
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n", 413)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"10001\r\n", 413)

    def test_expect_continue_answered_without_body(self):
        with self.srv.client() as c:
            c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                   b"Expect: 100-continue\r\n\r\n")
            r = c.response()
            self.assertEqual((r.status, r.body), (200, site.HELLO))
            self.assertEqual(r.header("Connection"), "close")
            self.assertTrue(c.closed())

    def test_bad_targets(self):
        for target in (b"/%zz", b"/%2", b"/a%00b", b"*", b"ftp://x/hello.txt",
                       b"http://user@x/hello.txt", b"http:///hello.txt", b"x:80"):
            with self.subTest(target=target):
                r = self.srv.exchange(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")[0]
                self.assertEqual(r.status, 400)
                self.assertEqual(r.body, error_page(400, "Bad Request"))


class Limits(Rejecting):
    settings = {"limits": {"max_body_bytes": "1k", "max_uri_bytes": 256,
                           "max_header_bytes": "2k", "max_headers": 10}}

    def test_uri_too_long(self):
        self.accept(b"GET /hello.txt?" + b"q" * (256 - 11) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                    [site.HELLO])
        self.reject(b"GET /hello.txt?" + b"q" * (256 - 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414)
        # Longer than the whole head may be, and never finished.
        self.reject(b"GET /" + b"a" * 4000, 414)

    def test_head_too_large(self):
        self.accept(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nX-Big: " + b"v" * 1900 + b"\r\n\r\n",
                    [site.HELLO])
        self.reject(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nX-Big: " + b"v" * 2100 + b"\r\n\r\n",
                    431)
        self.reject(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n" + b"X-Many: abcdefgh\r\n" * 9 +
                    b"X-Big: " + b"v" * 2000 + b"\r\n\r\n", 431)

    def test_too_many_headers(self):
        self.accept(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n" + b"X-A: 1\r\n" * 9 + b"\r\n",
                    [site.HELLO])
        self.reject(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n" + b"X-A: 1\r\n" * 10 + b"\r\n", 431)

    def test_body_limit(self):
        self.accept(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n" +
                    b"b" * 1024 + GET_HELLO, [site.HELLO, site.HELLO])
        self.reject(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1025\r\n\r\n", 413)
        self.reject(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"200\r\n" + b"c" * 512 + b"\r\n201\r\n", 413)


class StrictLineEndings(Rejecting):
    settings = {"server": {"accept_bare_lf": False}}

    def test_bare_lf_refused(self):
        for head in (b"GET /hello.txt HTTP/1.1\nHost: x\n\n",
                     b"GET /hello.txt HTTP/1.1\r\nHost: x\nX-A: 1\r\n\r\n",
                     b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\n"):
            with self.subTest(head=head):
                self.reject(head, 400)
        self.accept(GET_HELLO, [site.HELLO])


per_backend(globals(), Malformed, Limits, StrictLineEndings)

if __name__ == "__main__":
    unittest.main()
