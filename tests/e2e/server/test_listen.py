"""Listening sockets (server/net/listener.cpp): weft never joins a SO_REUSEPORT group that
another process opened. Without the check a second weft, or any process listening with
SO_REUSEPORT as the same user, started on a port in use would silently take part of the
first one's connections. And server.defer_accept (TCP_DEFER_ACCEPT): connections reach weft
with their request, and one that sends nothing is still answered, within about twice
timeouts.header."""

import os
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import ServerCase, WeftServer, per_backend  # noqa: E402

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


def server_side_state(port, client_port):
    """The state ss(8) shows for the server's side of the loopback connection from
    `client_port` to `port`: "SYN-RECV" while the kernel holds it (no socket exists yet for
    accept to take), "ESTAB" once it is a full connection, "" when there is none."""
    out = subprocess.run(["ss", "-tnHa", "( sport = :%d and dport = :%d )" % (port, client_port)],
                         capture_output=True, text=True, check=True).stdout
    return out.split()[0] if out.split() else ""


class DeferAccept:
    @classmethod
    def setUpClass(cls):
        cls.settings = {"timeouts": {"header": "1s"}}
        super().setUpClass()

    def test_a_late_request_is_served(self):
        # Asked of this connection alone, with ss: weft's count of accepted connections also
        # moves with the harness's readiness probes, which reach it late with the accept
        # deferred (their FIN hands them over), so a count raced them (4 where 3 was due).
        with self.srv.client() as c:
            client_port = c.sock.getsockname()[1]
            # Connected, nothing sent: the kernel holds it (until its SYN-ACK is retransmitted,
            # after the deferral's 1 s), so weft cannot have accepted it.
            self.assertEqual(server_side_state(self.srv.port, client_port), "SYN-RECV")
            c.send(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().status, 200)
            self.assertEqual(server_side_state(self.srv.port, client_port), "ESTAB")

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
