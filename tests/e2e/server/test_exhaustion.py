"""Resource exhaustion against the live server, each bounded in count and time:

- slowloris: 5000 connections trickle a request head that never ends, while wrk measures a
  normal client's throughput; it keeps at least SLOWLORIS_GUARD of the throughput measured
  without them in the same test (best of up to four rounds, alternating; the figure printed
  is the benchmark's, 90% or more on a quiet machine);
- descriptor exhaustion: weft under a low RLIMIT_NOFILE (prlimit), saturated by connections:
  the acceptor backs off instead of spinning (the process's CPU time over two seconds stays
  near zero), a client waits (or gets 503), and once the extra connections close service
  recovers fully, with no descriptor leaked;
- an idle keep-alive connection costs at most IDLE_BYTES_PER_CONNECTION of resident memory
  at the margin, between 5000 and 10000 of them (the figure in SECURITY.md), and the server
  keeps serving meanwhile.
A client that never reads is closed by timeouts.send: test_limits.py
(Timeouts.test_send_timeout_stalled_reader).

WEFT_E2E_SCALE (default 1) scales the connection counts (the asan preset sets it lower).
Under a sanitizer the memory per connection is not weft's own and is only reported."""

import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import BACKENDS, WeftServer, free_port, metric  # noqa: E402

SCALE = float(os.environ.get("WEFT_E2E_SCALE", "1"))
# The marginal bound SECURITY.md documents; measured 0.37-0.45 KiB on either backend
# (scripts/bench/idle_rss.py and this test), so the bound is over four times the spread.
IDLE_BYTES_PER_CONNECTION = 2 * 1024
GET_HELLO = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"
# Below this unloaded rate (weft does 40k+ req/s on one core here, 10k+ under ASan) the
# machine is too busy for a throughput comparison to mean anything: the test skips.
MIN_MEASURABLE_RATE = 3000
# The least share of its unloaded throughput a normal client keeps beside 5000 slowloris
# connections (see test_slowloris_keeps_throughput).
SLOWLORIS_GUARD = 0.5
# The least share of its unloaded requests per CPU-second the server keeps beside them.
SPIN_GUARD = 0.3


def scaled(n):
    return max(50, int(n * SCALE))


def raise_nofile(need):
    """Raises this process's soft RLIMIT_NOFILE as far as `need` (and the hard limit) allow;
    returns the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(soft, need)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """Returns utime + stime of the process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sanitized(pid):
    """Returns whether the process runs with a sanitizer runtime (ASan, TSan)."""
    with open("/proc/%d/maps" % pid) as f:
        maps = f.read()
    return "libasan" in maps or "libtsan" in maps


def open_many(port, n, first=b""):
    """Opens n connections to the port, sending `first` on each; returns the sockets."""
    socks = []
    try:
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            if first:
                s.sendall(first)
            socks.append(s)
    except BaseException:
        close_all(socks)
        raise
    return socks


def close_all(socks):
    for s in socks:
        s.close()
    socks.clear()


def read_responses(socks, timeout=60):
    """Reads one complete response (hello.txt) on each socket; returns how many got one."""
    sel = selectors.DefaultSelector()
    got = {}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        got[s] = b""
    done = 0
    deadline = time.monotonic() + timeout
    while got and time.monotonic() < deadline:
        for key, _ in sel.select(1):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue
            got[s] += data
            if not data or (b"\r\n\r\n" in got[s] and got[s].endswith(site.HELLO)):
                sel.unregister(s)
                done += 1 if data else 0
                del got[s]
    sel.close()
    return done


def pin(cpu):
    """The command prefix that pins to `cpu` when WEFT_E2E_PIN=1. Off by default: on a shared
    machine another process pinned (or prioritized) on the same core starves the pinned one,
    which is worse than letting the scheduler balance."""
    return ("taskset", "-c", str(cpu)) if os.environ.get("WEFT_E2E_PIN") == "1" else ()


