#!/usr/bin/env python3
"""Soak test: weft under mixed, bounded load for MINUTES, sampled every second; fails unless
its memory, descriptors and threads stay flat and no valid request failed.

Usage: scripts/soak.py [--minutes M] [--weft BIN] [--report FILE] [--csv FILE] [--backend B]
(scripts/soak.sh builds the release preset first.)

The load, every part bounded in rate or concurrency and all of it in time:
  - wrk, 4 keep-alive connections, cycling over the set's small files (as fast as it goes);
  - new connections, about 50 a second, 1 to 3 calls each, files drawn by Zipf popularity,
    each status and length checked;
  - a Python client: keep-alive Range requests on random files (each 206 checked: status,
    Content-Range and length), with a request for a missing file (404) every tenth;
  - slow clients: a few connections at a time that read a large file at about 64 KiB/s, and
    one that trickles a request head until the server answers 408.
The server: weft on a generated set (www-fixtures/generate.py --files 500 --total-bytes 20M),
two processors, timeouts.header 3 s so the trickling head ends in the run.

Sampled each second into the CSV: the server's RSS (KiB), open descriptors, threads, and
io_uring's kernel workers (iou-wrk-*, which come and go with the I/O: checked against their
configured bound, not for flatness). After a
warm-up (the first fifth, at least 10 s) the samples are cut in thirds; a metric is flat when
the last third's maximum is at most the first third's maximum x 1.1 plus a small constant
(RSS 4 MiB, fds 48, threads 0). Unexpected errors: wrk's non-2xx and socket errors, a wrong
answer on a new connection, a wrong Range or 404 answer, a slow client's early close, weft
not exiting 0 on SIGTERM, and any [error] or [critical] line in weft's log. The report
(Markdown) says all of this with numbers; the exit status is 0 only when every metric is flat
and no unexpected error was seen.
"""

import argparse
import http.client
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLACK = {"rss_kib": 4096, "fds": 48, "threads": 0}
IO_WORKER_BOUND = 2 * (4 + 4)  # processors x (iowq_bounded + iowq_unbounded), the defaults


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_manifest(root):
    files = []
    with open(os.path.join(root, "MANIFEST")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            path, size, _ = line.rstrip("\n").split("\t")
            files.append(("/" + path, int(size)))
    return files


def sample(pid):
    """Returns (rss_kib, fds, threads, io_workers) of the process: io_workers are io_uring's
    kernel workers (iou-wrk-*), which come and go with the I/O; threads are the rest."""
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    threads = workers = 0
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, task)) as f:
                name = f.read()
        except OSError:
            continue  # the worker just exited
        if name.startswith("iou-"):
            workers += 1
        else:
            threads += 1
    return rss, len(os.listdir("/proc/%d/fd" % pid)), threads, workers


class Errors:
    """Unexpected errors by source, shared by the load threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.examples = []

    def add(self, source, what):
        with self.lock:
            self.counts[source] = self.counts.get(source, 0) + 1
            if len(self.examples) < 20:
                self.examples.append("%s: %s" % (source, what))

    def total(self):
        return sum(self.counts.values())


def range_client(port, files, stop, errors, stats):
    """Keep-alive Range requests on random files, a 404 every tenth; checks every answer."""
    rng = random.Random(7)
    conn = None
    n = 0
    while not stop.is_set():
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        n += 1
        try:
            if n % 10 == 0:
                conn.request("GET", "/no-such-file-%d" % n)
                r = conn.getresponse()
                r.read()
                if r.status != 404:
                    errors.add("404 client", "missing file answered %d" % r.status)
                stats["404"] = stats.get("404", 0) + 1
            else:
                path, size = rng.choice(files)
                a = rng.randrange(size)
                b = min(size - 1, a + rng.randrange(1, 64 * 1024))
                conn.request("GET", path, headers={"Range": "bytes=%d-%d" % (a, b)})
                r = conn.getresponse()
                body = r.read()
                want = "bytes %d-%d/%d" % (a, b, size)
                if (r.status, r.getheader("Content-Range"), len(body)) != (206, want, b - a + 1):
                    errors.add("range client", "%s %s: %d %s %d bytes" % (
                        path, want, r.status, r.getheader("Content-Range"), len(body)))
                stats["range"] = stats.get("range", 0) + 1
        except (OSError, http.client.HTTPException) as e:
            errors.add("range client", repr(e))
            conn.close()
            conn = None
        time.sleep(0.01)
    if conn:
        conn.close()


def slow_reader(port, path, size, stop, errors, stats):
    """Reads `path` at about 64 KiB/s for up to 5 s, then closes; checks the head."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        s.sendall(("GET %s HTTP/1.1\r\nHost: soak\r\n\r\n" % path).encode())
        got = b""
        t_end = time.monotonic() + 5
        while time.monotonic() < t_end and not stop.is_set():
            b = s.recv(8192)
            if not b:
                errors.add("slow reader", "closed after %d bytes of %s" % (len(got), path))
                return
            if not got and not b.startswith(b"HTTP/1.1 200 OK"):
                errors.add("slow reader", "answer %r" % b[:40])
                return
            got += b
            if len(got) >= size:
                break
            time.sleep(0.125)
        stats["slow"] = stats.get("slow", 0) + 1
    except OSError as e:
        errors.add("slow reader", repr(e))
    finally:
        s.close()


