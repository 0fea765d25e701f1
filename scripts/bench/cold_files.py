#!/usr/bin/env python3
"""The low-memory experiment: a file set several times larger than the server's memory, so
that most bodies come from the disk, and a second client that fetches one small hot file at
a fixed rate over keep-alive. It shows whether a server blocks on the disk: while cold files
are read, the hot file's latency should stay low.

Each server runs pinned to one core (--server-cpu) inside a memory cgroup (--memory; v1
memory.limit_in_bytes, or v2 memory.max), after the page cache was dropped (page cache is
charged to the cgroup that reads it, so its files compete for that memory). weft-load
(--load-cpu) offers open-loop sessions of 1..3 calls drawn with Zipf popularity, and the hot
client, a thread of this script on the same core, sends GET /hot.txt every 1/--hot-rate
seconds on one connection and times each reply from its scheduled send.

Servers: weft-auto (io.body = "auto"; -inline: with io.cold_offload = false; -wN: with
io.iowq_bounded = N), weft-sendfile, weft-splice, nginx (sendfile on) and nginx-aio (aio
threads, NGINX's thread pool of 32). Writes results.json, results.md (the table), plot data
and throughput/hot-p99 images (gnuplot) under --out.

Needs root (drop_caches, cgroups). Example:
  sudo scripts/bench/cold_files.py --rates 800,1500,3000 --duration 8 --out /tmp/cold
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
SERVERS = ["weft-auto", "weft-sendfile", "weft-splice", "nginx", "nginx-aio"]
HOT_BODY = b"h" * 100


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rates", default="800,1500,3000", help="sessions/s, comma-separated")
    p.add_argument("--duration", type=float, default=8.0, help="seconds per run")
    p.add_argument("--servers", default=",".join(SERVERS))
    p.add_argument("--rounds", type=int, default=1, help="repeats of the whole sweep")
    p.add_argument("--memory", default="256M", help="the servers' memory limit")
    p.add_argument("--files", type=int, default=20000, help="files in the set")
    p.add_argument("--total-bytes", default="1G", help="size of the set")
    p.add_argument("--zipf", type=float, default=0.6)
    p.add_argument("--hot-rate", type=float, default=200.0, help="hot requests per second")
    p.add_argument("--timeout", type=float, default=5.0, help="weft-load's call timeout, s")
    p.add_argument("--warmup", type=float, default=1.0,
                   help="seconds at the start left out of every figure (the caches were dropped)")
    p.add_argument("--backend", default="io_uring", help="weft's io.backend")
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--load-cpu", type=int, default=1)
    p.add_argument("--set-dir", default="/var/tmp/weft-cold-set",
                   help="where the file set is generated (a disk, not a tmpfs)")
    p.add_argument("--out", default="/tmp/weft-cold-files")
    p.add_argument("--build", default=os.path.join(SOURCE, "build", "release"))
    return p.parse_args()


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("IB")
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


class MemoryGroup:
    """A memory cgroup (v1 where the memory controller is mounted there, else v2)."""

    def __init__(self, limit):
        v1 = "/sys/fs/cgroup/memory"
        if os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
            self.path = os.path.join(v1, "weft-cold-%d" % os.getpid())
            self.limit_file, self.peak_file = "memory.limit_in_bytes", "memory.max_usage_in_bytes"
        else:
            self.path = "/sys/fs/cgroup/weft-cold-%d" % os.getpid()
            self.limit_file, self.peak_file = "memory.max", "memory.peak"
        try:
            os.mkdir(self.path)
            with open(os.path.join(self.path, self.limit_file), "w") as f:
                f.write(str(limit))
        except OSError as e:
            sys.exit("cold_files: cannot make a memory cgroup at %s (%s); run as root" %
                     (self.path, e))

    def add_self(self):
        """Moves the calling process (a server's preexec_fn) into the group."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def reset_peak(self):
        try:
            with open(os.path.join(self.path, self.peak_file), "w") as f:
                f.write("0")
        except OSError:
            pass  # v2's memory.peak is not writable before Linux 6.12

    def peak(self):
        try:
            with open(os.path.join(self.path, self.peak_file)) as f:
                return int(f.read())
        except OSError:
            return None

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def weft_conf(d, port, root, body, backend):
    return """[server]
listen = ["127.0.0.1:%d"]
root = "%s"
backlog = 4096
[runtime]
processors = 1
[io]
backend = "%s"
body = "%s"
[limits]
max_connections = 10000
max_requests_per_connection = 100000
[timeouts]
keepalive = "75s"
shutdown_grace = "1s"
[fd_cache]
max_entries = 5000
[log]
level = "warn"
error_log = "%s/error.log"
access_log = "off"
""" % (port, root, backend, body, d)


def nginx_conf(d, port, root, aio):
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    pool = "thread_pool default threads=32 max_queue=65536;\n" if aio else ""
    return """%s%sdaemon off; master_process on; worker_processes 1; pid %s/nginx.pid;
error_log %s/error.log warn; worker_rlimit_nofile 40000;
events { worker_connections 20000; }
http {
  access_log off; sendfile on; %s tcp_nopush on; tcp_nodelay on;
  keepalive_requests 100000; keepalive_timeout 75s;
  open_file_cache max=5000 inactive=60s; open_file_cache_valid 5s;
  client_body_temp_path %s/cb; proxy_temp_path %s/px; fastcgi_temp_path %s/fc;
  uwsgi_temp_path %s/uw; scgi_temp_path %s/sc;
  default_type application/octet-stream;
  server { listen 127.0.0.1:%d backlog=4096; root %s; }
}
""" % (user, pool, d, d, "aio threads;" if aio else "", d, d, d, d, d, port, root)


class Server:
    def __init__(self, name, a, work, root, group):
        self.name, self.group, self.a, self.root = name, group, a, root
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o1777)
        self.cpu = a.server_cpu
        self.proc = None
        self.port = None
        self.argv = []

    def write_config(self):
        """Writes the configuration for a new free port (one taken since the last run, by
        a client's ephemeral port say, would refuse the start)."""
        a, root = self.a, self.root
        self.port = free_port()
        if self.name.startswith("weft"):
            conf = os.path.join(self.dir, "weft.toml")
            body, *variants = self.name.split("-")[1:]
            text = weft_conf(self.dir, self.port, root, body, a.backend)
            for v in variants:  # for A/B runs
                if v == "inline":  # cold reads tried on the processor first
                    text = text.replace('body = "auto"', 'body = "auto"\ncold_offload = false')
                elif v.startswith("w"):  # wN: io.iowq_bounded = N
                    text = text.replace('[io]\n', '[io]\niowq_bounded = %d\n' % int(v[1:]))
            self.argv = [os.path.join(a.build, "server", "weft"), "-c", conf]
        else:
            conf = os.path.join(self.dir, "nginx.conf")
            text = nginx_conf(self.dir, self.port, root, self.name == "nginx-aio")
            self.argv = ["/usr/sbin/nginx", "-p", self.dir, "-e", self.dir + "/error.log",
                         "-c", conf]
        with open(conf, "w") as f:
            f.write(text)

    def start(self):
        self.write_config()

        def child():
            self.group.add_self()
            os.sched_setaffinity(0, {self.cpu})
        self.proc = subprocess.Popen(self.argv, preexec_fn=child, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.dir, "stderr.log"), "ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("%s did not start; see %s" % (self.name, self.dir))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class HotClient(threading.Thread):
    """GET /hot.txt every 1/rate seconds on one keep-alive connection; latency from the
    scheduled send to the whole reply (so a stalled server counts in full)."""

    def __init__(self, port, rate, warmup):
        super().__init__(daemon=True)
        self.port, self.gap = port, 1.0 / rate
        self.count_from = time.monotonic() + warmup
        self.latencies, self.errors = [], 0
        self.done = threading.Event()

    def run(self):
        request = b"GET /hot.txt HTTP/1.1\r\nHost: x\r\n\r\n"
        expect = len(HOT_BODY)
        s = None
        due = time.monotonic()
        while not self.done.is_set():
            now = time.monotonic()
            if now < due:
                time.sleep(due - now)
            try:
                if s is None:
                    s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.sendall(request)
                got = b""
                while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < expect:
                    chunk = s.recv(4096)
                    if not chunk:
                        raise OSError("closed")
                    got += chunk
                if due >= self.count_from:
                    self.latencies.append((time.monotonic() - due) * 1000)
            except OSError:
                self.errors += due >= self.count_from
                if s:
                    s.close()
                s = None
            due += self.gap

    def summary(self):
        lat = sorted(self.latencies)

        def pct(q):
            return round(lat[min(len(lat) - 1, int(q * len(lat)))], 3) if lat else None
        return {"hot_requests": len(lat), "hot_errors": self.errors, "hot_p50_ms": pct(0.5),
                "hot_p99_ms": pct(0.99), "hot_max_ms": round(lat[-1], 3) if lat else None}


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def run_one(a, server, rate, group, manifest, out):
    drop_caches()
    group.reset_peak()
    server.start()
    hot = HotClient(server.port, a.hot_rate, 0.5 + a.warmup)
    hot.start()
    time.sleep(0.5)  # the hot client's connection in place before the load
    jpath = os.path.join(out, "%s-%g.json" % (server.name, rate))
    argv = [os.path.join(a.build, "loadgen", "weft-load"), "--server", "127.0.0.1",
            "--port", str(server.port), "--zipf", repr(a.zipf), "--files", manifest,
            "--num-calls", "1..3", "--rate", repr(rate), "--duration", repr(a.duration),
            "--timeout", repr(a.timeout), "--warmup", repr(a.warmup), "--json", jpath,
            "--quiet"]
    r = subprocess.run(argv, capture_output=True, text=True,
                       preexec_fn=lambda: os.sched_setaffinity(0, {a.load_cpu}),
                       timeout=a.duration + 10 * a.timeout + 30)
    hot.done.set()
    hot.join()
    server.stop()
    if r.returncode != 0:
        raise RuntimeError("weft-load failed: %s\n%s" % (" ".join(argv), r.stderr[-2000:]))
    with open(jpath) as f:
        j = json.load(f)
    j = j[0] if isinstance(j, list) else j
    err = j["errors"]
    started = j["sessions"]["started"] or 1
    seconds = [t["replies"] for t in j.get("timeline", [])
               if a.warmup <= t["t"] < int(a.duration)]
    row = {"server": server.name, "rate": rate,
           "replies_per_s": round(sum(seconds) / len(seconds), 1) if seconds else 0,
           "mbytes_per_s": round(j["net_io"]["kb_per_s"] / 1000, 1),
           "error_rate": round((err["total"] + err["http-5xx"]) / started, 4),
           "p99_ms": j["latency_ms"]["from_schedule"]["p99"],
           "client_cpu_share": round((j["cpu"]["user_s"] + j["cpu"]["system_s"]) / a.duration, 3),
           "late_sessions": j["schedule_lag_ms"]["late_sessions"],
           "memory_peak_mib": round((group.peak() or 0) / (1 << 20), 1)}
    row.update(hot.summary())
    return row, argv


