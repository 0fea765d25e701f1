"""Request smuggling against the live server: every request that two HTTP/1.1 parsers could
frame differently (CL with TE, duplicate or odd Content-Length, obfuscated Transfer-Encoding,
obs-fold, bare LF or CR, whitespace before the colon, bad chunk sizes) gets its status and the
connection closes with nothing answered after it: the request hidden behind it is never served.
Then the cases where RFC 9112 lets the connection live (a 404, a 405, a well-framed body that
is discarded): the next request on the same connection is served. Oversized heads at the
default limits close (414, 431). Status and error page details of the simpler malformed forms
are in test_malformed.py; this file is about framing and what happens to the connection."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import per_backend  # noqa: E402

# The request a smuggler hides behind the first one. If it is ever answered, the server framed
# the first request differently from a strict parser.
SMUGGLED = b"GET /canary-smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
GET_HELLO = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"


def post(fields, body=b""):
    """A POST to /hello.txt with `fields` (bytes, CRLF-terminated lines) and `body`."""
    return b"POST /hello.txt HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n" + body


# (note, request bytes, status). Each closes the connection after that one response.
CLOSING = [
    # Content-Length together with Transfer-Encoding, in both orders (CL.TE, TE.CL).
    ("CL.TE", post(b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n" + SMUGGLED),
     400),
    ("TE.CL", post(b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
                   b"5c\r\n" + SMUGGLED + b"\r\n0\r\n\r\n"), 400),
    ("CL.TE tab before chunked", post(b"Content-Length: 6\r\nTransfer-Encoding:\tchunked\r\n",
                                      b"0\r\n\r\n" + SMUGGLED), 400),
    ("CL.TE upper-case chunked", post(b"Content-Length: 6\r\nTransfer-Encoding: CHUNKED\r\n",
                                      b"0\r\n\r\n" + SMUGGLED), 400),
    ("CL with TE identity", post(b"Content-Length: 6\r\nTransfer-Encoding: identity\r\n",
                                 b"0\r\n\r\n" + SMUGGLED), 400),
    # Transfer-Encoding that some parser might not read as chunked.
    ("TE xchunked", post(b"Transfer-Encoding: xchunked\r\n", b"0\r\n\r\n" + SMUGGLED), 400),
    ("TE chunked then x", post(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n",
                               b"0\r\n\r\n" + SMUGGLED), 400),
    ("TE chunked twice", post(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                              b"0\r\n\r\n" + SMUGGLED), 400),
    ("TE with vertical tab", post(b"Transfer-Encoding:\x0bchunked\r\n", b"0\r\n\r\n" + SMUGGLED),
     400),
    ("TE with NUL", post(b"Transfer-Encoding: chunked\x00\r\n", b"0\r\n\r\n" + SMUGGLED), 400),
    ("TE in HTTP/1.0", b"POST /hello.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"0\r\n\r\n" + SMUGGLED, 400),
    ("TE space before colon", post(b"Transfer-Encoding : chunked\r\n", b"0\r\n\r\n" + SMUGGLED),
     400),
    ("TE tab before colon", post(b"Transfer-Encoding\t: chunked\r\n", b"0\r\n\r\n" + SMUGGLED),
     400),
    ("TE obs-fold", post(b"X-A: 1\r\n Transfer-Encoding: chunked\r\n", b"0\r\n\r\n" + SMUGGLED),
     400),
    ("TE value folded", post(b"Transfer-Encoding:\r\n chunked\r\n", b"0\r\n\r\n" + SMUGGLED),
     400),
    ("TE unknown coding", post(b"Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n" + SMUGGLED),
     501),
    # Content-Length that two parsers could read as different lengths.
    ("CL twice, different", post(b"Content-Length: 0\r\nContent-Length: 44\r\n", SMUGGLED), 400),
    ("CL twice, equal", post(b"Content-Length: 44\r\nContent-Length: 44\r\n", SMUGGLED), 400),
    ("CL list", post(b"Content-Length: 44, 44\r\n", SMUGGLED), 400),
    ("CL plus sign", post(b"Content-Length: +44\r\n", SMUGGLED), 400),
    ("CL negative", post(b"Content-Length: -1\r\n", SMUGGLED), 400),
    ("CL hex", post(b"Content-Length: 0x2c\r\n", SMUGGLED), 400),
    ("CL two numbers", post(b"Content-Length: 4 4\r\n", SMUGGLED), 400),
    ("CL overflow", post(b"Content-Length: 99999999999999999999999\r\n", SMUGGLED), 400),
    ("CL space before colon", post(b"Content-Length : 44\r\n", SMUGGLED), 400),
    ("CL obs-fold", post(b"Content-Length:\r\n 44\r\n", SMUGGLED), 400),
    ("CL empty", post(b"Content-Length: \r\n", SMUGGLED), 400),
    # Line endings: a bare CR anywhere in the head (bare LF: see BARE_LF_STRICT). ("bare CR
    # ends the head" was served, and the byte after the CR swallowed, until llhttp was built
    # in strict mode.)
    ("bare CR in a field", post(b"X-A: 1\rContent-Length: 44\r\n", SMUGGLED), 400),
    ("bare CR ends the head", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r" + SMUGGLED, 400),
    # Chunk framing.
    ("chunk size not hex", post(b"Transfer-Encoding: chunked\r\n", b"zz\r\n" + SMUGGLED), 400),
    ("chunk size 0x", post(b"Transfer-Encoding: chunked\r\n", b"0x5\r\nhello\r\n0\r\n\r\n" +
                           SMUGGLED), 400),
    ("chunk size negative", post(b"Transfer-Encoding: chunked\r\n", b"-5\r\nhello\r\n0\r\n\r\n" +
                                 SMUGGLED), 400),
    ("chunk size with space before", post(b"Transfer-Encoding: chunked\r\n",
                                          b" 5\r\nhello\r\n0\r\n\r\n" + SMUGGLED), 400),
    ("chunk size overflow", post(b"Transfer-Encoding: chunked\r\n",
                                 b"fffffffffffffffff1\r\nhello\r\n0\r\n\r\n" + SMUGGLED), 400),
    ("chunk size bare LF", post(b"Transfer-Encoding: chunked\r\n", b"5\nhello\r\n0\r\n\r\n" +
                                SMUGGLED), 400),
    ("chunk data too long", post(b"Transfer-Encoding: chunked\r\n", b"3\r\nhello\r\n0\r\n\r\n" +
                                 SMUGGLED), 400),
    ("chunk data bare LF", post(b"Transfer-Encoding: chunked\r\n", b"5\r\nhello\n0\r\n\r\n" +
                                SMUGGLED), 400),
    # Until llhttp was built in strict mode, any two bytes after chunk data passed for CRLF,
    # and any byte after a CR for LF: a front end that frames these differently smuggles.
    ("chunk data then two other bytes", post(b"Transfer-Encoding: chunked\r\n",
                                             b"5\r\nhelloXY0\r\n\r\n" + SMUGGLED), 400),
    ("chunk data then CR and a byte", post(b"Transfer-Encoding: chunked\r\n",
                                           b"5\r\nhello\rX0\r\n\r\n" + SMUGGLED), 400),
    ("chunk size then CR and a byte", post(b"Transfer-Encoding: chunked\r\n",
                                           b"5\rXhello\r\n0\r\n\r\n" + SMUGGLED), 400),
    ("last chunk then CR and a byte", post(b"Transfer-Encoding: chunked\r\n",
                                           b"0\r\n\rX" + SMUGGLED), 400),
    ("last chunk without CRLF", post(b"Transfer-Encoding: chunked\r\n", b"0\r\n" + SMUGGLED),
     400),
    ("chunk over max_body_bytes", post(b"Transfer-Encoding: chunked\r\n", b"10001\r\n" + SMUGGLED),
     413),
    ("CL over max_body_bytes", post(b"Content-Length: 65537\r\n", SMUGGLED), 413),
    # The request line.
    ("space after version", b"GET /hello.txt HTTP/1.1 \r\nHost: x\r\n\r\n" + SMUGGLED, 400),
    ("two spaces", b"GET  /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n" + SMUGGLED, 400),
    ("tab separator", b"GET\t/hello.txt HTTP/1.1\r\nHost: x\r\n\r\n" + SMUGGLED, 400),
    ("HTTP/1.1 without Host", b"GET /hello.txt HTTP/1.1\r\n\r\n" + SMUGGLED, 400),
    ("two Hosts", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" + SMUGGLED, 400),
    ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SMUGGLED, 505),
    # Expect: 100-continue is answered without reading the body, then the connection closes:
    # whatever the client sends as "body" is never parsed as a request.
    ("Expect 100-continue", post(b"Content-Length: 44\r\nExpect: 100-continue\r\n", SMUGGLED),
     405),
    # CONNECT would switch protocols: answered (405) and closed, its "body" never parsed.
    ("CONNECT", b"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n" + SMUGGLED, 405),
    # HTTP/1.0 without keep-alive, and Connection: close: served, then closed.
    ("HTTP/1.0", b"GET /hello.txt HTTP/1.0\r\n\r\n" + SMUGGLED, 200),
    ("Connection: close", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" +
                          SMUGGLED, 200),
]

# With accept_bare_lf = false, a lone LF anywhere in the head closes with 400.
BARE_LF_STRICT = [
    ("bare LF after request line",
     b"POST /hello.txt HTTP/1.1\nHost: x\r\nContent-Length: 44\r\n\r\n" + SMUGGLED, 400),
    ("bare LF after a field", post(b"X-A: 1\nContent-Length: 44\r\n", SMUGGLED), 400),
    ("bare LF ends the head", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\n" + SMUGGLED, 400),
]

# Cases also sent one byte at a time.
TRICKLED = {"CL.TE", "TE.CL", "CL twice, different", "TE obs-fold", "bare LF ends the head",
            "bare CR in a field", "chunk size overflow", "chunk data too long",
            "chunk data then two other bytes"}

# (note, request bytes, status): well-framed requests; the
# connection stays open and the request after this one's body is served.
KEEPING = [
    # By default a lone LF ends a line of the head, as in NGINX (RFC 9112 §2.2): the framing
    # is the same as with CRLF, so the request after it is served.
    ("bare LF everywhere", b"GET /hello.txt HTTP/1.1\nHost: x\n\n", 200),
    ("bare LF ends the head", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\n", 200),
    ("bare LF after a field, with a body", post(b"X-A: 1\nContent-Length: 5\n", b"hello"), 405),
    ("bare LF and a chunked body", post(b"Transfer-Encoding: chunked\n",
                                        b"5\r\nhello\r\n0\r\n\r\n"), 405),
    ("404 on keep-alive", b"GET /no-such-file HTTP/1.1\r\nHost: x\r\n\r\n", 404),
    ("405 with a Content-Length body", post(b"Content-Length: 5\r\n", b"hello"), 405),
    ("405 with a chunked body", post(b"Transfer-Encoding: chunked\r\n",
                                     b"5;ext=1\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n"), 405),
    ("GET body that looks like a request", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n"
     b"Content-Length: %d\r\n\r\n" % len(SMUGGLED) + SMUGGLED, 200),
    ("chunked GET body that looks like a request",
     b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"%x\r\n" % len(SMUGGLED) + SMUGGLED + b"\r\n0\r\n\r\n", 200),
    ("chunk size with leading zeros", post(b"Transfer-Encoding: chunked\r\n",
                                           b"0005\r\nhello\r\n0\r\n\r\n"), 405),
    ("chunk extensions", post(b"Transfer-Encoding: chunked\r\n",
                              b"5;a=b\r\nhello\r\n3;c=\"d\"\r\nabc\r\n0\r\n\r\n"), 405),
    ("CL with leading zeros", post(b"Content-Length: 005\r\n", b"hello"), 405),
    ("TE upper-case alone", post(b"Transfer-Encoding: CHUNKED\r\n", b"0\r\n\r\n"), 405),
    ("HTTP/1.0 keep-alive", b"GET /hello.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200),
    ("400 for a target above the root", b"GET /../hello.txt HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("400 for a bad escape", b"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("416", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=100-\r\n\r\n", 416),
    ("412", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nIf-Match: \"nope\"\r\n\r\n", 412),
    ("leading empty lines", b"\r\n\r\nGET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n", 200),
]

# Oversized at the default limits (8 KiB head, 4 KiB target, 100 fields): status, close.
OVERSIZED = [
    ("target over max_uri_bytes", b"GET /" + b"a" * 4096 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    ("request line never ends", b"GET /" + b"a" * 9000, 414),
    ("one field over max_header_bytes", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nX-Big: " +
     b"v" * 8200 + b"\r\n\r\n", 431),
    ("head over max_header_bytes in many fields", b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n" +
     (b"X-F: " + b"w" * 100 + b"\r\n") * 80 + b"\r\n", 431),
    ("101 fields", b"GET /hello.txt HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(100))
     + b"Host: x\r\n\r\n", 431),
]


class Smuggling:
    def assert_closes(self, data, status):
        with self.srv.client() as c:
            c.send(data)
            r = c.response()
            self.assertEqual(r.status, status, r)
            self.assertEqual(r.header("Connection"), "close", r)
            self.assertTrue(c.closed(), "connection left open after %d" % status)
            # Nothing after the one response: the smuggled request was never answered.
            self.assertEqual(bytes(c.buf), b"", "bytes after the %d response" % status)

    def assert_keeps(self, data, status):
        with self.srv.client() as c:
            c.send(data + GET_HELLO)
            r = c.response()
            self.assertEqual(r.status, status, r)
            self.assertNotEqual(r.header("Connection"), "close", r)
            nxt = c.response()
            self.assertEqual((nxt.status, nxt.body), (200, site.HELLO))
            # And the connection is still usable afterwards.
            c.send(GET_HELLO)
            self.assertEqual(c.response().body, site.HELLO)

    def test_closing(self):
        for note, data, status in CLOSING:
            with self.subTest(note):
                self.assert_closes(data, status)

    def test_closing_byte_by_byte(self):
        # The same answers when the bytes trickle in (a few representative cases).
        for note, data, status in CLOSING:
            if note not in TRICKLED:
                continue
            with self.subTest(note):
                with self.srv.client() as c:
                    for i in range(len(data)):
                        c.send(data[i:i + 1])
                    r = c.response()
                    self.assertEqual(r.status, status, r)
                    self.assertTrue(c.closed())
                    self.assertEqual(bytes(c.buf), b"")

    def test_keeping(self):
        for note, data, status in KEEPING:
            with self.subTest(note):
                self.assert_keeps(data, status)

    def test_oversized(self):
        for note, data, status in OVERSIZED:
            with self.subTest(note):
                self.assert_closes(data + GET_HELLO, status)


class StrictLineEndings:
    settings = {"server": {"accept_bare_lf": False}}

    def test_bare_lf_closes(self):
        for note, data, status in BARE_LF_STRICT:
            with self.subTest(note):
                Smuggling.assert_closes(self, data, status)

    def test_bare_lf_closes_byte_by_byte(self):
        for note, data, status in BARE_LF_STRICT:
            if note not in TRICKLED:
                continue
            with self.subTest(note):
                with self.srv.client() as c:
                    for i in range(len(data)):
                        c.send(data[i:i + 1])
                    self.assertEqual(c.response().status, status)
                    self.assertTrue(c.closed())
                    self.assertEqual(bytes(c.buf), b"")


per_backend(globals(), Smuggling, StrictLineEndings)

if __name__ == "__main__":
    unittest.main()
