#!/usr/bin/env python3
"""weft against NGINX, H2O and lighttpd under httperf-style Zipf sessions: the one command.

    scripts/compare.py                  # the small set, all four servers, capped CPU
    scripts/compare.py --quick          # the harness end to end in well under 2 minutes
    scripts/compare.py --nginx-only --tuned-nginx --server-cpu 0.1
    scripts/compare.py --nginx-only --preset thesis --rates 500:4000:500 --server-cpu 0

What one run does:
  1. Finds or builds weft and weft-load (build/release), and builds or finds the file set
     (www-fixtures/generate.py --preset P; a no-op when it is up to date).
  2. Caps the servers' CPU (--server-cpu FRACTION): every server runs in a cgroup of its own
     with the same CFS quota, FRACTION of one core in every 10 ms period, so that a throttled
     server looks like a slower CPU rather than one that pauses. cgroup v2 (cpu.max) where the
     cpu controller is on v2, else v1 (cpu.cfs_quota_us); the groups are removed at the end,
     on errors too. Without --server-cpu, and when weft-load has fewer than 3x the servers'
     cores, the cap is 0.1 of a core per load core: one client core must be able to offer 3x
     a server's saturation rate, or the overload rows measure the client, not the server.
     --quick and --server-cpu 0 (or none) run uncapped.
  3. Starts every server once, each from its own folder under a temporary directory, with
     configurations made equivalent (see the *_config functions): the same root, weft's
     processors = NGINX's workers = H2O's threads (lighttpd is one process), sendfile, an open
     file cache sized alike, the same MIME types, listen backlog, connection and descriptor
     limits, and access logs on in all or off in all. All servers are pinned to the server
     cores, weft-load to the load cores (disjoint). --tuned-nginx adds the peer nginx-abort:
     the same NGINX, run with net.ipv4.tcp_abort_on_overflow=1 (a full accept queue answers
     the handshake's last ACK with a reset instead of dropping it), set for its runs only and
     put back after each.
  4. Unless --rates is given, calibrates: a short doubling ramp per server finds roughly where
     each saturates; the sweep then runs from 0.3x the fastest server's saturation rate to 2x
     it, and at least to 3.3x NGINX's.
  5. Sweeps the offered rate. At each rate every server gets one run, in an order rotated from
     one rate to the next. A run is weft-load, open loop: fresh connections (sessions) at the
     rate for --duration seconds, each session 1..N keep-alive calls (uniform) for files drawn
     Zipf(S) from the manifest, then close. Every server sees the same sessions (same seed).
     Around each run the server's CPU time (utime+stime of all its processes, from /proc) and
     its cgroup's throttled periods are read. A server that died is restarted (the row says so).
  6. After a calibrated sweep, adds one round at 3x S when the sweep stayed below it (S: NGINX's
     highest offered rate with under 1% errors in a valid row), then one round at 1.5x NGINX's
     saturation rate (unless the sweep already has that rate), for the targets.
  7. Writes OUT/runs.csv, OUT/runs.json (rows, calibration, summary, conditions), OUT/summary.md,
     plots (throughput, error rate and p99 latency vs offered rate; PNG and SVG) and prints
     the table with weft/peer ratios.

Definitions (also in docs/benchmarks.md):
  - reply rate (throughput): successful (2xx) replies per second while the load is offered,
    the mean of weft-load's per-second timeline over the scheduling window (first second left
    out when the run is long enough), like httperf's reply-rate samples.
  - error rate: (httperf's error total + HTTP 4xx/5xx + bad lengths) / sessions started; one
    error ends a session, so it is the share of sessions that failed.
  - valid row: weft-load kept up, so the row measures the server. Its CPU share (its CPU time
    over the run / the offered seconds / its cores) is at most 85%, at most 5% of its sessions
    started more than 1 ms late, and they started under 2 ms late on average. Invalid rows are
    written and shown marked (!); saturation, targets and every summary figure use valid rows.
  - saturation: the highest reply rate a server reached in the valid rows of the sweep, at the
    offered rate where it reached it.
  - server CPU per reply: CPU-seconds of the server's processes over the run / replies.
  - throttled periods: CFS periods of the run in which the server's cgroup used up its quota.
No figure is judged here: the targets are reported, never asserted.
"""

import argparse
import atexit
import contextlib
import csv
import datetime
import errno
import functools
import http.client
import json
import math
import os
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL_SERVERS = ("weft", "weft-epoll", "nginx", "nginx-deferred", "h2o", "lighttpd")
# The default set: weft-epoll (weft on its epoll backend, the one containers get) is asked for
# by name.
DEFAULT_SERVERS = ("weft", "nginx", "h2o", "lighttpd")
PEER_BINARIES = {"nginx": "/usr/sbin/nginx", "h2o": "/usr/bin/h2o", "lighttpd": "/usr/sbin/lighttpd"}
# Peers that are another server run differently: their binary, configuration and version.
# nginx-deferred: NGINX with `listen ... deferred` (TCP_DEFER_ACCEPT), what weft's
# server.defer_accept does by default.
KIND = {"nginx-abort": "nginx", "nginx-deferred": "nginx", "weft-epoll": "weft"}
# The setting nginx-abort runs with (--tuned-nginx), and its value there.
TUNED_SYSCTL = ("net.ipv4.tcp_abort_on_overflow", "1")
# The MIME types every server gets, for the generator's five extensions: same Content-Type
# headers everywhere.
MIME = {"html": "text/html", "png": "image/png", "js": "application/javascript",
        "css": "text/css", "txt": "text/plain"}
# Listen backlog of every server. H2O 2.2 has no directive for it and asks for 65535, which the
# kernel caps at net.core.somaxconn (4096 here); the others are set to the same cap.
BACKLOG_WANTED = 65535
# Descriptors kept for everything but connections and cached files (logs, listeners, pipes).
FD_RESERVE = 1000

# The CPU cap: a 10 ms CFS period, so a throttled server runs at most 10 ms between pauses
# and looks like a slower CPU. The kernel refuses quotas under 1 ms: smaller fractions get a
# longer period. The default cap per load core (0.1 core) keeps the client at 20-70% of its
# core at 3x NGINX's saturation rate on the development VMs (ENVIRONMENT.md).
CAP_PERIOD_US = 10000
CAP_MIN_QUOTA_US = 1000
DEFAULT_CAP_PER_LOAD_CORE = 0.1
CGROUP_PREFIX = "weft-compare-"

# Validity of a row: weft-load's CPU share over the run at most this, and at most this share
# of its sessions started late (weft-load's late_sessions: more than 1 ms after their due time).
# Picked: an idle shared VM core alone starts 0-7% of sessions over 1 ms late (seen at 500
# sessions/s, 12% client CPU: max lags 2-5 ms, means under 0.2 ms), so a few late sessions are
# noise; a client that falls behind shows in the mean lag (below) and in its CPU share.
CLIENT_CPU_MAX = 0.85
LATE_SHARE_MAX = 0.05
# A run whose sessions started this late on average (ms) was limited by weft-load, not only by
# the server. Picked: a shared VM core shows max lags of a few ms and means well under 1 ms.
CLIENT_BEHIND_MEAN_LAG_MS = 2.0
# The calibrated sweep reaches this multiple of S (NGINX's highest rate with under 1% errors).
REACH = 3.0
MAX_RATE = 128000.0


def log(msg):
    """Prints one progress line at once (the output may be a pipe)."""
    print(msg, flush=True)


class SetupError(Exception):
    """A precondition of the run that does not hold: reported in one line, exit status 2."""


# Undo actions (cgroups to remove, settings to put back), run last-in first-out by cleanup():
# from main's finally, and from atexit should main not get there.
CLEANUPS = []


def at_cleanup(fn):
    """Registers `fn` to run once at the end of the run, whatever ends it."""
    CLEANUPS.append(fn)


def cleanup():
    """Runs and forgets every registered undo action, newest first; reports, never raises."""
    while CLEANUPS:
        fn = CLEANUPS.pop()
        try:
            fn()
        except (OSError, RuntimeError) as e:
            print("compare.py: cleanup: %s" % e, file=sys.stderr, flush=True)


def on_sigterm(signum, _frame):
    """Turns SIGTERM into SystemExit, so that the finally blocks stop servers and clean up."""
    raise SystemExit(128 + signum)


