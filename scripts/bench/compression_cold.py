#!/usr/bin/env python3
"""A cold start of compression on the fly (issue 45): 50 distinct text files, nothing made yet,
asked for at 2,000 requests/s by browser-like clients (`Accept-Encoding: gzip, deflate, br,
zstd`), while weft's workers make every coding of every file. The question: does compressing
stall the processor that serves the requests? The workers run off the processors (nice 10),
and here, the harder case, on the same core as the one processor (taskset for the process).

The load is weft-load, open loop: --rate sessions/s of --num-calls keep-alive calls each, the
file drawn uniformly (--zipf 0) per call, every request with the browser's Accept-Encoding
(--add-header). A stall shows in its latencies: from the schedule (a session's first call)
and from the send (every call); its lag says whether the client kept to the schedule. Status
and length errors are its error classes. Alongside, a checker (this script, one connection,
--check-rate requests/s) decodes every body it gets and compares it with the file.

Phases, each on a freshly started weft, alternated over --rounds:
  off   compression.enabled = false: the same requests, identity; the floor of the latencies
  cold  compression on, nothing made: the first --duration seconds after start
  warm  the same server after every coding of every file was made: served from memory

--perf-sched adds, per phase, weft's threads' longest scheduling delay and uninterruptible
sleep (perf sched record, as root); --perf-record DIR keeps a profile of weft per phase.

Usage: scripts/bench/compression_cold.py [--rate 200 --num-calls 10] [--duration 10]
                                         [--rounds 3] [--perf-sched] [--perf-record DIR]
"""

import argparse
import gzip
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import brotli
import zstandard

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
ACCEPT = "gzip, deflate, br, zstd"
PORT, METRICS_PORT = 18491, 18492
DECODE = {"gzip": gzip.decompress, "br": brotli.decompress,
          "zstd": lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b),
          None: lambda b: b}
FILES = {}  # url path: bytes


def make_site(root, count):
    """Writes `count` distinct generated scripts and style sheets (8-200 KB) with an old mtime;
    returns {url path: bytes}."""
    rnd = random.Random(45)
    words = ["value", "index", "result", "element", "options", "callback", "state", "render",
             "layout", "cache", "stream", "buffer", "handler", "request", "event", "target"]
    files = {}
    for i in range(count):
        size = int(8000 * (25 ** rnd.random()))  # 8 KB .. 200 KB, log-uniform
        out, n = [], 0
        while n < size:
            a, b = rnd.choice(words), rnd.choice(words)
            line = ("export function %s_%d(%s, %s) { if (%s > %d) { return %s.map((x) => x * %d);"
                    " } return [%s, %d]; }\n" % (a, rnd.randrange(10**6), a, b, a,
                                                 rnd.randrange(1000), b, rnd.randrange(100), b,
                                                 rnd.randrange(1000)))
            out.append(line)
            n += len(line)
        name = "/f%02d.js" % i
        files[name] = "".join(out).encode()
        path = os.path.join(root, name[1:])
        with open(path, "wb") as f:
            f.write(files[name])
        os.utime(path, (time.time() - 3600,) * 2)
    return files


def start_weft(work, root, compression):
    """Starts weft (one processor, the whole process on core --server-cpu); returns it once it
    answers."""
    weft = os.environ.get("WEFT", os.path.join(SOURCE, "build/release/server/weft"))
    conf = os.path.join(work, "weft.toml")
    with open(conf, "w") as f:
        f.write('[server]\nlisten = ["127.0.0.1:%d"]\nroot = "%s"\n[runtime]\nprocessors = 1\n'
                '[limits]\nmax_requests_per_connection = 1000000\n[log]\nlevel = "warn"\n'
                '[metrics]\nenabled = true\nlisten = "127.0.0.1:%d"\n[compression]\n'
                'enabled = %s\n%s\n' % (PORT, root, METRICS_PORT, "true" if compression else "false",
                                        ARGS.compression.replace(";", "\n")))
    proc = subprocess.Popen(["taskset", "-c", ARGS.server_cpu, weft, "-c", conf])
    for _ in range(200):
        try:
            http.client.HTTPConnection("127.0.0.1", PORT, timeout=1).connect()
            return proc
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("weft did not start")


