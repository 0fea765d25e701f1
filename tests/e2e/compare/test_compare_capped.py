"""scripts/compare.py --server-cpu end to end, briefly: weft and NGINX (and nginx-abort, as root)
capped by a cgroup over two short rates. Checks that the cap was applied (throttled periods rose),
that the rows carry the validity and throttling columns, and that the cgroups are removed and the
tuned sysctl is put back afterwards. No performance figure is asserted."""

import csv
import json
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
NGINX = "/usr/sbin/nginx"
CAP = "0.1"
# Two rates: one under a 10% core's saturation, one above it (throttled for certain).
RATES = "500:2000:1500"
SYSCTL = "/proc/sys/net/ipv4/tcp_abort_on_overflow"
NEW_COLUMNS = ("valid", "invalid_reason", "client_cpu_share", "late_share", "cpu_cap",
               "cap_periods", "throttled_periods", "throttled_ms")

sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))
import compare  # noqa: E402  (the harness's own cgroup code decides whether a cap can be made)


def compare_run(*args, timeout=100):
    """Runs compare.py with the built binaries; returns the CompletedProcess."""
    return subprocess.run([sys.executable, COMPARE, "--weft", WEFT, "--weft-load", WEFT_LOAD]
                          + list(args), capture_output=True, text=True, timeout=timeout)


def cgroup_unwritable():
    """Why no cpu cgroup can be made here, or None when one can (made and removed again)."""
    found, notes = compare.cpu_hierarchies()
    for version, mount in found:
        cap = compare.CpuCap(version, mount, "weft-compare-probe-%d" % os.getpid(), 0.5)
        try:
            cap.create()
        except OSError as e:
            notes.append("%s: %s" % (cap.path, e.strerror or e))
            continue
        cap.remove()
        return None
    return "; ".join(notes) or "no cgroup mounted"


def sysctl_writable():
    """Whether this process may set the sysctl that --tuned-nginx needs."""
    return os.access(SYSCTL, os.W_OK)


@unittest.skipUnless(os.access(WEFT, os.X_OK) and os.access(WEFT_LOAD, os.X_OK),
                     "WEFT_BINARY and WEFT_LOAD_BINARY must name the built binaries")
@unittest.skipUnless(os.access(NGINX, os.X_OK), "nginx is not installed")
class CompareCapped(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = cgroup_unwritable()
        if why:
            raise unittest.SkipTest("no writable cpu cgroup: %s" % why)
        cls.tuned = sysctl_writable()
        cls.sysctl_before = compare.read_text(SYSCTL).strip() if cls.tuned else None
        cls.tmp = tempfile.mkdtemp(prefix="weft-compare-capped-")
        os.chmod(cls.tmp, 0o755)  # NGINX's workers (nobody) must reach the files
        cls.out = os.path.join(cls.tmp, "out")
        cls.result = compare_run(
            "--servers", "weft,nginx", *(["--tuned-nginx"] if cls.tuned else []),
            "--server-cpu", CAP, "--rates", RATES, "--duration", "1", "--timeout", "1",
            "--settle", "0.2", "--fileset", os.path.join(cls.tmp, "small"), "--out", cls.out)
        cls.servers = ["weft", "nginx"] + (["nginx-abort"] if cls.tuned else [])
        cls.rows, cls.json = [], {}
        if cls.result.returncode == 0:
            with open(os.path.join(cls.out, "runs.csv")) as f:
                cls.rows = list(csv.DictReader(f))
            with open(os.path.join(cls.out, "runs.json")) as f:
                cls.json = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def describe(self):
        return "exit %d\nstdout:\n%s\nstderr:\n%s" % (
            self.result.returncode, self.result.stdout[-4000:], self.result.stderr[-4000:])

    def test_exits_zero_and_says_which_cap(self):
        self.assertEqual(self.result.returncode, 0, self.describe())
        self.assertIn("servers capped at %s core each" % CAP, self.result.stdout)
        cap = self.json["conditions"]["cpu_cap"]
        self.assertEqual(cap["fraction"], float(CAP))
        self.assertEqual(cap["period_us"], 10000)
        self.assertEqual(cap["quota_us"], 1000)
        self.assertEqual(sorted(cap["groups"]), sorted(self.servers))

    def test_rows_have_the_new_columns(self):
        self.assertEqual(self.result.returncode, 0, self.describe())
        self.assertTrue(self.rows)
        for col in NEW_COLUMNS:
            self.assertIn(col, self.rows[0], col)
        self.assertEqual(sorted({r["server"] for r in self.rows}), sorted(self.servers))
        for r in self.rows:
            self.assertIn(r["valid"], ("True", "False"), r)
            self.assertEqual(r["valid"] == "False", bool(r["invalid_reason"]), r)
            self.assertGreater(float(r["client_cpu_share"]), 0.0, r)
            self.assertEqual(float(r["cpu_cap"]), float(CAP), r)

    def test_throttled_periods_rose(self):
        self.assertEqual(self.result.returncode, 0, self.describe())
        for name in self.servers:
            mine = [r for r in self.rows if r["server"] == name]
            self.assertTrue(mine, name)
            for r in mine:
                self.assertGreater(int(r["cap_periods"]), 0, r)
                self.assertTrue(0 <= int(r["throttled_periods"]) <= int(r["cap_periods"]), r)
            top = max(mine, key=lambda r: float(r["offered_sessions_per_s"]))
            self.assertGreater(int(top["throttled_periods"]), 0, top)
            self.assertGreater(float(top["throttled_ms"]), 0.0, top)

    def test_cgroups_are_removed(self):
        self.assertEqual(self.result.returncode, 0, self.describe())
        for path in self.json["conditions"]["cpu_cap"]["groups"].values():
            self.assertFalse(os.path.exists(path), path)

    def test_sysctl_is_put_back(self):
        if not self.tuned:
            self.skipTest("%s is not writable: --tuned-nginx not run" % SYSCTL)
        self.assertEqual(self.result.returncode, 0, self.describe())
        self.assertEqual(compare.read_text(SYSCTL).strip(), self.sysctl_before)
        t = self.json["conditions"]["tuned_nginx"]
        self.assertEqual(t["previous"], self.sysctl_before)
        self.assertIn("nginx-abort", self.result.stdout)

    def test_bad_cap_exits_two(self):
        for cap in ("-0.5", "lots", "99"):
            r = compare_run("--server-cpu", cap, timeout=30)
            self.assertEqual(r.returncode, 2, (cap, r.stderr))
            self.assertIn("--server-cpu", r.stderr)


if __name__ == "__main__":
    unittest.main()