def read_text(path, default=""):
    """The contents of a small file, or `default` when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def write_text(path, text):
    """Writes `text` to a kernel file (cgroup, /proc/sys) in one write; raises OSError."""
    with open(path, "w") as f:
        f.write(text)


# ---- options ---------------------------------------------------------------------------------

def parse_args(argv):
    """The options, checked and completed with their defaults; exits 2 on a bad one."""
    p = argparse.ArgumentParser(
        description="weft vs NGINX, H2O and lighttpd: open-loop Zipf sessions over a generated "
                    "file set, swept over offered rates, with every server's CPU capped alike "
                    "(cgroups); writes CSV, JSON, plots and a table.",
        epilog="Results go to results/<timestamp>/ by default. Rows where weft-load could not "
               "keep up are marked invalid and left out of the summary. Targets are reported, "
               "not asserted. See docs/benchmarks.md.")
    add_workload_options(p)
    add_machine_options(p)
    a = p.parse_args(argv)
    check_servers(p, a)
    check_workload(p, a)
    check_machine(p, a)
    return a


def add_workload_options(p):
    """Options of what is offered: servers, file set, rates, sessions."""
    p.add_argument("--preset", choices=("small", "thesis"), default="small",
                   help="file set (www-fixtures/generate.py preset; default small)")
    p.add_argument("--fileset", metavar="DIR",
                   help="where the file set is or is generated (default "
                        "www-fixtures/generated/PRESET)")
    p.add_argument("--quick", action="store_true",
                   help="prove the harness end to end: tiny rates and durations, no "
                        "calibration, no CPU cap unless --server-cpu is given, < 2 minutes; "
                        "figures mean nothing")
    p.add_argument("--servers", default=",".join(DEFAULT_SERVERS),
                   help="comma-separated subset of weft,weft-epoll,nginx,h2o,lighttpd (default: "
                        "all but weft-epoll; peers "
                        "that are not installed are left out with a note)")
    p.add_argument("--nginx-only", action="store_true", help="weft and NGINX only")
    p.add_argument("--weft-variant", action="append", default=[], metavar="NAME:S.K=V[;S.K=V]",
                   help="add the server weft-NAME: weft with these configuration settings on top "
                        "(e.g. batch1:limits.accept_batch=1 or "
                        "nopause:limits.max_queue_wait=\"0s\"; values in TOML syntax); "
                        "repeatable, for A/B runs of weft's own mechanisms")
    p.add_argument("--tuned-nginx", action="store_true",
                   help="add the peer nginx-abort: NGINX with net.ipv4.tcp_abort_on_overflow=1 "
                        "during its runs (set and put back around each; needs root)")
    p.add_argument("--rates", metavar="FROM:TO:STEP",
                   help="offered rates, sessions per second (default: from a calibration, up "
                        "to at least 3x NGINX's saturation rate)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="measure every rate N times, the servers alternated inside each "
                        "repetition and their order reversed every other one; figures, tables "
                        "and plots are then medians with their spread (min..max), and "
                        "medians.csv has them (default 1)")
    p.add_argument("--steps", type=int, default=10,
                   help="rates in the calibrated sweep (default 10)")
    p.add_argument("--duration", type=float, help="seconds of load per run (default 6; quick 1)")
    p.add_argument("--timeout", type=float,
                   help="weft-load --timeout: seconds without progress before a call fails "
                        "(default 2; quick 1)")
    p.add_argument("--calls", default="1..5", metavar="1..N",
                   help="calls per session, uniform in [MIN, MAX] per session (default 1..5)")
    p.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent (default 1.0)")
    p.add_argument("--access-log", choices=("on", "off"), default="off",
                   help="access logs in every server, or in none (default off)")
    p.add_argument("--seed", type=int, default=1, help="weft-load seed (default 1)")
    p.add_argument("--tls", action="store_true",
                   help="HTTPS: every server gets the same ECDSA P-256 certificate (made for the "
                        "run), and each session begins with a full TLS handshake (lighttpd is "
                        "left out: Debian ships its TLS in another package)")
    p.add_argument("--tls-resume", action="store_true",
                   help="with --tls: weft-load resumes the sessions of earlier connections")
    p.add_argument("--http2", action="store_true",
                   help="with --tls: HTTP/2 (h2 by ALPN; NGINX's `http2`, H2O's and weft's "
                        "default); each session is one connection and its calls are streams")
    p.add_argument("--streams", type=int, default=100, metavar="N",
                   help="with --http2: at most N streams of a session open at once (default 100)")


def add_machine_options(p):
    """Options of where and how it runs: cores, CPU cap, priority, binaries, output."""
    p.add_argument("--server-cores", default="0", help="CPUs of the servers (default 0)")
    p.add_argument("--load-cores", default="1",
                   help="CPUs of weft-load (default 1); they may overlap --server-cores when "
                        "--server-cpu caps the servers")
    p.add_argument("--clients", type=int, default=1, metavar="N",
                   help="run each measurement as N weft-load instances (--client I/N, one load "
                        "core each, started together) and merge their reports (weft-load "
                        "merge); default 1: one instance on every load core")
    p.add_argument("--server-cpu", metavar="FRACTION",
                   help="cap every server at FRACTION of one core (0.1 = 10%%%%), each in a "
                        "cgroup of its own with a 10 ms period; 0 or none: no cap. Default: "
                        "%g per load core when the load cores are fewer than 3x the server "
                        "cores, else none; none with --quick" % DEFAULT_CAP_PER_LOAD_CORE)
    p.add_argument("--processors", type=int, default=0,
                   help="weft processors = NGINX workers = H2O threads (default: the number "
                        "of server cores); lighttpd is single-process")
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


def check_servers(p, a):
    """Resolves --servers, --nginx-only and --tuned-nginx into the list a.servers."""
    a.servers = [s.strip() for s in a.servers.split(",") if s.strip()]
    if a.nginx_only:
        a.servers = ["weft", "nginx"]
    bad = [s for s in a.servers if s not in ALL_SERVERS]  # variants are added below
    if bad or not a.servers:
        p.error("--servers: unknown %s (choose from %s)" % (",".join(bad) or "(none)",
                                                            ",".join(ALL_SERVERS)))
    if a.tls:
        if "lighttpd" in a.servers and a.servers != list(DEFAULT_SERVERS):
            p.error("--tls: lighttpd's TLS module is another Debian package; leave it out")
        a.servers = [s for s in a.servers if s != "lighttpd"]
    elif a.tls_resume or a.http2:
        p.error("%s needs --tls" % ("--tls-resume" if a.tls_resume else "--http2"))
    if not 1 <= a.streams <= 1000:
        p.error("--streams %d: between 1 and 1000" % a.streams)
    if a.tuned_nginx:
        a.servers.append("nginx-abort")
    a.weft_settings = {"weft-epoll": {"io": {"backend": '"epoll"'}}}
    for v in a.weft_variant:
        name, _, spec = v.partition(":")
        settings = {}
        for item in filter(None, (x.strip() for x in spec.split(";"))):
            key, eq, value = item.partition("=")
            section, dot, k = key.strip().partition(".")
            if not (name and eq and dot and k and value.strip()):
                p.error("--weft-variant %r: want NAME:SECTION.KEY=VALUE[;...]" % v)
            settings.setdefault(section, {})[k] = value.strip()
        a.weft_settings["weft-" + name] = settings
        KIND["weft-" + name] = "weft"
        a.servers.append("weft-" + name)


def check_workload(p, a):
    """Checks --calls and --rates and fills in the durations of --quick or the defaults."""
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


def check_machine(p, a):
    """Checks the cores, the processors, --nice and --server-cpu."""
    a.server_cpus = parse_cpus(p, "--server-cores", a.server_cores)
    a.load_cpus = parse_cpus(p, "--load-cores", a.load_cores)
    if a.processors <= 0:
        a.processors = len(a.server_cpus)
    if not 1 <= a.repeat <= 20:
        p.error("--repeat %d: between 1 and 20" % a.repeat)
    if not 1 <= a.clients <= 64:
        p.error("--clients %d: between 1 and 64 instances" % a.clients)
    if a.nice < 0 and os.geteuid() != 0:
        p.error("--nice %d needs root" % a.nice)
    a.cap_fraction, a.cap_why = choose_cap(p, a)
    # Shared cores measure the servers only when a cap leaves weft-load its headroom (the
    # several-processors-on-two-cores case: N processors on cores 0-1 capped at N x 10%).
    # The cap must be asked for: a default one is sized for disjoint cores.
    if set(a.server_cpus) & set(a.load_cpus) and not (a.server_cpu and a.cap_fraction):
        p.error("--server-cores and --load-cores must be disjoint, or the servers capped "
                "with --server-cpu")


def choose_cap(p, a):
    """The server CPU cap in cores (0: none) and why it was chosen, from --server-cpu, --quick
    and the ratio of load cores to server cores."""
    text = a.server_cpu
    if text is not None:
        try:
            f = 0.0 if text.strip().lower() == "none" else float(text)
            assert 0 <= f <= len(a.server_cpus) and math.isfinite(f)
        except (ValueError, AssertionError):
            p.error("--server-cpu %s: expected a fraction of one core such as 0.1 (at most %d, "
                    "the server cores), or 0 or none for no cap" % (text, len(a.server_cpus)))
        return f, ("--server-cpu %s" % text) if f else "--server-cpu %s: no cap" % text
    ns, nl = len(a.server_cpus), len(a.load_cpus)
    if a.quick:
        return 0.0, "--quick: no cap unless --server-cpu is given"
    if nl >= 3 * ns:
        return 0.0, "weft-load has %d cores for %d server cores (3x or more): no cap" % (nl, ns)
    f = min(DEFAULT_CAP_PER_LOAD_CORE * nl, float(ns))
    return f, ("default: weft-load has %d core%s for %d server core%s (under 3x), so the servers "
               "get %g of a core per load core and one client core can offer 3x their "
               "saturation rate (--server-cpu 0 turns the cap off)"
               % (nl, "" if nl == 1 else "s", ns, "" if ns == 1 else "s",
                  DEFAULT_CAP_PER_LOAD_CORE))


def parse_cpus(p, name, text):
    """A CPU list such as 0 or 0-7 or 0,2, checked against the CPUs this process may use."""
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
    """weft and weft-load: the given ones, else build/release (built when missing)."""
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
    """Generates (or finds up to date) the file set and reads its manifest."""
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


# ---- the CPU cap (cgroups) and the tuned setting -------------------------------------------------

def cap_quota(fraction):
    """(quota_us, period_us) for `fraction` of one core: a 10 ms period, longer only where the
    quota would fall under the kernel's 1 ms minimum."""
    period = CAP_PERIOD_US
    if fraction * period < CAP_MIN_QUOTA_US:
        period = int(math.ceil(CAP_MIN_QUOTA_US / fraction))
    return int(round(fraction * period)), period


def cgroup_mounts():
    """(type, mount point, mount options) of every cgroup file system, from /proc/mounts."""
    out = []
    for line in read_text("/proc/mounts").splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
            out.append((fields[2], fields[1], fields[3].split(",")))
    return out


