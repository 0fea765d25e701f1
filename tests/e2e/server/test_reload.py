"""Zero-downtime reload: SIGHUP (or weft -s reload through server.pid_file) loads the
configuration again; a good one serves new connections without closing a listening socket or
an in-flight connection, a bad one (or one that changes what needs a restart) is refused with
one error line and the old one keeps serving. weft -s stop|quit|reopen mirror nginx -s."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import shutil
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import WEFT, WeftServer, BACKENDS, free_port, metric, toml_value  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "loadgen"))
from loadgen_harness import run_load  # noqa: E402


def make_root(base, name):
    """A small document root whose which.txt names it; hello.txt is the same in every root."""
    root = os.path.join(base, name)
    os.makedirs(root)
    with open(os.path.join(root, "which.txt"), "w") as f:
        f.write(name)
    with open(os.path.join(root, "hello.txt"), "w") as f:
        f.write("hello, world\n" * 8)
    return root


def wait_for(predicate, timeout=10, what="condition"):
    """Polls `predicate` every 20 ms for at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


class Reload:
    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="weft-reload-")
        self.addCleanup(shutil.rmtree, self.base, True)
        self.roots = [make_root(self.base, "a"), make_root(self.base, "b")]
        self.pid_file = os.path.join(self.base, "weft.pid")
        self.metrics_port = free_port()
        self.srv = WeftServer(self.roots[0], self.backend, {
            "server": {"pid_file": self.pid_file},
            "log": {"level": "info"},
            "metrics": {"enabled": True, "listen": "127.0.0.1:%d" % self.metrics_port},
        })
        self.addCleanup(self.srv.cleanup)
        self.srv.start()
        with open(self.srv.config) as f:
            self.text = f.read()

    def rewrite(self, **changes):
        """Writes the server's config again with `changes` ({"section.key": value})."""
        sections = {}  # section -> {key: value text}, in the file's order
        section = None
        for line in self.text.splitlines():
            if line.startswith("["):
                section = line.strip("[]")
                sections.setdefault(section, {})
            elif " = " in line:
                key, value = line.split(" = ", 1)
                sections[section][key] = value
        for name, value in changes.items():
            s, k = name.split(".")
            sections.setdefault(s, {})[k] = toml_value(value)
        with open(self.srv.config, "w") as f:
            for s, values in sections.items():
                f.write("[%s]\n" % s)
                for k, v in values.items():
                    f.write("%s = %s\n" % (k, v))

    def which(self):
        r, body = self.srv.get("/which.txt")
        self.assertEqual(r.status, 200)
        return body.decode()

    def reloads(self):
        return self.srv.log().count("reloaded: generation")

    def weft_s(self, action):
        return subprocess.run([WEFT, "-c", self.srv.config, "-s", action],
                              capture_output=True, text=True, timeout=10)

    def test_reload_under_load_loses_no_session(self):
        # 1,000 sessions/s of 1..5 calls (3,000 requests/s): a load well inside capacity,
        # since the test is about reloads losing nothing, not about how much weft serves.
        # The ASan build served 9,600 sessions/s alone here once, but on 2026-12-03 this VM
        # ran every benchmark at about half of the day before, and at 2,000 sessions/s with
        # a second test beside it the listen queue passed limits.max_queue_wait (a reset by
        # design) in the ASan run.
        load = subprocess.Popen(
            [os.environ["WEFT_LOAD_BINARY"], "--server", "127.0.0.1", "--port", str(self.srv.port),
             "--uri", "/hello.txt", "--num-calls", "1..5", "--rate", "1000", "--duration", "6",
             "--timeout", "5", "--json", os.path.join(self.base, "load.json"), "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(0.5)
        for i in range(10):
            # The document root and a limit change each time.
            self.rewrite(**{"server.root": self.roots[(i + 1) % 2],
                            "limits.max_connections": 5000 + i,
                            "timeouts.keepalive": "%ds" % (30 + i)})
            self.srv.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.reloads() == i + 1, what="reload %d" % (i + 1))
            self.assertEqual(self.which(), "ab"[(i + 1) % 2])
            time.sleep(0.35)
        out, _ = load.communicate(timeout=60)
        self.assertEqual(load.returncode, 0, out)
        with open(os.path.join(self.base, "load.json")) as f:
            report = json.load(f)
        self.assertEqual(report["sessions"]["completed"], 6000, out)
        self.assertEqual(report["sessions"]["failed"], 0, out)
        self.assertEqual(report["errors"]["all_classes_total"], 0, out)
        self.assertNotIn("[error]", self.srv.log())

    def test_bad_configuration_is_refused_and_the_old_one_serves(self):
        self.rewrite(**{"limits.max_uri_bytes": 12})  # out of range
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload refused" in self.srv.log(), what="the refusal")
        self.assertIn("key 'limits.max_uri_bytes' must be between", self.srv.log())
        self.assertEqual(self.which(), "a")
        self.assertEqual(self.reloads(), 0)

    def test_generation_gauge_counts_only_generations_that_serve(self):
        def generation():
            return metric(self.metrics_port, "weft_config_generation")
        self.assertEqual(generation(), 1)
        # Loads, but its generation cannot be built: its access log cannot be opened (under a
        # file, where no folder can be made).
        self.rewrite(**{"log.access_log": os.path.join(self.roots[0], "which.txt", "access.log")})
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload refused" in self.srv.log(), what="the refusal")
        self.assertEqual(generation(), 1)
        self.rewrite(**{"log.access_log": "off", "server.root": self.roots[1]})
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.reloads() == 1, what="the reload")
        self.assertIn("reloaded: generation 2 serves new connections", self.srv.log())
        self.assertEqual(generation(), 2)

    def test_shutdown_waits_the_live_generations_grace(self):
        # Started with a long grace, reloaded with a short one: a client that stalls a
        # download is cancelled after the short one.
        srv = WeftServer(self.roots[1], self.backend, {"timeouts": {"shutdown_grace": "60s"},
                                                       "log": {"level": "info"}})
        self.addCleanup(srv.cleanup)
        with open(os.path.join(self.roots[1], "big.bin"), "wb") as f:
            f.truncate(64 << 20)  # more than every socket buffer between the two holds
        srv.start()
        with open(srv.config) as f:
            text = f.read()
        with open(srv.config, "w") as f:
            f.write(text.replace('shutdown_grace = "60s"', 'shutdown_grace = "300ms"'))
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded: generation" in srv.log(), what="the reload")
        with srv.client() as c:
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response(body=False).status, 200)  # and reads no further
            srv.proc.send_signal(signal.SIGTERM)
            # Generous: 300 ms is the grace; the start-up one would be 60 s.
            self.assertEqual(srv.proc.wait(20), 0)
        self.assertIn("shutting down (grace 300 ms", srv.log())

    def test_access_log_is_one_across_generations_and_rotates_for_all(self):
        # Both generations write one file through one log (no interleaving of two streams),
        # and after logrotate's rename and SIGUSR1 the retiring one writes the new file too.
        path = os.path.join(self.base, "access.log")
        grace = "30s"  # the retiring generation keeps its idle connection meanwhile
        self.rewrite(**{"log.access_log": path, "timeouts.shutdown_grace": grace})
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.reloads() == 1, what="the first reload")
        with self.srv.client() as c:
            c.send(b"GET /which.txt?before HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().body, b"a")
            self.rewrite(**{"log.access_log": path, "timeouts.shutdown_grace": grace,
                            "server.root": self.roots[1]})
            self.srv.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.reloads() == 2, what="the second reload")
            os.rename(path, path + ".1")
            self.srv.proc.send_signal(signal.SIGUSR1)
            wait_for(lambda: "SIGUSR1: reopening logs" in self.srv.log(), what="the reopen")
            c.send(b"GET /which.txt?old-after HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().body, b"a")  # the retiring generation
        r, body = self.srv.get("/which.txt?new-after")
        self.assertEqual((r.status, body), (200, b"b"))

        def text(p):
            with open(p) as f:
                return f.read()
        wait_for(lambda: os.path.exists(path) and text(path).count("\n") == 2,
                 what="two lines in the new file")
        self.assertIn("?before ", text(path + ".1"))
        self.assertNotIn("-after ", text(path + ".1"))
        lines = text(path).splitlines()
        self.assertEqual(sorted(line.split('"')[1] for line in lines),
                         ["GET /which.txt?new-after HTTP/1.1",
                          "GET /which.txt?old-after HTTP/1.1"], lines)

    def test_listen_change_is_refused_clearly(self):
        other = free_port()
        self.rewrite(**{"server.listen": ["127.0.0.1:%d" % other], "server.root": self.roots[1]})
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "reload refused" in self.srv.log(), what="the refusal")
        self.assertIn("server.listen cannot change without a restart", self.srv.log())
        self.assertEqual(self.which(), "a")  # nothing of the new file was applied

    def test_keep_alive_connection_finishes_on_its_configuration(self):
        with self.srv.client() as c:
            c.send(b"GET /which.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().body, b"a")
            self.rewrite(**{"server.root": self.roots[1]})
            self.srv.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.reloads() == 1, what="the reload")
            self.assertEqual(self.which(), "b")  # a new connection: the new root
            c.send(b"GET /which.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().body, b"a")  # the open one: still the old root

    def test_signals_through_the_pid_file(self):
        with open(self.pid_file) as f:
            self.assertEqual(int(f.read()), self.srv.proc.pid)
        self.rewrite(**{"server.root": self.roots[1]})
        r = self.weft_s("reload")
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_for(lambda: self.reloads() == 1, what="the reload")
        self.assertEqual(self.which(), "b")
        r = self.weft_s("reopen")
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_for(lambda: "SIGUSR1: reopening logs" in self.srv.log(), what="the reopen")
        r = self.weft_s("quit")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.srv.proc.wait(15), 0)
        self.assertFalse(os.path.exists(self.pid_file), "pid file left behind")
        r = self.weft_s("stop")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot read a process id", r.stderr)