def slow_clients(port, big, stop, errors, stats):
    """Three slow readers at a time, and a head that trickles until the server gives 408."""
    rng = random.Random(11)
    while not stop.is_set():
        readers = [threading.Thread(target=slow_reader, args=(
            port, *rng.choice(big), stop, errors, stats)) for _ in range(3)]
        for t in readers:
            t.start()
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET / HTTP/1.1\r\n")
            answer = b""
            t_end = time.monotonic() + 8
            s.settimeout(0.5)
            while time.monotonic() < t_end and not stop.is_set():
                try:
                    answer = s.recv(4096)
                    break
                except socket.timeout:
                    s.sendall(b"X-Slow: 1\r\n")
            s.close()
            if answer and not answer.startswith(b"HTTP/1.1 408"):
                errors.add("trickling head", "answer %r" % answer[:40])
            elif answer:
                stats["408"] = stats.get("408", 0) + 1
        except OSError as e:
            errors.add("trickling head", repr(e))
        for t in readers:
            t.join()


def run_wrk(port, small, seconds, out):
    lua = os.path.join(out, "paths.lua")
    with open(lua, "w") as f:
        f.write("local paths = {%s}\nlocal i = 0\n" % ", ".join('"%s"' % p for p, _ in small))
        f.write("request = function()\n  i = i %% %d + 1\n"
                "  return wrk.format(\"GET\", paths[i])\nend\n" % len(small))
    return subprocess.Popen(["wrk", "-t1", "-c4", "-d%ds" % seconds, "--timeout", "5s", "-s", lua,
                             "http://127.0.0.1:%d/" % port], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wrk_result(out):
    requests = errors = 0
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"(\d+) requests in", line)
        if m:
            requests = int(m.group(1))
        elif line.startswith("Non-2xx or 3xx responses:"):
            errors += int(line.split(":")[1])
        elif line.startswith("Socket errors:"):
            errors += sum(int(x.split()[-1]) for x in line.split(":", 1)[1].split(","))
    return requests, errors


def new_connections(port, files, stop, errors, stats):
    """About 50 new connections a second, 1 to 3 keep-alive calls each, files drawn by Zipf
    popularity (weight 1/rank, the manifest's order); checks every status and length."""
    rng = random.Random(5)
    weights = [1 / (i + 1) for i in range(len(files))]
    while not stop.is_set():
        t = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            for path, size in rng.choices(files, weights, k=rng.randint(1, 3)):
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
                if (r.status, len(body)) != (200, size):
                    errors.add("new connections", "%s: %d, %d bytes" % (path, r.status,
                                                                        len(body)))
                stats["new"] = stats.get("new", 0) + 1
            c.close()
        except (OSError, http.client.HTTPException) as e:
            errors.add("new connections", repr(e))
        time.sleep(max(0, 0.02 - (time.monotonic() - t)))


