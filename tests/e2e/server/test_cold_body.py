"""The body path for files that are not in the page cache (io.body = "auto"), on both
backends: a file whose pages were dropped (posix_fadvise DONTNEED) is served byte for byte
through the cold path, which /metrics counts; a file truncated during a cold send ends that
connection cleanly, one replaced keeps its old bytes; and thousands of concurrent cold
requests keep the server's threads within processors x (iowq_bounded + iowq_unbounded) plus
the threads it started with (and two of slack)."""

import hashlib
import os
import resource
import selectors
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import drop_pages, free_port, metric, per_backend  # noqa: E402

MIB = 1024 * 1024
COLD = 'weft_body_ranges_total{path="cold"}'


def write_random(path, size):
    data = os.urandom(size)
    with open(path, "wb") as f:
        f.write(data)
    return data


def thread_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


class ColdBody:
    @classmethod
    def make_root(cls, base):
        # A disk: /tmp may be a tmpfs, which keeps every page. The server's tempdir is gone
        # with the class; this one too (tearDownClass).
        cls.disk = tempfile.mkdtemp(prefix="weft-cold-", dir="/var/tmp")
        root = os.path.join(cls.disk, "www")
        os.mkdir(root)
        cls.big = write_random(os.path.join(root, "big.bin"), 3 * MIB + 12345)
        return root

    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.settings = {"metrics": {"enabled": True, "listen": "127.0.0.1:%d" % cls.metrics_port},
                        "io": {"body": "auto"}}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.disk, ignore_errors=True)

    def drop_or_skip(self, path):
        if not drop_pages(path):
            self.skipTest("pages cannot be dropped from the page cache under /var/tmp")
        # A file sent whole from the page cache is taken to stay there for 100 ms
        # (ResponseWriter::kResidentMemoNs): let an earlier test's memo lapse.
        time.sleep(0.2)

    def get_body(self, path, headers=None):
        r, body = self.srv.get(path, headers)
        return r.status, body

    def test_dropped_file_served_through_the_cold_path(self):
        self.drop_or_skip(os.path.join(self.root, "big.bin"))
        cold = metric(self.metrics_port, COLD)
        cold_bytes = metric(self.metrics_port, "weft_body_cold_bytes_total")
        status, body = self.get_body("/big.bin")
        self.assertEqual(status, 200)
        self.assertEqual(hashlib.sha256(body).digest(), hashlib.sha256(self.big).digest())
        self.assertGreater(metric(self.metrics_port, COLD), cold)
        self.assertGreater(metric(self.metrics_port, "weft_body_cold_bytes_total"), cold_bytes)
        # Served again, now cached: every range goes inline.
        cold = metric(self.metrics_port, COLD)
        status, body = self.get_body("/big.bin")
        self.assertEqual((status, body == self.big), (200, True))
        self.assertEqual(metric(self.metrics_port, COLD), cold)

    def test_range_of_a_dropped_file(self):
        self.drop_or_skip(os.path.join(self.root, "big.bin"))
        first, last = MIB + 7, 2 * MIB + 4100
        status, body = self.get_body("/big.bin", {"Range": "bytes=%d-%d" % (first, last)})
        self.assertEqual(status, 206)
        self.assertEqual(body, self.big[first:last + 1])

    def slow_reader(self, name):
        """Requests `name` with a small receive buffer and reads its head; returns the socket
        and the Content-Length."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(10)
        s.connect(("127.0.0.1", self.srv.port))
        s.sendall(b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % name.encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            self.assertTrue(chunk, "closed before the head")
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int([line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")][0])
        return s, length, rest

    def read_to_close(self, s, got):
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
        s.close()
        return got

    def test_file_truncated_during_a_cold_send(self):
        path = os.path.join(self.root, "shrinks.bin")
        data = write_random(path, 16 * MIB)
        self.drop_or_skip(path)
        s, length, got = self.slow_reader("shrinks.bin")
        self.assertEqual(length, len(data))
        os.truncate(path, MIB)  # while the server still owes most of the body
        got = self.read_to_close(s, got)
        self.assertLess(len(got), length)  # the connection ended short, not padded
        self.assertEqual(got, data[:len(got)])
        deadline = time.monotonic() + 5
        while "shrank while being sent" not in self.srv.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertIn("shrank while being sent", self.srv.log())
        status, body = self.get_body("/big.bin")  # the server goes on
        self.assertEqual((status, len(body)), (200, len(self.big)))

    def test_file_replaced_during_a_cold_send(self):
        path = os.path.join(self.root, "replaced.bin")
        data = write_random(path, 8 * MIB)
        self.drop_or_skip(path)
        s, length, got = self.slow_reader("replaced.bin")
        with open(path + ".new", "wb") as f:
            f.write(b"new")
        os.rename(path + ".new", path)  # the open file keeps its old bytes
        got = self.read_to_close_or_length(s, got, length)
        self.assertEqual(hashlib.sha256(got).digest(), hashlib.sha256(data).digest())

    def read_to_close_or_length(self, s, got, length):
        while len(got) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        return got


class ColdThreads:
    """Thousands of concurrent requests for files that are not cached."""

    processors = 2
    # A tenth under the tsan preset (WEFT_TEST_SCALE=0.1): a TSan-built weft is several times
    # slower, and 1,500 connections at once overran it there (some were refused), a load
    # question rather than a race.
    files = max(50, int(1500 * float(os.environ.get("WEFT_TEST_SCALE", "1"))))

    @classmethod
    def make_root(cls, base):
        cls.disk = tempfile.mkdtemp(prefix="weft-cold-", dir="/var/tmp")
        root = os.path.join(cls.disk, "www")
        os.mkdir(root)
        block = os.urandom(64 * 1024)
        for i in range(cls.files):
            with open(os.path.join(root, "f%d.bin" % i), "wb") as f:
                f.write(block)
        return root

    @classmethod
    def setUpClass(cls):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, 8192)
        if soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        cls.concurrent = min(cls.files, (want - 200) // 2)
        cls.settings = dict(cls.settings)
        # Every connection opens at once, and truly cold files take a while under TSan: one
        # that waited in the listen queue past limits.max_queue_wait would be reset, and one
        # queued past limits.queue_target would close the admission gate (test_overload.py
        # tests both). Both off: this test is about the threads.
        cls.settings.update({"limits": {"max_connections": cls.concurrent + 100,
                                        "max_queue_wait": "0s", "queue_target": "0s"},
                             "timeouts": {"shutdown_grace": "5s", "send": "30s"}})
        io = {"iowq_bounded": 2, "iowq_unbounded": 2}
        io.update(cls.settings.get("io", {}))
        cls.settings["io"] = io
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.disk, ignore_errors=True)

    def test_threads_stay_bounded(self):
        if self.settings["io"].get("body") == "splice" and self.backend != "io_uring":
            self.skipTest("epoll's splice path uses no worker threads")
        names = ["f%d.bin" % i for i in range(self.concurrent)]
        for n in names:
            if not drop_pages(os.path.join(self.root, n)):
                self.skipTest("pages cannot be dropped from the page cache under /var/tmp")
        pid = self.srv.proc.pid
        base = thread_count(pid)
        peak = [base]
        done = threading.Event()

        def sample():
            while not done.is_set():
                try:
                    peak[0] = max(peak[0], thread_count(pid))
                except OSError:
                    return
                time.sleep(0.002)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            sizes = fetch_all(self.srv.port, names, timeout=60)
        finally:
            done.set()
            sampler.join()
        self.assertEqual(sizes, [64 * 1024] * len(names))
        # The threads it started with, its processors' kernel workers, and a little slack
        # (io_uring may start a worker before it retires another).
        bound = base + self.processors * (2 + 2) + 2
        self.assertLessEqual(peak[0], bound, "threads: base %d, peak %d" % (base, peak[0]))
        print("%s %s: %d concurrent cold requests, threads base %d peak %d (bound %d)" %
              (self.backend, self.settings["io"].get("body"), len(names), base, peak[0], bound))


def fetch_all(port, names, timeout):
    """Opens one connection per name at once, sends every request, and reads each response to
    its close; returns the body sizes, in order (-1 for a connection that failed)."""
    sel = selectors.DefaultSelector()
    state = {}
    for i, n in enumerate(names):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        state[s] = [i, b"GET /%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % n.encode(),
                    bytearray()]
        sel.register(s, selectors.EVENT_WRITE)
    sizes = [-1] * len(names)
    deadline = time.monotonic() + timeout
    while state and time.monotonic() < deadline:
        for key, events in sel.select(timeout=1):
            s = key.fileobj
            i, out, got = state[s]
            try:
                if events & selectors.EVENT_WRITE:
                    state[s][1] = out[s.send(out):]
                    if not state[s][1]:
                        sel.modify(s, selectors.EVENT_READ)
                    continue
                chunk = s.recv(262144)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                chunk = b""
            if chunk:
                got += chunk
                continue
            head, sep, body = bytes(got).partition(b"\r\n\r\n")
            if sep and head.startswith(b"HTTP/1.1 200"):
                sizes[i] = len(body)
            sel.unregister(s)
            s.close()
            del state[s]
    for s in state:
        s.close()
    return sizes


class ColdThreadsAuto(ColdThreads):
    settings = {"io": {"body": "auto"}}


class ColdThreadsSplice(ColdThreads):
    settings = {"io": {"body": "splice"}}


per_backend(globals(), ColdBody, ColdThreadsAuto, ColdThreadsSplice)

if __name__ == "__main__":
    unittest.main()
