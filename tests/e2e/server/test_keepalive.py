"""Persistent connections: pipelining, keep-alive reuse, HTTP/1.0, Connection: close,
limits.max_requests_per_connection, and server.lingering_close."""

import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import per_backend, split_address  # noqa: E402


def get(path, version="1.1", extra=""):
    host = "Host: x\r\n" if version == "1.1" else ""
    return ("GET %s HTTP/%s\r\n%s%s\r\n" % (path, version, host, extra)).encode()


class KeepAlive:
    def test_pipelined_in_one_write(self):
        paths = ["/hello.txt", "/dir/", "/nope", "/medium.bin", "/dir/sub/deep.txt", "/dir",
                 "/hello.txt", "/data.json", "/noindex/", "/index.html"]
        want = [(200, site.HELLO), (200, site.DIR_INDEX), (404, None), (200, site.MEDIUM),
                (200, site.DEEP), (301, None), (200, site.HELLO), (200, site.FILES["data.json"]),
                (403, None), (200, site.INDEX)]
        with self.srv.client() as c:
            c.send(b"".join(get(p) for p in paths))
            for path, (status, body) in zip(paths, want):
                r = c.response()
                self.assertEqual(r.status, status, path)
                if body is not None:
                    self.assertEqual(r.body, body, path)
                self.assertIsNone(r.header("Connection"))
            self.assertFalse(c.closed(0.2))
            self.assertEqual(bytes(c.buf), b"")

    def test_pipelined_with_head_and_options(self):
        data = (b"HEAD /medium.bin HTTP/1.1\r\nHost: x\r\n\r\n" + get("/hello.txt") +
                b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" + get("/hello.txt"))
        rs = self.srv.exchange(data, ("HEAD", "GET", "OPTIONS", "GET"))
        self.assertEqual([r.status for r in rs], [200] * 4)
        self.assertEqual([r.body for r in rs], [b"", site.HELLO, b"", site.HELLO])

    def test_many_pipelined_requests_past_the_read_buffer(self):
        # 300 requests (about 12 KiB): more than one read buffer's worth at once.
        n = 300
        with self.srv.client() as c:
            c.send(b"".join(get("/hello.txt?n=%d" % i) for i in range(n)))
            for i in range(n):
                r = c.response()
                self.assertEqual((r.status, r.body), (200, site.HELLO), i)

    def test_request_byte_by_byte(self):
        data = get("/hello.txt") + get("/dir/sub/deep.txt")
        with self.srv.client() as c:
            for i in range(len(data)):
                c.send(data[i:i + 1])
            self.assertEqual(c.response().body, site.HELLO)
            self.assertEqual(c.response().body, site.DEEP)

    def test_keepalive_reuse_http_client(self):
        c = self.srv.conn()
        try:
            c.request("GET", "/hello.txt")
            r = c.getresponse()
            self.assertEqual(r.read(), site.HELLO)
            sock, port = c.sock, c.sock.getsockname()[1]
            for i in range(100):
                path = ("/hello.txt", "/medium.bin", "/nope", "/dir/")[i % 4]
                c.request("HEAD" if i % 5 == 0 else "GET", path)
                r = c.getresponse()
                r.read()
                self.assertFalse(r.will_close, i)
                self.assertIs(c.sock, sock, "http.client reconnected at request %d" % i)
            self.assertEqual(c.sock.getsockname()[1], port)
        finally:
            c.close()

    def test_http10_closes_by_default(self):
        with self.srv.client() as c:
            c.send(get("/hello.txt", "1.0"))
            r = c.response()
            self.assertEqual((r.version, r.status, r.body), ("HTTP/1.1", 200, site.HELLO))
            self.assertEqual(r.header("Connection"), "close")
            self.assertTrue(c.closed())
            self.assertEqual(bytes(c.buf), b"")

    def test_http10_keepalive(self):
        with self.srv.client() as c:
            for _ in range(3):
                c.send(get("/hello.txt", "1.0", "Connection: keep-alive\r\n"))
                r = c.response()
                self.assertEqual((r.status, r.body), (200, site.HELLO))
                self.assertEqual(r.header("Connection"), "keep-alive")
            c.send(get("/hello.txt", "1.0"))  # without the header: the last one
            self.assertEqual(c.response().header("Connection"), "close")
            self.assertTrue(c.closed())

    def test_connection_close(self):
        with self.srv.client() as c:
            # The requests pipelined after "Connection: close" are never answered.
            c.send(get("/hello.txt", extra="Connection: close\r\n") + get("/dir/"))
            r = c.response()
            self.assertEqual((r.status, r.body), (200, site.HELLO))
            self.assertEqual(r.header("Connection"), "close")
            self.assertTrue(c.closed())
            self.assertEqual(bytes(c.buf), b"")
        # Also on an error response, and with other tokens in the list.
        with self.srv.client() as c:
            c.send(get("/nope", extra="Connection: foo, close\r\n"))
            r = c.response()
            self.assertEqual((r.status, r.header("Connection")), (404, "close"))
            self.assertTrue(c.closed())


class MaxRequests:
    settings = {"limits": {"max_requests_per_connection": 3}}

    def test_closes_after_max_requests(self):
        with self.srv.client() as c:
            c.send(get("/hello.txt") * 5)
            for i in range(3):
                r = c.response()
                self.assertEqual((r.status, r.body), (200, site.HELLO))
                self.assertEqual(r.header("Connection"), "close" if i == 2 else None)
            self.assertTrue(c.closed())
            self.assertEqual(bytes(c.buf), b"")

    def test_http_client_reconnects(self):
        c = self.srv.conn()
        try:
            ports = []
            for _ in range(7):
                c.request("GET", "/hello.txt")
                r = c.getresponse()
                self.assertEqual(r.read(), site.HELLO)
                ports.append(c.sock.getsockname()[1] if c.sock else None)
            # Requests 3 and 6 close (sock dropped by http.client); the rest reuse.
            self.assertIsNone(ports[2])
            self.assertIsNone(ports[5])
            self.assertEqual(ports[0], ports[1])
            self.assertEqual(ports[3], ports[4])
            self.assertNotEqual(ports[0], ports[3])
        finally:
            c.close()


def reset_after_eof(c, late=b"GET /late HTTP/1.1\r\nHost: x\r\n\r\n", wait=0.3):
    """After the server's EOF on RawClient `c`, sends `late` bytes twice, `wait` seconds
    apart, and returns whether the server reset them: a socket the server closed answers
    them with a reset, one it lingers on (timeouts.linger) reads and drops them."""
    assert c.closed()
    try:
        c.sock.sendall(late)
        time.sleep(wait)
        c.sock.sendall(late)  # a reset for the first bytes fails this send or the recv
        c.sock.settimeout(wait)
        c.sock.recv(100)  # b"" again (the EOF) unless a reset came
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True


class LingerOn:
    """lingering_close = "on" (the default): closes at once when the client asked to close and
    has nothing more on the way, lingers otherwise, as NGINX does."""

    def test_closes_at_once_when_nothing_is_pending(self):
        with self.srv.client() as c:
            c.send(get("/hello.txt", extra="Connection: close\r\n"))
            self.assertEqual(c.response().body, site.HELLO)
            self.assertTrue(reset_after_eof(c), "the server lingered on an idle closing socket")

    def test_http10_closes_at_once(self):
        with self.srv.client() as c:
            c.send(get("/medium.bin", "1.0"))
            self.assertEqual(c.response().body, site.MEDIUM)
            self.assertTrue(reset_after_eof(c))

    def test_lingers_when_pipelined_bytes_are_unread(self):
        # The second request is unread when the first closes: a close would reset it and
        # could take the first response with it, so weft lingers and drops it.
        with self.srv.client() as c:
            c.send(get("/medium.bin", extra="Connection: close\r\n") + get("/hello.txt"))
            r = c.response()
            self.assertEqual((r.status, r.body), (200, site.MEDIUM))
            self.assertFalse(reset_after_eof(c), "a closing socket with unread bytes was reset")

    def test_lingers_when_the_server_chooses_to_close(self):
        # A keep-alive client closed by max_requests_per_connection may have sent more.
        with self.srv.client() as c:
            c.send(get("/hello.txt") * 3)
            for _ in range(3):
                self.assertEqual(c.response().body, site.HELLO)
            self.assertFalse(reset_after_eof(c))

    def test_lingers_after_a_refused_request(self):
        with self.srv.client() as c:
            c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n")
            self.assertEqual(c.response().status, 413)
            self.assertFalse(reset_after_eof(c))

    def test_late_bytes_do_not_truncate_a_response(self):
        # An HTTP/1.0 request, then a CRLF once its 8 MiB response has begun: it arrives
        # while the server still sends (the small window holds most of the body back), so a
        # close at once would reset the connection and drop the unsent tail.
        s = small_window_socket(split_address(self.srv.listen[0]))
        try:
            s.sendall(b"GET /big.bin HTTP/1.0\r\nRange: bytes=0-8388607\r\n\r\n")
            length, rest = head_of(s)
            self.assertEqual(length, 8 * 1024 * 1024)
            s.sendall(b"\r\n")
            body, reset = read_to_end(s, rest)
            self.assertFalse(reset, "reset after %d of %d bytes" % (len(body), length))
            self.assertEqual(len(body), length)
            self.assertTrue(body.startswith(site.MARKS[0]))
        finally:
            s.close()

    def test_lingers_when_a_body_is_left_unread(self):
        # "Expect: 100-continue" is answered at the end of the head; the body may still come.
        with self.srv.client() as c:
            c.send(b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   b"Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            self.assertEqual(c.response().status // 100, 4)
            self.assertFalse(reset_after_eof(c, late=b"abcde"))


def read_to_end(sock, received=b""):
    """Reads `sock` until the server's EOF; returns (bytes, whether a reset ended it)."""
    data = bytearray(received)
    try:
        while True:
            b = sock.recv(65536)
            if not b:
                return bytes(data), False
            data += b
    except ConnectionResetError:
        return bytes(data), True


def head_of(sock):
    """Reads until the end of a response head; returns (Content-Length, what followed it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        b = sock.recv(65536)
        if not b:
            raise ConnectionError("closed before the head: %r" % data[:200])
        data += b
    head, rest = data.split(b"\r\n\r\n", 1)
    length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
              if line.lower().startswith(b"content-length:")]
    return length[0], rest


def small_window_socket(address):
    """A client socket whose receive buffer (set before the connect, so the window stays
    small) keeps the server sending a large body long after the client's next bytes."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    s.settimeout(20)
    s.connect(address)
    return s


# A linger far longer than the tests' waits, so that a loaded machine cannot end it early.
LingerOn.settings = {"limits": {"max_requests_per_connection": 3},
                     "timeouts": {"linger": "5s"}}


class LingerAlways:
    settings = {"server": {"lingering_close": "always"}, "timeouts": {"linger": "5s"}}

    def test_lingers_after_every_closing_response(self):
        with self.srv.client() as c:
            c.send(get("/hello.txt", extra="Connection: close\r\n"))
            self.assertEqual(c.response().body, site.HELLO)
            self.assertFalse(reset_after_eof(c))


per_backend(globals(), KeepAlive, MaxRequests, LingerOn, LingerAlways)

if __name__ == "__main__":
    unittest.main()