def cpu_hierarchies():
    """Where a cpu cgroup can be made, v2 first: ([(version, mount)], why the others cannot)."""
    v2, v1, notes = [], [], []
    for kind, mount, opts in cgroup_mounts():
        if kind == "cgroup2":
            ctl = read_text(os.path.join(mount, "cgroup.controllers")).split()
            if "cpu" in ctl:
                v2.append(("v2", mount))
            else:
                notes.append("v2 %s has no cpu controller (it has: %s)"
                             % (mount, " ".join(ctl) or "none"))
        elif "cpu" in opts:
            v1.append(("v1", mount))
    if not v1:
        notes.append("no cgroup v1 hierarchy with the cpu controller in /proc/mounts")
    return v2 + v1, notes


class CpuCap:
    """One cgroup capping one server at `fraction` of a core: made, joined, read, removed."""

    def __init__(self, version, mount, name, fraction):
        self.version, self.mount, self.fraction = version, mount, fraction
        self.path = os.path.join(mount, name)
        self.quota_us, self.period_us = cap_quota(fraction)
        # v1: a thread id to `tasks` (the forked child is one thread); v2: a process id.
        self.join_file = os.path.join(self.path, "tasks" if version == "v1" else "cgroup.procs")

    def create(self):
        """Makes the group and sets its quota; raises OSError, leaving no group behind."""
        if self.version == "v2":
            ctl = os.path.join(self.mount, "cgroup.subtree_control")
            if "cpu" not in read_text(ctl).split():
                write_text(ctl, "+cpu")
        os.mkdir(self.path)
        try:
            if self.version == "v2":
                write_text(os.path.join(self.path, "cpu.max"),
                           "%d %d" % (self.quota_us, self.period_us))
            else:
                write_text(os.path.join(self.path, "cpu.cfs_period_us"), str(self.period_us))
                write_text(os.path.join(self.path, "cpu.cfs_quota_us"), str(self.quota_us))
        except OSError:
            os.rmdir(self.path)
            raise

    def join(self):
        """Moves the calling process into the group: a preexec_fn, so that the server, its
        threads and its children (NGINX's workers) start inside."""
        write_text(self.join_file, str(os.getpid()))

    def pids(self):
        """The processes in the group."""
        text = read_text(os.path.join(self.path, "cgroup.procs"))
        return {int(x) for x in text.split() if x.isdigit()}

    def stat(self):
        """CFS periods, throttled periods and throttled microseconds so far."""
        kv = {}
        for line in read_text(os.path.join(self.path, "cpu.stat")).splitlines():
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                kv[k] = int(v)
        us = kv["throttled_usec"] if "throttled_usec" in kv else kv.get("throttled_time", 0) / 1000
        return {"periods": kv.get("nr_periods", 0), "throttled": kv.get("nr_throttled", 0),
                "throttled_us": us}

    def remove(self):
        """Removes the group, moving out any process left in it; bounded to about 2 s."""
        for _ in range(40):
            if not os.path.isdir(self.path):
                return
            try:
                os.rmdir(self.path)
                return
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
            for pid in self.pids():
                with contextlib.suppress(OSError):
                    write_text(os.path.join(self.mount, "cgroup.procs"), str(pid))
            time.sleep(0.05)
        raise RuntimeError("cannot remove %s: processes %s are still in it"
                           % (self.path, sorted(self.pids())))


def remove_stale(mount):
    """Removes the empty groups left by earlier runs that were killed (their PID is gone)."""
    for entry in sorted(os.listdir(mount))[:1000]:
        owner = entry[len(CGROUP_PREFIX):].split("-", 1)[0]
        if not entry.startswith(CGROUP_PREFIX) or not owner.isdigit():
            continue
        if os.path.exists("/proc/%s" % owner) or not os.path.isdir(os.path.join(mount, entry)):
            continue
        try:
            os.rmdir(os.path.join(mount, entry))
            log("removed the cgroup %s of an earlier run" % os.path.join(mount, entry))
        except OSError as e:
            log("left the cgroup %s of an earlier run: %s" % (os.path.join(mount, entry),
                                                             e.strerror or e))


def make_caps(a, names):
    """One capped cgroup per server ({} without a cap), each removed at cleanup. Raises
    SetupError naming every hierarchy tried when none can be written."""
    if not a.cap_fraction:
        return {}
    found, tried = cpu_hierarchies()
    for version, mount in found:
        with contextlib.suppress(OSError):
            remove_stale(mount)
        caps = {}
        try:
            for n in names:
                cap = CpuCap(version, mount, "%s%d-%s" % (CGROUP_PREFIX, os.getpid(), n),
                             a.cap_fraction)
                cap.create()
                at_cleanup(cap.remove)
                caps[n] = cap
            return caps
        except OSError as e:
            tried.append("%s %s: %s" % (version, cap.path, e.strerror or e))
            for c in caps.values():
                c.remove()
    raise SetupError("--server-cpu %g: no writable cpu cgroup; tried: %s"
                     % (a.cap_fraction, "; ".join(tried)))


def describe_cap(a, caps):
    """The cap as recorded in runs.json's conditions."""
    if not caps:
        return {"fraction": 0.0, "why": a.cap_why}
    c = next(iter(caps.values()))
    return {"fraction": a.cap_fraction, "why": a.cap_why, "cgroup": c.version,
            "quota_us": c.quota_us, "period_us": c.period_us,
            "groups": {n: cap.path for n, cap in caps.items()}}


def cap_text(cap):
    """The cap in a few words, for the log, the plots and summary.md."""
    if not cap["fraction"]:
        return "servers uncapped (%s)" % cap["why"]
    return ("servers capped at %g core each (cgroup %s, %d us per %d us period; %s)"
            % (cap["fraction"], cap["cgroup"], cap["quota_us"], cap["period_us"], cap["why"]))


class Sysctl:
    """One kernel setting under /proc/sys, set for a while and put back."""

    def __init__(self, name):
        self.name = name
        self.path = "/proc/sys/" + name.replace(".", "/")
        self.saved = None
        self.previous = None  # the value found at check()

    def read(self):
        """The current value; raises OSError."""
        with open(self.path) as f:
            return f.read().strip()

    def check(self):
        """Notes the current value after writing it back: raises OSError unless writable."""
        self.previous = self.read()
        write_text(self.path, self.previous)

    def set(self, value):
        """Sets `value`, keeping the value found for restore()."""
        if self.saved is None:
            self.saved = self.read()
        write_text(self.path, value)

    def restore(self):
        """Puts back the value found by the first set() since the last restore()."""
        if self.saved is not None:
            write_text(self.path, self.saved)
            self.saved = None


def tuned_sysctl(names):
    """The setting nginx-abort runs with, checked writable and restored at cleanup; None
    without nginx-abort. Raises SetupError when it cannot be written."""
    if "nginx-abort" not in names:
        return None
    s = Sysctl(TUNED_SYSCTL[0])
    try:
        s.check()
    except OSError as e:
        raise SetupError("--tuned-nginx: cannot write %s (%s); it needs root"
                         % (s.path, e.strerror or e)) from None
    at_cleanup(s.restore)
    return s


# ---- servers -----------------------------------------------------------------------------------

def make_certificate(work):
    """Makes the run's certificate in `work`: ECDSA P-256, self-signed for 127.0.0.1, as the
    TLS targets specify; returns (certificate, key) paths, readable by peers that drop
    privileges. Raises SetupError when openssl fails."""
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError("openssl could not make the run's certificate: %s" % r.stderr.strip())
    os.chmod(key, 0o644)
    return cert, key


def tls_config(kind, text, port, tls, http2=False):
    """Server configuration `text` of a `kind` made to speak TLS only on `port`, with the
    certificate and key `tls`; `http2`: HTTP/2 offered by ALPN too (H2O and weft offer it
    whenever they speak TLS)."""
    cert, key = tls
    if kind == "weft":
        return merge_toml(text, {"server": {"listen": "[]",
                                            "listen_tls": '["127.0.0.1:%d"]' % port},
                                 "tls": {"certificate": '"%s"' % cert, "key": '"%s"' % key}})
    if kind == "nginx":
        listen = "listen 127.0.0.1:%d " % port
        assert listen in text
        return text.replace(listen, listen + ("ssl http2 " if http2 else "ssl ")).replace(
            "http {\n", "http {\n  ssl_certificate %s; ssl_certificate_key %s;\n" % tls)
    if kind == "h2o":
        listen = "  port: %d\n" % port
        assert listen in text
        return text.replace(listen, listen + "  ssl:\n    certificate-file: %s\n"
                            "    key-file: %s\n" % tls)
    raise SetupError("%s: no TLS configuration here" % kind)


def free_port():
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def somaxconn():
    """net.core.somaxconn, the kernel's cap on listen backlogs (4096 when unreadable)."""
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


