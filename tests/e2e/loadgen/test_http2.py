"""weft-load --http2 against the real NGINX: a session is one connection and its calls are
streams (h2 chosen by ALPN over TLS, or h2c with prior knowledge), every call answered and
counted as NGINX logged it, the server's stream limit respected; a server that does not
choose h2 fails each session by name."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import BACKENDS, WeftServer  # noqa: E402
from loadgen_harness import (NGINX, NginxServer, free_port, read_access_log,  # noqa: E402
                             run_load, wait_for_port)


@unittest.skipUnless(os.access(NGINX, os.X_OK), "NGINX (nginx-light) is not installed")
class WeftLoadOverHttp2(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="weft-load-h2-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.chmod(self.tmp, 0o755)  # NGINX's worker runs as nobody
        self.root = os.path.join(self.tmp, "www")
        os.makedirs(self.root)
        for name, size in (("f100", 100), ("f64k", 65_536)):
            with open(os.path.join(self.root, name), "wb") as f:
                f.write(b"h" * size)

    def serve(self, tls=True, http2=True, max_streams=128):
        nginx = NginxServer(self.root, tls=tls, http2=http2, max_streams=max_streams).start()
        self.addCleanup(nginx.cleanup)
        return nginx

    def load(self, nginx, uri, sessions, calls, extra):
        return run_load(["--server", "127.0.0.1", "--port", nginx.port, "--uri", uri,
                         "--rate", 100, "--num-conns", sessions, "--num-calls", calls,
                         "--timeout", 5, "--http2"] + list(extra))

    def check(self, nginx, uri, size, sessions, calls, extra):
        run = self.load(nginx, uri, sessions, calls, extra)
        self.assertEqual(run.returncode, 0, run.describe())
        nginx.stop()
        j = run.json
        self.assertEqual(j["errors"]["total"], 0, run.describe())
        self.assertEqual(sum(run.errors().values()) - run.errors()["total"], 0, run.describe())
        self.assertEqual(j["replies"]["status"]["2xx"], sessions * calls, run.describe())
        self.assertEqual(j["replies"]["bytes"]["content"], sessions * calls * size)
        self.assertEqual(j["connections"]["total"], sessions)  # one connection a session
        requests, body = read_access_log(nginx.access_log)
        self.assertEqual((requests, body), (sessions * calls, sessions * calls * size))
        with open(nginx.access_log) as f:
            self.assertTrue(all('HTTP/2.0" 200' in line for line in f))
        return j

    def test_streams_over_tls(self):
        j = self.check(self.serve(), "/f100", 100, 30, 5, ["--tls", "--streams", 3])
        self.assertEqual(j["tls"]["handshakes"], 30)

    def test_h2c_with_prior_knowledge(self):
        self.check(self.serve(tls=False), "/f100", 100, 30, 5, ["--streams", 3])

    def test_large_bodies_on_epoll(self):
        self.check(self.serve(), "/f64k", 65_536, 20, 4,
                   ["--tls", "--backend", "epoll", "--threads", "2"])

    def test_the_servers_stream_limit_is_kept(self):
        # NGINX allows 2 streams at once; weft-load would open 100: it waits for room rather
        # than have streams refused.
        self.check(self.serve(max_streams=2), "/f100", 100, 20, 8, ["--tls"])

    def test_a_server_without_h2_fails_each_session(self):
        # NGINX without http2 answers an offer of h2 alone with a no_application_protocol
        # alert: the handshake fails.
        nginx = self.serve(http2=False)
        run = self.load(nginx, "/f100", 10, 2, ["--tls"])
        self.assertEqual(run.returncode, 0, run.describe())
        self.assertEqual(run.json["replies"]["total"], 0, run.describe())
        self.assertEqual(run.errors()["other"], 10, run.describe())

    def test_a_server_that_ignores_alpn_fails_each_session_by_name(self):
        # openssl s_server without -alpn completes the handshake choosing nothing.
        cert, key = (os.path.join(self.tmp, n) for n in ("cert.pem", "key.pem"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                        "/CN=localhost", "-keyout", key, "-out", cert],
                       check=True, capture_output=True)
        port = free_port()
        server = subprocess.Popen(["openssl", "s_server", "-accept", "127.0.0.1:%d" % port,
                                   "-cert", cert, "-key", key, "-www", "-quiet"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(server.wait)
        self.addCleanup(server.kill)
        wait_for_port(port, server)
        run = run_load(["--server", "127.0.0.1", "--port", port, "--uri", "/", "--rate", 50,
                        "--num-conns", 5, "--timeout", 5, "--http2", "--tls"])
        self.assertEqual(run.returncode, 0, run.describe())
        self.assertEqual(run.errors()["other"], 5, run.describe())
        self.assertIn("did not choose h2", run.describe())


class WeftLoadOverHttp2AgainstWeft(unittest.TestCase):
    """The same against weft itself: h2 by ALPN over TLS, and h2c with server.h2c on, on both
    backends; every stream answered, as weft's access log counts them."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="weft-load-h2-weft-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = os.path.join(self.tmp, "www")
        os.makedirs(self.root)
        with open(os.path.join(self.root, "f10k"), "wb") as f:
            f.write(bytes(i % 251 for i in range(10_000)))
        self.cert, self.key = (os.path.join(self.tmp, n) for n in ("cert.pem", "key.pem"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                        "/CN=localhost", "-keyout", self.key, "-out", self.cert],
                       check=True, capture_output=True)

    def serve(self, backend, tls):
        log = os.path.join(tempfile.mkdtemp(dir=self.tmp), "access.log")
        port = free_port()
        settings = {"log": {"access_log": log, "level": "warn"}}
        if tls:
            settings["server"] = {"listen_tls": ["127.0.0.1:%d" % port]}
            settings["tls"] = {"certificate": self.cert, "key": self.key}
        else:
            settings["server"] = {"h2c": True}
        srv = WeftServer(self.root, backend, settings=settings)
        srv.start()
        self.addCleanup(srv.cleanup)
        return srv, (port if tls else srv.port), log

    def test_streams_against_weft(self):
        for backend in BACKENDS:
            for tls in (True, False):
                with self.subTest(backend=backend, tls=tls):
                    srv, port, log = self.serve(backend, tls)
                    run = run_load(["--server", "127.0.0.1", "--port", port, "--uri", "/f10k",
                                    "--rate", 200, "--num-conns", 40, "--num-calls", "1..6",
                                    "--timeout", 5, "--http2", "--streams", 4, "--backend",
                                    backend] + (["--tls"] if tls else []))
                    self.assertEqual(run.returncode, 0, run.describe())
                    j = run.json
                    self.assertEqual(j["errors"]["total"], 0, run.describe())
                    replies = j["replies"]["status"]["2xx"]
                    self.assertEqual(j["replies"]["total"], replies, run.describe())
                    self.assertEqual(j["replies"]["bytes"]["content"], replies * 10_000)
                    self.assertEqual(srv.stop(), 0)
                    requests, body = read_access_log(log)
                    self.assertEqual((requests, body), (replies, replies * 10_000))
                    with open(log) as f:
                        self.assertTrue(all('"GET /f10k HTTP/2.0" 200' in x for x in f))


if __name__ == "__main__":
    unittest.main()