GET_HELLO = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"
FILES = 300  # more than the fd cache holds under the descriptor limit below


class ReloadLimits:
    """A reload shares limits.max_connections and the descriptor budget with the generations
    it retires: connections of every generation count against one limit, and a retiring
    generation gives its cached descriptors back (issue 32, item 2.4)."""

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="weft-reload-limits-")
        self.addCleanup(shutil.rmtree, self.base, True)
        self.root = make_root(self.base, "www")
        for i in range(FILES):
            with open(os.path.join(self.root, "f%03d.txt" % i), "w") as f:
                f.write("file %d\n" % i)

    def start(self, settings, prefix=()):
        # A long grace: retiring generations stay while the test looks at them.
        settings = dict(settings, log={"level": "info"}, timeouts={"shutdown_grace": "60s"})
        self.srv = WeftServer(self.root, self.backend, settings, processors=1, prefix=prefix)
        self.addCleanup(self.srv.cleanup)
        self.srv.start()

    def reload(self, n):
        self.srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: self.srv.log().count("reloaded: generation") == n,
                 what="reload %d" % n)

    def test_connections_of_every_generation_share_max_connections(self):
        limit = 8
        self.start({"limits": {"max_connections": limit}})
        old = [self.srv.client() for _ in range(limit)]
        for c in old:
            c.send(GET_HELLO)
            self.assertEqual(c.response().status, 200)
        self.reload(1)
        time.sleep(0.3)  # the old connections are idle now (timeouts.active_wait)
        new = [self.srv.client() for _ in range(limit)]
        for c in new:
            c.send(GET_HELLO)
            self.assertEqual(c.response().status, 200)
        # Each newcomer took the slot of an idle connection of the retiring generation: had
        # the new generation counted apart, 2 x max_connections would be open now.
        still_open = sum(not c.closed(timeout=2) for c in old)
        self.assertEqual(still_open, 0, "connections of the old generation kept their slots")
        for c in old + new:
            c.close()

    def test_reloads_under_a_small_descriptor_limit(self):
        # 256 descriptors: the reserve (limits.fd_reserve 64 and a few) and 32 connections
        # leave the fd cache about 150 entries, which every generation fills here. Had a
        # retiring generation kept its cache, the next one would run out of descriptors.
        self.start({"limits": {"max_connections": 32}},
                   prefix=("prlimit", "--nofile=256:256", "--"))
        held = []
        for n in range(4):
            c = self.srv.client()  # kept open: its generation retires but is not freed
            for i in range(FILES):
                c.send(b"GET /f%03d.txt HTTP/1.1\r\nHost: x\r\n\r\n" % i)
                r = c.response()
                self.assertEqual((r.status, r.body), (200, b"file %d\n" % i),
                                 "generation %d, file %d" % (n + 1, i))
            held.append(c)
            if n < 3:
                self.reload(n + 1)
        for c in held:
            c.close()
        self.assertNotIn("[error]", self.srv.log())


for _backend in BACKENDS:
    for _case in (Reload, ReloadLimits):
        _name = "%s_%s" % (_case.__name__, _backend)
        globals()[_name] = type(_name, (_case, unittest.TestCase), {"backend": _backend})

if __name__ == "__main__":
    unittest.main()