def weft_config(d, port, root, lim, access_log, settings=None):
    """weft's TOML configuration (and its mime.types file in `d`), with `settings`
    ({section: {key: TOML value}}) replacing or adding keys."""
    mime = os.path.join(d, "mime.types")
    with open(mime, "w") as f:
        for ext, t in MIME.items():
            f.write("%s %s\n" % (t, ext))
    text = """[server]
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
body = "auto"
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
    return merge_toml(text, settings or {})


def merge_toml(text, settings):
    """`text` (flat TOML: [section] headers and key = value lines) with `settings` applied:
    existing keys replaced, new keys and sections appended."""
    out, section, done, sections = [], None, set(), set()

    def flush(sec):
        """Appends the keys of `sec` that the text did not have."""
        for k, v in settings.get(sec, {}).items():
            if (sec, k) not in done:
                out.append("%s = %s" % (k, v))
                done.add((sec, k))

    for line in text.splitlines():
        if line.startswith("["):
            flush(section)
            section = line.strip("[] ")
            sections.add(section)
        else:
            key = line.partition("=")[0].strip()
            if key in settings.get(section, {}):
                line = "%s = %s" % (key, settings[section][key])
                done.add((section, key))
        out.append(line)
    flush(section)
    for sec in settings:
        if sec not in sections:
            out.append("[%s]" % sec)
            flush(sec)
    return "\n".join(out) + "\n"


def nginx_config(d, port, root, lim, access_log, deferred=False):
    """NGINX's configuration, run from folder `d` (nginx-abort uses it too); `deferred`: its
    listener defers the accept until data arrives."""
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
       d, d, d, d, d, types, port, lim.backlog,
       (" reuseport" if lim.processors > 1 else "") + (" deferred" if deferred else ""), root)


def h2o_config(d, port, root, lim, access_log):
    """H2O's YAML configuration."""
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
    """lighttpd's configuration."""
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
    """One server process tree, started pinned to the server cores (and inside its cgroup when
    capped) from its own folder."""

    CONFIGS = {"weft": weft_config, "nginx": nginx_config, "h2o": h2o_config,
               "lighttpd": lighttpd_config}

    def __init__(self, name, work, a, fileset, lim, weft_bin, cap=None, sysctl=None):
        self.name, self.a, self.fileset, self.lim = name, a, fileset, lim
        self.kind = KIND.get(name, name)
        self.cap, self.sysctl = cap, sysctl
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o1777)  # peers that drop privileges write their logs here
        self.port = free_port()
        self.proc = None
        self.restarts = 0
        self.weft_bin = weft_bin
        extra = {"settings": a.weft_settings.get(name)} if self.kind == "weft" else {}
        if name == "nginx-deferred":
            extra = {"deferred": True}
        conf = self.CONFIGS[self.kind](self.dir, self.port, fileset["dir"], lim,
                                       a.access_log == "on", **extra)
        if a.tls:
            conf = tls_config(self.kind, conf, self.port, a.tls_files, a.http2)
        ext = {"weft": "toml", "nginx": "conf", "h2o": "conf", "lighttpd": "conf"}[self.kind]
        self.conf = os.path.join(self.dir, "%s.%s" % (name, ext))
        with open(self.conf, "w") as f:
            f.write(conf)

    def argv(self):
        """The server's command line."""
        if self.kind == "weft":
            return [self.weft_bin, "-c", self.conf]
        if self.kind == "nginx":
            return [PEER_BINARIES["nginx"], "-p", self.dir, "-e", self.dir + "/error.log",
                    "-c", self.conf]
        if self.kind == "h2o":
            return [PEER_BINARIES["h2o"], "-c", self.conf]
        return [PEER_BINARIES["lighttpd"], "-D", "-f", self.conf]

    def start(self):
        """Starts the server and waits (10 s at most) until it serves the set's first file."""
        cpus, nofile, nice, cap = self.a.server_cpus, self.lim.nofile, self.a.nice, self.cap

        def child():
            """In the forked child: cgroup, CPUs, descriptors and priority of the server."""
            if cap:
                cap.join()
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
        self.check_capped()

    def check_reply(self):
        """Fetches the most popular file and checks status and length: the config serves the
        set. Raises RuntimeError naming the server when it does not."""
        path, size = self.fileset["probe"]
        if self.a.tls:
            c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=5,
                                            context=ssl._create_unverified_context())
        else:
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

    def check_capped(self):
        """Raises RuntimeError unless every process of the server (NGINX's workers too) is in
        its cgroup."""
        if not self.cap:
            return
        outside = sorted(set(self.pids()) - self.cap.pids())
        if outside:
            raise RuntimeError("%s: processes %s are outside its cgroup %s"
                               % (self.name, outside, self.cap.path))

    @contextlib.contextmanager
    def tuned(self):
        """Holds the server's kernel setting (nginx-abort's) for the duration of a run."""
        if not self.sysctl:
            yield
            return
        self.sysctl.set(TUNED_SYSCTL[1])
        try:
            yield
        finally:
            self.sysctl.restore()

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
        """The last lines of the server's error log and stdout, for messages."""
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
        """Bytes in the server's error log so far."""
        path = os.path.join(self.dir, "error.log")
        return os.path.getsize(path) if os.path.exists(path) else 0

    def stop(self):
        """Stops the process group: SIGTERM, then SIGKILL after 5 s."""
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
        """The server's version line ("unknown" when it gives none)."""
        try:
            if self.kind == "weft":
                r = subprocess.run([self.weft_bin, "--version"], capture_output=True, text=True)
            elif self.kind == "h2o":
                r = subprocess.run([PEER_BINARIES["h2o"], "--version"], capture_output=True,
                                   text=True)
            else:
                r = subprocess.run([PEER_BINARIES[self.kind], "-v"], capture_output=True,
                                   text=True)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "unknown"


# ---- one run -----------------------------------------------------------------------------------

ERROR_CLASSES = ("client-timo", "socket-timo", "connrefused", "connreset", "fd-unavail",
                 "addrunavail", "ftab-full", "other", "http-4xx", "http-5xx", "bad-length")


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
    """The busy share of some CPUs between two cpu_times() samples."""
    d_total = after[1] - before[1]
    return round((after[0] - before[0]) / d_total, 3) if d_total > 0 else None


def loadavg():
    """The 1-minute load average."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def load_argv(a, weft_load, server, rate, duration, timeout, json_path):
    """weft-load's command line for one measurement (one instance's, without --client)."""
    argv = [weft_load, "--server", "127.0.0.1", "--port", str(server.port),
            "--zipf", repr(a.zipf), "--files", a.fileset_info["manifest"],
            "--num-calls", "%d..%d" % (a.calls_min, a.calls_max), "--rate", repr(rate),
            "--duration", repr(duration), "--timeout", repr(timeout), "--seed", str(a.seed),
            "--json", json_path, "--quiet"]
    if a.tls:
        argv.append("--tls")
        if a.tls_resume:
            argv.append("--tls-resume")
        if a.http2:
            argv += ["--http2", "--streams", str(a.streams)]
    return argv


def run_load(a, weft_load, server, rate, duration, timeout, json_path):
    """Runs weft-load once against `server` (with --clients N: N instances of one test, each
    on its own load core, merged by `weft-load merge`): (its JSON report, its command line)."""
    argv = load_argv(a, weft_load, server, rate, duration, timeout, json_path)
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

    def child(cpus):
        """In the forked child: CPUs, descriptors and priority of weft-load."""
        os.sched_setaffinity(0, cpus)
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        if a.nice:
            os.nice(a.nice)

    # The run's own limit: the duration, every session's timeout, and room to spare.
    limit = duration + 10 * timeout + 30
    if a.clients <= 1:
        argv += ["--threads", str(len(a.load_cpus))]
        r = subprocess.run(argv, capture_output=True, text=True,
                           preexec_fn=lambda: child(a.load_cpus), timeout=limit)
        failed = r.returncode != 0 or not os.path.exists(json_path)
        stderr = r.stderr
    else:
        parts, procs = [], []
        start = time.time() + 1.0  # every instance started and set up by then
        for i in range(a.clients):
            part = "%s.client%d" % (json_path, i)
            one = [part if x == json_path else x for x in argv]
            one += ["--client", "%d/%d" % (i, a.clients), "--start-at", "%.3f" % start,
                    "--no-clock-check"]  # one machine, one clock
            cpu = sorted(a.load_cpus)[i % len(a.load_cpus)]
            procs.append(subprocess.Popen(one, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True,
                                          preexec_fn=lambda c=cpu: child({c})))
            parts.append(part)
        stderr = "".join(p.communicate(timeout=limit)[1] for p in procs)
        failed = any(p.returncode != 0 for p in procs)
        if not failed:
            m = subprocess.run([weft_load, "merge", "--quiet", "--json", json_path] + parts,
                               capture_output=True, text=True, timeout=60)
            failed, stderr = m.returncode != 0, stderr + m.stderr
        argv = argv + ["--client", "I/%d" % a.clients]
    if failed or not os.path.exists(json_path):
        raise RuntimeError("weft-load failed: %s\n%s" % (" ".join(argv), stderr.strip()[-2000:]))
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


def ensure_running(server):
    """Restarts `server` when it died or stopped accepting; returns true when it did."""
    if server.alive() and server.responsive():
        return False
    log("  ! %s is %s: restarting it. Its log:\n%s"
        % (server.name, "not accepting connections" if server.alive() else "not running",
           server.log_tail()))
    server.stop()
    server.start()
    server.restarts += 1
    return True


def sample(a, server):
    """What is read around a run: load, error log, core and server CPU times, cgroup stats."""
    return {"loadavg": loadavg(), "error_log": server.error_log_size(),
            "cores": (cpu_times(a.server_cpus), cpu_times(a.load_cpus)),
            "cpu_s": server.cpu_seconds(), "cap": server.cap.stat() if server.cap else None}


def measure(a, weft_load, server, rate, duration, timeout, json_path):
    """One run of weft-load against `server`: a row of figures, judged valid or not."""
    restarted = ensure_running(server)
    s0 = sample(a, server)
    with server.tuned():
        j, argv = run_load(a, weft_load, server, rate, duration, timeout, json_path)
    s1 = sample(a, server)
    row = {"server": server.name, "offered_sessions_per_s": rate,
           "offered_requests_per_s": round(rate * a.mean_calls, 1), "duration_s": duration}
    row.update(reply_columns(j, duration))
    row.update(server_columns(a, server, j, s0, s1))
    row.update(client_columns(a, j, duration))
    row.update(cap_columns(server, s0, s1))
    row.update({"loadavg_1m_before": s0["loadavg"], "server_restarted": restarted,
                "server_alive_after": server.alive(),
                "server_error_log_bytes": server.error_log_size() - s0["error_log"],
                "weft_load": " ".join(argv)})
    row.update(judge(row))
    if not row["server_alive_after"]:
        log("  ! %s died during the run at %s sessions/s. Its log:\n%s"
            % (server.name, rate, server.log_tail()))
    return row


def reply_columns(j, duration):
    """Sessions, replies, errors and latency of a run, from weft-load's report."""
    err = j["errors"]
    errors = err["total"] + err["http-4xx"] + err["http-5xx"] + err["bad-length"]
    started = j["sessions"]["started"] or j["connections"]["total"]
    lat = j["latency_ms"]
    row = {
        "sessions": started,
        "sessions_failed": j["sessions"]["failed"],
        "requests": j["requests"]["total"],
        "replies": j["replies"]["total"],
        "replies_2xx": j["replies"]["status"]["2xx"],
        "reply_rate": round(reply_rate(j, duration), 1),
        "error_rate": round(min(1.0, errors / started) if started else 0.0, 5),
        "errors": errors,
        "p50_ms_from_schedule": lat["from_schedule"]["p50"],
        "p99_ms_from_schedule": lat["from_schedule"]["p99"],
        "p50_ms_from_send": lat["from_send"]["p50"],
        "p99_ms_from_send": lat["from_send"]["p99"],
        "test_duration_s": round(j["test_duration_s"], 3),
    }
    for c in ERROR_CLASSES:
        row["err_" + c.replace("-", "_")] = err[c]
    return row


