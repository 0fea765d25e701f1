#!/usr/bin/env python3
"""weft-load benchmarks: accuracy against httperf, and capacity against one NGINX core.

Both run NGINX (one worker, access log off) pinned to core 0 and the client pinned to core 1,
on loopback, and print Markdown tables for docs/benchmarks.md.

  accuracy   the same workload at the same rate from httperf and from weft-load, alternating,
             REPEAT times each: reply rate, replies, errors, and the ratios weft-load/httperf.
  errors     both tools on failing workloads (closed port, a server that never answers, a
             missing file): the error counts side by side.
  capacity   weft-load (--threads 1) at increasing rates: reply rate, NGINX's CPU use (from
             /proc), weft-load's CPU use (from its report), CPU-seconds per reply of each, and
             their ratio: how many NGINX cores one weft-load core could drive.

Usage: bench/loadgen_bench.py accuracy|errors|capacity [--weft-load BIN] [--repeat N] [--rates LIST]
                              [--calls N] [--duration S] [--nice N]
Every run is bounded (--num-conns or --duration) and targets 127.0.0.1 only.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

NGINX = "/usr/sbin/nginx"
NICE = []  # ["nice", "-n", "-20"] with --nice: server and client outweigh other work on the VM
HTTPERF = "/usr/bin/httperf"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    """NGINX, one worker pinned to core 0, serving `root`, access log off."""

    def __init__(self, root):
        self.dir = tempfile.mkdtemp(prefix="weft-load-bench-nginx-")
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        conf = """
daemon off;
worker_processes 1;
worker_rlimit_nofile 20000;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 16384; }}
http {{
  access_log off;
  keepalive_requests 100000;
  client_body_temp_path {d}/cb; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;
  uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
  server {{ listen 127.0.0.1:{port} backlog=4096 reuseport; root {root}; }}
}}
""".format(d=self.dir, port=self.port, root=root)
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(conf)
        self.proc = subprocess.Popen(
            NICE + ["taskset", "-c", "0", NGINX, "-p", self.dir, "-e", self.dir + "/error.log", "-c",
             self.dir + "/nginx.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        self.worker = self._worker_pid()

    def _worker_pid(self):
        for _ in range(50):
            try:
                with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                    kids = f.read().split()
                if kids:
                    return int(kids[0])
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("no NGINX worker")

    def cpu_s(self):
        """Returns the worker's user+system CPU seconds so far."""
        with open("/proc/%d/stat" % self.worker) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def httperf_figures(text):
    """Returns the figures both tools print in httperf's layout."""
    def grab(rx):
        m = re.search(rx, text, re.M)
        return [float(x) for x in m.groups()] if m else None
    total = grab(r"^Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s")
    rate = grab(r"^Reply rate \[replies/s\]: min ([\d.]+) avg ([\d.]+) max ([\d.]+) stddev "
                r"([\d.]+) \((\d+) samples\)")
    errors = grab(r"^Errors: total (\d+) client-timo (\d+) socket-timo (\d+) connrefused (\d+) "
                  r"connreset (\d+)")
    errors2 = grab(r"^Errors: fd-unavail (\d+) addrunavail (\d+) ftab-full (\d+) other (\d+)")
    cpu = grab(r"^CPU time \[s\]: user ([\d.]+) system ([\d.]+)")
    status = grab(r"^Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)")
    return {
        "connections": total[0], "requests": total[1], "replies": total[2],
        "duration_s": total[3], "reply_rate_avg": rate[1], "reply_rate_samples": rate[4],
        "replies_per_s": total[2] / total[3] if total[3] else 0.0,
        "errors": errors[0], "error_classes": errors[1:] + errors2, "cpu_s": cpu[0] + cpu[1],
        "status_2xx": status[1], "status_4xx": status[3],
    }


