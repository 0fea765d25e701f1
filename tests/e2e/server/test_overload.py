"""Overload admission (server/net/listener.cpp): a listen queue that went stale is reset and the
listener pauses, instead of serving clients that waited past limits.max_queue_wait; with the
limit off, the same queue is served in full.

A stale queue is made by stopping weft (SIGSTOP) while clients connect and send their
requests: the kernel completes their handshakes and queues them, and they age in the queue
for three times the limit before weft runs again. No timing is asserted."""

import os
import signal
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import free_port, metric, per_backend  # noqa: E402

QUEUED = 20
LIMIT_S = 0.2
REQUEST = b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def wait_stopped(pid, timeout=10):
    """Waits until every thread of `pid` is stopped (state T): SIGSTOP takes effect only as
    each thread next enters the kernel's signal handling, after kill() has returned."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        if all(s in ("T", "t") for s in states):
            return
        time.sleep(0.001)
    raise AssertionError("weft did not stop within %d s" % timeout)


def queue_while_stopped(srv, n, seconds):
    """Stops weft, connects `n` clients that each send one request, waits `seconds` (the
    age the test gives the queue), resumes weft; returns the clients' sockets."""
    clients = []
    os.kill(srv.proc.pid, signal.SIGSTOP)
    try:
        wait_stopped(srv.proc.pid)
        for _ in range(n):
            c = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            c.sendall(REQUEST)
            clients.append(c)
        time.sleep(seconds)
    finally:
        os.kill(srv.proc.pid, signal.SIGCONT)
    return clients


def outcome(sock):
    """'reset' when the server reset the connection, else the status line it answered."""
    try:
        data = b""
        while b"\r\n" not in data:
            b = sock.recv(4096)
            if not b:
                return "closed"
            data += b
        return data.split(b"\r\n")[0].decode()
    except ConnectionResetError:
        return "reset"
    finally:
        sock.close()


def get_when_listening(srv, timeout=10):
    """The status line of one GET on a fresh connection, retried while the listener refuses
    (it may still be paused); bounded by `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as c:
                c.sendall(REQUEST)
                return outcome(c)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class StaleQueue:
    processors = 1
    metrics_port = free_port()
    settings = {"limits": {"max_queue_wait": "%dms" % (LIMIT_S * 1000)},
                "metrics": {"enabled": True, "listen": "127.0.0.1:%d" % metrics_port}}

    def test_stale_queue_is_reset_then_served_again(self):
        shed0 = metric(self.metrics_port, "weft_connections_shed_total")
        pauses0 = metric(self.metrics_port, "weft_listen_pauses_total")
        clients = queue_while_stopped(self.srv, QUEUED, 3 * LIMIT_S)
        outcomes = [outcome(c) for c in clients]
        self.assertEqual(outcomes, ["reset"] * QUEUED, self.srv.log()[-4000:])
        self.assertEqual(get_when_listening(self.srv), "HTTP/1.1 200 OK")
        self.assertEqual(metric(self.metrics_port, "weft_connections_shed_total") - shed0, QUEUED)
        self.assertGreaterEqual(metric(self.metrics_port, "weft_listen_pauses_total") - pauses0, 1)
        self.assertIn("overload: a connection waited over limits.max_queue_wait (200 ms)",
                      self.srv.log())


class StaleSharedQueue:
    """Two acceptors on one socket (server.reuseport = false): one pauses it, and the other
    waits through the pause (its accept fails with EINVAL meanwhile)."""
    processors = 2
    metrics_port = free_port()
    settings = {"server": {"reuseport": False},
                "limits": {"max_queue_wait": "%dms" % (LIMIT_S * 1000)},
                "metrics": {"enabled": True, "listen": "127.0.0.1:%d" % metrics_port}}

    def test_stale_shared_queue_is_reset_then_served_again(self):
        clients = queue_while_stopped(self.srv, QUEUED, 3 * LIMIT_S)
        self.assertEqual([outcome(c) for c in clients], ["reset"] * QUEUED)
        for _ in range(3):  # both acceptors are back: several connections in a row
            self.assertEqual(get_when_listening(self.srv), "HTTP/1.1 200 OK",
                             self.srv.log()[-4000:])
        self.assertGreaterEqual(metric(self.metrics_port, "weft_listen_pauses_total"), 1)
        self.assertNotIn("[error]", self.srv.log())


class StaleQueueServedWithoutLimit:
    processors = 1
    metrics_port = free_port()
    settings = {"limits": {"max_queue_wait": "0s"},
                "metrics": {"enabled": True, "listen": "127.0.0.1:%d" % metrics_port}}

    def test_limit_off_serves_the_whole_queue(self):
        clients = queue_while_stopped(self.srv, QUEUED, 3 * LIMIT_S)
        outcomes = [outcome(c) for c in clients]
        self.assertEqual(outcomes, ["HTTP/1.1 200 OK"] * QUEUED)
        self.assertEqual(metric(self.metrics_port, "weft_connections_shed_total"), 0)
        self.assertEqual(metric(self.metrics_port, "weft_listen_pauses_total"), 0)


per_backend(globals(), StaleQueue, StaleSharedQueue, StaleQueueServedWithoutLimit)

if __name__ == "__main__":
    unittest.main()
