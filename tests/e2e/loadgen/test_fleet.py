"""weft-load as a fleet (--client I/N, --start-at) against the real weft: N = 1, 2, 4 local
instances offer together exactly the schedule one instance offers (the same sessions, requests
and calls, session starts per second within a stated tolerance), and `weft-load merge` makes
one exact report of theirs: counts add, and the percentiles are the ones computed here from the
union of the instances' raw histogram buckets. Reports of different tests are refused."""

import ctypes
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loadgen_harness import WEFT_LOAD, read_access_log  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import WeftServer  # noqa: E402

RATE = 250          # sessions per second, the whole test's
SESSIONS = 500      # two seconds of arrivals
# Session starts per second of the split test against one instance's: each instance starts its
# sessions on its own clock reading of the same schedule, so a session due near a second's
# boundary may be counted in the next one. Stated tolerance: 3% of a second's sessions.
PER_SECOND_TOLERANCE = math.ceil(0.03 * RATE)

# Histogram layout of loadgen/histogram.hpp, to recompute percentiles from raw buckets.
SUB_BUCKET_BITS = 8
MIN_EXPONENT = 9


def bucket_mid(index):
    e = (index >> SUB_BUCKET_BITS) + MIN_EXPONENT
    sub = index & ((1 << SUB_BUCKET_BITS) - 1)
    lowest = ((1 << SUB_BUCKET_BITS) + sub) << (e - SUB_BUCKET_BITS)
    return lowest + (1 << (e - SUB_BUCKET_BITS)) // 2


def percentile_ns(hists, p):
    """The percentile of the union of raw histograms `hists`, as histogram.cpp defines it."""
    count = sum(h["count"] for h in hists)
    lo = min(h["min"] for h in hists if h["count"])
    hi = max(h["max"] for h in hists)
    if p <= 0:
        return lo
    if p >= 100:
        return hi
    buckets = {}
    for h in hists:
        for index, n in h["buckets"]:
            buckets[index] = buckets.get(index, 0) + n
    rank = min(max(math.ceil(p / 100.0 * count), 1), count)
    seen = 0
    for index in sorted(buckets):
        seen += buckets[index]
        if seen >= rank:
            return min(max(bucket_mid(index), lo), hi)
    return hi


def clock_synchronised():
    """What adjtimex says: False when the kernel marks the clock unsynchronised."""
    buf = ctypes.create_string_buffer(512)
    state = ctypes.CDLL(None).adjtimex(buf)
    status = int.from_bytes(buf.raw[40:44], sys.byteorder, signed=True)
    return state not in (-1, 5) and not status & 0x40  # TIME_ERROR, STA_UNSYNC