def metrics():
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % METRICS_PORT).read().decode()
    return {l.split()[0]: float(l.split()[1]) for l in text.splitlines()
            if l.startswith("weft_") and " " in l and "{" not in l}


def check(files, rate, stop, out):
    """Until `stop` is set: GETs a random file `rate` times a second on one keep-alive
    connection, checks the status, length and decoded body; appends failures to `out` and
    returns the count checked through out[0]."""
    rnd = random.Random(9)
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    paths = sorted(files)
    while not stop.is_set():
        path = rnd.choice(paths)
        try:
            conn.request("GET", path, headers={"Accept-Encoding": ACCEPT})
            r = conn.getresponse()
            body = r.read()
            coding = r.getheader("Content-Encoding")
            if r.status != 200 or coding not in DECODE or DECODE[coding](body) != files[path]:
                out.append("%s: %d %s, body not the file" % (path, r.status, coding))
        except Exception as e:  # counted, not raised: the run goes on
            out.append("%s: %r" % (path, e))
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        out[0] += 1
        stop.wait(1 / rate)


def load(manifest, rate, duration):
    """Runs weft-load for `duration` s with a checker beside it; returns its JSON report and
    the checker's (count, failures)."""
    weft_load = os.environ.get("WEFT_LOAD", os.path.join(SOURCE, "build/release/loadgen/weft-load"))
    report = os.path.join(os.path.dirname(manifest), "report.json")
    stop, checked = threading.Event(), [0]
    t = threading.Thread(target=check, args=(FILES, ARGS.check_rate, stop, checked))
    t.start()
    try:
        subprocess.run(["taskset", "-c", ARGS.client_cpu, weft_load, "--server", "127.0.0.1",
                        "--port", str(PORT), "--zipf", "0", "--files", manifest, "--rate",
                        str(rate), "--num-calls", str(ARGS.num_calls), "--duration",
                        str(duration), "--timeout", "5", "--add-header",
                        "Accept-Encoding: " + ACCEPT, "--quiet", "--json", report],
                       check=True)
    finally:
        stop.set()
        t.join()
    with open(report) as f:
        return json.load(f), checked[0], checked[1:]


