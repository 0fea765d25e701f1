"""weft-load counts each error class when a server misbehaves on purpose."""

import os
import resource
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loadgen_harness import FakeServer, free_port, run_load  # noqa: E402

SESSIONS = 20
BASE = ["--server", "127.0.0.1", "--rate", 200, "--num-conns", SESSIONS]


class ErrorClasses(unittest.TestCase):
    def expect_only(self, run, klass, n):
        """Asserts that run counted n errors of klass and none of any other class."""
        self.assertEqual(run.returncode, 0, run.describe())
        errors = run.errors()
        self.assertEqual(errors[klass], n, run.describe())
        others = {k: v for k, v in errors.items() if k not in (klass, "total") and v}
        self.assertEqual(others, {}, run.describe())
        self.assertEqual(run.json["errors"][klass], n)

    def test_connrefused_on_a_closed_port(self):
        run = run_load(BASE + ["--port", free_port()])
        self.expect_only(run, "connrefused", SESSIONS)
        self.assertEqual(run.json["connections"]["established"], 0)

    def test_client_timo_when_the_server_never_answers(self):
        srv = FakeServer("stall")
        try:
            run = run_load(BASE + ["--port", srv.port, "--timeout", 0.3])
        finally:
            srv.close()
        self.expect_only(run, "client-timo", SESSIONS)
        self.assertEqual(run.json["requests"]["total"], SESSIONS)  # sent, never answered

    def test_connreset_when_the_server_resets(self):
        srv = FakeServer("reset")
        try:
            run = run_load(BASE + ["--port", srv.port, "--timeout", 5])
        finally:
            srv.close()
        self.expect_only(run, "connreset", SESSIONS)

    def test_bad_length_when_the_body_is_short(self):
        srv = FakeServer(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 50)
        try:
            run = run_load(BASE + ["--port", srv.port, "--timeout", 5])
        finally:
            srv.close()
        self.expect_only(run, "bad-length", SESSIONS)

    def test_http_5xx_is_a_reply_and_an_error(self):
        srv = FakeServer(b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy")
        try:
            run = run_load(BASE + ["--port", srv.port, "--timeout", 5])
        finally:
            srv.close()
        self.expect_only(run, "http-5xx", SESSIONS)
        self.assertEqual(run.report["status"][4], SESSIONS)  # 5xx=
        self.assertEqual(run.report["total"][2], SESSIONS)  # replies

    def test_other_for_a_reply_that_is_not_http(self):
        srv = FakeServer(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
        try:
            run = run_load(BASE + ["--port", srv.port, "--timeout", 5])
        finally:
            srv.close()
        self.expect_only(run, "other", SESSIONS)
        self.assertIn("'other'", run.stderr)

    def test_fd_unavail_at_max_conns(self):
        # One connection stalls until the timeout; every other session is due meanwhile.
        srv = FakeServer("stall")
        try:
            run = run_load(BASE + ["--port", srv.port, "--timeout", 1, "--max-conns", 1])
        finally:
            srv.close()
        self.assertEqual(run.errors()["client-timo"], 1, run.describe())
        self.assertEqual(run.errors()["fd-unavail"], SESSIONS - 1, run.describe())

    def test_fd_unavail_when_out_of_descriptors(self):
        srv = FakeServer("stall")
        limit = 24  # stdio, the ring and a few more: a handful of connections fit

        def low_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        try:
            run = run_load(BASE + ["--port", srv.port, "--timeout", 1], preexec_fn=low_limit)
        finally:
            srv.close()
        errors = run.errors()
        self.assertGreater(errors["fd-unavail"], 0, run.describe())
        self.assertEqual(errors["fd-unavail"] + errors["client-timo"], SESSIONS, run.describe())


if __name__ == "__main__":
    unittest.main()
