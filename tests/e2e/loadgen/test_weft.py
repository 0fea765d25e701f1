"""weft-load against the real weft: counts agree with weft's access log; reports parse."""

import csv
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loadgen_harness import SOURCE_DIR, read_access_log, run_load  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import BACKENDS, WeftServer  # noqa: E402


def make_root(tmp):
    """Writes a few files of known sizes; returns the folder."""
    root = os.path.join(tmp, "www")
    os.makedirs(os.path.join(root, "d"))
    for name, size in (("f100", 100), ("f10k", 10_000), ("d/f200k", 200_000), ("e", 0)):
        with open(os.path.join(root, name), "wb") as f:
            f.write(bytes(i % 251 for i in range(size)))
    return root


class WeftLoadAgainstWeft(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="weft-load-e2e-")
        cls.root = make_root(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, root=None, backend="io_uring"):
        """Starts weft with an access log; returns (server, log path)."""
        log = os.path.join(tempfile.mkdtemp(dir=self.tmp), "access.log")
        srv = WeftServer(root or self.root, backend,
                         settings={"log": {"access_log": log, "level": "warn"}})
        srv.start()
        self.addCleanup(srv.cleanup)
        return srv, log

    def assert_counts_match_log(self, run, srv, log, bytes_logged=True):
        """Stops the server (flushing its log) and compares the log with weft-load's figures."""
        self.assertEqual(srv.stop(), 0)
        requests, body = read_access_log(log)
        j = run.json
        self.assertEqual(j["requests"]["total"], requests, run.describe())
        self.assertEqual(j["replies"]["total"], requests, run.describe())
        if bytes_logged:
            self.assertEqual(j["replies"]["bytes"]["content"], body, run.describe())
        total = run.report["total"]
        self.assertEqual(total[1:3], (requests, requests))

    def test_counts_agree_with_the_access_log(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                srv, log = self.serve()
                run = run_load(["--server", "127.0.0.1", "--port", srv.port, "--uri", "/f10k",
                                "--rate", 300, "--num-conns", 150, "--num-calls", 4,
                                "--timeout", 5, "--threads", 2, "--backend", backend])
                self.assertEqual(run.returncode, 0, run.describe())
                self.assertEqual(run.errors()["total"], 0, run.describe())
                self.assertEqual(run.json["replies"]["status"]["2xx"], 600)
                self.assertEqual(run.json["replies"]["bytes"]["content"], 600 * 10_000)
                self.assertEqual(run.json["connections"]["total"], 150)
                self.assert_counts_match_log(run, srv, log)

    def test_added_headers_reach_the_server(self):
        # A precompressed variant answers every request that accepts gzip: the body bytes show
        # whether the field went out, over HTTP/1.1 and over HTTP/2 (h2c).
        root = os.path.join(tempfile.mkdtemp(dir=self.tmp), "www")
        os.makedirs(root)
        text = b"".join(b"line %d of a text file\n" % i for i in range(500))
        with open(os.path.join(root, "t.txt"), "wb") as f:
            f.write(text)
        packed = gzip.compress(text)
        with open(os.path.join(root, "t.txt.gz"), "wb") as f:
            f.write(packed)
        srv = WeftServer(root, "io_uring", settings={"server": {"precompressed": "on",
                                                                "h2c": True}})
        srv.start()
        self.addCleanup(srv.cleanup)
        base = ["--server", "127.0.0.1", "--port", srv.port, "--uri", "/t.txt", "--rate", 200,
                "--num-conns", 10, "--num-calls", 3, "--timeout", 5]
        for proto in ([], ["--http2"]):
            for extra, size in (([], len(text)),
                                (["--add-header", "Accept-Encoding: gzip",
                                  "--add-header", "X-Trace:  a b\t"], len(packed))):
                with self.subTest(proto=proto, extra=extra):
                    run = run_load(base + proto + extra)
                    self.assertEqual(run.returncode, 0, run.describe())
                    self.assertEqual(run.errors()["total"], 0, run.describe())
                    self.assertEqual(run.json["replies"]["bytes"]["content"], 30 * size,
                                     run.describe())

    def test_missing_files_count_as_http_4xx(self):
        srv, log = self.serve()
        run = run_load(["--server", "127.0.0.1", "--port", srv.port, "--uri", "/no-such-file",
                        "--rate", 200, "--num-conns", 30, "--num-calls", 2, "--timeout", 5])
        self.assertEqual(run.errors()["http-4xx"], 60, run.describe())
        self.assertEqual(run.errors()["total"], 0, run.describe())
        self.assertEqual(run.report["status"][3], 60)  # 4xx=
        # weft logs 0 body bytes for its error pages (NGINX logs their size): counts only.
        self.assert_counts_match_log(run, srv, log, bytes_logged=False)

    def test_zipf_over_a_generated_file_set_has_no_bad_length(self):
        fileset = os.path.join(self.tmp, "set")
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "www-fixtures", "generate.py"),
                        "--files", "200", "--total-bytes", "2M", "--out", fileset],
                       check=True, capture_output=True)
        srv, log = self.serve(root=fileset)
        run = run_load(["--server", "127.0.0.1", "--port", srv.port, "--zipf", 1, "--files",
                        os.path.join(fileset, "MANIFEST"), "--rate", 200, "--num-conns", 200,
                        "--num-calls", 3, "--timeout", 5, "--threads", 2])
        self.assertEqual(run.returncode, 0, run.describe())
        errors = run.errors()
        self.assertEqual(errors["bad-length"], 0, run.describe())
        self.assertEqual(errors["http-4xx"], 0, run.describe())
        self.assertEqual(run.json["replies"]["status"]["2xx"], 600)
        self.assert_counts_match_log(run, srv, log)

    def test_session_log_bursts_and_think_times(self):
        sessions = os.path.join(self.tmp, "sessions.log")
        with open(sessions, "w") as f:
            f.write("# two sessions\n/f100 think=0.05\n\t/f10k\n\t/d/f200k\n/e\n\n"
                    "/f100 method=HEAD\n/f10k\n")
        srv, log = self.serve()
        run = run_load(["--server", "127.0.0.1", "--port", srv.port, "--wsesslog",
                        "20,0.01,%s" % sessions, "--rate", 100, "--timeout", 5])
        self.assertEqual(run.returncode, 0, run.describe())
        self.assertEqual(run.errors()["total"], 0, run.describe())
        self.assertEqual(run.errors()["bad-length"], 0, run.describe())
        j = run.json
        self.assertEqual(j["sessions"]["completed"], 20)
        self.assertEqual(j["requests"]["total"], 10 * 4 + 10 * 2)
        # HEAD replies carry no body: 10 x (100 + 10000 + 200000 + 0) + 10 x 10000.
        self.assertEqual(j["replies"]["bytes"]["content"], 10 * 210_100 + 10 * 10_000)
        self.assertRegex(run.stdout, r"(?m)^Session rate \[sess/s\]: .*\(20/20\)$")
        self.assert_counts_match_log(run, srv, log)

    def test_warmup_is_run_but_not_counted(self):
        srv, log = self.serve()
        run = run_load(["--server", "127.0.0.1", "--port", srv.port, "--uri", "/f100",
                        "--rate", 100, "--duration", 1.5, "--warmup", 0.5, "--timeout", 5])
        self.assertEqual(run.returncode, 0, run.describe())
        # Sessions are due every 10 ms: 50 in the warmup, then 100 measured.
        self.assertEqual(run.json["sessions"]["started"], 100, run.describe())
        self.assertEqual(run.json["replies"]["total"], 100)
        self.assertRegex(run.stdout, r"(?m)^Warmup \[s\]: 0\.500 ")
        self.assertEqual(srv.stop(), 0)
        self.assertEqual(read_access_log(log)[0], 150)

    def test_text_report_parses_like_httperfs(self):
        # Over 5 s, so that the reply rate has one 5-second sample as in httperf.
        srv, _ = self.serve()
        run = run_load(["--server", "127.0.0.1", "--port", srv.port, "--uri", "/f100",
                        "--rate", 40, "--duration", 5.2, "--num-calls", 2, "--timeout", 5])
        self.assertEqual(run.returncode, 0, run.describe())
        self.assertRegex(run.stdout, r"^httperf --client=0/1 --server=127\.0\.0\.1 ")
        missing = [k for k in ("total", "conn_rate", "conn_time", "connect", "conn_length",
                               "req_rate", "req_size", "reply_rate", "reply_time", "reply_size",
                               "status", "cpu", "net_io", "errors1", "errors2", "http_errors",
                               "lag") if k not in run.report]
        self.assertEqual(missing, [], run.stdout)
        r = run.report
        self.assertEqual(r["total"][0], 208)  # sessions due at 0, 25 ms, ... < 5.2 s
        self.assertEqual(r["total"][2], 416)
        self.assertEqual(r["reply_rate"][4], 1)  # one whole 5-second window
        self.assertAlmostEqual(r["reply_rate"][1], run.json["replies"]["rate_per_s"]["avg"], 0)
        self.assertEqual(r["status"][1], 416)
        self.assertEqual(r["reply_size"][1], 100.0)
        self.assertEqual(r["conn_length"][0], 2.0)
        self.assertEqual(r["lag"][2], 208)
        self.assertEqual(r["errors1"][0], 0)

    def test_sweep_writes_one_json_object_and_one_csv_row_per_rate(self):
        srv, _ = self.serve()
        csv_path = os.path.join(self.tmp, "sweep.csv")
        run = run_load(["--server", "127.0.0.1", "--port", srv.port, "--uri", "/f100",
                        "--sweep", "100:300:100", "--num-conns", 60, "--timeout", 5, "--csv",
                        csv_path])
        self.assertEqual(run.returncode, 0, run.describe())
        self.assertEqual([o["offered_rate"] for o in run.json], [100, 200, 300])
        for o in run.json:
            self.assertEqual(o["replies"]["total"], 60)
            self.assertEqual(o["errors"]["all_classes_total"], 0)
            self.assertIn("p99.9", o["latency_ms"]["from_send"])
            self.assertGreater(o["latency_ms"]["from_schedule"]["max"], 0)
            self.assertTrue(o["timeline"])
            self.assertEqual(sum(s["replies"] for s in o["timeline"]), 60)
        self.assertEqual(len(run.stdout.split("\nhttperf ")), 3)  # three text reports
        with open(csv_path) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([float(r["offered_rate"]) for r in rows], [100, 200, 300])
        self.assertEqual([int(r["replies"]) for r in rows], [60, 60, 60])
        self.assertIn("lat_send_p999_ms", rows[0])


if __name__ == "__main__":
    unittest.main()
