"""Issue 44, on both backends: HTTP/2 over TLS (ALPN "h2") and cleartext with prior knowledge
(server.h2c), with curl --http2 / --http2-prior-knowledge, h2load (many streams on few
connections) and Python's h2 package for requests and hand-made frames: GET, HEAD, 404, a
conditional 304, a single range 206 and a multipart one, an index file, a listing, a
precompressed variant, a header rule, a redirect and an error page of the site's, a body read
from its file, a virtual host chosen by :authority, the access log's "HTTP/2.0"; each limit of
[http2] against a client that abuses it (too many concurrent streams: REFUSED_STREAM; Rapid
Reset, a CONTINUATION flood, a PING flood, a WINDOW_UPDATE flood and a malformed frame:
GOAWAY; a stream that never opens its window: RST_STREAM CANCEL; an idle connection: GOAWAY
NO_ERROR; a header list over the limit: 431), the server serving others afterwards; a
graceful stop with streams in flight that loses none (GOAWAY with the last stream id); and
with server.http2 and server.h2c off, HTTP/1.1 only (ALPN, and the preface refused)."""

import gzip
import hashlib
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from collections import namedtuple

try:
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    import h2.settings
    import hpack
except ImportError:  # a Python of its own (pyenv) beside Debian's, which has python3-h2
    sys.path.append("/usr/lib/python3/dist-packages")
    import h2.config
    import h2.connection
    import h2.events
    import h2.exceptions
    import h2.settings
    import hpack

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import WeftServer, free_port, metric, per_backend  # noqa: E402

B_INDEX = b"<h1>site b over HTTP/2</h1>\n"
PC_TEXT = b"precompressed over HTTP/2 " * 40
MISSING_PAGE = b"<h1>the site's own 404</h1>\n"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# Frame types and error codes (RFC 9113 §6, §7).
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 3, 4, 6, 7, 8, 9)
NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, REFUSED_STREAM, CANCEL, ENHANCE_YOUR_CALM = (
    0, 1, 2, 7, 8, 11)
# The limits the abuse tests reach, small so that each is reached in few frames.
LIMITS = {"max_concurrent_streams": 8, "max_resets": 20, "resets_per_second": 1,
          "max_continuations": 4, "max_queued_control_frames": 50, "max_window_updates": 100,
          "stalled_stream_timeout": "1s", "idle_timeout": "3s", "max_header_list_size": "4k"}


Goaway = namedtuple("Goaway", "last_stream_id error_code")