class Fleet(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="weft-load-fleet-")
        cls.root = os.path.join(cls.tmp, "www")
        os.makedirs(cls.root)
        with open(os.path.join(cls.root, "f1k"), "wb") as f:
            f.write(b"f" * 1000)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self):
        log = os.path.join(tempfile.mkdtemp(dir=self.tmp), "access.log")
        srv = WeftServer(self.root, "io_uring",
                         settings={"log": {"access_log": log, "level": "warn"}})
        srv.start()
        self.addCleanup(srv.cleanup)
        return srv, log

    def fleet(self, srv, n, seed=1, extra=()):
        """Runs n instances of one test together; returns their JSON report paths."""
        start = time.time() + 1.5  # time for every instance to start and set up
        procs, paths = [], []
        for i in range(n):
            path = os.path.join(self.tmp, "n%d-i%d-s%d.json" % (n, i, seed))
            argv = [WEFT_LOAD, "--server", "127.0.0.1", "--port", str(srv.port), "--uri",
                    "/f1k", "--rate", str(RATE), "--num-conns", str(SESSIONS), "--num-calls",
                    "1..3", "--seed", str(seed), "--timeout", "5", "--client", "%d/%d" % (i, n),
                    "--start-at", "%.3f" % start, "--no-clock-check", "--quiet", "--json",
                    path] + list(extra)
            procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
            paths.append(path)
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
        return paths

    def merge(self, paths, expect=0):
        out = os.path.join(self.tmp, "merged.json")
        if os.path.exists(out):
            os.unlink(out)
        proc = subprocess.run([WEFT_LOAD, "merge", "--json", out] + paths, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(proc.returncode, expect, proc.stderr)
        if expect:
            return proc
        with open(out) as f:
            return json.load(f), proc.stdout

    def test_instances_offer_one_schedule_and_merge_exactly(self):
        srv, log = self.serve()
        reports = {}
        for n in (1, 2, 4):
            paths = self.fleet(srv, n)
            parts = [json.load(open(p)) for p in paths]
            for part in parts:
                self.assertEqual(part["errors"]["total"], 0, part["errors"])
            merged, text = self.merge(paths)
            reports[n] = merged
            self.assertEqual(merged["clients"], {"of": n, "indexes": list(range(n))})
            # Counts add exactly.
            for key in ("total", "bytes"):
                self.assertEqual(merged["replies"][key] if key == "total" else
                                 merged["replies"]["bytes"]["content"],
                                 sum(p["replies"][key] if key == "total" else
                                     p["replies"]["bytes"]["content"] for p in parts))
            self.assertEqual(merged["sessions"]["started"],
                             sum(p["sessions"]["started"] for p in parts))
            # Percentiles are those of the union of the raw buckets.
            for name, raw in (("from_schedule", "latency_from_schedule"),
                              ("from_send", "latency_from_send")):
                hists = [p["raw"][raw] for p in parts]
                got = merged["latency_ms"][name]
                self.assertEqual(got["count"], sum(h["count"] for h in hists))
                for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9),
                               ("max", 100)):
                    self.assertAlmostEqual(got[key], percentile_ns(hists, p) / 1e6, places=9,
                                           msg="%s %s n=%d" % (name, key, n))
            if n > 1:
                self.assertIn("Clients: %d of %d instances" % (n, n), text)
        self.assertEqual(srv.stop(), 0)
        # Every fleet offered the one-instance schedule: the same sessions and requests...
        one = reports[1]
        for n in (2, 4):
            self.assertEqual(reports[n]["sessions"]["started"], SESSIONS)
            self.assertEqual(reports[n]["requests"]["total"], one["requests"]["total"])
            # ... and the same session starts per second, within the stated tolerance.
            a = [s["sessions"] for s in one["timeline"]]
            b = [s["sessions"] for s in reports[n]["timeline"]]
            width = max(len(a), len(b))
            a += [0] * (width - len(a))
            b += [0] * (width - len(b))
            for second, (x, y) in enumerate(zip(a, b)):
                self.assertLessEqual(abs(x - y), PER_SECOND_TOLERANCE,
                                     "second %d: %d against %d (n=%d)" % (second, y, x, n))
        requests, _ = read_access_log(log)
        self.assertEqual(requests, 3 * one["requests"]["total"])

    def test_reports_of_different_tests_are_refused(self):
        srv, _ = self.serve()
        a = self.fleet(srv, 2, seed=1)
        b = self.fleet(srv, 2, seed=2)
        proc = self.merge([a[0], b[1]], expect=1)
        self.assertIn("another test", proc.stderr)
        proc = self.merge([a[0], a[0]], expect=1)
        self.assertIn("instance 0 of 2 is already merged", proc.stderr)
        # Half a test merges, with a warning.
        proc = subprocess.run([WEFT_LOAD, "merge", a[1]], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("1 of the test's 2 instances merged", proc.stderr)

    def test_start_at_checks_the_clock(self):
        srv, _ = self.serve()
        argv = [WEFT_LOAD, "--server", "127.0.0.1", "--port", str(srv.port), "--rate", "10",
                "--num-conns", "1", "--start-at", "%.3f" % (time.time() + 0.5), "--quiet"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if clock_synchronised():
            self.assertEqual(proc.returncode, 0, proc.stderr)
        else:
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("not synchronised", proc.stderr)
        proc = subprocess.run(argv[:-3] + ["--start-at", "2001-01-01T00:00:00Z",
                                           "--no-clock-check", "--quiet"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("passed", proc.stderr)


if __name__ == "__main__":
    unittest.main()
