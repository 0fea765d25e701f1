#!/usr/bin/env python3
"""weft against NGINX, H2O and lighttpd under httperf-style Zipf sessions: the one command.

    scripts/compare.py                  # the small set, all four servers, about 10 minutes
    scripts/compare.py --quick          # the harness end to end in well under 2 minutes
    scripts/compare.py --nginx-only --preset thesis --rates 500:4000:500

What one run does:
  1. Finds or builds weft and weft-load (build/release), and builds or finds the file set
     (www-fixtures/generate.py --preset P; a no-op when it is up to date).
  2. Starts every server once, each from its own folder under a temporary directory, with
     configurations made equivalent (see the *_config functions): the same root, weft's
     processors = NGINX's workers = H2O's threads (lighttpd is one process), sendfile, an open
     file cache sized alike, the same MIME types, listen backlog, connection and descriptor
     limits, and access logs on in all or off in all. All servers are pinned to the server
     cores, weft-load to the load cores (disjoint).
  3. Unless --rates is given, calibrates: a short doubling ramp per server finds roughly where
     each saturates; the sweep then runs from 0.3x to 2x the fastest server's saturation rate.
  4. Sweeps the offered rate. At each rate every server gets one run, in an order rotated from
     one rate to the next. A run is weft-load, open loop: fresh connections (sessions) at the
     rate for --duration seconds, each session 1..N keep-alive calls (uniform) for files drawn
     Zipf(S) from the manifest, then close. Every server sees the same sessions (same seed).
     Around each run the server's CPU time (utime+stime of all its processes, from /proc) is
     read. A server that died is restarted (and the row says so).
  5. Adds one round at 1.5x NGINX's saturation rate (unless the sweep already has that rate),
     for the targets.
  6. Writes OUT/runs.csv, OUT/runs.json (rows, calibration, summary, conditions), OUT/summary.md,
     plots (throughput, error rate and p99 latency vs offered rate; PNG and SVG) and prints
     the table with weft/peer ratios.

Definitions (also in docs/benchmarks.md):
  - reply rate (throughput): successful (2xx) replies per second while the load is offered,
    the mean of weft-load's per-second timeline over the scheduling window (first second left
    out when the run is long enough), like httperf's reply-rate samples.
  - error rate: (httperf's error total + HTTP 4xx/5xx + bad lengths) / sessions started; one
    error ends a session, so it is the share of sessions that failed.
  - saturation: the highest reply rate a server reached in the sweep, at the offered rate
    where it reached it.
  - server CPU per reply: CPU-seconds of the server's processes over the run / replies.
No figure is judged here: the targets are reported, never asserted.
"""

import argparse
import csv
import datetime
import http.client
import json
import math
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL_SERVERS = ("weft", "nginx", "h2o", "lighttpd")
PEER_BINARIES = {"nginx": "/usr/sbin/nginx", "h2o": "/usr/bin/h2o", "lighttpd": "/usr/sbin/lighttpd"}
# The MIME types every server gets, for the generator's five extensions: same Content-Type
# headers everywhere.
MIME = {"html": "text/html", "png": "image/png", "js": "application/javascript",
        "css": "text/css", "txt": "text/plain"}
# Listen backlog of every server. H2O 2.2 has no directive for it and asks for 65535, which the
# kernel caps at net.core.somaxconn (4096 here); the others are set to the same cap.
BACKLOG_WANTED = 65535
# Descriptors kept for everything but connections and cached files (logs, listeners, pipes).
FD_RESERVE = 1000


def log(msg):
    print(msg, flush=True)