def make_cert(folder):
    crt, key = os.path.join(folder, "h2.crt"), os.path.join(folder, "h2.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", crt, "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    return crt, key


def frame(kind, flags, stream, payload=b""):
    """Returns one HTTP/2 frame's bytes."""
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def parse_frames(data):
    """Returns the (type, flags, stream, payload) of every whole frame in `data`."""
    out, at = [], 0
    while at + 9 <= len(data):
        length = int.from_bytes(data[at:at + 3], "big")
        if at + 9 + length > len(data):
            break
        kind, flags = data[at + 3], data[at + 4]
        stream = int.from_bytes(data[at + 5:at + 9], "big") & 0x7FFFFFFF
        out.append((kind, flags, stream, data[at + 9:at + 9 + length]))
        at += 9 + length
    return out


def read_to_close(sock, timeout=15):
    """Reads until the server closes (bounded by `timeout`); returns the frames it sent."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
    return parse_frames(data)


def read_until(sock, done, frames=None, timeout=15):
    """Reads frames until done(frames) holds, the server closes, or `timeout` passes;
    returns them (appended to `frames` when given)."""
    frames = [] if frames is None else frames
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while not done(frames) and time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
        whole = parse_frames(data)
        used = sum(9 + len(f[3]) for f in whole)
        data = data[used:]
        frames.extend(whole)
    return frames


def goaway_code(frames):
    """Returns the error code of the first GOAWAY among `frames`, or None."""
    for kind, _, _, payload in frames:
        if kind == GOAWAY:
            return int.from_bytes(payload[4:8], "big")
    return None


class H2Client:
    """An HTTP/2 client on a connected socket (TLS or plain), with Python's h2 package."""

    def __init__(self, sock, window=None):
        self.sock = sock
        config = h2.config.H2Configuration(client_side=True, header_encoding=None)
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        if window is not None:
            self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window})
        self.auto_ack = True
        self.unacked = []  # (length, stream) of DATA not acknowledged while auto_ack is off
        self.flush()
        self.closed = False
        self.pending = b""  # bytes of a frame not yet whole
        self.goaways = []
        self.events = []
        self.streams = {}  # id -> {"headers": {...}, "body": bytes, "ended": bool, "reset": code}

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def resume(self):
        """Acknowledges the DATA held back, and from now on all DATA as it comes."""
        self.auto_ack = True
        for length, sid in self.unacked:
            try:
                self.conn.acknowledge_received_data(length, sid)
            except h2.exceptions.StreamClosedError:
                pass
        self.unacked = []
        self.flush()

    def request(self, path, authority="localhost", extra=(), end=True, method="GET"):
        sid = self.conn.get_next_available_stream_id()
        self.conn.send_headers(sid, [(":method", method), (":scheme", "https"),
                                     (":authority", authority), (":path", path)] + list(extra),
                               end_stream=end)
        self.flush()
        self.streams[sid] = {"headers": None, "body": b"", "ended": False, "reset": None}
        return sid

    def pump(self, timeout=10):
        """Reads once and handles what came; returns False when the server closed."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return True  # nothing yet: the caller's deadline decides
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        if not data:
            self.closed = True
            return False
        # GOAWAY is taken out before the h2 package sees it: the package ends the connection
        # on any GOAWAY, where RFC 9113 §6.8 has the streams up to its last id go on.
        self.pending += data
        passed, at = b"", 0
        while at + 9 <= len(self.pending):
            length = int.from_bytes(self.pending[at:at + 3], "big")
            if at + 9 + length > len(self.pending):
                break
            if self.pending[at + 3] == GOAWAY:
                payload = self.pending[at + 9:at + 9 + length]
                self.goaways.append(Goaway(int.from_bytes(payload[0:4], "big") & 0x7FFFFFFF,
                                           int.from_bytes(payload[4:8], "big")))
            else:
                passed += self.pending[at:at + 9 + length]
            at += 9 + length
        self.pending = self.pending[at:]
        try:
            events = self.conn.receive_data(passed)
        except h2.exceptions.ProtocolError:
            self.closed = True
            return False
        for e in events:
            self.events.append(e)
            s = self.streams.get(getattr(e, "stream_id", None))
            if isinstance(e, h2.events.ResponseReceived) and s is not None:
                s["headers"] = dict(e.headers)
            elif isinstance(e, h2.events.DataReceived) and s is not None:
                s["body"] += e.data
                if self.auto_ack:
                    self.conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                else:
                    self.unacked.append((e.flow_controlled_length, e.stream_id))
            elif isinstance(e, h2.events.StreamEnded) and s is not None:
                s["ended"] = True
            elif isinstance(e, h2.events.StreamReset) and s is not None:
                s["reset"] = e.error_code
        try:
            self.flush()
        except OSError:
            pass
        return True

    def until(self, done, timeout=20):
        """Pumps until done() holds or the server closes; returns done()."""
        deadline = time.monotonic() + timeout
        while not done() and not self.closed and time.monotonic() < deadline:
            self.pump()
        return done()

    def get(self, path, **kw):
        """Returns (status, headers, body) of one request."""
        sid = self.request(path, **kw)
        s = self.streams[sid]
        self.until(lambda: s["ended"] or s["reset"] is not None)
        headers = s["headers"] or {}
        return int(headers.get(b":status", b"0")), headers, s["body"]

    def goaway(self):
        """Returns the first GOAWAY the server sent (last_stream_id, error_code), or None."""
        return self.goaways[0] if self.goaways else None


class H2:
    """HTTP/2 served over TLS and h2c, and each limit against an abusive client."""

    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        os.makedirs(os.path.join(base, "b"))
        with open(os.path.join(base, "b", "index.html"), "wb") as f:
            f.write(B_INDEX)
        with open(os.path.join(root, "pc.txt"), "wb") as f:
            f.write(PC_TEXT)
        with open(os.path.join(root, "pc.txt.gz"), "wb") as f:
            f.write(gzip.compress(PC_TEXT))
        with open(os.path.join(root, "missing.html"), "wb") as f:
            f.write(MISSING_PAGE)
        cls.crt, cls.key = make_cert(base)
        cls.tls_port, cls.metrics_port = free_port(), free_port()
        cls.access_log = os.path.join(base, "access.log")
        cls.settings = {
            "server": {"listen_tls": ["127.0.0.1:%d" % cls.tls_port], "h2c": True,
                       "precompressed": "on", "directory_listing": True,
                       "error_pages": {"404": "/missing.html"}},
            "tls": {"certificate": cls.crt, "key": cls.key},
            "http2": dict(LIMITS),
            "log": {"access_log": cls.access_log},
            "metrics": {"enabled": True, "listen": "127.0.0.1:%d" % cls.metrics_port},
        }
        return root

    @classmethod
    def extra_toml(cls):
        return ('\n[[headers]]\nsource = "/dir/**"\nset = { "Cache-Control" = "max-age=60" }\n'
                '\n[[redirects]]\nsource = "/old"\ndestination = "/hello.txt"\n'
                '\n[[vhosts]]\nhost = "b.test"\nroot = "%s"\n' % os.path.join(cls.base, "b"))

    @property
    def h2c_port(self):
        return self.srv.port  # the plain address, where h2c is on

    def curl(self, url, *args):
        out = subprocess.run(["curl", "-sSk", "--max-time", "20", "--resolve",
                              "localhost:%d:127.0.0.1" % self.tls_port, "--resolve",
                              "b.test:%d:127.0.0.1" % self.tls_port] + list(args) + [url],
                             capture_output=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout

    def tls_socket(self, alpn=("h2",)):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(list(alpn))
        raw = socket.create_connection(("127.0.0.1", self.tls_port), timeout=10)
        return ctx.wrap_socket(raw, server_hostname="localhost")

    def h2c_socket(self):
        return socket.create_connection(("127.0.0.1", self.h2c_port), timeout=10)

    def client(self, tls=True, **kw):
        c = H2Client(self.tls_socket() if tls else self.h2c_socket(), **kw)
        self.addCleanup(c.sock.close)
        return c

    def raw_h2c(self):
        """A plain socket that has sent the preface and an empty SETTINGS."""
        s = self.h2c_socket()
        self.addCleanup(s.close)
        s.sendall(PREFACE + frame(SETTINGS, 0, 0))
        return s

    def still_serves(self):
        c = self.client()
        status, _, body = c.get("/hello.txt")
        self.assertEqual((status, body), (200, site.HELLO))
        c.sock.close()

    # Serving: everything HTTP/1.1 serves, the same over HTTP/2.

    def test_curl_http2_over_tls_alpn(self):
        out = self.curl("https://localhost:%d/hello.txt" % self.tls_port, "--http2",
                        "-w", "\n%{http_version}")
        self.assertEqual(out, site.HELLO + b"\n2")

    def test_curl_h2c_prior_knowledge(self):
        out = self.curl("http://127.0.0.1:%d/hello.txt" % self.h2c_port,
                        "--http2-prior-knowledge", "-w", "\n%{http_version}")
        self.assertEqual(out, site.HELLO + b"\n2")

    def test_http11_still_served_on_both_ports(self):
        out = self.curl("https://localhost:%d/hello.txt" % self.tls_port, "--http1.1",
                        "-w", "\n%{http_version}")
        self.assertEqual(out, site.HELLO + b"\n1.1")
        out = self.curl("http://127.0.0.1:%d/hello.txt" % self.h2c_port, "-w",
                        "\n%{http_version}")
        self.assertEqual(out, site.HELLO + b"\n1.1")

    def test_get_head_404_index(self):
        for tls in (True, False):
            c = self.client(tls)
            status, headers, body = c.get("/hello.txt")
            self.assertEqual((status, body), (200, site.HELLO))
            self.assertEqual(headers[b"content-length"], b"%d" % len(site.HELLO))
            self.assertNotIn(b"connection", headers)
            status, headers, body = c.get("/hello.txt", method="HEAD")
            self.assertEqual((status, body), (200, b""))
            self.assertEqual(headers[b"content-length"], b"%d" % len(site.HELLO))
            status, _, body = c.get("/no-such-file")
            self.assertEqual((status, body), (404, MISSING_PAGE))
            status, _, body = c.get("/dir/")
            self.assertEqual((status, body), (200, site.DIR_INDEX))
            c.sock.close()

    def test_site_rules_listing_precompressed(self):
        c = self.client()
        status, headers, _ = c.get("/dir/")
        self.assertEqual((status, headers.get(b"cache-control")), (200, b"max-age=60"))
        status, headers, _ = c.get("/old")
        self.assertEqual((status, headers[b"location"]), (301, b"/hello.txt"))
        status, _, body = c.get("/no-such-page")
        self.assertEqual((status, body), (404, MISSING_PAGE))
        status, headers, body = c.get("/noindex/")
        self.assertEqual(status, 200)
        self.assertIn(b"file.txt", body)
        status, headers, body = c.get("/pc.txt", extra=[("accept-encoding", "gzip")])
        self.assertEqual((status, headers[b"content-encoding"]), (200, b"gzip"))
        self.assertEqual(gzip.decompress(body), PC_TEXT)
        self.assertEqual(headers[b"vary"], b"Accept-Encoding")

    def test_body_read_from_its_file(self):
        c = self.client()
        status, _, body = c.get("/medium.bin")
        self.assertEqual(status, 200)
        self.assertEqual(hashlib.sha256(body).digest(), hashlib.sha256(site.MEDIUM).digest())

    def test_conditional_304(self):
        c = self.client()
        _, headers, _ = c.get("/hello.txt")
        status, headers2, body = c.get("/hello.txt",
                                       extra=[("if-none-match", headers[b"etag"].decode())])
        self.assertEqual((status, body), (304, b""))
        self.assertEqual(headers2[b"etag"], headers[b"etag"])

    def test_range_206_and_multipart(self):
        c = self.client()
        status, headers, body = c.get("/hello.txt", extra=[("range", "bytes=0-4")])
        self.assertEqual((status, body), (206, b"hello"))
        self.assertEqual(headers[b"content-range"], b"bytes 0-4/12")
        offset = 50 * 1024 * 1024 + 3
        mark = site.MARKS[offset]
        status, _, body = c.get("/big.bin", extra=[("range", "bytes=%d-%d" % (
            offset, offset + len(mark) - 1))])
        self.assertEqual((status, body), (206, mark))
        status, headers, body = c.get("/hello.txt", extra=[("range", "bytes=0-1,6-7")])
        self.assertEqual(status, 206)
        self.assertTrue(headers[b"content-type"].startswith(b"multipart/byteranges"))
        self.assertEqual(int(headers[b"content-length"]), len(body))
        self.assertIn(b"\r\n\r\nhe\r\n", body)
        self.assertIn(b"\r\n\r\nwo\r\n", body)

    def test_vhost_by_authority(self):
        # Over h2c no SNI can pick it: :authority alone does.
        c = self.client(tls=False)
        status, _, body = c.get("/", authority="b.test")
        self.assertEqual((status, body), (200, B_INDEX))
        status, _, body = c.get("/", authority="localhost")
        self.assertEqual((status, body), (200, site.INDEX))
        out = self.curl("https://b.test:%d/" % self.tls_port, "--http2")
        self.assertEqual(out, B_INDEX)

    def test_access_log_and_metrics(self):
        before = metric(self.metrics_port, 'weft_requests_total{code="200"}')
        c = self.client()
        c.get("/hello.txt?h2-log-mark")
        c.sock.close()
        deadline = time.monotonic() + 10
        line = ""
        while time.monotonic() < deadline and not line:
            with open(self.access_log) as f:
                line = next((ln for ln in f if "h2-log-mark" in ln), "")
        self.assertIn('"GET /hello.txt?h2-log-mark HTTP/2.0" 200 12', line)
        self.assertGreater(metric(self.metrics_port, 'weft_requests_total{code="200"}'), before)

    def test_h2load_many_streams(self):
        # -m at the stream limit: h2load opens that many before it reads the SETTINGS.
        out = subprocess.run(["h2load", "-n", "2000", "-c", "4", "-m",
                              str(LIMITS["max_concurrent_streams"]),
                              "https://127.0.0.1:%d/hello.txt" % self.tls_port],
                             capture_output=True, text=True, timeout=60)
        self.assertIn("2000 succeeded", out.stdout, out.stdout + out.stderr)
        self.assertIn("status codes: 2000 2xx", out.stdout)

    # Limits: each abusive client is cut off, and the server serves others afterwards.

    def test_too_many_concurrent_streams_refused(self):
        s = self.raw_h2c()
        # The SETTINGS acknowledged first, so the limit holds for what follows.
        frames = read_until(s, lambda fs: any(f[0] == SETTINGS and not f[1] & 1 for f in fs))
        s.sendall(frame(SETTINGS, 0x1, 0))
        read_until(s, lambda fs: any(f[0] == SETTINGS and f[1] & 1 for f in fs), frames)
        enc = hpack.Encoder()
        limit = LIMITS["max_concurrent_streams"]
        # Requests that never end keep their streams open after their responses.
        for i in range(limit + 4):
            s.sendall(frame(HEADERS, 0x4, 1 + 2 * i, enc.encode([
                (":method", "GET"), (":scheme", "http"), (":authority", "localhost"),
                (":path", "/hello.txt")])))

        # Past an acknowledged limit nghttp2 ends the connection (RFC 9113 §5.1.2 lets it
        # choose a stream error or a connection error): GOAWAY naming the last stream within.
        frames = read_to_close(s)
        goaway = [f for f in frames if f[0] == GOAWAY]
        self.assertTrue(goaway, frames)
        self.assertEqual(int.from_bytes(goaway[0][3][:4], "big"), 1 + 2 * (limit - 1))
        self.assertEqual(goaway_code(frames), PROTOCOL_ERROR)
        s.close()
        self.still_serves()

    def test_streams_over_the_limit_before_settings_ack_refused(self):
        # Before the client acknowledges the limit, streams past it are refused one by one.
        s = self.h2c_socket()
        enc = hpack.Encoder()
        limit = LIMITS["max_concurrent_streams"]
        burst = PREFACE + frame(SETTINGS, 0, 0)
        for i in range(limit + 4):
            burst += frame(HEADERS, 0x4, 1 + 2 * i, enc.encode([
                (":method", "GET"), (":scheme", "http"), (":authority", "localhost"),
                (":path", "/hello.txt")]))
        s.sendall(burst)

        def refused(fs):
            return [f[2] for f in fs if f[0] == RST_STREAM and
                    int.from_bytes(f[3], "big") == REFUSED_STREAM]

        def answered(fs):
            return [f[2] for f in fs if f[0] == HEADERS]

        frames = read_until(s, lambda fs: len(refused(fs)) + len(answered(fs)) >= limit + 4)
        self.assertEqual(sorted(answered(frames)), [1 + 2 * i for i in range(limit)], frames)
        self.assertEqual(sorted(refused(frames)), [1 + 2 * i for i in range(limit, limit + 4)])
        s.close()
        self.still_serves()

    def test_rapid_reset_goaway(self):
        s = self.raw_h2c()
        enc = hpack.Encoder()
        burst = b""
        for i in range(100):
            sid = 1 + 2 * i
            block = enc.encode([(":method", "GET"), (":scheme", "http"),
                                (":authority", "localhost"), (":path", "/hello.txt")])
            burst += frame(HEADERS, 0x5, sid, block) + frame(RST_STREAM, 0, sid,
                                                             struct.pack(">I", CANCEL))
        s.sendall(burst)
        self.assertIsNotNone(goaway_code(read_to_close(s)))
        s.close()
        self.still_serves()

    def test_continuation_flood_goaway(self):
        s = self.raw_h2c()
        block = hpack.Encoder().encode([(":method", "GET"), (":scheme", "http"),
                                        (":authority", "localhost"), (":path", "/hello.txt")])
        flood = frame(HEADERS, 0x1, 1, block[:1])  # END_STREAM, no END_HEADERS
        for i in range(1, 40):
            flood += frame(CONTINUATION, 0, 1, b"\x40\x01a\x01b")  # literal "a: b" each
        s.sendall(flood)
        self.assertEqual(goaway_code(read_to_close(s)), ENHANCE_YOUR_CALM)
        s.close()
        self.still_serves()

    def test_ping_flood_goaway(self):
        s = self.raw_h2c()
        s.sendall(b"".join(frame(PING, 0, 0, struct.pack(">Q", i)) for i in range(2000)))
        frames = read_to_close(s)
        acks = sum(1 for f in frames if f[0] == PING)
        self.assertEqual(goaway_code(frames), ENHANCE_YOUR_CALM)
        self.assertLess(acks, 2000)  # cut off, not answered to the end
        s.close()
        self.still_serves()

    def test_window_update_flood_goaway(self):
        s = self.raw_h2c()
        s.sendall(b"".join(frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1))
                           for _ in range(LIMITS["max_window_updates"] + 50)))
        self.assertEqual(goaway_code(read_to_close(s)), ENHANCE_YOUR_CALM)
        s.close()
        self.still_serves()

    def test_malformed_frame_goaway_protocol_error(self):
        s = self.raw_h2c()
        s.sendall(frame(DATA, 0, 0, b"x"))  # DATA on stream 0 (RFC 9113 §6.1)
        self.assertEqual(goaway_code(read_to_close(s)), PROTOCOL_ERROR)
        s.close()
        self.still_serves()

    def test_header_list_over_limit_431(self):
        c = self.client()
        status, _, _ = c.get("/hello.txt", extra=[("x-big", "a" * 5000)])
        self.assertEqual(status, 431)
        status, _, body = c.get("/hello.txt")  # the connection goes on
        self.assertEqual((status, body), (200, site.HELLO))

    def test_stalled_stream_reset(self):
        c = self.client(window=0)  # a client that never opens a stream's window
        c.auto_ack = False
        sid = c.request("/medium.bin")
        self.assertTrue(c.until(lambda: c.streams[sid]["reset"] is not None))
        self.assertEqual(c.streams[sid]["reset"], CANCEL)
        c.sock.close()
        self.still_serves()

    def test_a_file_that_shrinks_resets_its_stream(self):
        # The body is framed as it goes: a file cut short under a stream ends that stream
        # (RST_STREAM INTERNAL_ERROR, never padding or other bytes), and the connection goes on.
        path = os.path.join(self.root, "shrinks-%s.bin" % self.backend)
        data = os.urandom(1 << 20)
        with open(path, "wb") as f:
            f.write(data)
        c = self.client(window=16384)  # the first 16 KiB, then the server waits for room
        c.auto_ack = False
        sid = c.request("/" + os.path.basename(path))
        s = c.streams[sid]
        self.assertTrue(c.until(lambda: len(s["body"]) == 16384))
        os.truncate(path, 1024)
        c.resume()
        self.assertTrue(c.until(lambda: s["reset"] is not None or s["ended"]))
        self.assertEqual(s["reset"], INTERNAL_ERROR)
        self.assertEqual(s["body"], data[:len(s["body"])])
        status, _, body = c.get("/hello.txt")  # the same connection serves on
        self.assertEqual(status, 200)
        self.assertIn("it shrank; resetting the stream", self.srv.log())

    def test_idle_connection_goaway(self):
        c = self.client()
        status, _, _ = c.get("/hello.txt")
        self.assertEqual(status, 200)
        c.until(lambda: c.goaway() is not None, timeout=30)
        self.assertEqual(c.goaway().error_code, NO_ERROR)


class H2Off:
    """server.http2 = false and server.h2c = false: HTTP/1.1 alone, as before."""

    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        cls.crt, cls.key = make_cert(base)
        cls.tls_port = free_port()
        cls.settings = {"server": {"listen_tls": ["127.0.0.1:%d" % cls.tls_port],
                                   "http2": False},
                        "tls": {"certificate": cls.crt, "key": cls.key}}
        return root

    def test_alpn_picks_http11(self):
        out = subprocess.run(["curl", "-sSk", "--http2", "-w", "\n%{http_version}",
                              "https://127.0.0.1:%d/hello.txt" % self.tls_port],
                             capture_output=True, timeout=30)
        self.assertEqual(out.stdout, site.HELLO + b"\n1.1")

    def test_preface_on_plain_port_refused(self):
        with socket.create_connection(("127.0.0.1", self.srv.port), timeout=10) as s:
            s.sendall(PREFACE + frame(SETTINGS, 0, 0))
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        self.assertRegex(data, rb"^HTTP/1\.1 (400|505) ")


class H2GracefulStop(unittest.TestCase):
    """SIGTERM, and SIGHUP (the old generation drains), with streams in flight: GOAWAY NO_ERROR
    naming the last stream, and every stream the server took finishes whole. The client
    grants no window until the GOAWAY came, so the streams are in flight when the drain
    begins whatever the timing."""

    backend = None

    def drain_with_streams_in_flight(self, signo, grace):
        base = tempfile.mkdtemp(prefix="weft-root-")
        self.addCleanup(shutil.rmtree, base, ignore_errors=True)
        root = site.build(base)
        crt, key = make_cert(base)
        tls_port = free_port()
        srv = WeftServer(root, self.backend, {
            "server": {"listen_tls": ["127.0.0.1:%d" % tls_port]},
            "tls": {"certificate": crt, "key": key},
            "timeouts": {"shutdown_grace": grace}})
        srv.start()
        try:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", tls_port), timeout=10),
                                   server_hostname="localhost")
            c = H2Client(sock)
            c.auto_ack = False
            sids = [c.request("/medium.bin") for _ in range(20)]
            # Every response has begun (the server took every stream); the bodies, 200 KiB
            # each, wait for window.
            c.until(lambda: all(c.streams[s]["headers"] for s in sids))
            srv.proc.send_signal(signo)
            self.assertTrue(c.until(lambda: c.goaway() is not None, timeout=30))
            self.assertEqual(c.goaway().error_code, NO_ERROR)
            self.assertGreaterEqual(c.goaway().last_stream_id, sids[-1])
            self.assertFalse(all(c.streams[s]["ended"] for s in sids))
            c.resume()
            c.until(lambda: all(c.streams[s]["ended"] or c.streams[s]["reset"] is not None
                                for s in sids), timeout=30)
            for s in sids:
                self.assertTrue(c.streams[s]["ended"], (s, c.streams[s]["reset"]))
                self.assertEqual(c.streams[s]["body"], site.MEDIUM)
            return srv, tls_port
        except BaseException:
            if srv.proc.poll() is None:
                srv.stop()
            srv.cleanup()
            raise

    def test_stop_loses_no_stream(self):
        srv, _ = self.drain_with_streams_in_flight(signal.SIGTERM, "20s")
        try:
            self.assertEqual(srv.proc.wait(30), 0, srv.log()[-4000:])
        finally:
            srv.cleanup()

    def test_reload_loses_no_stream(self):
        # The old generation's connections get shutdown_grace to finish on their own, then
        # the drain: GOAWAY; the client's streams then finish under the new generation's
        # server, which goes on serving.
        srv, tls_port = self.drain_with_streams_in_flight(signal.SIGHUP, "2s")
        try:
            out = subprocess.run(["curl", "-sk", "--http2", "-w", "\n%{http_version}",
                                  "https://127.0.0.1:%d/hello.txt" % tls_port],
                                 capture_output=True, timeout=30)
            self.assertEqual(out.stdout, site.HELLO + b"\n2")
            self.assertEqual(srv.stop(), 0, srv.log()[-4000:])
        finally:
            srv.cleanup()


per_backend(globals(), H2, H2Off)
for _backend in os.environ.get("WEFT_BACKENDS", "io_uring epoll").split():
    globals()["H2GracefulStop_" + _backend] = type(
        "H2GracefulStop_" + _backend, (H2GracefulStop,), {"backend": _backend})
del H2GracefulStop

if __name__ == "__main__":
    unittest.main()
