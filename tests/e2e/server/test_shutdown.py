"""Graceful shutdown on SIGTERM (in-flight downloads finish, idle connections close at once,
stalled ones are cut at the end of timeouts.shutdown_grace; exit status 0), and no
descriptor leaks over a batch of requests."""

import hashlib
import os
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import WeftServer, per_backend  # noqa: E402

MIB = 1024 * 1024
GET_HELLO = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"


def wait_exit(srv, timeout):
    """Returns (exit status, seconds waited), or (None, timeout) if it is still running."""
    t0 = time.monotonic()
    try:
        return srv.proc.wait(timeout), time.monotonic() - t0
    except Exception:
        return None, timeout



def open_fds(pid):
    """What each open descriptor of `pid` names, sorted; one closed while this reads it is
    left out (the server keeps working while a test looks)."""
    names = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            names.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except FileNotFoundError:
            pass
    return sorted(names)

class Shutdown:
    def start(self, settings):
        srv = WeftServer(self.root, self.backend, settings).start()
        self.addCleanup(srv.cleanup)
        return srv

    def test_sigterm_lets_download_finish(self):
        expected = hashlib.sha256()
        with open(os.path.join(self.root, "big.bin"), "rb") as f:
            while chunk := f.read(8 * MIB):
                expected.update(chunk)
        srv = self.start({"timeouts": {"shutdown_grace": "20s"}})
        with srv.client(timeout=20) as c:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.response(body=False)
            self.assertEqual(r.status, 200)
            got = hashlib.sha256()
            got.update(c.read_exactly(MIB))
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)  # the server drains while this client is mid-body
            self.assertIsNone(srv.proc.poll(), "exited with a download in flight")
            # No new connections once draining.
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
            left = site.BIG_SIZE - MIB
            while left:
                chunk = c.read_exactly(min(left, 8 * MIB))
                got.update(chunk)
                left -= len(chunk)
            self.assertEqual(got.hexdigest(), expected.hexdigest())
            self.assertTrue(c.closed(10), "connection not closed after the response")
            self.assertEqual(bytes(c.buf), b"")
        status, _ = wait_exit(srv, 10)
        self.assertEqual(status, 0, srv.log()[-3000:])

    def test_sigterm_closes_idle_connections_promptly(self):
        # defer_accept off: a connection that has sent nothing is then weft's to close (with
        # it on, the kernel holds such a connection unaccepted; test_listen covers that).
        srv = self.start({"timeouts": {"shutdown_grace": "30s", "keepalive": "60s",
                                       "header": "60s"},
                          "server": {"defer_accept": False}})
        clients = [srv.client() for _ in range(6)]
        try:
            for c in clients[:5]:  # idle between requests
                c.send(GET_HELLO)
                self.assertEqual(c.response().body, site.HELLO)
            # clients[5] is connected and has sent nothing.
            time.sleep(0.1)
            srv.proc.send_signal(signal.SIGTERM)
            status, waited = wait_exit(srv, 10)
            self.assertEqual(status, 0, srv.log()[-3000:])
            self.assertLess(waited, 10)  # far under the 30 s grace
            for c in clients:
                self.assertTrue(c.closed(2))
                self.assertEqual(bytes(c.buf), b"")
        finally:
            for c in clients:
                c.close()
        self.assertNotIn("grace period over", srv.log())

    def test_stalled_client_cut_after_grace(self):
        srv = self.start({"timeouts": {"shutdown_grace": "1s"}})
        with srv.client() as c:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response(body=False).status, 200)
            time.sleep(0.2)  # never read again: the server's send blocks
            srv.proc.send_signal(signal.SIGTERM)
            status, waited = wait_exit(srv, 20)
            self.assertEqual(status, 0, srv.log()[-3000:])
            self.assertGreater(waited, 0.8)  # not before the grace period
        self.assertIn("grace period over: cancelling 1 connection(s)", srv.log())

    def test_sigint_also_graceful(self):
        srv = self.start({})
        self.assertEqual(srv.exchange(GET_HELLO)[0].body, site.HELLO)
        srv.proc.send_signal(signal.SIGINT)
        status, _ = wait_exit(srv, 10)
        self.assertEqual(status, 0)
        self.assertIn("SIGINT: shutting down", srv.log())


class NoLeaks:
    # One processor, so the splice path's pipe pool is one pool, filled by the warm-up.
    def start(self, body):
        srv = WeftServer(self.root, self.backend, {"io": {"body": body}}, processors=1).start()
        self.addCleanup(srv.cleanup)
        return srv

    def batch(self, srv):
        """Sends a mix of requests: files, ranges, errors, bad input, an aborted download."""
        with srv.client() as c:  # pipelined, through every kind of response
            paths = ["/hello.txt", "/nope", "/dir", "/dir/", "/noindex/", "/out-link", "/fifo",
                     "/sock", "/in-link", "/medium.bin"]
            c.send(b"GET /medium.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=5-70000\r\n\r\n" +
                   b"".join(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % p.encode() for p in paths))
            for _ in range(len(paths) + 1):
                c.response()
        self.assertEqual(srv.exchange(b"GET /a b HTTP/1.1\r\n\r\n")[0].status, 400)
        with srv.client() as c:  # a download the client walks away from
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            c.response(body=False)
            c.read_exactly(MIB)
        with srv.client() as c:  # a whole large range
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-%d\r\n\r\n" % (4 * MIB))
            self.assertEqual(len(c.response().body), 4 * MIB + 1)
        threads = [threading.Thread(target=lambda: srv.exchange(GET_HELLO * 3, ("GET",) * 3))
                   for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        socket.create_connection(("127.0.0.1", srv.port)).close()  # connect, say nothing

    def settle(self, srv, want, timeout=5):
        """Waits for the server's descriptor count to reach `want`; returns the last count."""
        deadline = time.monotonic() + timeout
        while (n := srv.pid_fds()) != want and time.monotonic() < deadline:
            time.sleep(0.05)
        return n

    def check(self, body):
        srv = self.start(body)
        self.batch(srv)  # warm-up: lets caches and pools reach their steady state
        time.sleep(0.7)  # lingering closes end
        before = srv.pid_fds()
        for _ in range(3):
            self.batch(srv)
        now = self.settle(srv, before)
        if now != before:  # the listing only on failure: descriptors may close while it runs
            self.fail("descriptors before %d; open now: %s" % (before, open_fds(srv.proc.pid)))

    def test_no_fd_leak_sendfile(self):
        self.check("sendfile")

    def test_no_fd_leak_splice(self):
        self.check("splice")


per_backend(globals(), Shutdown, NoLeaks)

if __name__ == "__main__":
    unittest.main()
