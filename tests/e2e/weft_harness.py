"""Starts a real weft server for end-to-end tests and talks to it over real sockets.

Each WeftServer runs the built binary with a generated config in a temporary folder, on a
free loopback port, waits until it accepts connections, and on stop() sends SIGTERM and
checks that it exits 0 within the grace period. Tests run against both I/O backends
(io_uring and epoll) through WEFT_BACKENDS or the default of both.

Also here: RawClient (one raw TCP connection with a read buffer, for pipelining and
malformed input), ServerCase (one server per test class) and per_backend() (one copy of a
test class per backend).
"""

import ctypes
import fcntl
import http.client
import mmap
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import weft_site

WEFT = os.environ.get("WEFT_BINARY", "")
SOURCE_DIR = os.environ.get("WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BACKENDS = os.environ.get("WEFT_BACKENDS", "io_uring epoll").split()


PORT_LOCKS = os.path.join(tempfile.gettempdir(), "weft-e2e-ports")
_held_ports = []  # lock files of the ports this process took, open until it exits


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """Returns a TCP port that was free a moment ago on host, and that no other process of
    this suite took: ctest runs test files in parallel, and weft's listeners use
    SO_REUSEPORT, so two tests handed the same port would share one queue. The kernel's
    ephemeral ports say nothing once the probe socket closes, so each port taken is also
    locked (flock on a file named after it) until this process exits."""
    os.makedirs(PORT_LOCKS, exist_ok=True)
    for _ in range(100):
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        f = open(os.path.join(PORT_LOCKS, str(port)), "w")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            continue
        _held_ports.append(f)
        return port
    raise RuntimeError("no free port in 100 tries")


def read_text(path):
    """Returns the file's text, "" when it cannot be read."""
    try:
        with open(path, errors="backslashreplace") as f:
            return f.read()
    except OSError:
        return ""


class WeftServer:
    """A weft process serving `root` with extra TOML `settings` ({section: {key: value}}) and
    `extra` TOML text appended as is (arrays of tables such as [[headers]])."""

    def __init__(self, root, backend="io_uring", settings=None, processors=2, listen=None,
                 prefix=(), extra=""):
        self.prefix = list(prefix)  # a command that runs weft, such as setpriv with its options
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
            f.write(extra)
        self.proc = None

    def start(self, timeout=10):
        """Starts weft and waits until its first address accepts connections."""
        # stdout and stderr to a file: a sanitizer's report lands there (a pipe nobody read
        # lost it, and a full pipe would block the server).
        self.output_file = open(os.path.join(self.tmp, "output.log"), "wb")
        self.proc = subprocess.Popen(self.prefix + [WEFT, "-c", self.config],
                                     stdout=self.output_file, stderr=subprocess.STDOUT)
        host, port = split_address(self.listen[0])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("weft exited at start:\n" + self.log() + self.output())
            try:
                with socket.create_connection((host, port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("weft did not start listening:\n" + self.log())

    def run_to_exit(self, timeout=10):
        """Runs weft expecting it to exit by itself (a start that must fail); returns its exit
        status and what it logged and printed."""
        with open(os.path.join(self.tmp, "output.log"), "wb") as out:
            self.proc = subprocess.Popen(self.prefix + [WEFT, "-c", self.config],
                                         stdout=out, stderr=subprocess.STDOUT)
            status = self.proc.wait(timeout)
        return status, self.log() + self.output()

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
        if getattr(self, "output_file", None):
            self.output_file.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log(self):
        """Returns the error log so far."""
        return read_text(self.error_log)

    def output(self):
        """Returns what the process wrote to stdout and stderr (a sanitizer's report, an
        abort message)."""
        return read_text(os.path.join(self.tmp, "output.log"))

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

    def client(self, timeout=5):
        """Returns a RawClient connected to the server's first address."""
        return RawClient(split_address(self.listen[0]), timeout)

    def exchange(self, data, methods=("GET",), timeout=5):
        """Sends `data` on a fresh connection; returns one Response per entry of `methods`
        (the method each answers, so HEAD responses are read without a body)."""
        with self.client(timeout) as c:
            c.send(data)
            return [c.response(m) for m in methods]

    def url(self, path):
        host, port = split_address(self.listen[0])
        return "http://%s:%d%s" % ("[%s]" % host if ":" in host else host, port, path)

    def curl(self, path, *args):
        """Runs curl -si on `path` (sent as is) with extra `args`; returns the Response."""
        out = subprocess.run(["curl", "-sS", "-i", "--path-as-is", "--max-time", "10"] +
                             list(args) + [self.url(path)], capture_output=True, check=True).stdout
        head, _, body = out.partition(b"\r\n\r\n")
        return Response(head, body)

    def pid_fds(self):
        """Returns the number of open descriptors of the server process."""
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))


class Response:
    """One response read off a raw socket: status, reason, version, headers (lower-case
    names; a repeated field keeps its last value), fields (every line, in order), body."""

    def __init__(self, head, body):
        lines = head.decode("latin-1").split("\r\n")
        self.version, status, self.reason = (lines[0].split(" ", 2) + [""])[:3]
        self.status = int(status)
        self.fields = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:]]
        self.headers = {k.lower(): v for k, v in self.fields}
        self.head = head
        self.body = body

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return "<Response %d %r>" % (self.status, self.head[:300])