def wrk(url, seconds=2):
    """Runs wrk (one thread, 16 connections, keep-alive); returns (requests/s, errors:
    non-2xx plus socket errors)."""
    out = subprocess.run(list(pin(1)) + ["wrk", "-t1", "-c16", "-d%ds" % seconds, url],
                         capture_output=True, text=True, timeout=seconds + 30).stdout
    rate, errors = 0.0, 0
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Requests/sec:"):
            rate = float(line.split()[1])
        elif line.startswith("Non-2xx or 3xx responses:"):
            errors += int(line.split(":")[1])
        elif line.startswith("Socket errors:"):
            errors += sum(int(x.split()[-1]) for x in line.split(":", 1)[1].split(","))
    return rate, errors


class Exhaustion:
    """One weft per test (each wants its own limits); `backend` is set per subclass."""

    backend = None

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="weft-root-")
        self.root = site.build(self.base)
        self.srv = None

    def tearDown(self):
        try:
            status = self.srv.stop() if self.srv else 0
            log = self.srv.log() if self.srv else ""
        finally:
            if self.srv:
                self.srv.cleanup()
            shutil.rmtree(self.base, ignore_errors=True)
        if status != 0:
            raise AssertionError("weft exited with %r; log:\n%s" % (status, log[-4000:]))

    def start(self, settings, prefix=()):
        base = {"runtime": {"processors": 1}, "log": {"level": "info"}}
        for section, values in settings.items():
            base.setdefault(section, {}).update(values)
        self.srv = WeftServer(self.root, self.backend, base, processors=1,
                              prefix=prefix).start()
        return self.srv

    def assert_serves(self):
        r = self.srv.exchange(GET_HELLO)[0]
        self.assertEqual((r.status, r.body), (200, site.HELLO))

    def test_slowloris_keeps_throughput(self):
        if not shutil.which("wrk"):
            self.skipTest("wrk is not installed (scripts/setup.sh installs it)")
        n = scaled(5000)
        if raise_nofile(n + 200) < n + 200:
            self.skipTest("RLIMIT_NOFILE too low for %d connections" % n)
        # The slow connections, opened at once, can wait in the listen queue past the default
        # limits.max_queue_wait on a loaded machine, and a stale queue is reset
        # (test_overload.py), or queue past limits.queue_target, and the admission gate
        # drops the rest's handshakes for a while; this test is about slow clients: both off.
        srv = self.start({"limits": {"max_connections": n + 1000, "max_queue_wait": "0s",
                                     "queue_target": "0s"},
                          "server": {"backlog": 4096},
                          "timeouts": {"header": "120s"}}, prefix=pin(0))
        url = srv.url("/hello.txt")
        slow, stop = [], threading.Event()

        def trickle():
            # One more header line on every slow connection every few seconds (as slowloris
            # does, well inside timeouts.header; more often would measure this loop's own CPU).
            while not stop.is_set():
                for s in list(slow):
                    if stop.is_set():
                        break
                    try:
                        s.send(b"X-Slow: 1\r\n")
                    except OSError:
                        pass
                stop.wait(3.0)

        def measure():
            """wrk for 2 s: (requests/s, errors, requests per server CPU-second)."""
            cpu = cpu_seconds(srv.proc.pid)
            rate, errors = wrk(url)
            used = cpu_seconds(srv.proc.pid) - cpu
            return rate, errors, rate * 2 / used if used > 0 else 0.0

        # Rounds of one measurement without the slow connections and one with them, back to
        # back; the machine is shared and its speed drifts, so each round compares its own
        # pair, and up to four rounds are run until one shows the ratio. Requests per server
        # CPU-second are compared too: they do not depend on what else runs.
        unloaded, loaded = [], []
        try:
            wrk(url, 1)  # warm up (fd cache, pools)
            for _ in range(4):
                unloaded.append(measure())
                slow.extend(open_many(srv.port, n, b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n"))
                t = threading.Thread(target=trickle, daemon=True)
                t.start()
                # Measure once the server holds them all: past the backlog a handshake waits
                # for the kernel's SYN retry, and on a loaded machine (the suite with -j2
                # beside TSan tests) accepting 5,000 took longer than the half second once.
                # The check below still fails if any was dropped.
                all_in = time.monotonic() + 20
                while srv.pid_fds() < n and time.monotonic() < all_in:
                    time.sleep(0.1)
                time.sleep(0.5)
                loaded.append(measure())
                # Every slow connection is still open and unanswered: nothing was dropped.
                self.assertGreaterEqual(srv.pid_fds(), n)
                stop.set()
                t.join()
                stop.clear()
                close_all(slow)
                time.sleep(0.5)
                if loaded[-1][0] >= 0.9 * unloaded[-1][0]:
                    break
        finally:
            stop.set()
            close_all(slow)
        best_u = max(m[0] for m in unloaded)
        ratio = max(l[0] / u[0] for u, l in zip(unloaded, loaded) if u[0] > 0)
        if best_u < MIN_MEASURABLE_RATE:
            # Another process holds the CPUs: the numbers say nothing about weft.
            self.skipTest("machine too busy to measure throughput: best unloaded %.0f req/s"
                          % best_u)
        eff_u = max(m[2] for m in unloaded)
        eff_l = max(m[2] for m in loaded)
        print("slowloris x%d (%s): unloaded %s req/s, loaded %s req/s: %.0f%%; "
              "per CPU-second %.0f vs %.0f: %.0f%%" % (
                  n, self.backend, [round(m[0]) for m in unloaded],
                  [round(m[0]) for m in loaded], 100 * ratio, eff_u, eff_l,
                  100 * eff_l / eff_u))
        self.assertEqual(sum(m[1] for m in unloaded + loaded), 0, "wrk saw errors")
        # The 90% target is a benchmark figure, met on a quiet machine (92-96% here) and
        # printed above; ctest shares the machine (83% once while two builds ran beside it),
        # so the test asserts a guard against starvation: slow connections that held up the
        # normal ones would cost far more than half.
        self.assertGreaterEqual(ratio, SLOWLORIS_GUARD)
        # The trickle is real work (a header line on each of the 5,000 connections every 3 s,
        # each a wake-up, a recv and a timer reset), and CPU time read from /proc is noisy
        # on a loaded machine: measured 57% to 119% (ASan, the release suite running beside
        # it), 79% (ASan, epoll), 90-93% quiet. This bound, half the lowest seen, only
        # catches a server that spins on slow connections, which would cost far more.
        self.assertGreaterEqual(eff_l, SPIN_GUARD * eff_u)
        self.assert_serves()

    def test_descriptor_exhaustion_backs_off_and_recovers(self):
        limit = 128
        raise_nofile(1000)
        # The waiting client below sits in the listen queue for seconds, past the default
        # limits.max_queue_wait (a stale queue is reset: tests/e2e/server/test_overload.py);
        # here it is to be served once descriptors free up.
        # An explicit max_connections far past the descriptor limit: unset, it would be sized
        # to the limit (server/files/fd_budget.hpp) and weft would answer 503 before running out.
        # Nor the admission gate: while weft cannot accept, the queue's predicted wait is
        # endless, and the gate would drop the handshakes this test wants queued.
        # And defer_accept off: the holders connect and send nothing, which the kernel would
        # otherwise keep unaccepted.
        srv = self.start({"timeouts": {"header": "60s"},
                          "server": {"defer_accept": False},
                          "limits": {"max_queue_wait": "60s", "max_connections": 10000,
                                     "queue_target": "0s"}},
                         prefix=("prlimit", "--nofile=%d:%d" % (limit, limit), "--"))
        pid = srv.proc.pid
        self.assert_serves()
        time.sleep(0.3)
        base_fds = srv.pid_fds()
        holders = open_many(srv.port, limit + 50)
        try:
            # weft accepts until its descriptors run out; the rest wait in the backlog.
            deadline = time.monotonic() + 10
            while srv.pid_fds() < limit - 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertGreaterEqual(srv.pid_fds(), limit - 2)
            # No busy loop: the acceptor sleeps between tries (up to 100 ms).
            cpu0 = cpu_seconds(pid)
            time.sleep(2)
            used = cpu_seconds(pid) - cpu0
            self.assertLess(used, 0.4, "weft used %.2f s of CPU in 2 s while out of fds" % used)
            # A new client waits (its connection sits in the backlog), or gets 503.
            waiting = srv.client(timeout=20)
            waiting.send(GET_HELLO)
            waiting.sock.settimeout(1)
            try:
                early = waiting.response()
                self.assertEqual(early.status, 503)
                waiting.close()
                waiting = None
            except socket.timeout:
                pass
        finally:
            close_all(holders)
        try:
            if waiting is not None:  # served once descriptors free up
                waiting.sock.settimeout(20)
                r = waiting.response()
                self.assertEqual((r.status, r.body), (200, site.HELLO))
        finally:
            if waiting is not None:
                waiting.close()
        self.assertIn("backing off", srv.log())
        # Full recovery: many requests in a row, and no descriptor leaked.
        for _ in range(20):
            self.assert_serves()
        deadline = time.monotonic() + 10
        while srv.pid_fds() > base_fds + 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertLessEqual(srv.pid_fds(), base_fds + 2)

    def test_idle_connections_memory(self):
        # The marginal cost of an idle connection: RSS after n/2 and after n connections,
        # each time once the server is back to its idle fibers. A single before/after
        # difference would also charge the first burst's pooled stacks and buffers (kept
        # for reuse, a high-water mark), which made the figure noisy (9-13 KiB).
        n = scaled(10000)
        if raise_nofile(n + 200) < n + 200:
            self.skipTest("RLIMIT_NOFILE too low for %d connections" % n)
        metrics_port = free_port()
        # Batches of 1,000 can wait in the listen queue past the default limits.max_queue_wait
        # on a loaded machine, and a stale queue is reset (test_overload.py), or past
        # limits.queue_target, which closes the admission gate: both off.
        srv = self.start({"limits": {"max_connections": n + 1000, "max_queue_wait": "0s",
                                     "queue_target": "0s"},
                          "server": {"backlog": 4096},
                          "timeouts": {"keepalive": "120s"},
                          "metrics": {"enabled": True,
                                      "listen": "127.0.0.1:%d" % metrics_port}})
        pid = srv.proc.pid
        idle_fibers = metric(metrics_port, "weft_fibers")  # no client connection yet
        # Warm up: one connection, so lazily built state is not charged to the idle ones.
        warm = open_many(srv.port, 1, GET_HELLO)
        self.assertEqual(read_responses(warm), 1)
        close_all(warm)
        wait_for_fibers(metrics_port, idle_fibers)
        idle = []
        rss = []
        try:
            for half in (n // 2, n - n // 2):
                for i in range(0, half, 1000):
                    batch = open_many(srv.port, min(1000, half - i), GET_HELLO)
                    idle.extend(batch)
                    self.assertEqual(read_responses(batch), len(batch))
                    # Idle connections give their fibers back (after 100 ms without a
                    # request): waiting for it bounds the live fibers, and so the pools'
                    # high-water mark, to one batch, which the first batch reaches. (Without
                    # the wait, batches overlapped more on a loaded machine and the pools grew
                    # in the second half: 2.2 KiB "at the margin" once in 14 runs.)
                    wait_for_fibers(metrics_port, idle_fibers)
                rss.append(proc_status(pid, "VmRSS"))
            per = (rss[1] - rss[0]) * 1024 / (n - n // 2)
            print("idle connections (%s): RSS %d KiB at %d, %d KiB at %d: %.0f bytes each" % (
                self.backend, rss[0], n // 2, rss[1], n, per))
            self.assertGreaterEqual(srv.pid_fds(), n)
            self.assert_serves()  # still serving
            if not sanitized(pid):
                self.assertLessEqual(per, IDLE_BYTES_PER_CONNECTION)
            # The idle connections are still usable.
            for s in idle[:: max(1, n // 20)]:
                s.setblocking(True)
                s.settimeout(10)
                s.sendall(GET_HELLO)
                self.assertIn(site.HELLO, s.recv(4096))
        finally:
            close_all(idle)
        deadline = time.monotonic() + 10
        while srv.pid_fds() > 50 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertLess(srv.pid_fds(), 50)


def wait_for_fibers(port, target, timeout=30):
    """Waits (bounded) until the server's live fibers are at most `target`."""
    deadline = time.monotonic() + timeout
    live = None
    while time.monotonic() < deadline:
        live = metric(port, "weft_fibers")
        if live <= target:
            return
        time.sleep(0.05)
    raise AssertionError("live fibers stayed at %s (waiting for %s)" % (live, target))


for _backend in BACKENDS:
    _name = "Exhaustion_" + _backend
    globals()[_name] = type(_name, (Exhaustion, unittest.TestCase), {"backend": _backend})

if __name__ == "__main__":
    unittest.main()
