"""Concurrent clients across a reload and a graceful shutdown, and idle connections whose slots
go to newcomers: the server's paths where fibers on both processors meet (a connection's
ReadyWait between requests, slot reclaiming, a generation's retirement, the connections'
WaitGroup at shutdown). Short, so that the tsan stage of scripts/test.sh (label tsan) runs it
under ThreadSanitizer too, where weft exits non-zero at the first race it reports."""

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import BACKENDS, WeftServer  # noqa: E402

HELLO = b"hello, world\n" * 8
BIG = bytes(range(256)) * 1024  # 256 KiB: a response that takes several sends
CLIENTS = 6
REQUESTS = 12  # per client


def wait_for(predicate, timeout=30, what="condition"):
    """Polls `predicate` every 20 ms for at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


class Base:
    """Starts a weft with `settings` on a root holding hello.txt and big.bin."""

    settings = {}

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="weft-concurrency-")
        self.addCleanup(shutil.rmtree, self.base, True)
        with open(os.path.join(self.base, "hello.txt"), "wb") as f:
            f.write(HELLO)
        with open(os.path.join(self.base, "big.bin"), "wb") as f:
            f.write(BIG)
        self.srv = WeftServer(self.base, self.backend, dict(self.settings, log={"level": "info"}))
        self.addCleanup(self.srv.cleanup)
        self.srv.start(timeout=30)  # a TSan build starts slowly

    def stop_cleanly(self):
        status = self.srv.stop(timeout=60)
        self.assertEqual(status, 0, self.srv.log()[-4000:] + self.srv.output()[-8000:])
        self.assertNotIn("[error]", self.srv.log())

    def client(self, errors):
        """One keep-alive connection making REQUESTS requests, small and large in turn."""
        try:
            c = self.srv.conn(timeout=30)
            for k in range(REQUESTS):
                path, want = ("/big.bin", BIG) if k % 3 == 0 else ("/hello.txt", HELLO)
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
                if r.status != 200 or body != want:
                    errors.append("%s: %d, %d bytes" % (path, r.status, len(body)))
            c.close()
        except Exception as e:  # noqa: BLE001 (reported by the test)
            errors.append(repr(e))


class Clients(Base):
    def test_clients_across_a_reload_and_a_shutdown(self):
        errors = []
        threads = [threading.Thread(target=self.client, args=(errors,)) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        self.srv.proc.send_signal(signal.SIGHUP)  # the same configuration: a new generation
        wait_for(lambda: "reloaded: generation" in self.srv.log(), what="the reload")
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        # Idle keep-alive connections are open at the shutdown, which closes them.
        idle = [self.srv.conn(timeout=30) for _ in range(4)]
        for c in idle:
            c.request("GET", "/hello.txt")
            self.assertEqual(c.getresponse().read(), HELLO)
        self.stop_cleanly()
        for c in idle:
            c.close()


class Reclaiming(Base):
    # Two slots: newcomers take the slots of idle connections (closing them) while others
    # are served, from several threads at once.
    settings = {"limits": {"max_connections": 2}}

    def test_newcomers_reclaim_idle_slots(self):
        errors = []

        def newcomer():
            for _ in range(5):
                try:
                    c = self.srv.conn(timeout=30)
                    c.request("GET", "/hello.txt")
                    r = c.getresponse()
                    body = r.read()
                    # 503 when both slots are busy at that moment; otherwise served.
                    if r.status == 200 and body != HELLO or r.status not in (200, 503):
                        errors.append("%d, %d bytes" % (r.status, len(body)))
                    time.sleep(0.3)  # idle past timeouts.active_wait: reclaimable
                    c.close()
                except ConnectionError:
                    pass  # its slot was reclaimed by another newcomer before it was answered
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))

        threads = [threading.Thread(target=newcomer) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        self.stop_cleanly()


for case in (Clients, Reclaiming):
    for backend in BACKENDS:
        name = "%s_%s" % (case.__name__, backend)
        globals()[name] = type(name, (case, unittest.TestCase), {"backend": backend})

if __name__ == "__main__":
    unittest.main()