def wait_for_conntrack(connections):
    """Waits until netfilter's connection table has room for `connections` more.

    Where nf_conntrack is loaded (podman loads it on the VMs), every connection keeps an
    entry for 120 s after it closed (nf_conntrack_tcp_timeout_time_wait); a full table drops
    new SYNs, which shows up as client-timo and stalls that are neither tool's doing."""
    try:
        with open("/proc/sys/net/netfilter/nf_conntrack_max") as f:
            limit = int(f.read())
    except OSError:
        return
    while True:
        with open("/proc/sys/net/netfilter/nf_conntrack_count") as f:
            count = int(f.read())
        if count + connections < 0.5 * limit:  # leave room for everyone else
            return
        print("waiting for conntrack room: %d + %d of %d" % (count, connections, limit),
              file=sys.stderr, flush=True)
        time.sleep(10)


def run_client(argv, timeout):
    proc = subprocess.run(NICE + ["taskset", "-c", "1"] + argv, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (argv[0], proc.stdout, proc.stderr))
    return proc.stdout


def accuracy(args, root):
    common = ["--server", "127.0.0.1", "--uri", "/f100", "--rate", str(args.rate),
              "--num-conns", str(args.conns), "--num-calls", str(args.calls)]
    rows = {"httperf": [], "weft-load": []}
    for i in range(args.repeat):
        for tool in ("httperf", "weft-load"):
            wait_for_conntrack(args.conns)
            nginx = Nginx(root)
            try:
                port = ["--port", str(nginx.port)]
                if tool == "httperf":
                    argv = [HTTPERF, "--hog"] + common + port
                else:
                    argv = [args.weft_load, "--hog"] + common + port
                out = run_client(argv, timeout=args.conns / args.rate + 60)
                f = httperf_figures(out)
                rows[tool].append(f)
                print("run %d %-9s reply rate avg %8.1f  replies %6d  %.3f s  errors %d  "
                      "client cpu %.2f s" % (i + 1, tool, f["reply_rate_avg"], f["replies"],
                                             f["duration_s"], f["errors"], f["cpu_s"]),
                      file=sys.stderr, flush=True)
            finally:
                nginx.stop()
    med = {t: {k: statistics.median(r[k] for r in rs) for k in
               ("reply_rate_avg", "replies_per_s", "replies", "errors", "duration_s", "cpu_s")}
           for t, rs in rows.items()}
    print("| figure (median of %d runs) | httperf | weft-load | weft-load / httperf |"
          % args.repeat)
    print("| --- | ---: | ---: | ---: |")
    for k, label in (("reply_rate_avg", "Reply rate avg [replies/s]"),
                     ("replies_per_s", "replies / test-duration [1/s]"),
                     ("replies", "replies"), ("errors", "Errors: total"),
                     ("duration_s", "test-duration [s]"), ("cpu_s", "client CPU [s]")):
        a, b = med["httperf"][k], med["weft-load"][k]
        ratio = "%.4f" % (b / a) if a else ("equal" if a == b else "n/a")
        print("| %s | %.1f | %.1f | %s |" % (label, a, b, ratio))
    print("\nper run (httperf; weft-load) reply rate avg: %s; %s" % (
        ", ".join("%.1f" % r["reply_rate_avg"] for r in rows["httperf"]),
        ", ".join("%.1f" % r["reply_rate_avg"] for r in rows["weft-load"])))