# ---- options ---------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        description="weft vs NGINX, H2O and lighttpd: open-loop Zipf sessions over a generated "
                    "file set, swept over offered rates; writes CSV, JSON, plots and a table.",
        epilog="Results go to results/<timestamp>/ by default. Targets are reported, not "
               "asserted. See docs/benchmarks.md.")
    p.add_argument("--preset", choices=("small", "thesis"), default="small",
                   help="file set (www-fixtures/generate.py preset; default small)")
    p.add_argument("--fileset", metavar="DIR",
                   help="where the file set is or is generated (default "
                        "www-fixtures/generated/PRESET)")
    p.add_argument("--quick", action="store_true",
                   help="prove the harness end to end: tiny rates and durations, no "
                        "calibration, < 2 minutes; figures mean nothing")
    p.add_argument("--servers", default=",".join(ALL_SERVERS),
                   help="comma-separated subset of weft,nginx,h2o,lighttpd (default: all; peers "
                        "that are not installed are left out with a note)")
    p.add_argument("--nginx-only", action="store_true", help="weft and NGINX only")
    p.add_argument("--rates", metavar="FROM:TO:STEP",
                   help="offered rates, sessions per second (default: from a calibration)")
    p.add_argument("--steps", type=int, default=10,
                   help="rates in the calibrated sweep (default 10)")
    p.add_argument("--duration", type=float, help="seconds of load per run (default 6; quick 1)")
    p.add_argument("--timeout", type=float,
                   help="weft-load --timeout: seconds without progress before a call fails "
                        "(default 2; quick 1)")
    p.add_argument("--calls", default="1..5", metavar="1..N",
                   help="calls per session, uniform in [MIN, MAX] per session (default 1..5)")
    p.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent (default 1.0)")
    p.add_argument("--server-cores", default="0", help="CPUs of the servers (default 0)")
    p.add_argument("--load-cores", default="1", help="CPUs of weft-load (default 1)")
    p.add_argument("--processors", type=int, default=0,
                   help="weft processors = NGINX workers = H2O threads (default: the number "
                        "of server cores); lighttpd is single-process")
    p.add_argument("--access-log", choices=("on", "off"), default="off",
                   help="access logs in every server, or in none (default off)")
    p.add_argument("--seed", type=int, default=1, help="weft-load seed (default 1)")
    p.add_argument("--settle", type=float, help="pause between runs, seconds (default 1)")
    p.add_argument("--nice", type=int, default=0, metavar="N",
                   help="run the servers and weft-load at this nice value (default 0; negative "
                        "values need root): on a shared machine, -10 keeps other work at "
                        "normal priority from taking much of the measured cores")
    p.add_argument("--wait-load", type=float, metavar="L",
                   help="before starting, wait (up to 15 min) for the 1-minute load average "
                        "to fall to L or below")
    p.add_argument("--out", help="results folder (default results/<timestamp>/)")
    p.add_argument("--weft", help="weft binary (default $WEFT_BINARY or build/release)")
    p.add_argument("--weft-load", help="weft-load binary (default $WEFT_LOAD_BINARY or "
                                       "build/release)")
    a = p.parse_args(argv)

    a.servers = [s.strip() for s in a.servers.split(",") if s.strip()]
    if a.nginx_only:
        a.servers = ["weft", "nginx"]
    bad = [s for s in a.servers if s not in ALL_SERVERS]
    if bad or not a.servers:
        p.error("--servers: unknown %s (choose from %s)" % (",".join(bad) or "(none)",
                                                            ",".join(ALL_SERVERS)))
    a.server_cpus = parse_cpus(p, "--server-cores", a.server_cores)
    a.load_cpus = parse_cpus(p, "--load-cores", a.load_cores)
    if set(a.server_cpus) & set(a.load_cpus):
        p.error("--server-cores and --load-cores must be disjoint")
    if a.processors <= 0:
        a.processors = len(a.server_cpus)
    try:
        lo, _, hi = a.calls.partition("..")
        a.calls_min, a.calls_max = int(lo), int(hi or lo)
        assert 1 <= a.calls_min <= a.calls_max
    except (ValueError, AssertionError):
        p.error("--calls %s: expected MIN..MAX with 1 <= MIN <= MAX" % a.calls)
    a.mean_calls = (a.calls_min + a.calls_max) / 2.0
    if a.rates:
        try:
            f, t, s = (float(x) for x in a.rates.split(":"))
            assert 0 < f <= t and s > 0
        except (ValueError, AssertionError):
            p.error("--rates %s: expected FROM:TO:STEP with 0 < FROM <= TO, STEP > 0" % a.rates)
        n = int(math.floor((t - f) / s + 1e-9)) + 1
        a.rate_list = [round(f + i * s, 3) for i in range(n)]
    else:
        a.rate_list = None
    if a.quick:
        a.duration = a.duration or 1.0
        a.timeout = a.timeout or 1.0
        a.settle = 0.2 if a.settle is None else a.settle
        if not a.rate_list:
            a.rate_list = [100.0, 200.0, 300.0]
    a.duration = a.duration or 6.0
    a.timeout = a.timeout or 2.0
    a.settle = 1.0 if a.settle is None else a.settle
    if a.steps < 2:
        p.error("--steps must be at least 2")
    if a.nice < 0 and os.geteuid() != 0:
        p.error("--nice %d needs root" % a.nice)
    return a


def parse_cpus(p, name, text):
    cpus = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        p.error("%s %s: expected a CPU list such as 0 or 0-7 or 0,2" % (name, text))
    online = os.sched_getaffinity(0)
    missing = [c for c in cpus if c not in online]
    if missing or not cpus:
        p.error("%s %s: CPUs %s are not available (this process may use %s)"
                % (name, text, missing, sorted(online)))
    return sorted(set(cpus))


# ---- binaries and the file set -----------------------------------------------------------------

def find_binaries(a):
    weft = a.weft or os.environ.get("WEFT_BINARY") or os.path.join(ROOT, "build/release/server/weft")
    load = a.weft_load or os.environ.get("WEFT_LOAD_BINARY") or os.path.join(
        ROOT, "build/release/loadgen/weft-load")
    if not (os.access(weft, os.X_OK) and os.access(load, os.X_OK)):
        log("building weft and weft-load (release preset)")
        subprocess.run(["cmake", "--preset", "release"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", "--preset", "release", "--target", "weft",
                        "weft-load"], cwd=ROOT, check=True)
    return os.path.abspath(weft), os.path.abspath(load)


