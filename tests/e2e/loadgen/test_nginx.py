"""weft-load against the real NGINX: request and byte counts agree with NGINX's access log."""

import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loadgen_harness import NGINX, NginxServer, read_access_log, run_load  # noqa: E402


@unittest.skipUnless(os.access(NGINX, os.X_OK), "NGINX (nginx-light) is not installed")
class WeftLoadAgainstNginx(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="weft-load-e2e-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        # Started as root, NGINX's worker runs as nobody: it needs to reach the files.
        os.chmod(self.tmp, 0o755)
        self.root = os.path.join(self.tmp, "www")
        os.makedirs(self.root)
        for name, size in (("f100", 100), ("f64k", 65_536)):
            with open(os.path.join(self.root, name), "wb") as f:
                f.write(b"n" * size)
        self.nginx = NginxServer(self.root).start()
        self.addCleanup(self.nginx.cleanup)

    def check(self, uri, sessions, calls, extra=()):
        run = run_load(["--server", "127.0.0.1", "--port", self.nginx.port, "--uri", uri,
                        "--rate", 300, "--num-conns", sessions, "--num-calls", calls,
                        "--timeout", 5] + list(extra))
        self.assertEqual(run.returncode, 0, run.describe())
        self.nginx.stop()
        requests, body = read_access_log(self.nginx.access_log)
        j = run.json
        self.assertEqual(j["requests"]["total"], sessions * calls, run.describe())
        self.assertEqual(j["requests"]["total"], requests, run.describe())
        self.assertEqual(j["replies"]["total"], requests, run.describe())
        self.assertEqual(j["replies"]["bytes"]["content"], body, run.describe())
        self.assertEqual(run.report["total"][1:3], (requests, requests))
        return run

    def test_small_file_keep_alive(self):
        run = self.check("/f100", 150, 5, ["--threads", "2"])
        self.assertEqual(run.errors()["total"], 0, run.describe())
        self.assertEqual(run.json["replies"]["status"]["2xx"], 750, run.describe())
        self.assertEqual(run.json["replies"]["bytes"]["content"], 750 * 100)

    def test_large_file_on_epoll(self):
        run = self.check("/f64k", 60, 3, ["--backend", "epoll"])
        self.assertEqual(run.errors()["bad-length"], 0, run.describe())
        self.assertEqual(run.json["replies"]["status"]["2xx"], 180, run.describe())
        self.assertEqual(run.json["replies"]["bytes"]["content"], 180 * 65_536)

    def test_missing_file_bytes_are_the_error_pages(self):
        run = self.check("/nope", 30, 2)
        self.assertEqual(run.errors()["http-4xx"], 60, run.describe())


if __name__ == "__main__":
    unittest.main()