def server_columns(a, server, j, s0, s1):
    """The server's CPU time over the run, per reply and per core, and the cores' busy share."""
    cpu = s1["cpu_s"] - s0["cpu_s"]
    wall = max(j["test_duration_s"], 1e-9)
    replies = j["replies"]["total"]
    return {
        "server_cpu_s": round(cpu, 3),
        "server_cpu_us_per_reply": round(1e6 * cpu / replies, 2) if replies else None,
        "server_util": round(cpu / wall / len(a.server_cpus), 3),
        # Busy share of the server's and the load's CPUs over the run, whoever used them:
        # well above server_util / client_util means other work shared the cores.
        "server_cores_busy": busy_share(s0["cores"][0], s1["cores"][0]),
        "load_cores_busy": busy_share(s0["cores"][1], s1["cores"][1]),
    }


def client_columns(a, j, duration):
    """weft-load's own CPU time and lateness: whether the client kept up with the schedule."""
    cpu = j["cpu"]["user_s"] + j["cpu"]["system_s"]
    wall = max(j["test_duration_s"], 1e-9)
    # Over the offered seconds, not the whole run: the drain after the schedule (sessions
    # waiting for replies or timeouts) is mostly idle and would dilute the share. Its CPU is
    # still counted, so the share errs high, on the safe side.
    offered = max(min(duration, wall), 1e-9)
    lag = j["schedule_lag_ms"]
    started = j["sessions"]["started"] or lag.get("sessions") or 0
    return {
        "client_cpu_s": round(cpu, 3),
        "client_util": round(cpu / wall / len(a.load_cpus), 3),
        "client_cpu_share": round(cpu / offered / len(a.load_cpus), 3),
        "schedule_lag_max_ms": lag["max"],
        "schedule_lag_mean_ms": lag["mean"],
        "late_sessions": lag["late_sessions"],
        "late_share": round(lag["late_sessions"] / started, 5) if started else 0.0,
        # Systematically late, not a hiccup of a shared core: the client limited the run.
        "client_behind": lag["mean"] > CLIENT_BEHIND_MEAN_LAG_MS,
    }


def cap_columns(server, s0, s1):
    """The cap of the server and its cgroup's periods and throttling over the run."""
    if not server.cap:
        return {"cpu_cap": 0.0, "cap_periods": None, "throttled_periods": None,
                "throttled_ms": None}
    c0, c1 = s0["cap"], s1["cap"]
    return {"cpu_cap": server.cap.fraction, "cap_periods": c1["periods"] - c0["periods"],
            "throttled_periods": c1["throttled"] - c0["throttled"],
            "throttled_ms": round((c1["throttled_us"] - c0["throttled_us"]) / 1000.0, 1)}


def judge(row):
    """Whether the row measures the server: weft-load kept within its CPU and its schedule."""
    why = []
    if row["client_cpu_share"] > CLIENT_CPU_MAX:
        why.append("client CPU %.0f%% of its cores > %.0f%%"
                   % (100 * row["client_cpu_share"], 100 * CLIENT_CPU_MAX))
    if row["late_share"] > LATE_SHARE_MAX:
        why.append("%.1f%% of sessions started > 1 ms late" % (100 * row["late_share"]))
    if row["client_behind"]:
        why.append("sessions started %.1f ms late on average" % row["schedule_lag_mean_ms"])
    return {"valid": not why, "invalid_reason": "; ".join(why)}


# ---- the sweep ---------------------------------------------------------------------------------

def nice_rate(x, up=False):
    """Rounds a rate to two significant figures (to the nearest 5 below 100); `up`: never
    below x."""
    if x < 100:
        r = max(5.0, round(x / 5) * 5.0)
        return r + 5.0 if up and r < x else r
    mag = 10 ** (int(math.log10(x)) - 1)
    r = float(round(x / mag) * mag)
    return r + mag if up and r < x else r


def client_limited(row):
    """Whether weft-load, not the server, limited a row: too busy or systematically late (a
    few late sessions alone are the noise of a shared core)."""
    return row["client_cpu_share"] > CLIENT_CPU_MAX or row["client_behind"]


def calibrate(a, weft_load, servers, tmp):
    """A doubling ramp per server: returns (probes, {server: saturation estimate in sessions/s,
    from the probes weft-load did not limit})."""
    probes, est = [], {}
    for s in servers:
        mine = ramp(a, weft_load, s, tmp)
        probes += mine
        kept = [r for r in mine if not client_limited(r)] or mine
        est[s.name] = max(r["reply_rate"] for r in kept) / a.mean_calls
    return probes, est


def ramp(a, weft_load, s, tmp):
    """One server's ramp, 500 sessions/s doubled up to 128000 at most: its probe rows. It stops
    once the server fails sessions or falls behind, or weft-load limited the row."""
    rows, rate = [], 500.0
    while rate <= MAX_RATE:
        row = measure(a, weft_load, s, rate, 2.0, 1.0,
                      os.path.join(tmp, "calibrate-%s-%g.json" % (s.name, rate)))
        row["phase"] = "calibration"
        rows.append(row)
        kept_up = (row["reply_rate"] >= 0.9 * row["offered_requests_per_s"]
                   and row["error_rate"] <= 0.02 and not client_limited(row))
        log("  calibrate %-11s %7.0f sessions/s: %8.0f replies/s, errors %5.1f%%%s%s"
            % (s.name, rate, row["reply_rate"], 100 * row["error_rate"],
               "" if kept_up else "  (saturated)",
               "" if row["valid"] else "  [invalid: %s]" % row["invalid_reason"]))
        time.sleep(a.settle)
        if not kept_up:
            break
        rate *= 2
    return rows


def sweep_rates(a, est):
    """The calibrated sweep: 0.3x to 2x the fastest server's estimate, and up to 3.3x NGINX's
    (the fastest server's without NGINX), so the overload side reaches 3x S."""
    best = max(max(est.values()), 10.0)
    ref = est.get("nginx") or best
    lo, hi = 0.3 * best, min(max(2.0 * best, 1.1 * REACH * ref), MAX_RATE)
    return sorted({nice_rate(lo + i * (hi - lo) / (a.steps - 1)) for i in range(a.steps)})


def run_round(a, weft_load, servers, rate, index, rows, tmp, phase):
    """a.repeat runs per server at `rate`, the servers alternated inside each repetition, in
    an order rotated by `index` and reversed every other repetition (so no server always
    follows the same one); appends the rows."""
    k = index % len(servers)
    order = servers[k:] + servers[:k]
    for rep in range(a.repeat):
        for pos, s in enumerate(order if rep % 2 == 0 else order[::-1]):
            run_one(a, weft_load, s, rate, index, rep, pos, rows, tmp, phase)


def run_one(a, weft_load, s, rate, index, rep, pos, rows, tmp, phase):
    """One measurement of server `s` at `rate`: appends its row and logs it."""
    name = "%s-%g%s.json" % (s.name, rate, "-r%d" % rep if a.repeat > 1 else "")
    row = measure(a, weft_load, s, rate, a.duration, a.timeout, os.path.join(tmp, name))
    row.update({"phase": phase, "rate_index": index, "repeat": rep, "order": pos})
    rows.append(row)
    throttled = ("  throttled %5d/%d" % (row["throttled_periods"], row["cap_periods"])
                 if s.cap else "")
    log("  %-11s %7.0f sessions/s: %8.0f replies/s  errors %6.2f%%  p99 %8.1f ms  "
        "cpu %6.1f us/reply  client %3.0f%%%s%s%s"
        % (s.name, rate, row["reply_rate"], 100 * row["error_rate"],
           row["p99_ms_from_schedule"], row["server_cpu_us_per_reply"] or 0,
           100 * row["client_cpu_share"], throttled,
           "" if row["valid"] else "  [invalid: %s]" % row["invalid_reason"],
           "  [restarted]" if row["server_restarted"] else ""))
    time.sleep(a.settle)


# The figures a row of medians takes the median of (with --repeat), and those whose spread
# (min..max over the repetitions) it keeps beside the median.
MEDIAN_FIELDS = ("reply_rate", "error_rate", "errors", "sessions", "sessions_failed", "requests",
                 "replies", "replies_2xx", "p50_ms_from_schedule", "p99_ms_from_schedule",
                 "p50_ms_from_send", "p99_ms_from_send", "schedule_lag_mean_ms",
                 "schedule_lag_max_ms", "server_cpu_s", "server_cpu_us_per_reply",
                 "server_util", "client_cpu_s", "client_util", "client_cpu_share",
                 "throttled_periods")
SPREAD_FIELDS = ("reply_rate", "error_rate", "p99_ms_from_schedule")


