"""Listening sockets (server/net/listener.cpp): weft never joins a SO_REUSEPORT group that
another process opened. Without the check a second weft, or any process listening with
SO_REUSEPORT as the same user, started on a port in use would silently take part of the
first one's connections. And server.defer_accept (TCP_DEFER_ACCEPT): connections reach weft
with their request, and one that sends nothing is still answered, within about twice
timeouts.header."""

import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import ServerCase, WeftServer, free_port, metric, per_backend  # noqa: E402

ROUNDS = 20


class PortInUse:
    processors = 2

    def refused(self, listen):
        """Runs a weft on `listen` that must exit at start; returns what it said."""
        other = WeftServer(self.root, self.backend, listen=listen)
        try:
            status, said = other.run_to_exit()
            self.assertNotEqual(status, 0, said)
            return said
        finally:
            other.cleanup()

    def assert_all_served_here(self):
        for _ in range(ROUNDS):
            r, _ = self.srv.get("/index.html")
            self.assertEqual(r.status, 200)

    def test_second_weft_on_the_same_port_exits(self):
        message = self.refused(self.srv.listen)
        self.assertIn("listen 127.0.0.1:%d: Address already in use" % self.srv.port, message)
        self.assert_all_served_here()

    def test_foreign_reuseport_listener_is_not_joined(self):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            s.bind(("127.0.0.1", 0))
            s.listen(8)
            port = s.getsockname()[1]
            message = self.refused(["127.0.0.1:%d" % port])
            self.assertIn("listen 127.0.0.1:%d: Address already in use" % port, message)


class DeferAccept:
    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.settings = {"timeouts": {"header": "1s"},
                        "metrics": {"enabled": True, "listen": "127.0.0.1:%d" % cls.metrics_port}}
        super().setUpClass()

    def test_a_late_request_is_served(self):
        # Each look at the metrics is a connection of its own, counted in what it shows.
        def accepted():
            return metric(self.metrics_port, "weft_connections_total")
        # The harness's readiness probes (a connect, then a close) reach weft late with the
        # accept deferred (their FIN hands them over): wait until only the looks count.
        before = accepted()
        for _ in range(100):
            now = accepted()
            if now == before + 1:
                break
            before = now
            time.sleep(0.05)
        before = now
        with self.srv.client() as c:
            time.sleep(0.5)  # connected, nothing sent: the kernel holds it unaccepted
            self.assertEqual(accepted(), before + 1)
            c.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().status, 200)
            self.assertEqual(accepted(), before + 3)

    def test_a_silent_connection_is_not_held_for_ever(self):
        # TCP_DEFER_ACCEPT of 1 s (timeouts.header rounded up): the kernel hands the silent
        # connection over once its SYN-ACK retransmission is acknowledged, and weft's header
        # timeout then ends it. The kernel retransmits at 1 s, 3 s...: well within 15 s.
        with self.srv.client(timeout=15) as c:
            started = time.monotonic()
            self.assertTrue(c.closed(15), "a silent connection was never closed")
            self.assertGreater(time.monotonic() - started, 0.9)
            self.assertEqual(bytes(c.buf), b"")

    def test_off_accepts_at_once(self):
        srv = WeftServer(self.root, self.backend, {"server": {"defer_accept": False},
                                                   "timeouts": {"header": "1s"}}).start()
        self.addCleanup(srv.cleanup)
        with srv.client(timeout=5) as c:
            started = time.monotonic()
            self.assertTrue(c.closed(5))
            # Accepted at once, so it ends after timeouts.header, not after a retransmit too.
            self.assertLess(time.monotonic() - started, 2.5)
            self.assertEqual(bytes(c.buf), b"")  # a connection without a request closes quietly


per_backend(globals(), PortInUse, DeferAccept)

if __name__ == "__main__":
    unittest.main()