def flat(values, slack):
    """Returns (flat, first-third max, last-third max) of the samples after warm-up."""
    third = max(1, len(values) // 3)
    first, last = max(values[:third]), max(values[-third:])
    return last <= first * 1.1 + slack, first, last


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--weft", default=os.path.join(ROOT, "build/release/server/weft"))
    ap.add_argument("--report", help="default results/soak-<timestamp>.md")
    ap.add_argument("--csv", help="default: next to the report, .csv")
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report = args.report or os.path.join(ROOT, "results", "soak-%s.md" % stamp)
    samples_csv = args.csv or os.path.splitext(report)[0] + ".csv"
    os.makedirs(os.path.dirname(os.path.abspath(report)), exist_ok=True)
    seconds = max(20, int(args.minutes * 60))
    if not os.access(args.weft, os.X_OK):
        sys.exit("soak: %s is not built (scripts/soak.sh builds it)" % args.weft)
    if not shutil.which("wrk"):
        sys.exit("soak: wrk is not installed (scripts/setup.sh installs it)")

    tmp = tempfile.mkdtemp(prefix="weft-soak-")
    srv = None
    try:
        www = os.path.join(tmp, "www")
        subprocess.run([sys.executable, os.path.join(ROOT, "www-fixtures", "generate.py"),
                        "--files", "500", "--total-bytes", "20M", "--out", www], check=True,
                       stdout=subprocess.DEVNULL)
        files = read_manifest(www)
        small = [f for f in files if f[1] <= 16 * 1024][:200]
        big = sorted(files, key=lambda f: -f[1])[:10]
        port = free_port()
        log = os.path.join(tmp, "error.log")
        conf = os.path.join(tmp, "weft.toml")
        with open(conf, "w") as f:
            f.write('[server]\nlisten = ["127.0.0.1:%d"]\nroot = "%s"\nmime_types = "%s"\n'
                    '[runtime]\nprocessors = 2\n[io]\nbackend = "%s"\n'
                    '[timeouts]\nheader = "3s"\n[log]\nlevel = "warn"\nerror_log = "%s"\n'
                    % (port, www, os.path.join(ROOT, "conf", "mime.types"), args.backend, log))
        srv = subprocess.Popen([args.weft, "-c", conf], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if srv.poll() is not None or time.monotonic() > deadline:
                    sys.exit("soak: weft did not start")
                time.sleep(0.05)
        # Touch every file once, so the fd cache's filling is not counted as growth.
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for path, _ in files:
            c.request("GET", path)
            c.getresponse().read()
        c.close()

        errors, stats, stop = Errors(), {}, threading.Event()
        wrk = run_wrk(port, small, seconds, tmp)
        threads = [threading.Thread(target=f, args=(port, arg, stop, errors, stats))
                   for f, arg in ((range_client, files), (new_connections, files),
                                  (slow_clients, big))]
        for t in threads:
            t.start()
        rows = []
        t0 = time.monotonic()
        with open(samples_csv, "w") as f:
            f.write("t_s,rss_kib,fds,threads,io_workers\n")
            while time.monotonic() - t0 < seconds:
                time.sleep(1 - (time.monotonic() - t0) % 1)
                if srv.poll() is not None:
                    errors.add("weft", "exited with %d" % srv.returncode)
                    break
                t = round(time.monotonic() - t0)
                rows.append((t,) + sample(srv.pid))
                f.write("%d,%d,%d,%d,%d\n" % rows[-1])
                f.flush()
        stop.set()
        for t in threads:
            t.join()
        wrk_out = wrk.communicate(timeout=60)[0]
        wrk_requests, wrk_errors = wrk_result(wrk_out)
        if wrk_errors:
            errors.add("wrk", "%d non-2xx or socket errors" % wrk_errors)
        srv.send_signal(signal.SIGTERM)
        exit_status = srv.wait(30)
        srv = None
        if exit_status != 0:
            errors.add("weft", "exit status %d after SIGTERM" % exit_status)
        with open(log, errors="backslashreplace") as f:
            for line in f:
                if "[error]" in line or "[critical]" in line:
                    errors.add("weft log", line.strip())

        warm = max(10, len(rows) // 5)
        after = rows[warm:]
        verdicts = {}
        for i, name in enumerate(("rss_kib", "fds", "threads"), start=1):
            values = [r[i] for r in after]
            ok, first, last = flat(values, SLACK[name]) if values else (False, 0, 0)
            verdicts[name] = (ok, min(values or [0]), max(values or [0]), first, last)
        max_workers = max((r[4] for r in rows), default=0)
        if max_workers > IO_WORKER_BOUND:
            errors.add("io_uring workers", "%d > %d" % (max_workers, IO_WORKER_BOUND))
        passed = all(v[0] for v in verdicts.values()) and errors.total() == 0

        with open(report, "w") as f:
            f.write("# weft soak, %s\n\n" % time.strftime("%Y-%m-%d %H:%M:%S"))
            f.write("**%s**: %d s of load, %d samples (warm-up: the first %d s left out).\n\n"
                    % ("PASS" if passed else "FAIL", seconds, len(rows), warm))
            f.write("Server: `%s`, backend %s, 2 processors, 500 files / 20 MB.\n\n"
                    % (args.weft, args.backend))
            f.write("| metric | min | max | first-third max | last-third max | flat |\n")
            f.write("| --- | --- | --- | --- | --- | --- |\n")
            for name, (ok, lo, hi, first, last) in verdicts.items():
                f.write("| %s | %d | %d | %d | %d | %s (limit %.0f) |\n"
                        % (name, lo, hi, first, last, "yes" if ok else "NO",
                           first * 1.1 + SLACK[name]))
            f.write("\nio_uring kernel workers: at most %d at a time (bound %d: 2 processors x "
                    "(io.iowq_bounded 4 + io.iowq_unbounded 4)).\n" % (max_workers,
                                                                      IO_WORKER_BOUND))
            f.write("\nLoad served: wrk %d keep-alive requests, %d requests on new connections, "
                    "%d range requests, %d 404s, %d slow readers, %d trickling heads answered "
                    "408.\n\n" % (wrk_requests, stats.get("new", 0), stats.get("range", 0),
                                   stats.get("404", 0), stats.get("slow", 0),
                                   stats.get("408", 0)))
            f.write("Unexpected errors: %d%s\n" % (errors.total(), "".join(
                "\n- %s" % e for e in errors.examples)))
            f.write("\nSamples (t, RSS KiB, fds, threads, io_uring workers): `%s`\n"
                    % samples_csv)
        with open(report) as f:
            print(f.read())
        return 0 if passed else 1
    finally:
        if srv is not None:
            srv.kill()
            srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