class RawClient:
    """One TCP connection driven by hand; every read has a timeout (socket.timeout raised)."""

    def __init__(self, address, timeout=5):
        self.sock = socket.create_connection(address, timeout=timeout)
        self.buf = bytearray()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        b = self.sock.recv(1 << 20)
        if not b:
            raise ConnectionError("connection closed; unparsed: %r" % bytes(self.buf[:200]))
        self.buf += b

    def response(self, method="GET", body=True):
        """Reads one response (framed by Content-Length; no body for HEAD, 1xx, 204, 304).
        With body=False only the head is read: take the body with read_exactly()."""
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        r = Response(bytes(self.buf[:end]), b"")
        del self.buf[:end + 4]
        if body and method != "HEAD" and r.status not in (204, 304) and r.status >= 200:
            r.body = self.read_exactly(int(r.header("Content-Length") or 0))
        return r

    def read_exactly(self, n):
        """Reads n raw bytes (for streaming a large body in steps)."""
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def closed(self, timeout=3):
        """Returns whether the server closes the connection (EOF or reset) within `timeout`
        seconds; bytes that arrive meanwhile are kept in `buf`."""
        self.sock.settimeout(timeout)
        try:
            while True:
                b = self.sock.recv(65536)
                if not b:
                    return True
                self.buf += b
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True


def error_page(status, reason):
    """Returns weft's HTML body for an error status."""
    page = ("<!DOCTYPE html>\n<html>\n<head><title>{0} {1}</title></head>\n"
            "<body>\n<h1>{0} {1}</h1>\n<hr>weft\n</body>\n</html>\n")
    return page.format(status, reason).encode()


def http_date(t):
    """Formats a Unix time as an IMF-fixdate."""
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(t))


HTTP_DATE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep"
                       r"|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$")


class ServerCase(unittest.TestCase):
    """One weft per test class: set `backend`, `settings`, `processors`, `extra_toml` (a
    function of the class returning TOML text to append, for arrays of tables), and
    `make_root(cls, base)` (builds the document root under `base` and returns it; default:
    weft_site.build); the server is `cls.srv`, the root `cls.root`, its parent `cls.base`.
    tearDownClass checks that the server exits 0 on SIGTERM."""

    backend = None
    settings = {}
    processors = 2

    @classmethod
    def extra_toml(cls):
        return ""

    @classmethod
    def make_root(cls, base):
        return weft_site.build(base)

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="weft-root-")
        cls.srv = None
        try:
            cls.root = cls.make_root(cls.base)
            cls.srv = WeftServer(cls.root, cls.backend, cls.settings, cls.processors,
                                 extra=cls.extra_toml())
            cls.srv.start()
        except BaseException:  # tearDownClass does not run after a failed setUpClass
            if cls.srv:
                cls.srv.cleanup()
            shutil.rmtree(cls.base, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            status = cls.srv.stop()
            log = cls.srv.log() + cls.srv.output()[-8000:]
        finally:
            cls.srv.cleanup()
            shutil.rmtree(cls.base, ignore_errors=True)
        if status != 0:
            raise AssertionError("weft exited with %r; log and output:\n%s" % (status, log[-12000:]))


def per_backend(scope, *cases):
    """Defines in `scope` (a module's globals()) one concrete TestCase per backend in
    BACKENDS for each mixin in `cases`: class Foo becomes Foo_io_uring and Foo_epoll."""
    for case in cases:
        for backend in BACKENDS:
            name = "%s_%s" % (case.__name__, backend)
            scope[name] = type(name, (case, ServerCase), {"backend": backend,
                                                         "__module__": scope["__name__"]})


def metric(port, name):
    """Returns the value of metric `name` from a weft /metrics endpoint on 127.0.0.1:port."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    for line in data.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no metric %s in %r" % (name, data[:200]))


_libc = None


def _mincore_libc():
    """libc with mmap, munmap and mincore typed for ctypes (Python's mmap module has no
    mincore), set up once."""
    global _libc
    if _libc is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        _libc = libc
    return _libc


def pages_resident(fd, size):
    """Returns how many pages of the first `size` bytes of file `fd` are in the page cache,
    asked with mincore(2), which reads nothing. (A one-byte preadv with RWF_NOWAIT answers
    too, but a miss starts the readahead of what it asked for, so pages found gone could be
    cached again by the time the test reads them.)"""
    if size == 0:
        return 0
    libc = _mincore_libc()
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap for mincore")
    try:
        vec = (ctypes.c_ubyte * ((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE))()
        if libc.mincore(addr, size, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        return sum(v & 1 for v in vec)
    finally:
        libc.munmap(addr, size)


def drop_pages(path, tries=20):
    """Drops `path`'s pages from the page cache; returns whether they are all gone (a tmpfs
    keeps them). A page in another CPU's LRU batch is skipped by DONTNEED, so it asks
    again."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        size = os.fstat(fd).st_size
        for attempt in range(tries):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if pages_resident(fd, size) == 0:
                return True
            if attempt + 1 < tries:
                time.sleep(0.01)
        return False
    finally:
        os.close(fd)


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
    if isinstance(v, dict):
        return "{" + ", ".join("%s = %s" % (toml_value(str(k)), toml_value(x))
                               for k, x in v.items()) + "}"
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
