"""Timeouts (header -> 408, keep-alive idle, send) and limits.max_connections (-> 503)."""

import os
import select
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import error_page, per_backend  # noqa: E402

GET_HELLO = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"


class Timeouts:
    # Short enough to keep the suite fast, long enough that a loaded machine answers a
    # request well inside them.
    settings = {"timeouts": {"header": "300ms", "keepalive": "1s", "send": "500ms"}}

    def test_header_timeout_408(self):
        with self.srv.client() as c:
            c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nX-Partial: ")
            r = c.response()
            self.assertEqual((r.status, r.reason), (408, "Request Timeout"))
            self.assertEqual(r.body, error_page(408, "Request Timeout"))
            self.assertEqual(r.header("Connection"), "close")
            self.assertTrue(c.closed())

    def test_slow_head_is_one_deadline(self):
        # The header timeout runs from the first byte: trickling fields does not extend it.
        with self.srv.client() as c:
            c.send(b"GET /hello.txt HTTP/1.1\r\n")
            for _ in range(30):  # up to 3 s, ten times the timeout
                time.sleep(0.1)
                if select.select([c.sock], [], [], 0)[0]:
                    break
                c.send(b"X-A: 1\r\n")
            self.assertEqual(c.response().status, 408)

    def test_silent_connection_closed(self):
        # Nothing sent at all: closed after the header timeout, without a response.
        with self.srv.client() as c:
            self.assertTrue(c.closed(5))
            self.assertEqual(bytes(c.buf), b"")

    def test_keepalive_idle_closed(self):
        with self.srv.client() as c:
            c.send(GET_HELLO)
            self.assertEqual(c.response().body, site.HELLO)
            self.assertTrue(c.closed(5), "idle keep-alive connection not closed")
            self.assertEqual(bytes(c.buf), b"")

    def test_keepalive_activity_keeps_connection(self):
        # Requests 0.25 s apart for 1.5 s: each resets the 1 s idle timer.
        with self.srv.client() as c:
            for _ in range(6):
                c.send(GET_HELLO)
                self.assertEqual(c.response().body, site.HELLO)
                time.sleep(0.25)
            c.send(GET_HELLO)
            self.assertEqual(c.response().body, site.HELLO)

    def test_send_timeout_stalled_reader(self):
        # A client that stops reading a large body is dropped after timeouts.send.
        with self.srv.client(timeout=10) as c:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.response(body=False)
            self.assertEqual(r.status, 200)
            time.sleep(1.5)  # stall: the server's send makes no progress for 500 ms
            got = len(c.buf)
            try:
                while True:
                    b = c.sock.recv(1 << 20)
                    if not b:
                        break
                    got += len(b)
            except ConnectionResetError:
                pass
            self.assertLess(got, site.BIG_SIZE)
        # The server is fine afterwards.
        self.assertEqual(self.srv.exchange(GET_HELLO)[0].body, site.HELLO)


class MaxConnections:
    settings = {"limits": {"max_connections": 2}}

    def admitted(self):
        """Returns a connection that got a 200. The server counts a closed connection (such
        as the harness's probe at start) until its fiber has seen the close: retry a bit."""
        deadline = time.monotonic() + 5
        while True:
            c = self.srv.client()
            c.send(GET_HELLO)
            r = c.response()
            if r.status == 200 or time.monotonic() > deadline:
                self.assertEqual((r.status, r.body), (200, site.HELLO))
                return c
            c.close()
            time.sleep(0.02)

    def test_503_past_max_connections(self):
        with self.admitted() as c1, self.admitted() as c2:
            # Both in the middle of a request: busy, so neither slot can be reclaimed.
            c1.send(GET_HELLO[:20])
            c2.send(GET_HELLO[:20])
            time.sleep(0.3)  # past timeouts.active_wait: an idle one would be reclaimable
            with self.srv.client() as c3:
                c3.send(GET_HELLO)
                r = c3.response()
                self.assertEqual((r.status, r.reason), (503, "Service Unavailable"))
                self.assertEqual(r.body, error_page(503, "Service Unavailable"))
                self.assertEqual(r.header("Connection"), "close")
                self.assertTrue(c3.closed())
            # The two admitted ones still work.
            c1.send(GET_HELLO[20:])
            self.assertEqual(c1.response().body, site.HELLO)
            c2.send(GET_HELLO[20:])
            self.assertEqual(c2.response().body, site.HELLO)
        # Once they close, a new connection is admitted again.
        deadline = time.monotonic() + 5
        while True:
            r = self.srv.exchange(GET_HELLO)[0]
            if r.status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual((r.status, r.body), (200, site.HELLO))


    def test_idle_connections_make_room(self):
        # One client holds every slot with idle keep-alive connections: a new client is
        # served within a second all the same, and the connection idle longest is the one
        # closed to make room (as NGINX reuses idle connections).
        with self.admitted() as oldest, self.admitted() as younger:
            time.sleep(0.05)
            younger.send(GET_HELLO)  # younger was used last: oldest has been idle longest
            self.assertEqual(younger.response().body, site.HELLO)
            time.sleep(0.3)  # both past timeouts.active_wait: idle without a fiber
            started = time.monotonic()
            with self.srv.client() as newcomer:
                newcomer.send(GET_HELLO)
                r = newcomer.response()
                self.assertEqual((r.status, r.body), (200, site.HELLO))
            self.assertLess(time.monotonic() - started, 1.0)
            self.assertTrue(oldest.closed(), "the longest-idle connection was kept")
            younger.send(GET_HELLO)
            self.assertEqual(younger.response().body, site.HELLO)

    def test_limit_is_exact(self):
        # Both slots held by busy connections; 18 clients at once, spread over both acceptors:
        # every one is refused, none slips in past the limit.
        with self.admitted() as c1, self.admitted() as c2:
            c1.send(GET_HELLO[:20])
            c2.send(GET_HELLO[:20])
            time.sleep(0.2)
            others = [self.srv.client() for _ in range(18)]
            try:
                for c in others:
                    try:
                        c.send(GET_HELLO)
                    except OSError:
                        pass  # answered 503 and closed already
                statuses = [c.response().status for c in others]
                self.assertEqual(statuses, [503] * 18)
            finally:
                for c in others:
                    c.close()
            c1.send(GET_HELLO[20:])
            self.assertEqual(c1.response().body, site.HELLO)


per_backend(globals(), Timeouts, MaxConnections)

if __name__ == "__main__":
    unittest.main()