def stalling_server():
    """Returns (listening socket, port): accepts (kernel backlog), never reads or answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4096)
    return s, s.getsockname()[1]


def errors(args, root):
    """Error counts of both tools on the same failing workloads (small and quick)."""
    nginx = Nginx(root)
    stall, stall_port = stalling_server()
    closed = free_port()
    cases = [("closed port (connrefused)", closed, "/f100", []),
             ("server never answers, --timeout 1 (client-timo)", stall_port, "/f100",
              ["--timeout", "1"]),
             ("missing file (Reply status 4xx)", nginx.port, "/missing", [])]
    print("| case | tool | replies | 4xx | Errors: total | connrefused | client-timo | "
          "connreset | fd-unavail |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    try:
        for label, port, uri, extra in cases:
            for tool in ("httperf", "weft-load"):
                binary = [HTTPERF] if tool == "httperf" else [args.weft_load]
                argv = binary + ["--hog", "--server", "127.0.0.1", "--port", str(port), "--uri",
                                 uri, "--rate", "100", "--num-conns", "200", "--num-calls",
                                 "2"] + extra
                f = httperf_figures(run_client(argv, timeout=60))
                e = f["error_classes"]
                print("| %s | %s | %d | %d | %d | %d | %d | %d | %d |" % (
                    label, tool, f["replies"], f["status_4xx"], f["errors"], e[2], e[0], e[3],
                    e[4]), flush=True)
    finally:
        stall.close()
        nginx.stop()


def capacity(args, root):
    rates = [float(r) for r in args.rates.split(",")]
    print("| offered [sess/s] | reply rate [1/s] | NGINX CPU [%] | weft-load CPU [%] | "
          "NGINX CPU-µs/reply | weft-load CPU-µs/reply | NGINX ÷ weft-load | lag max [ms] | "
          "errors |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for rate in rates:
        samples = []
        for _ in range(args.repeat):
            wait_for_conntrack(int(rate * args.duration))
            nginx = Nginx(root)
            tmp = tempfile.mkdtemp(prefix="weft-load-bench-")
            try:
                json_path = os.path.join(tmp, "r.json")
                argv = [args.weft_load, "--server", "127.0.0.1", "--port", str(nginx.port),
                        "--uri", "/f100", "--rate", str(rate), "--duration",
                        str(args.duration), "--num-calls", str(args.calls), "--timeout", "5",
                        "--threads", "1", "--quiet", "--json", json_path]
                n0 = nginx.cpu_s()
                run_client(argv, timeout=args.duration + 60)
                n1 = nginx.cpu_s()
                with open(json_path) as f:
                    j = json.load(f)
            finally:
                nginx.stop()
                shutil.rmtree(tmp, ignore_errors=True)
            d = j["test_duration_s"]
            replies = j["replies"]["total"]
            wl = j["cpu"]["user_s"] + j["cpu"]["system_s"]
            samples.append({
                "reply_rate": replies / d, "nginx_pct": 100 * (n1 - n0) / d,
                "wl_pct": 100 * wl / d, "nginx_us": 1e6 * (n1 - n0) / replies,
                "wl_us": 1e6 * wl / replies, "lag": j["schedule_lag_ms"]["max"],
                "errors": j["errors"]["all_classes_total"]})
        m = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
        print("| %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f | %.1f | %d |" % (
            rate, m["reply_rate"], m["nginx_pct"], m["wl_pct"], m["nginx_us"], m["wl_us"],
            m["nginx_us"] / m["wl_us"], m["lag"], m["errors"]), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["accuracy", "errors", "capacity"])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--weft-load", default=os.path.join(here, "..", "build", "release", "loadgen",
                                                       "weft-load"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rate", type=float, default=500)
    p.add_argument("--conns", type=int, default=5000)
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--rates", default="2000,4000,6000,8000,10000")
    p.add_argument("--duration", type=float, default=5)
    p.add_argument("--nice", type=int, help="run NGINX and the client at this nice level")
    args = p.parse_args()
    if args.nice is not None:
        # With autogroup scheduling (kernel.sched_autogroup_enabled = 1, as on the VMs) nice
        # only ranks processes within their session's group: the benchmark takes a session of
        # its own and gives the group, and each process, the nice level.
        try:
            os.setsid()
        except OSError:
            pass
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(args.nice))
        except OSError as e:
            print("cannot set the autogroup's nice level: %s" % e, file=sys.stderr)
        NICE.extend(["nice", "-n", str(args.nice)])
    root = tempfile.mkdtemp(prefix="weft-load-bench-www-")
    os.chmod(root, 0o755)
    with open(os.path.join(root, "f100"), "wb") as f:
        f.write(b"x" * 100)
    os.chmod(os.path.join(root, "f100"), 0o644)
    try:
        {"accuracy": accuracy, "errors": errors, "capacity": capacity}[args.what](args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
