#!/usr/bin/env python3
"""Memory per TLS connection: weft against NGINX, same run (issue 43, item 3).

For each server (one processor/worker, pinned to core 0) and each kind of connection, a fresh
server start, N connections opened and held, and the growth of the server's resident memory
(VmRSS of the process; NGINX: its worker) per connection, in all and at the margin (between
N/2 and N), as scripts/bench/idle_rss.py does for plain connections. Kinds:
  plain:   a plain keep-alive connection after one request (the baseline);
  tls:     a TLS keep-alive connection after one request (TLS 1.3, ECDSA P-256);
  stalled: a TLS handshake that sent `16 03 01 00 04 01 02 01 44` (a ClientHello announcing
           131 KB) and nothing more (weft refuses it: over tls.max_client_hello);
  stalled16k: the same announcing 16,372 bytes (`... 01 00 3f f0`), within weft's default bound.
Usage: scripts/bench/tls_memory.py [N] (default 2000). WEFT=BINARY picks another weft build,
WEFT_TLS='TOML lines' adds to its [tls] section (printf %b), SERVERS="weft nginx" and
KINDS="plain tls stalled stalled16k" choose what runs.
Both servers get timeouts long enough to hold every connection through the measurement.
"""

import os
import resource
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WEFT = os.environ.get("WEFT", os.path.join(ROOT, "build", "release", "server", "weft"))
STALLS = {"stalled": bytes.fromhex("160301000401020144"),
          "stalled16k": bytes.fromhex("160301000401003ff0")}
REQUEST = b"GET /f.txt HTTP/1.1\r\nHost: x\r\n\r\n"
PLAIN_PORT, TLS_PORT = 18391, 18392


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def read_response(s):
    data = b""
    while not data.endswith(b"hello\n"):
        b = s.recv(4096)
        if not b:
            raise RuntimeError("closed before the response: %r" % data[:200])
        data += b


def open_one(kind, ctx):
    """Opens one connection of `kind`; returns the socket, held open by the caller."""
    s = socket.create_connection(("127.0.0.1", PLAIN_PORT if kind == "plain" else TLS_PORT),
                                 timeout=30)
    if kind in STALLS:
        s.sendall(STALLS[kind])
        return s
    if kind == "tls":
        s = ctx.wrap_socket(s, server_hostname="localhost")
    s.sendall(REQUEST)
    read_response(s)
    return s


def measure(server, kind, argv, pid_of, n, ctx):
    proc = subprocess.Popen(["taskset", "-c", "0"] + argv, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", TLS_PORT), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        pid = pid_of(proc)
        # Warm up, so that lazily built state is not charged to the connections measured.
        for k in ("plain", "tls"):
            open_one(k, ctx).close()
        time.sleep(0.5)
        before = rss_kib(pid)
        socks = [open_one(kind, ctx) for _ in range(n // 2)]
        time.sleep(1.0)  # past the 100 ms a connection keeps its fiber while it waits
        half = rss_kib(pid)
        socks += [open_one(kind, ctx) for _ in range(n - n // 2)]
        time.sleep(1.0)
        after = rss_kib(pid)
        every = (after - before) * 1024 / n
        margin = (after - half) * 1024 / (n - n // 2)
        print("%-6s %-8s %5d connections: RSS %7d -> %7d KiB, %7.0f bytes each in all, "
              "%7.0f at the margin" % (server, kind, n, before, after, every, margin), flush=True)
        for s in socks:
            s.close()
        return every, margin
    finally:
        proc.terminate()
        proc.wait(10)


def write_configs(tmp, n):
    www = os.path.join(tmp, "www")
    os.mkdir(www)
    with open(os.path.join(www, "f.txt"), "w") as f:
        f.write("hello\n")
    crt, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", crt, "-days",
                    "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    for p in (www, os.path.join(www, "f.txt"), crt, key):
        os.chmod(p, 0o755)
    weft = os.path.join(tmp, "weft.toml")
    with open(weft, "w") as f:
        f.write('[server]\nlisten = ["127.0.0.1:%d"]\nlisten_tls = ["127.0.0.1:%d"]\n'
                'root = "%s"\n[tls]\ncertificate = "%s"\nkey = "%s"\n%s\n'
                '[runtime]\nprocessors = 1\n[limits]\nmax_connections = %d\n'
                '[timeouts]\nheader = "300s"\nkeepalive = "300s"\n[log]\nlevel = "warn"\n'
                % (PLAIN_PORT, TLS_PORT, www, crt, key,
                   os.environ.get("WEFT_TLS", "").replace("\\n", "\n"), n + 100))
    nd = os.path.join(tmp, "nginx")
    os.mkdir(nd)
    with open(os.path.join(nd, "nginx.conf"), "w") as f:
        f.write("daemon off; worker_processes 1; worker_rlimit_nofile %d; pid %s/nginx.pid;\n"
                "error_log %s/error.log;\nevents { worker_connections %d; }\n"
                "http { access_log off; keepalive_timeout 300s; client_header_timeout 300s;\n"
                "client_body_temp_path %s/cb; proxy_temp_path %s/px; fastcgi_temp_path %s/fc;"
                " uwsgi_temp_path %s/uw; scgi_temp_path %s/sc;\n"
                "server { listen 127.0.0.1:%d; listen 127.0.0.1:%d ssl; root %s;\n"
                " ssl_certificate %s; ssl_certificate_key %s; } }\n"
                % (n + 200, nd, nd, n + 100, nd, nd, nd, nd, nd, PLAIN_PORT, TLS_PORT, www, crt,
                   key))
    return weft, nd


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    tmp = tempfile.mkdtemp(prefix="weft-tlsmem-")
    os.chmod(tmp, 0o755)
    try:
        weft_conf, nd = write_configs(tmp, n)

        def nginx_worker(p):
            deadline = time.time() + 5
            while time.time() < deadline:
                out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True)
                if out.stdout.split():
                    return int(out.stdout.split()[0])
                time.sleep(0.05)
            raise RuntimeError("no NGINX worker")
        servers = {
            "weft": ([WEFT, "-c", weft_conf], lambda p: p.pid),
            "nginx": (["nginx", "-p", nd, "-e", nd + "/error.log", "-c", nd + "/nginx.conf"],
                      nginx_worker),
        }
        chosen = os.environ.get("SERVERS", "weft nginx").split()
        kinds = os.environ.get("KINDS", "plain tls stalled stalled16k").split()
        got = {}
        for kind in kinds:
            for name in chosen:  # alternated, kind by kind
                argv, pid_of = servers[name]
                got[name, kind] = measure(name, kind, argv, pid_of, n, ctx)
        for name in chosen:
            if (name, "plain") not in got:
                continue
            base = got[name, "plain"][0]
            print("%-6s beyond a plain connection (in all): %s" % (name, ", ".join(
                "%s %.0f bytes" % (k, got[name, k][0] - base) for k in kinds if k != "plain")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
