#!/usr/bin/env python3
"""Memory per idle keep-alive connection: weft against NGINX, same run.

Starts each server (one processor/worker, pinned to core 0), opens N connections that each
send one request, read the response and then stay idle (keep-alive), and reports the growth
of the server's resident memory (VmRSS of the process, NGINX: its worker): in all, and per
connection at the margin, between N/2 and N connections. The total includes the pools that
the first burst fills (fiber stacks, buffers: kept for reuse, a high-water mark); the
marginal figure is what one more idle connection costs, the bound SECURITY.md states.
Usage: scripts/bench/idle_rss.py [N] (default 10000; needs RLIMIT_NOFILE > N + 100)
"""

import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEFT = os.path.join(ROOT, "build", "release", "server", "weft")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_idle(port, n):
    """Opens n keep-alive connections, one request each; returns the sockets."""
    socks = []
    req = b"GET /f.txt HTTP/1.1\r\nHost: x\r\n\r\n"
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(req)
        socks.append(s)
        if len(socks) % 500 == 0:
            drain(socks[-500:])
    drain(socks[len(socks) // 500 * 500:])
    return socks


def drain(socks):
    sel = selectors.DefaultSelector()
    pending = {}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        pending[s] = b""
    deadline = time.time() + 30
    while pending and time.time() < deadline:
        for key, _ in sel.select(1):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except BlockingIOError:
                continue
            pending[s] += data
            if b"\r\n\r\n" in pending[s] and pending[s].endswith(b"hello\n"):
                sel.unregister(s)
                del pending[s]
    sel.close()
    if pending:
        raise RuntimeError("%d connections got no response" % len(pending))


def measure(name, argv, port, pid_of, n, tmp):
    proc = subprocess.Popen(["taskset", "-c", "0"] + argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        pid = pid_of(proc)
        # Warm up: one connection, so lazily built state is not charged to the idle ones.
        open_idle(port, 1)[0].close()
        time.sleep(0.3)
        before = rss_kib(pid)
        socks = open_idle(port, n // 2)
        time.sleep(1.0)  # past the 100 ms idle connections keep their fibers
        half = rss_kib(pid)
        socks += open_idle(port, n - n // 2)
        time.sleep(1.0)
        after = rss_kib(pid)
        per = (after - half) * 1024 / (n - n // 2)
        print("%-6s %6d idle connections: RSS %7d KiB -> %7d KiB (%7d KiB at %d), "
              "%6.0f bytes each in all, %5.0f bytes each at the margin"
              % (name, n, before, after, half, n // 2, (after - before) * 1024 / n, per))
        for s in socks:
            s.close()
        return per
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tmp = tempfile.mkdtemp(prefix="weft-idle-")
    os.chmod(tmp, 0o1777)
    try:
        www = os.path.join(tmp, "www")
        os.mkdir(www)
        with open(os.path.join(www, "f.txt"), "w") as f:
            f.write("hello\n")
        os.chmod(www, 0o755)
        os.chmod(os.path.join(www, "f.txt"), 0o644)
        conf = os.path.join(tmp, "weft.toml")
        with open(conf, "w") as f:
            f.write('[server]\nlisten = ["127.0.0.1:18381"]\nroot = "%s"\n'
                    '[runtime]\nprocessors = 1\n[limits]\nmax_connections = %d\n'
                    '[log]\nlevel = "warn"\n' % (www, n + 100))
        measure("weft", [WEFT, "-c", conf], 18381, lambda p: p.pid, n, tmp)
        nd = os.path.join(tmp, "nginx")
        os.mkdir(nd)
        with open(os.path.join(nd, "nginx.conf"), "w") as f:
            f.write("daemon off; worker_processes 1; worker_rlimit_nofile %d; pid %s/nginx.pid;\n"
                    "error_log %s/error.log;\nevents { worker_connections %d; }\n"
                    "http { access_log off; keepalive_timeout 300s;\n"
                    "client_body_temp_path %s/cb; proxy_temp_path %s/px; fastcgi_temp_path %s/fc;"
                    " uwsgi_temp_path %s/uw; scgi_temp_path %s/sc;\n"
                    "server { listen 127.0.0.1:18382; root %s; } }\n"
                    % (n + 200, nd, nd, n + 100, nd, nd, nd, nd, nd, www))

        def nginx_worker(p):
            out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True)
            return int(out.stdout.split()[0])
        measure("nginx", ["nginx", "-p", nd, "-e", nd + "/error.log", "-c", nd + "/nginx.conf"],
                18382, nginx_worker, n, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