def collapse(rows):
    """One row per (phase, server, rate) of the measured rows: the medians of its valid
    repetitions (of all of them, marked invalid, when fewer than half were valid), with the
    spread of SPREAD_FIELDS as <field>_min and <field>_max and the count as `repeats`. Rows of
    a single repetition come back as they are, with a spread of zero width."""
    groups = {}
    for r in measured(rows):
        groups.setdefault((r["phase"], r["server"], r["offered_sessions_per_s"]), []).append(r)
    out = []
    for group in groups.values():
        ok = [r for r in group if r["valid"]]
        use = ok if 2 * len(ok) >= len(group) else group
        row = dict(use[0])
        for f in MEDIAN_FIELDS:
            vals = [r[f] for r in use if isinstance(r.get(f), (int, float))]
            if vals:
                row[f] = statistics.median(vals)
        for f in SPREAD_FIELDS:
            vals = [r[f] for r in use if isinstance(r.get(f), (int, float))]
            row[f + "_min"], row[f + "_max"] = (min(vals), max(vals)) if vals else (None, None)
        row["valid"] = use is ok and bool(ok)
        row["repeats"] = len(group)
        row["valid_repeats"] = len(ok)
        out.append(row)
    return sorted(out, key=lambda r: (r["rate_index"], r["server"]))


def sweep(a, weft_load, servers, rows, tmp, conditions):
    """Calibration (unless --rates), the sweep, the round at 3x S and the target round:
    returns (calibration probes, summary)."""
    names = [s.name for s in servers]
    rates, probes = a.rate_list, []
    if not rates:
        log("calibration (doubling ramp, 2 s per rate)")
        probes, est = calibrate(a, weft_load, servers, tmp)
        rates = sweep_rates(a, est)
        log("saturation estimates (sessions/s): %s; sweep %s"
            % (", ".join("%s %.0f" % kv for kv in est.items()), ", ".join("%g" % r for r in rates)))
    conditions["rates"] = rates
    for i, rate in enumerate(rates):
        log("rate %d/%d: %g sessions/s (%g requests/s offered)"
            % (i + 1, len(rates), rate, rate * a.mean_calls))
        run_round(a, weft_load, servers, rate, i, rows, tmp, "sweep")
    index = len(rates)
    if not a.rate_list:
        r3 = reach_rate(collapse(rows), names, rates)
        if r3:
            log("reach round: %gx S = %g sessions/s" % (REACH, r3))
            run_round(a, weft_load, servers, r3, index, rows, tmp, "reach")
            index += 1
    r15 = target_rate(collapse(rows), names)
    done = {r["offered_sessions_per_s"] for r in measured(rows)}
    if r15 and not any(abs(r - r15) <= 0.02 * r15 for r in done):
        r15 = nice_rate(r15)
        log("target round: 1.5x NGINX's saturation rate = %g sessions/s" % r15)
        run_round(a, weft_load, servers, r15, index, rows, tmp, "target")
    return probes, summarize(collapse(rows), names, r15, a)


def measured(rows):
    """The rows of the sweep, the reach round and the target round (not the calibration)."""
    return [r for r in rows if r["phase"] in ("sweep", "reach", "target")]


def valid(rows):
    """The measured rows where weft-load kept up: the only ones any figure is taken from."""
    return [r for r in measured(rows) if r["valid"]]


def reference(rows, names):
    """(name, S) of the reference server: NGINX, else the one with the highest S. S is its
    highest offered rate with under 1% errors in a valid row (None without one)."""
    def s_of(n):
        """S of server `n`."""
        ok = [r["offered_sessions_per_s"] for r in valid(rows)
              if r["server"] == n and r["error_rate"] < 0.01]
        return max(ok) if ok else None
    if "nginx" in names:
        return "nginx", s_of("nginx")
    return max(((n, s_of(n)) for n in names), key=lambda x: x[1] or 0, default=(None, None))


def reach_rate(rows, names, rates):
    """A rate at REACH x S when the sweep stayed below it, else None."""
    _, s = reference(rows, names)
    if not s or max(rates) >= 0.98 * REACH * s:
        return None
    return min(nice_rate(REACH * s, up=True), MAX_RATE)


def transient_bound(s, duration, timeout):
    """The offered rate under which a run of `duration` s is too short to show a server that
    queues every connection failing, or None without an S. Why: at x * S offered and S served,
    the listen queue's wait grows by (x - 1) s every second, so it passes the clients'
    `timeout` only after timeout / (x - 1) s; under (1 + 2 * timeout / duration) * S that is
    past the middle of the run, and the row's failures are the overload's transient, not its
    steady state (6 s runs with a 2 s timeout showed NGINX failing 0.3% at 1.33 S, 20 s runs
    36%: docs/benchmarks.md, "Runs long enough to see the queue")."""
    return s * (1 + 2.0 * timeout / duration) if s else None


def reach(rows, names, a):
    """How far the valid rows got, as multiples of S, and under which rate a run of
    a.duration s with a.timeout s clients shows only the transient: for the summary."""
    ref, s = reference(rows, names)
    top = {}
    for n in names:
        mine = [r["offered_sessions_per_s"] for r in valid(rows) if r["server"] == n]
        top[n] = max(mine) if mine else None
    return {"reference": ref, "S_sessions_per_s": s, "wanted_x": REACH,
            "transient_below": transient_bound(s, a.duration, a.timeout),
            "top_valid_sessions_per_s": top,
            "top_valid_x": {n: round(t / s, 2) if t and s else None for n, t in top.items()}}


def saturation(rows, name):
    """The peak reply rate of `name` over the valid rows and where it was reached."""
    mine = [r for r in valid(rows) if r["server"] == name]
    if not mine:
        return None
    peak = max(mine, key=lambda r: r["reply_rate"])
    top = max(r["offered_sessions_per_s"] for r in mine)
    return {"reply_rate": peak["reply_rate"], "offered_sessions_per_s":
            peak["offered_sessions_per_s"], "error_rate": peak["error_rate"],
            "server_util": peak["server_util"], "client_cpu_share": peak["client_cpu_share"],
            "at_top_of_sweep": peak["offered_sessions_per_s"] == top}


def at_rate(rows, name, rate, only_valid=True):
    """The last row of `name` at `rate` (within 2%), valid ones only unless told otherwise."""
    for r in reversed(valid(rows) if only_valid else measured(rows)):
        if r["server"] == name and abs(r["offered_sessions_per_s"] - rate) <= 0.02 * rate:
            return r
    return None


def target_rate(rows, names):
    """1.5x NGINX's saturation rate (sessions/s), or None without NGINX."""
    sat = saturation(rows, "nginx") if "nginx" in names else None
    return 1.5 * sat["offered_sessions_per_s"] if sat else None


def summarize(rows, names, r15, a):
    """Saturation of each server, CPU per reply, the figures at rate r15 (1.5x NGINX's
    saturation rate), the reach of the sweep (with the options `a`: the runs' duration and
    timeout) and the three targets of the issue (reported, not asserted); valid rows only."""
    sat = {n: saturation(rows, n) for n in names}
    cpu = {}
    for n in names:
        eff = [r["server_cpu_us_per_reply"] for r in valid(rows)
               if r["server"] == n and r["server_cpu_us_per_reply"] and r["error_rate"] < 0.01
               and r["reply_rate"] >= 0.95 * r["offered_requests_per_s"]]
        cpu[n] = statistics.median(eff) if eff else None
    summary = {"saturation": sat, "cpu_us_per_reply_unsaturated_median": cpu,
               "reach": reach(rows, names, a),
               "invalid_rows": len(measured(rows)) - len(valid(rows))}
    if r15:
        summary["rate_1_5x_nginx"] = r15
        summary["at_1_5x_nginx"] = {n: at_rate(rows, n, r15) for n in names}
    w, n = sat.get("weft"), sat.get("nginx")
    if w and n:
        summary["targets"] = targets(w, n, summary.get("at_1_5x_nginx", {}))
    elif "weft" in names and "nginx" in names:
        summary["targets_missing"] = "no valid row for %s" % " or ".join(
            x for x, v in (("weft", w), ("NGINX", n)) if not v)
    return summary


def targets(w, n, at):
    """The issue's three targets from weft's and NGINX's saturation and their rows at 1.5x."""
    t = {"saturation_ratio": w["reply_rate"] / n["reply_rate"] if n["reply_rate"] else None}
    t["saturation_met"] = t["saturation_ratio"] is not None and t["saturation_ratio"] >= 1.1
    wr, nr = at.get("weft"), at.get("nginx")
    if wr and nr:
        t["error_rate_weft"], t["error_rate_nginx"] = wr["error_rate"], nr["error_rate"]
        t["error_met"] = wr["error_rate"] <= 0.5 * nr["error_rate"]
        t["weft_vs_own_peak"] = wr["reply_rate"] / w["reply_rate"] if w["reply_rate"] else None
        t["no_collapse_met"] = (t["weft_vs_own_peak"] or 0) >= 0.95
    return t


# ---- outputs -----------------------------------------------------------------------------------

CSV_FIELDS = ["phase", "rate_index", "repeat", "order", "server", "offered_sessions_per_s",
              "offered_requests_per_s", "duration_s", "sessions", "sessions_failed", "requests",
              "replies", "replies_2xx", "reply_rate", "error_rate", "errors"] + \
             ["err_" + c.replace("-", "_") for c in ERROR_CLASSES] + \
             ["p50_ms_from_schedule", "p99_ms_from_schedule", "p50_ms_from_send",
              "p99_ms_from_send", "schedule_lag_mean_ms", "schedule_lag_max_ms", "late_sessions",
              "late_share", "client_behind", "valid", "invalid_reason",
              "server_cpu_s", "server_cpu_us_per_reply", "server_util", "server_cores_busy",
              "cpu_cap", "cap_periods", "throttled_periods", "throttled_ms",
              "client_cpu_s", "client_util", "client_cpu_share", "load_cores_busy",
              "test_duration_s", "loadavg_1m_before", "server_restarted", "server_alive_after",
              "server_error_log_bytes"]
# medians.csv (--repeat): a row of medians per phase, server and rate, with the spread.
MEDIAN_CSV_FIELDS = (["phase", "rate_index", "server", "offered_sessions_per_s",
                      "offered_requests_per_s", "repeats", "valid_repeats", "valid"]
                     + [f for f in MEDIAN_FIELDS]
                     + [f + sfx for f in SPREAD_FIELDS for sfx in ("_min", "_max")])
