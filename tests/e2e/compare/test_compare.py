"""scripts/compare.py --quick end to end: every installed server is started, swept and
recorded; CSV, JSON, summary and plots are written. No performance is judged."""

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "WEFT_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))))
COMPARE = os.path.join(SOURCE_DIR, "scripts", "compare.py")
WEFT = os.environ.get("WEFT_BINARY", "")
WEFT_LOAD = os.environ.get("WEFT_LOAD_BINARY", "")
PEERS = {"nginx": "/usr/sbin/nginx", "h2o": "/usr/bin/h2o", "lighttpd": "/usr/sbin/lighttpd"}


def compare(*args, timeout=170):
    return subprocess.run([sys.executable, COMPARE, "--weft", WEFT, "--weft-load", WEFT_LOAD]
                          + list(args), capture_output=True, text=True, timeout=timeout)


@unittest.skipUnless(os.access(WEFT, os.X_OK) and os.access(WEFT_LOAD, os.X_OK),
                     "WEFT_BINARY and WEFT_LOAD_BINARY must name the built binaries")
class CompareQuick(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="weft-compare-test-")
        os.chmod(cls.tmp, 0o755)  # peers that drop privileges (nobody) must reach the files
        cls.out = os.path.join(cls.tmp, "out")
        cls.result = compare("--quick", "--fileset", os.path.join(cls.tmp, "small"), "--out",
                          cls.out)
        cls.servers = ["weft"] + [p for p, path in PEERS.items() if os.access(path, os.X_OK)]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def describe(self):
        return "exit %d\nstdout:\n%s\nstderr:\n%s" % (
            self.result.returncode, self.result.stdout[-4000:], self.result.stderr[-4000:])

    def test_exits_zero_and_prints_the_tables(self):
        self.assertEqual(self.result.returncode, 0, self.describe())
        self.assertIn("sessions/s | requests/s", self.result.stdout)
        self.assertIn("saturation: peak replies/s", self.result.stdout)
        for peer in self.servers[1:]:
            self.assertIn("weft/%s" % peer, self.result.stdout)
        if "nginx" in self.servers:
            self.assertIn("saturation throughput >= 1.1x NGINX's", self.result.stdout)

    def test_csv_has_one_row_per_server_and_rate(self):
        with open(os.path.join(self.out, "runs.csv")) as f:
            rows = list(csv.DictReader(f))
        rates = sorted({float(r["offered_sessions_per_s"]) for r in rows})
        self.assertGreaterEqual(len(rates), 3, rates)
        for rate in rates:
            got = sorted(r["server"] for r in rows if float(r["offered_sessions_per_s"]) == rate)
            self.assertEqual(got, sorted(self.servers), rate)
        for r in rows:
            # Correctness, not speed: each server served the set's files, none was refused.
            self.assertGreater(int(r["replies"]), 0, r)
            self.assertEqual(r["replies"], r["replies_2xx"], r)
            self.assertEqual(r["err_http_4xx"], "0", r)
            self.assertEqual(r["server_alive_after"], "True", r)
            # A one-second run at 100 sessions/s may cost less than one 10 ms tick of CPU
            # time, so only its presence and sign are checked, never that it is non-zero.
            cpu = float(r["server_cpu_s"])
            self.assertTrue(math.isfinite(cpu) and cpu >= 0.0, r)

    def test_json_holds_runs_conditions_and_summary(self):
        with open(os.path.join(self.out, "runs.json")) as f:
            j = json.load(f)
        self.assertEqual(len(j["runs"]), len(j["runs"]) // len(self.servers) * len(self.servers))
        self.assertEqual(set(j["summary"]["saturation"]), set(self.servers))
        self.assertEqual(j["conditions"]["server_cpus"], [0])
        self.assertEqual(j["conditions"]["load_cpus"], [1])
        self.assertIn("weft", j["conditions"]["versions"])
        # --quick runs uncapped unless --server-cpu is given; every row is judged all the same.
        self.assertEqual(j["conditions"]["cpu_cap"]["fraction"], 0.0)
        for r in j["runs"]:
            self.assertIn(r["valid"], (True, False), r)
            self.assertGreaterEqual(r["client_cpu_share"], 0.0, r)
            self.assertIsNone(r["throttled_periods"], r)
        self.assertTrue(os.path.exists(os.path.join(self.out, "summary.md")))
        self.assertTrue(os.listdir(os.path.join(self.out, "loadgen")))

    def test_summary_bounds_the_transient_rows(self):
        with open(os.path.join(self.out, "runs.json")) as f:
            rc = json.load(f)["summary"]["reach"]
        with open(os.path.join(self.out, "summary.md")) as f:
            text = f.read()
        if rc["S_sessions_per_s"] is None:  # no rate under 1% errors: nothing to bound
            self.assertIsNone(rc["transient_below"])
            self.assertNotIn("transient rows", text)
        else:  # --quick: 1 s runs, 1 s timeout
            self.assertAlmostEqual(rc["transient_below"], 3 * rc["S_sessions_per_s"])
            self.assertIn("transient rows: under %.0f sessions/s (3.00x S)"
                          % rc["transient_below"], text)

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot is not installed")
    def test_plots_are_png_and_svg(self):
        for name in ("throughput", "errors", "p99", "overload"):
            with open(os.path.join(self.out, name + ".png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
            with open(os.path.join(self.out, name + ".svg")) as f:
                self.assertIn("<svg", f.read(), name)


@unittest.skipUnless(os.access(WEFT, os.X_OK) and os.access(WEFT_LOAD, os.X_OK),
                     "WEFT_BINARY and WEFT_LOAD_BINARY must name the built binaries")
class CompareRepeatedWithAFleet(unittest.TestCase):
    """--clients 2: each measurement is two weft-load instances of one test, merged; the
    merged report is read as a single one. --repeat 2: every rate twice, the servers
    alternated, the order reversed the second time; medians with their spread. All of it
    over HTTPS and HTTP/2 (--tls --http2): each session one connection, its calls streams."""

    def test_two_instances_merged_per_measurement_each_rate_twice(self):
        tmp = tempfile.mkdtemp(prefix="weft-compare-fleet-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o755)
        out = os.path.join(tmp, "out")
        r = compare("--quick", "--nginx-only", "--tls", "--http2", "--streams", "4", "--clients",
                    "2", "--repeat", "2", "--fileset",
                    os.path.join(tmp, "small"), "--out", out)
        self.assertEqual(r.returncode, 0, r.stderr[-4000:])
        with open(os.path.join(out, "runs.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertTrue(rows)
        for row in rows:
            self.assertGreater(int(row["replies"]), 0, row)
            self.assertEqual(row["replies"], row["replies_2xx"], row)
        # Each rate: weft and NGINX twice, the second repetition in the reverse order.
        by_rate = {}
        for row in rows:
            by_rate.setdefault((row["phase"], row["offered_sessions_per_s"]), []).append(row)
        for runs in by_rate.values():
            self.assertEqual(sorted((x["repeat"], x["server"]) for x in runs),
                             [("0", "nginx"), ("0", "weft"), ("1", "nginx"), ("1", "weft")])
            first = [x["server"] for x in runs if x["repeat"] == "0"]
            second = [x["server"] for x in runs if x["repeat"] == "1"]
            self.assertEqual(first, second[::-1])
        with open(os.path.join(out, "medians.csv")) as f:
            medians = list(csv.DictReader(f))
        self.assertEqual(len(medians), len(rows) // 2)
        for m in medians:
            self.assertEqual(m["repeats"], "2", m)
            self.assertLessEqual(float(m["reply_rate_min"]), float(m["reply_rate"]))
            self.assertLessEqual(float(m["reply_rate"]), float(m["reply_rate_max"]))
        merged = parts = 0
        for name in os.listdir(os.path.join(out, "loadgen")):
            if not name.endswith(".json"):
                parts += ".client" in name
                continue
            with open(os.path.join(out, "loadgen", name)) as f:
                j = json.load(f)
            self.assertEqual(j["clients"], {"of": 2, "indexes": [0, 1]}, name)
            self.assertIn("--http2 --streams=4", j["test"])
            # Merged counters are the sums of the instances' (a connection that failed before
            # its handshake finished, as under ASan on a busy machine, counts in the
            # connections and not in the handshakes, so the two need not be equal).
            part_reports = []
            for i in range(2):
                with open(os.path.join(out, "loadgen", "%s.client%d" % (name, i))) as f:
                    part = json.load(f)
                part_reports.append(part[0] if isinstance(part, list) else part)
            for section, field in (("tls", "handshakes"), ("connections", "total")):
                self.assertEqual(j[section][field],
                                 sum(p[section][field] for p in part_reports),
                                 (name, section, field))
            self.assertGreater(j["tls"]["handshakes"], 0, name)
            self.assertLessEqual(j["tls"]["handshakes"], j["connections"]["total"], name)
            merged += 1
        self.assertEqual(parts, 2 * merged)


@unittest.skipUnless(os.access(WEFT, os.X_OK) and os.access(WEFT_LOAD, os.X_OK),
                     "WEFT_BINARY and WEFT_LOAD_BINARY must name the built binaries")
class CompareUsage(unittest.TestCase):
    def test_bad_options_exit_two(self):
        for args in (["--server-cores", "0", "--load-cores", "0"],
                     ["--server-cores", "0-1", "--load-cores", "0-1", "--server-cpu", "0"],
                     ["--servers", "apache"],
                     ["--rates", "5:1:1"], ["--calls", "3..1"], ["--clients", "0"], ["--http2"]):
            r = compare(*args, timeout=30)
            self.assertEqual(r.returncode, 2, (args, r.stderr))

    def test_help(self):
        r = compare("--help", timeout=30)
        self.assertEqual(r.returncode, 0)
        for opt in ("--quick", "--nginx-only", "--rates", "--calls", "--access-log",
                    "--server-cpu", "--tuned-nginx"):
            self.assertIn(opt, r.stdout)


class TransientBound(unittest.TestCase):
    """compare.transient_bound alone: the rate under which a run is too short for a queue."""

    def test_bound_follows_duration_and_timeout(self):
        sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))
        import compare as harness  # the module; compare() above runs it as a program
        self.assertAlmostEqual(harness.transient_bound(1800, 6, 2), 3000)  # 1.67 S
        self.assertAlmostEqual(harness.transient_bound(1800, 20, 2), 2160)  # 1.2 S
        self.assertAlmostEqual(harness.transient_bound(1800, 20, 5), 2700)  # 1.5 S
        self.assertIsNone(harness.transient_bound(None, 6, 2))


if __name__ == "__main__":
    unittest.main()
