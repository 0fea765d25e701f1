#!/usr/bin/env python3
"""Checks the merged reports of a `compare.py --clients N` run against their parts: replies,
errors and sessions of the merged report against the sum of the instances', and its latency
percentiles against those computed here from the union of the instances' raw histogram
buckets (the algorithm of loadgen/histogram.cpp). Prints one Markdown row per merged report.

Usage: scripts/bench/fleet_check.py RESULTS/loadgen
"""

import glob
import json
import math
import os
import sys

SUB_BUCKET_BITS, MIN_EXPONENT = 8, 9  # loadgen/histogram.hpp


def bucket_mid(index):
    e = (index >> SUB_BUCKET_BITS) + MIN_EXPONENT
    sub = index & ((1 << SUB_BUCKET_BITS) - 1)
    return (((1 << SUB_BUCKET_BITS) + sub) << (e - SUB_BUCKET_BITS)) + \
        (1 << (e - SUB_BUCKET_BITS)) // 2


def percentile_ns(hists, p):
    count = sum(h["count"] for h in hists)
    if not count:
        return 0
    lo = min(h["min"] for h in hists if h["count"])
    hi = max(h["max"] for h in hists)
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


def main(folder):
    print("| report | instances | replies: merged / sum | errors: merged / sum | "
          "p50 / p99 / p99.9 ms from schedule | percentiles equal to the raw merge |")
    print("|---|---|---|---|---|---|")
    ok = True
    for merged_path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        parts = sorted(glob.glob(merged_path + ".client*"))
        if not parts:
            continue
        with open(merged_path) as f:
            m = json.load(f)
        ps = [json.load(open(p)) for p in parts]
        replies = sum(p["replies"]["total"] for p in ps)
        errors = sum(p["errors"]["total"] for p in ps)
        hists = [p["raw"]["latency_from_schedule"] for p in ps]
        got = m["latency_ms"]["from_schedule"]
        same = all(abs(got[k] - percentile_ns(hists, q) / 1e6) < 1e-9
                   for k, q in (("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9),
                                ("max", 100)))
        exact = m["replies"]["total"] == replies and m["errors"]["total"] == errors
        ok = ok and same and exact
        print("| %s | %d | %d / %d | %d / %d | %.2f / %.2f / %.2f | %s |" % (
            os.path.basename(merged_path), len(ps), m["replies"]["total"], replies,
            m["errors"]["total"], errors, got["p50"], got["p99"], got["p99.9"],
            "yes" if same else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