COLORS = {"weft": "#d62728", "weft-epoll": "#ff7f0e", "nginx": "#1f77b4", "nginx-deferred": "#8c564b",
          "nginx-abort": "#17becf", "h2o": "#2ca02c", "lighttpd": "#9467bd"}
LABELS = {"nginx-abort": "nginx-abort (tcp_abort_on_overflow=1)"}


def write_csv(path, rows, fields=CSV_FIELDS):
    """The rows, one per line, in `fields` order (CSV_FIELDS: one per run)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def write_plot_data(out, rows, names):
    """One data file per server, its invalid rows in a second one: the servers that have any."""
    with_invalid = []
    for n in names:
        mine = sorted((r for r in measured(rows) if r["server"] == n),
                      key=lambda r: r["offered_sessions_per_s"])
        for suffix, part in (("", [r for r in mine if r["valid"]]),
                             ("-invalid", [r for r in mine if not r["valid"]])):
            if suffix and not part:
                continue
            with open(os.path.join(out, "plot-%s%s.tsv" % (n, suffix)), "w") as f:
                f.write("# offered_sessions_per_s offered_requests_per_s reply_rate error_pct "
                        "p99_ms_from_schedule server_cpu_us_per_reply reply_rate_min "
                        "reply_rate_max error_pct_min error_pct_max\n")
                for r in part:
                    lo = r.get("reply_rate_min", r["reply_rate"])
                    hi = r.get("reply_rate_max", r["reply_rate"])
                    elo = r.get("error_rate_min", r["error_rate"])
                    ehi = r.get("error_rate_max", r["error_rate"])
                    f.write("%s\t%s\t%s\t%.4f\t%s\t%s\t%s\t%s\t%.4f\t%.4f\n" % (
                        r["offered_sessions_per_s"], r["offered_requests_per_s"], r["reply_rate"],
                        100 * r["error_rate"], max(r["p99_ms_from_schedule"], 0.001),
                        r["server_cpu_us_per_reply"] or 0, lo, hi, 100 * elo, 100 * ehi))
        if any(not r["valid"] for r in mine):
            with_invalid.append(n)
    return with_invalid


def plot(a, out, rows, names, conditions):
    """Writes the data files and a gnuplot script; runs gnuplot when installed. Returns the
    image files written."""
    with_invalid = write_plot_data(out, rows, names)
    title = ("%s set, Zipf s=%g, %d..%d calls/session, %d server core%s, %s%s"
             % (a.preset, a.zipf, a.calls_min, a.calls_max, len(a.server_cpus),
                "" if len(a.server_cpus) == 1 else "s", conditions,
                ", medians of %d alternated repetitions (bars: min..max)" % a.repeat
                if a.repeat > 1 else ""))

    def series(col, spread=None):
        """The plot clauses of column `col` for every server (and its invalid rows); with
        --repeat, `spread` (the min and max columns) draws the repetitions' range as bars."""
        using, style = "1:%d" % col, "linespoints"
        if spread and a.repeat > 1:
            using, style = "1:%d:%d:%d" % ((col,) + spread), "yerrorlines"
        lines = ["'plot-%s.tsv' using %s with %s lw 2 pt 7 ps 0.8 lc rgb '%s' "
                 "title '%s' noenhanced" % (n, using, style, COLORS.get(n, "#7f7f7f"),
                                            LABELS.get(n, n)) for n in names]
        lines += ["'plot-%s-invalid.tsv' using 1:%d with points pt 6 ps 1.4 lc rgb '%s' "
                  "title '%s: invalid rows (client-limited)' noenhanced" % (n, col, COLORS.get(n, "#7f7f7f"), n)
                  for n in with_invalid]
        return ", ".join(lines)

    charts = [
        ("throughput", "reply rate [replies/s]", "set yrange [0:*]",
         series(3, (7, 8)) + ", 'plot-%s.tsv' using 1:2 with lines dt 2 lc rgb '#888888' "
         "title 'offered requests/s'" % names[0]),
        ("errors", "error rate [% of sessions]", "set yrange [0:*]", series(4, (9, 10))),
        ("p99", "p99 latency from schedule [ms] (log)", "set logscale y", series(5)),
    ]
    with open(os.path.join(out, "plots.gp"), "w") as f:
        f.write("\n".join(gnuplot_script(charts, title) + overload_script(charts, title)) + "\n")
    if not shutil.which("gnuplot"):
        log("gnuplot is not installed: wrote the data and %s/plots.gp, no images" % out)
        return []
    r = subprocess.run(["gnuplot", "plots.gp"], cwd=out, capture_output=True, text=True)
    if r.returncode != 0:
        log("gnuplot failed: %s" % r.stderr.strip())
        return []
    return sorted(f for f in os.listdir(out) if f.endswith((".png", ".svg")))


@functools.lru_cache(maxsize=None)
def have_pngcairo():
    """Whether the installed gnuplot has the pngcairo terminal (asked once per run)."""
    if not shutil.which("gnuplot"):
        return False
    t = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in (t.stdout + t.stderr)


def terminals(height):
    """gnuplot's (PNG, SVG) terminal lines, 960 wide and `height` high: pngcairo where it
    exists."""
    png = ("set terminal pngcairo size 960,%d font 'sans,10'" % height if have_pngcairo()
           else "set terminal png size 960,%d" % height)
    return png, "set terminal svg size 960,%d dynamic font 'sans,11'" % height


def gnuplot_script(charts, title):
    """The lines of a gnuplot script drawing `charts` as PNG and SVG."""
    png, svg = terminals(600)
    heading = {"throughput": "Throughput vs offered rate", "errors": "Error rate vs offered rate",
               "p99": "p99 latency vs offered rate"}
    script = []
    for name, ylabel, extra, plots in charts:
        for term, ext in ((png, "png"), (svg, "svg")):
            script += [term, "set output '%s.%s'" % (name, ext), "unset logscale", "set grid",
                       "set key top left",
                       "set title \"%s\\n%s\" noenhanced" % (heading[name], title),
                       "set xlabel 'offered rate [sessions/s]'", "set ylabel '%s'" % ylabel,
                       "set yrange [*:*]", extra, "plot " + plots, "unset output"]
    return script


def overload_script(charts, title):
    """The lines of a gnuplot script drawing the throughput and error charts of `charts` as
    one figure, one above the other on a shared offered-rate axis (overload.png and .svg), as
    the Cforall thesis shows its webserver against NGINX: goodput and errors read together."""
    by_name = {c[0]: c for c in charts}
    png, svg = terminals(900)
    script = []
    for term, ext in ((png, "png"), (svg, "svg")):
        script += [term, "set output 'overload.%s'" % ext, "unset logscale", "set grid",
                   "set multiplot layout 2,1 title \"Throughput and errors vs offered rate\\n%s\" "
                   "noenhanced" % title]
        for name in ("throughput", "errors"):
            _, ylabel, extra, plots = by_name[name]
            script += ["unset title", "set key top left", "set xlabel 'offered rate [sessions/s]'",
                       "set ylabel '%s'" % ylabel, "set yrange [*:*]", extra, "plot " + plots]
        script += ["unset multiplot", "unset output"]
    return script


def fmt_ratio(x, y):
    """x/y to two decimals, or "-" when either is missing."""
    return "%.2f" % (x / y) if x is not None and y else "-"


