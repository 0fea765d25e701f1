"""Starts a real weft server for end-to-end tests and talks to it over real sockets.

Each WeftServer runs the built binary with a generated config in a temporary folder, on a
free loopback port, waits until it accepts connections, and on stop() sends SIGTERM and
checks that it exits 0 within the grace period. Tests run against both I/O backends
(io_uring and epoll) through WEFT_BACKENDS or the default of both.
"""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

WEFT = os.environ.get("WEFT_BINARY", "")
SOURCE_DIR = os.environ.get("WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BACKENDS = os.environ.get("WEFT_BACKENDS", "io_uring epoll").split()


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """Returns a TCP port that was free a moment ago on host."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class WeftServer:
    """A weft process serving `root` with extra TOML `settings` ({section: {key: value}})."""

    def __init__(self, root, backend="io_uring", settings=None, processors=2, listen=None):
        self.tmp = tempfile.mkdtemp(prefix="weft-e2e-")
        self.root = root
        self.port = free_port()
        self.listen = listen or ["127.0.0.1:%d" % self.port]
        self.backend = backend
        self.error_log = os.path.join(self.tmp, "error.log")
        conf = {
            "server": {"listen": self.listen, "root": root,
                       "mime_types": os.path.join(SOURCE_DIR, "conf", "mime.types")},
            "runtime": {"processors": processors},
            "io": {"backend": backend},
            "log": {"level": "debug", "error_log": self.error_log},
            "timeouts": {"shutdown_grace": "5s"},
        }
        for section, values in (settings or {}).items():
            conf.setdefault(section, {}).update(values)
        self.config = os.path.join(self.tmp, "weft.toml")
        with open(self.config, "w") as f:
            for section, values in conf.items():
                f.write("[%s]\n" % section)
                for k, v in values.items():
                    f.write("%s = %s\n" % (k, toml_value(v)))
        self.proc = None

    def start(self, timeout=10):
        """Starts weft and waits until its first address accepts connections."""
        self.proc = subprocess.Popen([WEFT, "-c", self.config], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        host, port = split_address(self.listen[0])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("weft exited at start:\n" + self.log())
            try:
                with socket.create_connection((host, port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("weft did not start listening:\n" + self.log())

    def stop(self, timeout=15):
        """Sends SIGTERM; returns the exit status (asserting nothing)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def cleanup(self):
        self.stop()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log(self):
        """Returns the error log so far."""
        try:
            with open(self.error_log) as f:
                return f.read()
        except OSError:
            return ""

    def conn(self, timeout=10):
        """Returns an http.client connection to the server."""
        host, port = split_address(self.listen[0])
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def get(self, path, headers=None, method="GET"):
        """Sends one request on a fresh connection; returns (response, body)."""
        c = self.conn()
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        body = r.read()
        c.close()
        return r, body

    def raw(self, data, timeout=5, read_until_close=True):
        """Sends raw bytes on a fresh socket; returns everything received until close."""
        host, port = split_address(self.listen[0])
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(data)
            return recv_all(s, timeout) if read_until_close else s.recv(65536)

    def pid_fds(self):
        """Returns the number of open descriptors of the server process."""
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))


def recv_all(sock, timeout=5):
    """Reads until the peer closes or `timeout` seconds pass."""
    sock.settimeout(timeout)
    chunks = []
    try:
        while True:
            b = sock.recv(65536)
            if not b:
                break
            chunks.append(b)
    except socket.timeout:
        pass
    return b"".join(chunks)


def split_address(a):
    host, _, port = a.rpartition(":")
    return host.strip("[]"), int(port)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_responses(data):
    """Splits raw bytes into [(status, headers dict (lower-case), body)] by Content-Length."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("incomplete head: %r" % data[:200])
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        body_allowed = status not in (204, 304)
        body = rest[:n] if body_allowed else b""
        out.append((status, headers, body))
        data = rest[len(body):]
    return out