def sched_record(work, phase):
    """Starts `perf sched record` for the phase (--perf-sched); returns (process, file)."""
    if not ARGS.perf_sched:
        return None, None
    out = os.path.join(work, "sched-%s.data" % phase)
    proc = subprocess.Popen(["perf", "sched", "record", "-o", out, "--", "sleep",
                             str(ARGS.duration)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(0.3)  # perf's tracepoints are on before the load starts
    return proc, out


def sched_summary(record, pid):
    """The worst of weft's threads (its processor, its workers) in `record`: the longest wait
    runnable but not running (sch delay), the longest uninterruptible sleep (state D: a page
    fault's I/O, a kernel lock such as mmap_lock), the longest sleep (S: idle, or a futex) and
    the longest run, per thread name and tid."""
    proc, path = record
    if not proc:
        return ""
    proc.wait()
    text = subprocess.run(["perf", "sched", "timehist", "-i", path, "--state", "-p", str(pid)],
                          capture_output=True, text=True).stdout
    worst, last_state = {}, {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 7 or not f[1].startswith("["):
            continue
        task, wait, delay, run, state = f[2], float(f[3]), float(f[4]), float(f[5]), f[6]
        w = worst.setdefault(task, [0.0, 0.0, 0.0, 0.0])
        w[0] = max(w[0], delay)
        if last_state.get(task) == "D":
            w[1] = max(w[1], wait)
        elif last_state.get(task) == "S":
            w[2] = max(w[2], wait)
        w[3] = max(w[3], run)
        last_state[task] = state
    return "  sched: " + ", ".join(
        "%s delay %.2f D %.2f S %.2f run %.2f ms" % (t, *w) for t, w in sorted(worst.items()))


def report(name, rnd, res, extra=""):
    j, checked, failures = res
    sched, send = j["latency_ms"]["from_schedule"], j["latency_ms"]["from_send"]
    row = {"p99": max(sched["p99"], send["p99"]), "max": max(sched["max"], send["max"]),
           "errors": j["errors"]["total"] + len(failures), "replies": j["replies"]["total"]}
    print("round %d %-4s replies %6d (%5.0f/s)  errors %d  from schedule p50 %.2f p99 %.2f "
          "max %.2f ms  from send p99 %.2f max %.2f ms  checked %d, failed %d%s"
          % (rnd, name, j["replies"]["total"], j["replies"]["rate_per_s"]["avg"],
             j["errors"]["total"], sched["p50"], sched["p99"], sched["max"], send["p99"],
             send["max"], checked, len(failures), extra), flush=True)
    for e in failures[:5]:
        print("   ", e)
    return row


def wait_idle(limit_s=600):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        m = metrics()
        if m.get("weft_compressions_running") == 0 and m.get("weft_compressions_queued") == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("the workers never went idle")


def one_round(work, root, manifest, rnd):
    out = {}
    for phase in ("off", "cold"):
        proc = start_weft(work, root, phase == "cold")
        try:
            rec = sched_record(work, phase)
            prof = None
            if ARGS.perf_record:  # a profile of weft in each phase, kept in --perf-record DIR
                prof = subprocess.Popen(
                    ["perf", "record", "-F", "4000", "-g", "-p", str(proc.pid), "-o",
                     os.path.join(ARGS.perf_record, "%s-%d.data" % (phase, rnd)), "--", "sleep",
                     str(ARGS.duration)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            res = load(manifest, ARGS.rate, ARGS.duration)
            if prof:
                prof.wait()
            extra = sched_summary(rec, proc.pid)
            if phase == "cold":
                extra += "  codings made during it %d" % metrics().get("weft_compressions_total", 0)
            out[phase] = report(phase, rnd, res, extra)
            if phase == "cold":
                # Each request starts at most one coding: ask until every coding is made.
                for _ in range(4):
                    wait_idle()
                    load(manifest, 50, 1)
                wait_idle()
                rec = sched_record(work, "warm")
                res = load(manifest, ARGS.rate, ARGS.duration)
                out["warm"] = report("warm", rnd, res, sched_summary(rec, proc.pid))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
    return out


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=200, help="sessions per second")
    ap.add_argument("--num-calls", type=int, default=10, help="requests per session")
    ap.add_argument("--check-rate", type=float, default=50)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--perf-sched", action="store_true",
                    help="record the scheduler (perf sched) in each phase: weft's threads' "
                    "longest scheduling delay and uninterruptible sleep")
    ap.add_argument("--perf-record", metavar="DIR",
                    help="profile weft (perf record -g) in the off and cold phases into DIR")
    ap.add_argument("--compression", default="",
                    help="more [compression] keys for weft, ';' between them")
    ap.add_argument("--client-cpu", default="1")
    ARGS = ap.parse_args()
    # The checker (this script's thread) is a client: on the client's core, never weft's.
    os.sched_setaffinity(0, {int(c) for c in ARGS.client_cpu.split(",")})
    work = tempfile.mkdtemp(prefix="weft-compcold-")
    os.chmod(work, 0o755)
    try:
        root = os.path.join(work, "www")
        os.makedirs(root)
        FILES.update(make_site(root, ARGS.files))
        manifest = os.path.join(work, "MANIFEST")
        with open(manifest, "w") as f:
            f.write("# weft-fileset v1 preset=cold files=%d\n" % len(FILES))
            for rank, path in enumerate(sorted(FILES), 1):
                f.write("%s\t%d\t%d\n" % (path, len(FILES[path]), rank))
        print("%d files, %d bytes; %g sessions/s of %d calls for %g s per phase"
              % (len(FILES), sum(map(len, FILES.values())), ARGS.rate, ARGS.num_calls,
                 ARGS.duration))
        rows = [one_round(work, root, manifest, r + 1) for r in range(ARGS.rounds)]
        for phase in ("off", "cold", "warm"):
            xs = [r[phase] for r in rows]
            print("%-4s worst of rounds: latency p99 %.2f ms, max %.2f ms; errors %d"
                  % (phase, max(x["p99"] for x in xs), max(x["max"] for x in xs),
                     sum(x["errors"] for x in xs)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