def rate_table(a, rows, names):
    """The per-rate table as markdown lines: every measured row, invalid ones marked "!"."""
    peers = [n for n in names if n != "weft"]
    rates = sorted({r["offered_sessions_per_s"] for r in measured(rows)})
    head = ["sessions/s", "requests/s"] + ["%s rep/s (err%%, p99 ms)" % n for n in names]
    if "weft" in names:
        head += ["weft/%s" % p for p in peers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for rate in rates:
        cells = ["%g" % rate, "%g" % (rate * a.mean_calls)]
        got = {n: at_rate(rows, n, rate, only_valid=False) for n in names}
        for n in names:
            r = got[n]
            spread = ""
            if r and r.get("repeats", 1) > 1:
                spread = " [%.0f..%.0f, %.1f..%.1f%%]" % (
                    r["reply_rate_min"], r["reply_rate_max"], 100 * r["error_rate_min"],
                    100 * r["error_rate_max"])
            cells.append("-" if not r else "%.0f (%.1f%%, %.1f)%s%s" % (
                r["reply_rate"], 100 * r["error_rate"], r["p99_ms_from_schedule"], spread,
                "" if r["valid"] else " !"))
        if "weft" in names:
            for p in peers:
                w, o = got["weft"], got[p]
                both = w and o and w["valid"] and o["valid"]
                cells.append(fmt_ratio(w["reply_rate"], o["reply_rate"]) if both else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def saturation_table(names, summary):
    """The saturation table (valid rows only) as markdown lines."""
    sat = summary["saturation"]
    lines = ["| server | saturation: peak replies/s | at sessions/s | weft/server | "
             "server CPU there | server CPU us/reply (unsaturated, median) | at 1.5x NGINX's "
             "saturation rate: replies/s | error rate |", "|---|---|---|---|---|---|---|---|"]
    at = summary.get("at_1_5x_nginx", {})
    for n in names:
        s = sat.get(n)
        if not s:
            lines.append("| %s | - (no valid row) | - | - | - | - | - | - |" % n)
            continue
        r = at.get(n)
        cpu = summary["cpu_us_per_reply_unsaturated_median"].get(n)
        lines.append("| %s | %.0f%s | %g | %s | %.0f%% | %s | %s | %s |" % (
            n, s["reply_rate"], " (top of the valid rows)" if s["at_top_of_sweep"] else "",
            s["offered_sessions_per_s"],
            fmt_ratio(sat["weft"]["reply_rate"], s["reply_rate"]) if sat.get("weft") else "-",
            100 * s["server_util"],
            "%.1f" % cpu if cpu else "-", "%.0f" % r["reply_rate"] if r else "-",
            "%.2f%%" % (100 * r["error_rate"]) if r else "-"))
    return lines


def target_table(summary):
    """The issue's targets as markdown lines (none without weft and NGINX)."""
    t = summary.get("targets")
    if not t:
        # Both ran but one has no valid row: the table still says so, rather than vanish.
        why = summary.get("targets_missing")
        return ["", "| target | result | met |", "|---|---|---|",
                "| saturation throughput >= 1.1x NGINX's | - (%s) | no |" % why] if why else []
    lines = ["", "| target | result | met |", "|---|---|---|",
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


def notes(names, summary, cap):
    """The lines under the tables: the cap, invalid rows, the sweep's reach, the transient
    rows, nginx-abort."""
    out = ["", "- %s." % cap_text(cap)]
    if summary["invalid_rows"]:
        out.append("- ! = invalid row (%d): weft-load used more than %.0f%% of its cores, "
                   "started more than %.0f%% of its sessions over 1 ms late, or %g ms late on "
                   "average; shown, but left out of saturation, targets and summary."
                   % (summary["invalid_rows"], 100 * CLIENT_CPU_MAX, 100 * LATE_SHARE_MAX,
                      CLIENT_BEHIND_MEAN_LAG_MS))
    rc = summary["reach"]
    if rc["S_sessions_per_s"]:
        out.append("- S = %s's highest rate with under 1%% errors: %g sessions/s; highest valid "
                   "rate / S: %s." % (rc["reference"], rc["S_sessions_per_s"], ", ".join(
                       "%s %s" % (n, "-" if x is None else "%.2fx" % x)
                       for n, x in rc["top_valid_x"].items())))
    below = rc["transient_below"]
    if below:
        out.append("- transient rows: under %.0f sessions/s (%.2fx S) a run this short ends "
                   "before a server that queues every connection has made its clients wait "
                   "past their timeout for half the run; there its failure share understates "
                   "the overload (longer --duration moves this bound towards S)."
                   % (below, below / rc["S_sessions_per_s"]))
    if "nginx-abort" in names:
        out.append("- nginx-abort: NGINX with %s=%s during its runs only." % TUNED_SYSCTL)
    return out


def tables(a, rows, names, summary, cap):
    """The per-rate, saturation and target tables and their notes, as markdown lines."""
    return (rate_table(a, rows, names) + [""] + saturation_table(names, summary)
            + target_table(summary) + notes(names, summary, cap))


def write_outputs(a, out, conditions, probes, rows, names, summary):
    """runs.csv, runs.json, the plots and summary.md; prints the tables."""
    write_csv(os.path.join(out, "runs.csv"), rows)
    medians = collapse(rows)
    write_csv(os.path.join(out, "medians.csv"), medians, MEDIAN_CSV_FIELDS)
    with open(os.path.join(out, "runs.json"), "w") as f:
        json.dump({"conditions": conditions, "calibration": probes, "runs": rows,
                   "medians": medians, "summary": summary}, f, indent=1)
    rows = medians + [r for r in rows if r not in measured(rows)]  # figures from the medians
    cap = conditions["cpu_cap"]
    cond_text = "%s, load avg %s-%s" % (
        "CPU cap %g core" % cap["fraction"] if cap["fraction"] else "uncapped",
        conditions["loadavg_start"][0], conditions["loadavg_end"][0])
    images = plot(a, out, rows, names, cond_text)
    lines = tables(a, rows, names, summary, cap)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("Command: `%s` (git %s, %s)\n\n" % (conditions["command"], conditions["git"],
                                                   conditions["date"]))
        f.write("\n".join(lines) + "\n")
    log("")
    log("\n".join(lines))
    log("")
    rc = summary["reach"]
    ref_top = rc["top_valid_x"].get(rc["reference"])
    if rc["S_sessions_per_s"] and (ref_top or 0) < 0.98 * REACH and not a.rate_list:
        log("! the valid rows of %s reach %sx S only, not %gx: weft-load limited the sweep (a "
            "lower --server-cpu leaves it more room)" % (rc["reference"], ref_top, REACH))
    log("results: %s (runs.csv, runs.json, summary.md, %s); %.0f s, load average %s at the "
        "start, %s at the end" % (out, ", ".join(images) or "no plots", conditions["elapsed_s"],
                                  conditions["loadavg_start"][0], conditions["loadavg_end"][0]))


# ---- main --------------------------------------------------------------------------------------

def wait_for_load(limit):
    """Waits, 15 minutes at most, for the 1-minute load average to fall to `limit`."""
    deadline = time.monotonic() + 900
    while loadavg() > limit and time.monotonic() < deadline:
        log("load average %.2f > %.2f: waiting" % (loadavg(), limit))
        time.sleep(30)


def installed(servers):
    """The servers whose binaries are installed; the others are left out with a note."""
    names = []
    for n in servers:
        binary = PEER_BINARIES.get(KIND.get(n, n))
        if binary and not os.access(binary, os.X_OK):
            log("%s is not installed (%s): left out" % (n, binary))
            continue
        names.append(n)
    return names


def describe(a, argv, fs, lim, caps, tuned):
    """The run's conditions, for runs.json."""
    c = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + argv),
        "git": subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                              capture_output=True, text=True).stdout.strip(),
        "cpus_online": os.cpu_count(), "server_cpus": a.server_cpus, "load_cpus": a.load_cpus,
        "loadavg_start": read_text("/proc/loadavg").split()[:3],
        "kernel": os.uname().release,
        "fileset": {k: fs[k] for k in ("dir", "header", "files", "bytes", "zipf_mean_bytes")},
        "limits": vars(lim), "options": {k: v for k, v in vars(a).items()
                                         if k not in ("fileset_info",)},
        "cpu_cap": describe_cap(a, caps),
        "validity": {"client_cpu_share_max": CLIENT_CPU_MAX, "late_share_max": LATE_SHARE_MAX,
                     "late_threshold_ms": 1.0, "mean_lag_max_ms": CLIENT_BEHIND_MEAN_LAG_MS},
    }
    if tuned:
        c["tuned_nginx"] = {"sysctl": tuned.name, "value": TUNED_SYSCTL[1],
                            "previous": tuned.previous, "during": "nginx-abort's runs only"}
    return c


def start_servers(a, names, work, fs, lim, weft_bin, caps, tuned, servers):
    """Starts every server (appending to `servers` as it goes), logs where they run and
    returns their versions."""
    for n in names:
        s = Server(n, work, a, fs, lim, weft_bin, caps.get(n),
                   tuned if n == "nginx-abort" else None)
        s.start()
        servers.append(s)
    log("servers on CPUs %s (%d processors/workers/threads), weft-load on CPUs %s; %s: "
        "%d files, %.1f MB, Zipf s=%g mean reply body %.0f bytes; sessions of %d..%d calls"
        % (a.server_cpus, a.processors, a.load_cpus, a.preset, fs["files"], fs["bytes"] / 1e6,
           a.zipf, fs["zipf_mean_bytes"], a.calls_min, a.calls_max))
    versions = {s.name: s.version() for s in servers}
    for s in servers:
        log("  %-11s port %d, %s%s" % (s.name, s.port, versions[s.name],
                                       ", cgroup %s" % s.cap.path if s.cap else ""))
    return versions


def stop_servers(servers, out, work):
    """Stops the servers, keeps their logs and configurations in `out`, removes `work`."""
    for s in servers:
        s.stop()
    for s in servers:
        for name in ("error.log", "stdout.log"):
            src = os.path.join(s.dir, name)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(out, "%s-%s" % (s.name, name)))
        with open(os.path.join(out, "%s-config.txt" % s.name), "w") as f:
            f.write(read_text(s.conf))
    shutil.rmtree(work, ignore_errors=True)


def run(a, argv):
    """Setup, the sweep and the outputs; raises SetupError when a precondition fails."""
    started = time.monotonic()
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.abspath(a.out or os.path.join(ROOT, "results", stamp))
    os.makedirs(out, exist_ok=True)
    weft_bin, weft_load = find_binaries(a)
    a.fileset_info = fs = find_fileset(a)
    names = installed(a.servers)
    tuned = tuned_sysctl(names)
    caps = make_caps(a, names)
    if a.wait_load is not None:
        wait_for_load(a.wait_load)
    lim = Limits(fs["files"], a.processors)
    conditions = describe(a, argv, fs, lim, caps, tuned)
    log(cap_text(conditions["cpu_cap"]))
    work = tempfile.mkdtemp(prefix="weft-compare-")
    os.chmod(work, 0o755)
    a.tls_files = make_certificate(work) if a.tls else None
    servers, rows = [], []
    jdir = os.path.join(out, "loadgen")  # weft-load's JSON report of every run
    os.makedirs(jdir, exist_ok=True)
    try:
        conditions["versions"] = start_servers(a, names, work, fs, lim, weft_bin, caps, tuned,
                                               servers)
        probes, summary = sweep(a, weft_load, servers, rows, jdir, conditions)
    finally:
        stop_servers(servers, out, work)
    conditions["loadavg_end"] = read_text("/proc/loadavg").split()[:3]
    conditions["elapsed_s"] = round(time.monotonic() - started, 1)
    conditions["restarts"] = {s.name: s.restarts for s in servers}
    write_outputs(a, out, conditions, probes, rows, names, summary)
    return 0


def main(argv):
    """The command: exit status 0, or 2 with one line when a precondition fails."""
    a = parse_args(argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    atexit.register(cleanup)
    try:
        return run(a, argv)
    except SetupError as e:
        print("compare.py: %s" % e, file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        print("compare.py: interrupted (servers stopped; cgroups and settings being put back)",
              file=sys.stderr, flush=True)
        return 130
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
