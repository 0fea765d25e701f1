"""Runs weft-load against real servers (weft, NGINX) and small misbehaving python servers.

- run_load(args): runs the weft-load binary (WEFT_LOAD_BINARY), returns a Run with its exit
  status, stdout, stderr, the text report parsed with the regexes httperf scripts use, and the
  JSON report when one was asked for.
- NginxServer: NGINX (Debian's nginx-light) started unprivileged from a temporary folder on a
  free loopback port, `daemon off;`, with its access log in the folder.
- FakeServer: a loopback server whose every connection gets one behaviour: "stall" (accept,
  never answer), "reset" (read the request, then close with SO_LINGER 0: a TCP RST), or a
  canned reply sent after the request, then close (a wrong Content-Length, a 5xx, garbage).
- read_access_log(path): (requests, body bytes) from a combined-format access log.
Every run is small (tens to a few hundred sessions) and bounded by a timeout.
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import SOURCE_DIR, free_port  # noqa: E402,F401

WEFT_LOAD = os.environ.get("WEFT_LOAD_BINARY", "")
NGINX = os.environ.get("NGINX_BINARY", "/usr/sbin/nginx")

# The regexes scripts apply to httperf's report (autobench's and httperf-plot's, written out).
HTTPERF_REGEXES = {
    "total": r"^Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s$",
    "conn_rate": r"^Connection rate: ([\d.]+) conn/s \(([\d.]+) ms/conn, <=(\d+) concurrent "
                 r"connections\)$",
    "conn_time": r"^Connection time \[ms\]: min ([\d.]+) avg ([\d.]+) max ([\d.]+) median "
                 r"([\d.]+) stddev ([\d.]+)$",
    "connect": r"^Connection time \[ms\]: connect ([\d.]+)$",
    "conn_length": r"^Connection length \[replies/conn\]: ([\d.]+)$",
    "req_rate": r"^Request rate: ([\d.]+) req/s \(([\d.]+) ms/req\)$",
    "req_size": r"^Request size \[B\]: ([\d.]+)$",
    "reply_rate": r"^Reply rate \[replies/s\]: min ([\d.]+) avg ([\d.]+) max ([\d.]+) stddev "
                  r"([\d.]+) \((\d+) samples\)$",
    "reply_time": r"^Reply time \[ms\]: response ([\d.]+) transfer ([\d.]+)$",
    "reply_size": r"^Reply size \[B\]: header ([\d.]+) content ([\d.]+) footer ([\d.]+) "
                  r"\(total ([\d.]+)\)$",
    "status": r"^Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)$",
    "cpu": r"^CPU time \[s\]: user ([\d.]+) system ([\d.]+) \(user ([\d.]+)% system ([\d.]+)% "
           r"total ([\d.]+)%\)$",
    "net_io": r"^Net I/O: ([\d.]+) KB/s \(([\d.]+)\*10\^6 bps\)$",
    "errors1": r"^Errors: total (\d+) client-timo (\d+) socket-timo (\d+) connrefused (\d+) "
               r"connreset (\d+)$",
    "errors2": r"^Errors: fd-unavail (\d+) addrunavail (\d+) ftab-full (\d+) other (\d+)$",
    # weft-load's own lines.
    "http_errors": r"^HTTP errors: http-4xx (\d+) http-5xx (\d+) bad-length (\d+)$",
    "lag": r"^Schedule lag \[ms\]: max ([\d.]+) mean ([\d.]+) \((\d+) sessions\)$",
}


def parse_report(text):
    """Returns {name: tuple of numbers} for every regex above that matches a line of text."""
    out = {}
    for name, rx in HTTPERF_REGEXES.items():
        m = re.search(rx, text, re.M)
        if m:
            out[name] = tuple(float(g) if "." in g else int(g) for g in m.groups())
    return out


def error_counts(report):
    """Returns {class name: count} from a parsed text report."""
    e1, e2, h = report["errors1"], report["errors2"], report["http_errors"]
    return {
        "total": e1[0], "client-timo": e1[1], "socket-timo": e1[2], "connrefused": e1[3],
        "connreset": e1[4], "fd-unavail": e2[0], "addrunavail": e2[1], "ftab-full": e2[2],
        "other": e2[3], "http-4xx": h[0], "http-5xx": h[1], "bad-length": h[2],
    }


class Run:
    def __init__(self, proc, json_report):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.report = parse_report(proc.stdout)
        self.json = json_report

    def errors(self):
        return error_counts(self.report)

    def describe(self):
        return "exit %s\n--- stdout\n%s--- stderr\n%s" % (self.returncode, self.stdout,
                                                        self.stderr)


def run_load(args, timeout=60, want_json=True, preexec_fn=None):
    """Runs weft-load with args (strings); returns a Run (with .json when want_json)."""
    tmp = tempfile.mkdtemp(prefix="weft-load-e2e-")
    try:
        argv = [WEFT_LOAD] + [str(a) for a in args]
        json_path = os.path.join(tmp, "report.json")
        if want_json:
            argv += ["--json", json_path]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=preexec_fn)
        report = None
        if want_json and os.path.exists(json_path):
            with open(json_path) as f:
                report = json.load(f)
        return Run(proc, report)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_access_log(path):
    """Returns (requests, body bytes) of a combined-format access log."""
    rx = re.compile(r'^\S+ \S+ \S+ \[[^\]]+\] "[^"]*" (\d{3}) (\d+|-) ')
    n = 0
    body = 0
    with open(path) as f:
        for line in f:
            m = rx.match(line)
            if not m:
                raise AssertionError("not a combined-format line: %r" % line)
            n += 1
            body += 0 if m.group(2) == "-" else int(m.group(2))
    return n, body


def wait_for_port(port, proc=None, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("nothing listens on port %d" % port)


class NginxServer:
    """NGINX serving `root` with one worker, unprivileged, from a temporary folder; with
    `tls`, over HTTPS with a fresh self-signed ECDSA P-256 certificate (the openssl command);
    with `http2`, HTTP/2 too (h2 by ALPN over TLS, h2c with prior knowledge without)."""

    def __init__(self, root, tls=False, http2=False, max_streams=128):
        self.dir = tempfile.mkdtemp(prefix="weft-load-nginx-")
        listen = ""
        if tls:
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                            "-subj", "/CN=localhost",
                            "-keyout", os.path.join(self.dir, "key.pem"),
                            "-out", os.path.join(self.dir, "cert.pem")],
                           check=True, capture_output=True)
            listen = " ssl{h2};\n    ssl_certificate {d}/cert.pem;\n    " \
                     "ssl_certificate_key {d}/key.pem".format(d=self.dir,
                                                              h2=" http2" if http2 else "")
        elif http2:
            listen = " http2"
        if http2:
            listen += ";\n    http2_max_concurrent_streams %d" % max_streams
        self.port = free_port()
        self.access_log = os.path.join(self.dir, "access.log")
        conf = """
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log {d}/access.log combined;
  client_body_temp_path {d}/client_body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  keepalive_requests 10000;
  server {{
    listen 127.0.0.1:{port}{listen};
    root {root};
  }}
}}
""".format(d=self.dir, port=self.port, root=root, listen=listen)
        self.config = os.path.join(self.dir, "nginx.conf")
        with open(self.config, "w") as f:
            f.write(conf)
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [NGINX, "-p", self.dir, "-e", os.path.join(self.dir, "error.log"), "-c", self.config],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, self.proc)
        return self

    def stop(self):
        """Stops NGINX gracefully (SIGQUIT), so that its access log is complete."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def read_request(conn):
    """Reads one request head (up to the blank line); returns it, or b'' at end of stream."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return b""
        data += chunk
    return data


class FakeServer:
    """A loopback server giving every connection the same (mis)behaviour.

    behaviour: "stall" (never answer), "reset" (read the request, close with an RST), or a
    bytes object: read the request, send these bytes, close.
    """

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.accepted = 0
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            if self.behaviour == "stall":
                self.held.append(conn)
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        try:
            conn.settimeout(10)
            if not read_request(conn):
                return
            if self.behaviour == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                conn.sendall(self.behaviour)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() in _serve
        except OSError:
            pass
        self.sock.close()
        for c in self.held:
            c.close()
