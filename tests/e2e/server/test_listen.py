"""Listening sockets (server/listener.cpp): weft never joins a SO_REUSEPORT group that
another process opened. Without the check a second weft, or any process listening with
SO_REUSEPORT as the same user, started on a port in use would silently take part of the
first one's connections."""

import os
import socket
import sys
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


per_backend(globals(), PortInUse)

if __name__ == "__main__":
    unittest.main()
