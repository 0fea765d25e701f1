"""weft-load --tls against the real NGINX over HTTPS: every call answered and counted as NGINX
logged it, a handshake per connection, sessions resumed with --tls-resume, on both backends;
a TLS client against a plain HTTP port fails each session cleanly."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loadgen_harness import NGINX, NginxServer, read_access_log, run_load  # noqa: E402


@unittest.skipUnless(os.access(NGINX, os.X_OK), "NGINX (nginx-light) is not installed")
class WeftLoadOverTls(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="weft-load-tls-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.chmod(self.tmp, 0o755)  # NGINX's worker runs as nobody
        self.root = os.path.join(self.tmp, "www")
        os.makedirs(self.root)
        for name, size in (("f100", 100), ("f64k", 65_536)):
            with open(os.path.join(self.root, name), "wb") as f:
                f.write(b"t" * size)

    def serve(self, tls=True):
        nginx = NginxServer(self.root, tls=tls).start()
        self.addCleanup(nginx.cleanup)
        return nginx

    def load(self, nginx, uri, sessions, calls, extra):
        return run_load(["--server", "127.0.0.1", "--port", nginx.port, "--uri", uri,
                         "--rate", 200, "--num-conns", sessions, "--num-calls", calls,
                         "--timeout", 5] + list(extra))

    def check(self, uri, size, sessions, calls, extra):
        nginx = self.serve()
        run = self.load(nginx, uri, sessions, calls, ["--tls"] + list(extra))
        self.assertEqual(run.returncode, 0, run.describe())
        nginx.stop()
        requests, body = read_access_log(nginx.access_log)
        j = run.json
        self.assertEqual(run.errors()["total"], 0, run.describe())
        self.assertEqual(requests, sessions * calls, run.describe())
        self.assertEqual(j["replies"]["status"]["2xx"], sessions * calls, run.describe())
        self.assertEqual(j["replies"]["bytes"]["content"], sessions * calls * size)
        self.assertEqual(body, sessions * calls * size)
        self.assertEqual(j["tls"]["handshakes"], sessions, run.describe())
        return j

    def test_a_handshake_per_connection(self):
        j = self.check("/f100", 100, 80, 3, [])
        self.assertEqual(j["tls"]["offered"], 0)
        self.assertEqual(j["tls"]["resumed"], 0)

    def test_large_bodies_on_epoll(self):
        self.check("/f64k", 65_536, 30, 2, ["--backend", "epoll", "--threads", "2"])

    def test_resumed_sessions(self):
        j = self.check("/f100", 100, 60, 2, ["--tls-resume"])
        # A warm-up handshake (not counted, no request) brings the first ticket, so every
        # connection offers a kept session however the sessions overlap, and NGINX's default
        # session tickets accept each.
        self.assertEqual(j["tls"]["offered"], 60, j["tls"])
        self.assertEqual(j["tls"]["resumed"], 60, j["tls"])

    def test_a_plain_port_fails_each_session(self):
        nginx = self.serve(tls=False)
        run = self.load(nginx, "/f100", 10, 1, ["--tls"])
        self.assertEqual(run.json["replies"]["total"], 0, run.describe())
        self.assertEqual(run.errors()["total"], 10, run.describe())
        self.assertEqual(run.json["tls"]["handshakes"], 0)


if __name__ == "__main__":
    unittest.main()