def table(rows, servers, rates):
    head = "| sessions/s | " + " | ".join(
        "%s rep/s (err %%) hot p99 ms" % s for s in servers) + " |"
    lines = [head, "|" + "---|" * (len(servers) + 1)]
    for rate in rates:
        cells = []
        for s in servers:
            rs = [r for r in rows if r["server"] == s and r["rate"] == rate]
            if not rs:
                cells.append("-")
                continue
            rep = sorted(r["replies_per_s"] for r in rs)[len(rs) // 2]
            err = sorted(r["error_rate"] for r in rs)[len(rs) // 2] * 100
            p99 = sorted(r["hot_p99_ms"] or 0 for r in rs)[len(rs) // 2]
            cells.append("%.0f (%.1f%%) %.2f" % (rep, err, p99))
        lines.append("| %g | %s |" % (rate, " | ".join(cells)))
    return "\n".join(lines)


def plot(out, rows, servers, title):
    for s in servers:
        with open(os.path.join(out, "plot-%s.tsv" % s), "w") as f:
            for r in sorted((r for r in rows if r["server"] == s), key=lambda r: r["rate"]):
                f.write("%g\t%g\t%g\n" % (r["rate"], r["replies_per_s"], r["hot_p99_ms"] or 0))
    if not shutil.which("gnuplot"):
        return
    script = []
    for name, col, ylabel in (("cold-throughput", 2, "replies/s"),
                              ("cold-hot-p99", 3, "hot-file p99 from schedule [ms]")):
        plots = ", ".join("'plot-%s.tsv' using 1:%d with linespoints lw 2 title '%s' noenhanced"
                          % (s, col, s) for s in servers)
        script += ["set terminal pngcairo size 960,600 font 'sans,10'",
                   "set output '%s.png'" % name, "set grid", "set key top left",
                   "set title \"%s\" noenhanced" % title,
                   "set xlabel 'offered rate [sessions/s]'", "set ylabel '%s'" % ylabel,
                   "set yrange [0:*]", "plot " + plots, "unset output"]
    with open(os.path.join(out, "cold.gp"), "w") as f:
        f.write("\n".join(script) + "\n")
    subprocess.run(["gnuplot", "cold.gp"], cwd=out, check=False)


def main():
    a = parse_args()
    if os.geteuid() != 0:
        sys.exit("cold_files: needs root (drop_caches and a memory cgroup)")
    servers = a.servers.split(",")
    rates = [float(x) for x in a.rates.split(",")]
    os.makedirs(a.out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(SOURCE, "www-fixtures", "generate.py"),
                    "--files", str(a.files), "--total-bytes", a.total_bytes, "--out", a.set_dir],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(a.set_dir, "hot.txt"), "wb") as f:
        f.write(HOT_BODY)
    os.sched_setaffinity(0, {a.load_cpu})  # the hot client's thread
    group = MemoryGroup(size_bytes(a.memory))
    work = os.path.join(a.out, "servers")
    rows, commands = [], {}
    try:
        made = {s: Server(s, a, work, a.set_dir, group) for s in servers}
        for rnd in range(a.rounds):
            for rate in rates:
                for s in servers:  # alternating: each rate sees every server back to back
                    row, argv = run_one(a, made[s], rate, group,
                                        os.path.join(a.set_dir, "MANIFEST"), a.out)
                    row["round"] = rnd
                    rows.append(row)
                    commands[s] = " ".join(made[s].argv)
                    print(json.dumps(row), flush=True)
    finally:
        group.remove()
    title = "%s files, %s, Zipf s=%g, memory %s, server core %d (%s), hot %g req/s" % (
        a.files, a.total_bytes, a.zipf, a.memory, a.server_cpu, a.backend, a.hot_rate)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"args": vars(a), "servers": commands, "rows": rows}, f, indent=1)
    md = title + "\n\n" + table(rows, servers, rates) + "\n"
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    plot(a.out, rows, servers, title)
    print(md)


if __name__ == "__main__":
    main()