def find_fileset(a):
    out = a.fileset or os.path.join(ROOT, "www-fixtures", "generated", a.preset)
    cmd = [sys.executable, os.path.join(ROOT, "www-fixtures", "generate.py"), "--preset", a.preset,
           "--out", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    manifest = os.path.join(out, "MANIFEST")
    sizes = []
    with open(manifest, encoding="utf-8") as f:
        header = f.readline().strip()
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            path, size, rank = line.rstrip("\n").split("\t")
            sizes.append((int(rank), path, int(size)))
    sizes.sort()
    # Mean reply body under Zipf(s): what one call moves on average.
    weights = [1.0 / (r ** a.zipf) for r, _, _ in sizes]
    mean = sum(w * s for w, (_, _, s) in zip(weights, sizes)) / sum(weights)
    return {"dir": os.path.abspath(out), "manifest": os.path.abspath(manifest), "header": header,
            "files": len(sizes), "bytes": sum(s for _, _, s in sizes),
            "zipf_mean_bytes": mean, "probe": sizes[0][1:], "paths": [p for _, p, _ in sizes]}


# ---- servers -----------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def somaxconn():
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return int(f.read())
    except OSError:
        return 4096


class Limits:
    """The limits every server gets alike: descriptors, connections, cached files, backlog."""

    def __init__(self, files, processors):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.nofile = hard if hard != resource.RLIM_INFINITY else 1 << 20
        # One descriptor per cached file, the rest (less a reserve) for connections, but no
        # more than half the descriptors: lighttpd caps its connections at max-fds/2.
        self.cache_entries = max(100, min(files, (self.nofile - FD_RESERVE) // 2))
        self.connections = max(1000, min(self.nofile - self.cache_entries - FD_RESERVE,
                                         self.nofile // 2 - FD_RESERVE // 2))
        self.backlog = min(BACKLOG_WANTED, somaxconn())
        self.processors = processors


def weft_config(d, port, root, lim, access_log):
    mime = os.path.join(d, "mime.types")
    with open(mime, "w") as f:
        for ext, t in MIME.items():
            f.write("%s %s\n" % (t, ext))
    return """[server]
listen = ["127.0.0.1:%d"]
root = "%s"
mime_types = "%s"
backlog = %d
[runtime]
processors = %d
[limits]
max_connections = %d
max_requests_per_connection = 1000
[timeouts]
keepalive = "75s"
shutdown_grace = "1s"
[io]
body = "sendfile"
[fd_cache]
enabled = true
max_entries = %d
valid = "5s"
inactive = "60s"
[log]
level = "warn"
error_log = "%s/error.log"
access_log = "%s"
""" % (port, root, mime, lim.backlog, lim.processors, lim.connections, lim.cache_entries, d,
       ("%s/access.log" % d) if access_log else "off")


def nginx_config(d, port, root, lim, access_log):
    per_worker = max(1024, lim.connections // lim.processors)
    types = " ".join("%s %s;" % (t, e) for e, t in MIME.items())
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    return """%sdaemon off; master_process on; worker_processes %d; pid %s/nginx.pid;
error_log %s/error.log warn; worker_rlimit_nofile %d;
events { worker_connections %d; }
http {
  access_log %s; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000; keepalive_timeout 75s;
  open_file_cache max=%d inactive=60s; open_file_cache_valid 5s; open_file_cache_errors on;
  client_body_temp_path %s/cb; proxy_temp_path %s/px; fastcgi_temp_path %s/fc;
  uwsgi_temp_path %s/uw; scgi_temp_path %s/sc;
  types { %s } default_type application/octet-stream;
  server { listen 127.0.0.1:%d backlog=%d%s; root %s; }
}
""" % (user, lim.processors, d, d, lim.nofile, per_worker,
       ("%s/access.log combined" % d) if access_log else "off", lim.cache_entries,
       d, d, d, d, d, types, port, lim.backlog, " reuseport" if lim.processors > 1 else "", root)


def h2o_config(d, port, root, lim, access_log):
    types = "".join('          %s: [".%s"]\n' % (t, e) for e, t in MIME.items())
    user = "user: nobody\n" if os.geteuid() == 0 else ""
    return """%snum-threads: %d
max-connections: %d
pid-file: %s/h2o.pid
error-log: %s/error.log
%slisten:
  host: 127.0.0.1
  port: %d
hosts:
  "default":
    paths:
      "/":
        file.dir: %s
        file.mime.settypes:
%s""" % (user, lim.processors, lim.connections, d, d,
         ("access-log: %s/access.log\n" % d) if access_log else "", port, root, types)


def lighttpd_config(d, port, root, lim, access_log):
    types = ", ".join('".%s" => "%s"' % (e, t) for e, t in MIME.items())
    user = ('server.username = "nobody"\nserver.groupname = "nogroup"\n'
            if os.geteuid() == 0 else "")
    acc = ('server.modules += ("mod_accesslog")\naccesslog.filename = "%s/access.log"\n' % d
           if access_log else "")
    return """server.document-root = "%s"
server.bind = "127.0.0.1"
server.port = %d
%sserver.max-fds = %d
server.max-connections = %d
server.listen-backlog = %d
server.max-keep-alive-requests = 1000
server.max-keep-alive-idle = 75
server.stat-cache-engine = "simple"
server.network-backend = "sendfile"
server.errorlog = "%s/error.log"
server.pid-file = "%s/lighttpd.pid"
mimetype.assign = (%s)
%s""" % (root, port, user, lim.nofile, lim.connections, lim.backlog, d, d, types, acc)


class Server:
    """One server process tree, started pinned to the server cores from its own folder."""

    CONFIGS = {"weft": weft_config, "nginx": nginx_config, "h2o": h2o_config,
               "lighttpd": lighttpd_config}

    def __init__(self, name, work, a, fileset, lim, weft_bin):
        self.name, self.a, self.fileset, self.lim = name, a, fileset, lim
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o1777)  # peers that drop privileges write their logs here
        self.port = free_port()
        self.proc = None
        self.restarts = 0
        self.weft_bin = weft_bin
        conf = self.CONFIGS[name](self.dir, self.port, fileset["dir"], lim, a.access_log == "on")
        ext = {"weft": "toml", "nginx": "conf", "h2o": "conf", "lighttpd": "conf"}[name]
        self.conf = os.path.join(self.dir, "%s.%s" % (name, ext))
        with open(self.conf, "w") as f:
            f.write(conf)

    def argv(self):
        if self.name == "weft":
            return [self.weft_bin, "-c", self.conf]
        if self.name == "nginx":
            return [PEER_BINARIES["nginx"], "-p", self.dir, "-e", self.dir + "/error.log",
                    "-c", self.conf]
        if self.name == "h2o":
            return [PEER_BINARIES["h2o"], "-c", self.conf]
        return [PEER_BINARIES["lighttpd"], "-D", "-f", self.conf]

    def start(self):
        cpus, nofile, nice = self.a.server_cpus, self.lim.nofile, self.a.nice

        def child():
            os.sched_setaffinity(0, cpus)
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            if nice:
                os.nice(nice)

        out = open(os.path.join(self.dir, "stdout.log"), "ab")
        self.proc = subprocess.Popen(self.argv(), cwd=self.dir, stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT, preexec_fn=child,
                                     start_new_session=True)
        out.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited at start (status %s): %s"
                                   % (self.name, self.proc.returncode, self.log_tail()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("%s does not accept on port %d: %s"
                               % (self.name, self.port, self.log_tail()))
        self.check_reply()

    def check_reply(self):
        """Fetches the most popular file and checks status and length: the config serves the
        set. Raises RuntimeError naming the server when it does not."""
        path, size = self.fileset["probe"]
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            ctype = r.getheader("Content-Type", "")
        finally:
            c.close()
        if r.status != 200 or len(body) != size:
            raise RuntimeError("%s: GET %s gave %d with %d bytes, want 200 with %d: %s"
                               % (self.name, path, r.status, len(body), size, self.log_tail()))
        want = MIME[path.rsplit(".", 1)[1]]
        if not ctype.startswith(want):
            raise RuntimeError("%s: GET %s gave Content-Type %r, want %r"
                               % (self.name, path, ctype, want))

    def alive(self):
        """Returns true while the started process runs (NGINX's master respawns workers)."""
        return self.proc is not None and self.proc.poll() is None

    def responsive(self, wait_s=10.0):
        """Returns true once a TCP connection to the server succeeds, within `wait_s` (after an
        overloaded run the listen queue may take a moment to drain)."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                if time.monotonic() >= deadline or not self.alive():
                    return False
                time.sleep(0.2)

    def pids(self):
        """The server's process tree: the started process and all its descendants."""
        children = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
        out, todo = [], [self.proc.pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(children.get(p, []))
        return out

    def cpu_seconds(self):
        """utime+stime of every process of the server (threads included), in seconds."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for p in self.pids():
            try:
                with open("/proc/%d/stat" % p) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
            except (OSError, IndexError, ValueError):
                pass
        return total / tick

    def log_tail(self, lines=15):
        out = []
        for name in ("error.log", "stdout.log"):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-lines:]
                if tail:
                    out.append("[%s] " % name + "".join(tail).strip())
        return "\n".join(out) or "(no log output)"

    def error_log_size(self):
        path = os.path.join(self.dir, "error.log")
        return os.path.getsize(path) if os.path.exists(path) else 0

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            # NGINX: SIGTERM is its fast shutdown; the others stop on SIGTERM as well.
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass

    def version(self):
        try:
            if self.name == "weft":
                r = subprocess.run([self.weft_bin, "--version"], capture_output=True, text=True)
            elif self.name == "h2o":
                r = subprocess.run([PEER_BINARIES["h2o"], "--version"], capture_output=True,
                                   text=True)
            else:
                r = subprocess.run([PEER_BINARIES[self.name], "-v"], capture_output=True,
                                   text=True)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "unknown"


# ---- one run -----------------------------------------------------------------------------------

ERROR_CLASSES = ("client-timo", "socket-timo", "connrefused", "connreset", "fd-unavail",
                 "addrunavail", "ftab-full", "other", "http-4xx", "http-5xx", "bad-length")


# A run whose sessions started this late on average (ms) was limited by weft-load, not only by
# the server. Picked: a shared VM core shows max lags of a few ms and means well under 1 ms.
CLIENT_BEHIND_MEAN_LAG_MS = 2.0


def cpu_times(cpus):
    """Returns (busy, total) jiffies summed over `cpus`, from /proc/stat."""
    busy = total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *vals = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                v = [int(x) for x in vals]
                total += sum(v[:8])  # user nice system idle iowait irq softirq steal
                busy += sum(v[:8]) - v[3] - v[4]
    return busy, total


def busy_share(before, after):
    d_total = after[1] - before[1]
    return round((after[0] - before[0]) / d_total, 3) if d_total > 0 else None


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_load(a, weft_load, server, rate, duration, timeout, json_path):
    argv = [weft_load, "--server", "127.0.0.1", "--port", str(server.port),
            "--zipf", repr(a.zipf), "--files", a.fileset_info["manifest"],
            "--num-calls", "%d..%d" % (a.calls_min, a.calls_max), "--rate", repr(rate),
            "--duration", repr(duration), "--timeout", repr(timeout), "--seed", str(a.seed),
            "--threads", str(len(a.load_cpus)), "--json", json_path, "--quiet"]
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

    def child():
        os.sched_setaffinity(0, a.load_cpus)
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        if a.nice:
            os.nice(a.nice)

    # The run's own limit: the duration, every session's timeout, and room to spare.
    r = subprocess.run(argv, capture_output=True, text=True, preexec_fn=child,
                       timeout=duration + 10 * timeout + 30)
    if r.returncode != 0 or not os.path.exists(json_path):
        raise RuntimeError("weft-load failed (status %d): %s\n%s"
                           % (r.returncode, " ".join(argv), r.stderr.strip()[-2000:]))
    with open(json_path) as f:
        j = json.load(f)
    return (j[0] if isinstance(j, list) else j), argv


def reply_rate(j, duration):
    """Successful (2xx) replies per second while the load was offered: the mean of the
    per-second timeline over the scheduling window (the first second left out when the window
    has three or more), scaled by the run's share of 2xx among all replies (a 503 is a reply
    but not throughput)."""
    total = j["replies"]["total"]
    ok_share = j["replies"]["status"]["2xx"] / total if total else 1.0
    seconds = [t for t in j.get("timeline", []) if t["t"] < int(duration)]
    if len(seconds) >= 3:
        seconds = seconds[1:]
    if seconds:
        return ok_share * sum(t["replies"] for t in seconds) / len(seconds)
    return ok_share * total / max(j["test_duration_s"], 1e-9)


def measure(a, weft_load, server, rate, duration, timeout, json_path):
    """One run of weft-load against `server`: a row of figures."""
    restarted = False
    if not server.alive() or not server.responsive():
        log("  ! %s is %s: restarting it. Its log:\n%s"
            % (server.name, "not accepting connections" if server.alive() else "not running",
               server.log_tail()))
        server.stop()
        server.start()
        server.restarts += 1
        restarted = True
    load_before = loadavg()
    err_before = server.error_log_size()
    cores0 = cpu_times(a.server_cpus), cpu_times(a.load_cpus)
    cpu0 = server.cpu_seconds()
    j, argv = run_load(a, weft_load, server, rate, duration, timeout, json_path)
    cpu1 = server.cpu_seconds()
    cores1 = cpu_times(a.server_cpus), cpu_times(a.load_cpus)
    wall = max(j["test_duration_s"], 1e-9)
    err = j["errors"]
    errors = err["total"] + err["http-4xx"] + err["http-5xx"] + err["bad-length"]
    started = j["sessions"]["started"] or j["connections"]["total"]
    replies = j["replies"]["total"]
    lag = j["schedule_lag_ms"]
    row = {
        "server": server.name,
        "offered_sessions_per_s": rate,
        "offered_requests_per_s": round(rate * a.mean_calls, 1),
        "duration_s": duration,
        "sessions": started,
        "sessions_failed": j["sessions"]["failed"],
        "requests": j["requests"]["total"],
        "replies": replies,
        "replies_2xx": j["replies"]["status"]["2xx"],
        "reply_rate": round(reply_rate(j, duration), 1),
        "error_rate": round(min(1.0, errors / started) if started else 0.0, 5),
        "errors": errors,
        "p50_ms_from_schedule": j["latency_ms"]["from_schedule"]["p50"],
        "p99_ms_from_schedule": j["latency_ms"]["from_schedule"]["p99"],
        "p50_ms_from_send": j["latency_ms"]["from_send"]["p50"],
        "p99_ms_from_send": j["latency_ms"]["from_send"]["p99"],
        "schedule_lag_max_ms": lag["max"],
        "late_sessions": lag["late_sessions"],
        "schedule_lag_mean_ms": lag["mean"],
        # Systematically late, not a hiccup of a shared core: the client limited the run.
        "client_behind": lag["mean"] > CLIENT_BEHIND_MEAN_LAG_MS,
        "server_cpu_s": round(cpu1 - cpu0, 3),
        "server_cpu_us_per_reply": round(1e6 * (cpu1 - cpu0) / replies, 2) if replies else None,
        "server_util": round((cpu1 - cpu0) / wall / len(a.server_cpus), 3),
        # Busy share of the server's and the load's CPUs over the run, whoever used them:
        # well above server_util / client_util means other work shared the cores.
        "server_cores_busy": busy_share(cores0[0], cores1[0]),
        "load_cores_busy": busy_share(cores0[1], cores1[1]),
        "client_cpu_s": round(j["cpu"]["user_s"] + j["cpu"]["system_s"], 3),
        "client_util": round((j["cpu"]["user_s"] + j["cpu"]["system_s"]) / wall
                             / len(a.load_cpus), 3),
        "test_duration_s": round(j["test_duration_s"], 3),
        "loadavg_1m_before": load_before,
        "server_restarted": restarted,
        "server_alive_after": server.alive(),
        "server_error_log_bytes": server.error_log_size() - err_before,
        "weft_load": " ".join(argv),
    }
    for c in ERROR_CLASSES:
        row["err_" + c.replace("-", "_")] = err[c]
    if not row["server_alive_after"]:
        log("  ! %s died during the run at %s sessions/s. Its log:\n%s"
            % (server.name, rate, server.log_tail()))
    return row


# ---- the sweep ---------------------------------------------------------------------------------

def nice_rate(x):
    """Rounds a rate to two significant figures (to the nearest 5 below 100)."""
    if x < 100:
        return max(5.0, round(x / 5) * 5.0)
    mag = 10 ** (int(math.log10(x)) - 1)
    return float(round(x / mag) * mag)


def calibrate(a, weft_load, servers, tmp):
    """A doubling ramp per server: returns (probes, saturation estimate in sessions/s of the
    fastest server). A server's ramp stops once it falls behind or fails sessions."""
    probes, best = [], 0.0
    for s in servers:
        rate = 500.0
        while rate <= 128000:
            row = measure(a, weft_load, s, rate, 2.0, 1.0,
                          os.path.join(tmp, "calibrate-%s-%g.json" % (s.name, rate)))
            row["phase"] = "calibration"
            probes.append(row)
            kept_up = (row["reply_rate"] >= 0.9 * row["offered_requests_per_s"]
                       and row["error_rate"] <= 0.02 and not row["client_behind"])
            log("  calibrate %-8s %7.0f sessions/s: %8.0f replies/s, errors %5.1f%%%s"
                % (s.name, rate, row["reply_rate"], 100 * row["error_rate"],
                   "" if kept_up else "  (saturated)"))
            best = max(best, row["reply_rate"] / a.mean_calls)
            time.sleep(a.settle)
            if not kept_up:
                break
            rate *= 2
    return probes, best


def run_round(a, weft_load, servers, rate, index, rows, tmp, phase):
    k = index % len(servers)
    order = servers[k:] + servers[:k]
    for pos, s in enumerate(order):
        row = measure(a, weft_load, s, rate, a.duration, a.timeout,
                      os.path.join(tmp, "%s-%g.json" % (s.name, rate)))
        row.update({"phase": phase, "rate_index": index, "order": pos})
        rows.append(row)
        log("  %-8s %7.0f sessions/s: %8.0f replies/s  errors %6.2f%%  p99 %8.1f ms  "
            "cpu %6.1f us/reply%s%s"
            % (s.name, rate, row["reply_rate"], 100 * row["error_rate"],
               row["p99_ms_from_schedule"], row["server_cpu_us_per_reply"] or 0,
               "  [client behind]" if row["client_behind"] else "",
               "  [restarted]" if row["server_restarted"] else ""))
        time.sleep(a.settle)


def measured(rows):
    """The rows of the sweep and of the target round (not the calibration)."""
    return [r for r in rows if r["phase"] in ("sweep", "target")]


def saturation(rows, name):
    mine = [r for r in measured(rows) if r["server"] == name]
    if not mine:
        return None
    peak = max(mine, key=lambda r: r["reply_rate"])
    top = max(r["offered_sessions_per_s"] for r in mine)
    return {"reply_rate": peak["reply_rate"], "offered_sessions_per_s":
            peak["offered_sessions_per_s"], "error_rate": peak["error_rate"],
            "server_util": peak["server_util"], "client_behind": peak["client_behind"],
            "at_top_of_sweep": peak["offered_sessions_per_s"] == top}


def at_rate(rows, name, rate):
    for r in reversed(measured(rows)):
        if r["server"] == name and abs(r["offered_sessions_per_s"] - rate) <= 0.02 * rate:
            return r
    return None


def target_rate(rows, names):
    """1.5x NGINX's saturation rate (sessions/s), or None without NGINX."""
    sat = saturation(rows, "nginx") if "nginx" in names else None
    return 1.5 * sat["offered_sessions_per_s"] if sat else None


def summarize(rows, names, r15):
    """Saturation of each server, CPU per reply, the figures at rate r15 (1.5x NGINX's
    saturation rate) and the three targets of the issue (reported, not asserted)."""
    sat = {n: saturation(rows, n) for n in names}
    cpu = {}
    for n in names:
        eff = [r["server_cpu_us_per_reply"] for r in measured(rows)
               if r["server"] == n and r["server_cpu_us_per_reply"] and r["error_rate"] < 0.01
               and r["reply_rate"] >= 0.95 * r["offered_requests_per_s"]]
        cpu[n] = statistics.median(eff) if eff else None
    summary = {"saturation": sat, "cpu_us_per_reply_unsaturated_median": cpu}
    if r15:
        summary["rate_1_5x_nginx"] = r15
        summary["at_1_5x_nginx"] = {n: at_rate(rows, n, r15) for n in names}
    w, n = sat.get("weft"), sat.get("nginx")
    if w and n:
        t = {"saturation_ratio": w["reply_rate"] / n["reply_rate"] if n["reply_rate"] else None}
        t["saturation_met"] = t["saturation_ratio"] is not None and t["saturation_ratio"] >= 1.1
        at = summary.get("at_1_5x_nginx", {})
        wr, nr = at.get("weft"), at.get("nginx")
        if wr and nr:
            t["error_rate_weft"], t["error_rate_nginx"] = wr["error_rate"], nr["error_rate"]
            t["error_met"] = wr["error_rate"] <= 0.5 * nr["error_rate"]
            t["weft_vs_own_peak"] = wr["reply_rate"] / w["reply_rate"] if w["reply_rate"] else None
            t["no_collapse_met"] = (t["weft_vs_own_peak"] or 0) >= 0.95
        summary["targets"] = t
    return summary


# ---- outputs -----------------------------------------------------------------------------------

CSV_FIELDS = ["phase", "rate_index", "order", "server", "offered_sessions_per_s",
              "offered_requests_per_s", "duration_s", "sessions", "sessions_failed", "requests",
              "replies", "replies_2xx", "reply_rate", "error_rate", "errors"] + \
             ["err_" + c.replace("-", "_") for c in ERROR_CLASSES] + \
             ["p50_ms_from_schedule", "p99_ms_from_schedule", "p50_ms_from_send",
              "p99_ms_from_send", "schedule_lag_mean_ms", "schedule_lag_max_ms", "late_sessions", "client_behind",
              "server_cpu_s", "server_cpu_us_per_reply", "server_util", "server_cores_busy",
              "client_cpu_s", "client_util", "load_cores_busy", "test_duration_s",
              "loadavg_1m_before", "server_restarted", "server_alive_after",
              "server_error_log_bytes"]


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def plot(a, out, rows, names, conditions):
    """Writes one data file per server and a gnuplot script; runs gnuplot when installed.
    Returns the image files written."""
    for n in names:
        mine = sorted((r for r in measured(rows) if r["server"] == n),
                      key=lambda r: r["offered_sessions_per_s"])
        with open(os.path.join(out, "plot-%s.tsv" % n), "w") as f:
            f.write("# offered_sessions_per_s offered_requests_per_s reply_rate error_pct "
                    "p99_ms_from_schedule server_cpu_us_per_reply\n")
            for r in mine:
                f.write("%s\t%s\t%s\t%.4f\t%s\t%s\n" % (
                    r["offered_sessions_per_s"], r["offered_requests_per_s"], r["reply_rate"],
                    100 * r["error_rate"], max(r["p99_ms_from_schedule"], 0.001),
                    r["server_cpu_us_per_reply"] or 0))
    title = ("%s set, Zipf s=%g, %d..%d calls/session, %d server core%s, %s"
             % (a.preset, a.zipf, a.calls_min, a.calls_max, len(a.server_cpus),
                "" if len(a.server_cpus) == 1 else "s", conditions))
    colors = {"weft": "#d62728", "nginx": "#1f77b4", "h2o": "#2ca02c", "lighttpd": "#9467bd"}

    def series(col):
        return ", ".join("'plot-%s.tsv' using 1:%d with linespoints lw 2 pt 7 ps 0.8 "
                         "lc rgb '%s' title '%s'" % (n, col, colors[n], n) for n in names)

    have_pngcairo = False
    if shutil.which("gnuplot"):
        t = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
        have_pngcairo = "pngcairo" in (t.stdout + t.stderr)
    png = ("set terminal pngcairo size 960,600 font 'sans,10'" if have_pngcairo
           else "set terminal png size 960,600")
    charts = [
        ("throughput", "reply rate [replies/s]", "set yrange [0:*]",
         series(3) + ", 'plot-%s.tsv' using 1:2 with lines dt 2 lc rgb '#888888' "
         "title 'offered requests/s'" % names[0]),
        ("errors", "error rate [% of sessions]", "set yrange [0:*]", series(4)),
        ("p99", "p99 latency from schedule [ms] (log)", "set logscale y", series(5)),
    ]
    script = []
    for name, ylabel, extra, plots in charts:
        for term, ext in ((png, "png"), ("set terminal svg size 960,600 dynamic "
                                         "font 'sans,11'", "svg")):
            script += [term, "set output '%s.%s'" % (name, ext), "unset logscale", "set grid",
                       "set key top left", "set title \"%s\\n%s\" noenhanced" % (
                           {"throughput": "Throughput vs offered rate",
                            "errors": "Error rate vs offered rate",
                            "p99": "p99 latency vs offered rate"}[name], title),
                       "set xlabel 'offered rate [sessions/s]'", "set ylabel '%s'" % ylabel,
                       "set yrange [*:*]", extra, "plot " + plots, "unset output"]
    with open(os.path.join(out, "plots.gp"), "w") as f:
        f.write("\n".join(script) + "\n")
    if not shutil.which("gnuplot"):
        log("gnuplot is not installed: wrote the data and %s/plots.gp, no images" % out)
        return []
    r = subprocess.run(["gnuplot", "plots.gp"], cwd=out, capture_output=True, text=True)
    if r.returncode != 0:
        log("gnuplot failed: %s" % r.stderr.strip())
        return []
    return sorted(f for f in os.listdir(out) if f.endswith((".png", ".svg")))


def fmt_ratio(x, y):
    return "%.2f" % (x / y) if x is not None and y else "-"


def tables(a, rows, names, summary):
    """The per-rate table and the saturation table, as markdown lines."""
    peers = [n for n in names if n != "weft"]
    rates = sorted({r["offered_sessions_per_s"] for r in measured(rows)})
    head = ["sessions/s", "requests/s"] + ["%s rep/s (err%%, p99 ms)" % n for n in names]
    if "weft" in names:
        head += ["weft/%s" % p for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rate in rates:
        cells = ["%g" % rate, "%g" % (rate * a.mean_calls)]
        got = {n: at_rate(rows, n, rate) for n in names}
        for n in names:
            r = got[n]
            cells.append("-" if not r else "%.0f (%.1f%%, %.1f)%s" % (
                r["reply_rate"], 100 * r["error_rate"], r["p99_ms_from_schedule"],
                " *" if r["client_behind"] else ""))
        if "weft" in names:
            for p in peers:
                cells.append(fmt_ratio(got["weft"] and got["weft"]["reply_rate"],
                                       got[p] and got[p]["reply_rate"]))
        lines.append("| " + " | ".join(cells) + " |")
    sat = summary["saturation"]
    lines += ["", "| server | saturation: peak replies/s | at sessions/s | weft/server | "
              "server CPU there | server CPU us/reply (unsaturated, median) | at 1.5x NGINX's "
              "saturation rate: replies/s | error rate |", "|---|---|---|---|---|---|---|---|"]
    at = summary.get("at_1_5x_nginx", {})
    for n in names:
        s = sat.get(n)
        if not s:
            continue
        r = at.get(n)
        cpu = summary["cpu_us_per_reply_unsaturated_median"].get(n)
        lines.append("| %s | %.0f%s%s | %g | %s | %.0f%% | %s | %s | %s |" % (
            n, s["reply_rate"], " (top of sweep)" if s["at_top_of_sweep"] else "",
            " *" if s["client_behind"] else "", s["offered_sessions_per_s"],
            fmt_ratio(sat["weft"]["reply_rate"], s["reply_rate"]) if sat.get("weft") else "-",
            100 * s["server_util"],
            "%.1f" % cpu if cpu else "-", "%.0f" % r["reply_rate"] if r else "-",
            "%.2f%%" % (100 * r["error_rate"]) if r else "-"))
    t = summary.get("targets")
    if t:
        lines += ["", "| target | result | met |", "|---|---|---|",
                  "| saturation throughput >= 1.1x NGINX's | %s | %s |" % (
                      fmt_ratio(t["saturation_ratio"], 1.0) + "x",
                      "yes" if t["saturation_met"] else "no")]
        if "error_met" in t:
            lines += ["| error rate at 1.5x NGINX's saturation rate (%g sessions/s) <= 0.5x "
                      "NGINX's | weft %.2f%%, NGINX %.2f%% | %s |" % (
                          summary["rate_1_5x_nginx"], 100 * t["error_rate_weft"],
                          100 * t["error_rate_nginx"], "yes" if t["error_met"] else "no"),
                      "| weft's throughput there >= 95%% of its own peak | %.0f%% | %s |" % (
                          100 * (t["weft_vs_own_peak"] or 0),
                          "yes" if t["no_collapse_met"] else "no")]
    return lines


# ---- main --------------------------------------------------------------------------------------

def wait_for_load(limit):
    deadline = time.monotonic() + 900
    while loadavg() > limit and time.monotonic() < deadline:
        log("load average %.2f > %.2f: waiting" % (loadavg(), limit))
        time.sleep(30)


def main(argv):
    a = parse_args(argv)
    started = time.monotonic()
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.abspath(a.out or os.path.join(ROOT, "results", stamp))
    os.makedirs(out, exist_ok=True)
    weft_bin, weft_load = find_binaries(a)
    a.fileset_info = fs = find_fileset(a)

    names = []
    for n in a.servers:
        if n != "weft" and not os.access(PEER_BINARIES[n], os.X_OK):
            log("%s is not installed (%s): left out" % (n, PEER_BINARIES[n]))
            continue
        names.append(n)
    if a.wait_load is not None:
        wait_for_load(a.wait_load)

    lim = Limits(fs["files"], a.processors)
    work = tempfile.mkdtemp(prefix="weft-compare-")
    os.chmod(work, 0o755)
    servers = []
    rows, probes = [], []
    jdir = os.path.join(out, "loadgen")  # weft-load's JSON report of every run
    os.makedirs(jdir, exist_ok=True)
    conditions = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + argv),
        "git": subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                              capture_output=True, text=True).stdout.strip(),
        "cpus_online": os.cpu_count(), "server_cpus": a.server_cpus, "load_cpus": a.load_cpus,
        "loadavg_start": open("/proc/loadavg").read().split()[:3],
        "kernel": os.uname().release,
        "fileset": {k: fs[k] for k in ("dir", "header", "files", "bytes", "zipf_mean_bytes")},
        "limits": vars(lim), "options": {k: v for k, v in vars(a).items()
                                         if k not in ("fileset_info",)},
    }
    try:
        for n in names:
            s = Server(n, work, a, fs, lim, weft_bin)
            s.start()
            servers.append(s)
        conditions["versions"] = {s.name: s.version() for s in servers}
        log("servers on CPUs %s (%d processors/workers/threads), weft-load on CPUs %s; %s: "
            "%d files, %.1f MB, Zipf s=%g mean reply body %.0f bytes; sessions of %d..%d calls"
            % (a.server_cpus, a.processors, a.load_cpus, a.preset, fs["files"], fs["bytes"] / 1e6,
               a.zipf, fs["zipf_mean_bytes"], a.calls_min, a.calls_max))
        for s in servers:
            log("  %-8s port %d, %s" % (s.name, s.port, conditions["versions"][s.name]))

        rates = a.rate_list
        if not rates:
            log("calibration (doubling ramp, 2 s per rate)")
            probes, best = calibrate(a, weft_load, servers, jdir)
            lo, hi = 0.3 * best, 2.0 * best
            rates = sorted({nice_rate(lo + i * (hi - lo) / (a.steps - 1)) for i in range(a.steps)})
            log("saturation estimate of the fastest server: %.0f sessions/s; sweep %s"
                % (best, ", ".join("%g" % r for r in rates)))
        conditions["rates"] = rates

        for i, rate in enumerate(rates):
            log("rate %d/%d: %g sessions/s (%g requests/s offered)"
                % (i + 1, len(rates), rate, rate * a.mean_calls))
            run_round(a, weft_load, servers, rate, i, rows, jdir, "sweep")

        r15 = target_rate(rows, names)
        if r15 and not any(abs(r - r15) <= 0.02 * r15 for r in rates):
            r15 = nice_rate(r15)
            log("target round: 1.5x NGINX's saturation rate = %g sessions/s" % r15)
            run_round(a, weft_load, servers, r15, len(rates), rows, jdir, "target")
        summary = summarize(rows, names, r15)
    finally:
        for s in servers:
            s.stop()
        for s in servers:
            for name in ("error.log", "stdout.log"):
                src = os.path.join(s.dir, name)
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(out, "%s-%s" % (s.name, name)))
            with open(os.path.join(out, "%s-config.txt" % s.name), "w") as f:
                f.write(open(s.conf).read())
        shutil.rmtree(work, ignore_errors=True)

    conditions["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    conditions["elapsed_s"] = round(time.monotonic() - started, 1)
    conditions["restarts"] = {s.name: s.restarts for s in servers}
    write_csv(os.path.join(out, "runs.csv"), rows)
    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump({"conditions": conditions, "calibration": probes, "runs": rows,
                   "summary": summary}, f, indent=1)
    cond_text = "load avg %s-%s" % (conditions["loadavg_start"][0], conditions["loadavg_end"][0])
    images = plot(a, out, rows, names, cond_text)
    lines = tables(a, rows, names, summary)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("Command: `%s` (git %s, %s)\n\n" % (conditions["command"], conditions["git"],
                                                   conditions["date"]))
        f.write("\n".join(lines) + "\n")
    log("")
    log("\n".join(lines))
    log("")
    if any(r["client_behind"] for r in rows):
        log("* weft-load started that run's sessions %g ms late or more on average: the client, "
            "not only the server, limited it" % CLIENT_BEHIND_MEAN_LAG_MS)
    log("results: %s (runs.csv, runs.json, summary.md, %s); %.0f s, load average %s at the "
        "start, %s at the end" % (out, ", ".join(images) or "no plots", conditions["elapsed_s"],
                                  conditions["loadavg_start"][0], conditions["loadavg_end"][0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
