"""Issue 35, on both backends: HTTPS on server.listen_tls with the real server, curl and
openssl s_client: TLS 1.2 and 1.3, a [[vhosts]] certificate chosen by SNI, session resumption
(tickets and the session cache), a Range and a multipart Range, a body of several MiB whole,
keep-alive (several requests, pipelined ones, one after the connection idled), weft-load
--tls sessions with and without resumption, plain HTTP sent
to the TLS port (closed, nothing else harmed), a client that stalls mid-handshake (closed after
timeouts.header while others are served), random first bytes (a bounded count), SIGHUP
loading new certificates while an open connection keeps its session, and weft -t naming a key
that does not match. Certificates: ECDSA P-256, made with the openssl command.

The same again with tls.ktls = "on" (TlsKernelAsked): every session runs its handshake on the
socket and asks the kernel for its records; this VM's kernel has no "tls" ULP, so each falls
back to the library's records (the metric says so), and everything above still holds. OCSP
stapling (TlsStapling): a CA-signed certificate's response stapled for clients that ask, a
[[vhosts]] certificate's own, and weft -t refusing a file that is not a response or is about
another certificate."""

import hashlib
import http.client
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import WEFT, free_port, metric, per_backend  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "loadgen"))
from loadgen_harness import NGINX, run_load, wait_for_port  # noqa: E402
from test_keepalive import head_of, read_to_end, small_window_socket  # noqa: E402

BIG = 6 * 1024 * 1024 + 123  # several MiB, not a whole number of records
B_INDEX = b"<h1>site b over TLS</h1>\n"
HEADER_TIMEOUT = 2  # timeouts.header, seconds: the stalled handshake's bound


def make_cert(folder, stem, name):
    """Writes folder/stem.crt and folder/stem.key: a self-signed ECDSA P-256 certificate for
    `name` (subject CN and subjectAltName); returns the two paths."""
    crt, key = os.path.join(folder, stem + ".crt"), os.path.join(folder, stem + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", crt, "-days", "2",
                    "-subj", "/CN=" + name, "-addext", "subjectAltName=DNS:" + name],
                   check=True, capture_output=True)
    return crt, key


def make_ca(folder):
    """Writes folder/ca.crt and folder/ca.key: a self-signed ECDSA P-256 CA; returns them."""
    crt, key = os.path.join(folder, "ca.crt"), os.path.join(folder, "ca.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", crt, "-days", "2",
                    "-subj", "/CN=weft test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=keyCertSign,cRLSign"], check=True, capture_output=True)
    return crt, key


def make_signed_cert(folder, stem, name, ca):
    """Writes folder/stem.pem (a certificate for `name` signed by `ca`, then ca's own: a full
    chain) and folder/stem.key; returns (chain, key, leaf certificate)."""
    leaf, key = os.path.join(folder, stem + ".crt"), os.path.join(folder, stem + ".key")
    csr, ext = os.path.join(folder, stem + ".csr"), os.path.join(folder, stem + ".ext")
    subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=" + name],
                   check=True, capture_output=True)
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:%s\n" % name)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1],
                    "-CAcreateserial", "-out", leaf, "-days", "2", "-extfile", ext],
                   check=True, capture_output=True)
    chain = os.path.join(folder, stem + ".pem")
    with open(chain, "wb") as out:
        for part in (leaf, ca[0]):
            with open(part, "rb") as f:
                out.write(f.read())
    return chain, key, leaf


def make_ocsp_response(folder, stem, leaf, ca, status="V"):
    """Writes folder/stem.der: the CA's OCSP response about `leaf` (status "V" good or "R"
    revoked), as `openssl ocsp` answers from its index file; returns its path."""
    serial = subprocess.run(["openssl", "x509", "-in", leaf, "-noout", "-serial"], check=True,
                            capture_output=True).stdout.decode().strip().split("=")[1]
    index = os.path.join(folder, stem + ".index")
    with open(index, "w") as f:
        f.write("%s\t491231235959Z\t%s\t%s\tunknown\t/CN=x\n"
                % (status, "251201000000Z" if status == "R" else "", serial))
    req, resp = os.path.join(folder, stem + ".req"), os.path.join(folder, stem + ".der")
    subprocess.run(["openssl", "ocsp", "-issuer", ca[0], "-cert", leaf, "-reqout", req,
                    "-no_nonce"], check=True, capture_output=True)
    subprocess.run(["openssl", "ocsp", "-index", index, "-rsigner", ca[0], "-rkey", ca[1],
                    "-CA", ca[0], "-reqin", req, "-respout", resp, "-ndays", "1"],
                   check=True, capture_output=True)
    return resp


def tls_library():
    """Returns the TLS library weft was built with, from its --version ("OpenSSL 3...")."""
    out = subprocess.run([WEFT, "--version"], capture_output=True, text=True).stdout
    return out.split("(TLS: ", 1)[1].rstrip(")\n") if "(TLS: " in out else "OpenSSL"


# A weft built with wolfSSL (the wolfssl preset) has neither kernel TLS nor stapling: the
# suite runs against it (WEFT_BINARY) with those cases skipped, and checks that it refuses them.
WOLFSSL = tls_library().startswith("wolfSSL")


def kernel_has_tls():
    """Returns whether this kernel lists the "tls" ULP (weft loads its module at start)."""
    with open("/proc/sys/net/ipv4/tcp_available_ulp") as f:
        return "tls" in f.read().split()


def s_client(port, *args, stdin=b"", timeout=10):
    """Runs openssl s_client against 127.0.0.1:port; returns its stdout and stderr as text.
    With `stdin` (a request asking to close) it reads until the server closes."""
    more = ["-ign_eof"] if stdin else []
    out = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + more +
                         list(args),
                         input=stdin, capture_output=True, timeout=timeout)
    return (out.stdout + out.stderr).decode("latin-1")


def subject_of(port, *args):
    """Returns the subject and subjectAltName of the certificate the server presents."""
    pem = s_client(port, *args)
    out = subprocess.run(["openssl", "x509", "-noout", "-subject", "-ext", "subjectAltName"],
                         input=pem.encode(), capture_output=True)
    return out.stdout.decode()


def client_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Tls:
    settings = {"timeouts": {"header": "%ds" % HEADER_TIMEOUT},
                "metrics": {"enabled": True}}

    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        cls.big = random.Random(35).randbytes(BIG)
        with open(os.path.join(root, "big.bin"), "wb") as f:
            f.write(cls.big)
        os.makedirs(os.path.join(base, "b"))
        with open(os.path.join(base, "b", "index.html"), "wb") as f:
            f.write(B_INDEX)
        cls.certs = os.path.join(base, "certs")
        os.makedirs(cls.certs)
        cls.crt, cls.key = make_cert(cls.certs, "default", "localhost")
        cls.b_crt, cls.b_key = make_cert(cls.certs, "b", "b.test")
        cls.tls_port = free_port()
        cls.metrics_port = free_port()
        cls.settings = {
            "server": {"listen_tls": ["127.0.0.1:%d" % cls.tls_port]},
            "tls": {"certificate": cls.crt, "key": cls.key},
            "timeouts": dict(Tls.settings["timeouts"]),
            "metrics": {"enabled": True, "listen": "127.0.0.1:%d" % cls.metrics_port},
        }
        return root

    @classmethod
    def extra_toml(cls):
        return ('\n[[vhosts]]\nhost = "b.test"\nroot = "%s"\ncertificate = "%s"\nkey = "%s"\n'
                % (os.path.join(cls.base, "b"), cls.b_crt, cls.b_key))

    def url(self, path):
        return "https://localhost:%d%s" % (self.tls_port, path)

    def curl(self, path, *args):
        """Runs curl -k on `path` over TLS; returns (stdout bytes, stderr text)."""
        out = subprocess.run(["curl", "-sSk", "--max-time", "20", "--resolve",
                              "localhost:%d:127.0.0.1" % self.tls_port,
                              "--resolve", "b.test:%d:127.0.0.1" % self.tls_port] + list(args) +
                             [self.url(path) if path.startswith("/") else path],
                             capture_output=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout, out.stderr.decode("latin-1")

    def connect(self, server_name="localhost"):
        raw = socket.create_connection(("127.0.0.1", self.tls_port), timeout=10)
        return client_context().wrap_socket(raw, server_hostname=server_name)

    def still_serves(self):
        body, _ = self.curl("/hello.txt")
        self.assertEqual(body, site.HELLO)

    def test_start_log_names_where_records_are_made(self):
        self.assertRegex(self.srv.log(), r"kTLS (not available: records in user space|"
                                         r"available: the kernel makes the records|"
                                         r"not in wolfSSL [0-9.]+: records in user space)")

    def test_sessions_that_asked_the_kernel_are_counted(self):
        self.still_serves()
        handshakes = metric(self.metrics_port, "weft_tls_handshakes_total")
        kernel = metric(self.metrics_port, 'weft_tls_kernel_sessions_total{records="kernel"}')
        library = metric(self.metrics_port, 'weft_tls_kernel_sessions_total{records="library"}')
        if not WOLFSSL and (self.settings["tls"].get("ktls") == "on" or kernel_has_tls()):
            self.assertEqual(kernel + library, handshakes)  # every session asked
        else:
            self.assertEqual(kernel + library, 0)  # none asked: kTLS cannot be had here
        if not kernel_has_tls():
            self.assertEqual(kernel, 0)

    def test_tls12_and_tls13(self):
        for flags, version in ((["--tlsv1.2", "--tls-max", "1.2"], "TLSv1.2"),
                               (["--tlsv1.3"], "TLSv1.3")):
            body, err = self.curl("/hello.txt", "-v", *flags)
            self.assertEqual(body, site.HELLO)
            self.assertIn("SSL connection using " + version, err)
        with self.connect() as s:
            self.assertEqual(s.version(), "TLSv1.3")

    def test_sni_picks_the_vhost_certificate(self):
        self.assertIn("b.test", subject_of(self.tls_port, "-servername", "b.test"))
        self.assertIn("DNS:b.test", subject_of(self.tls_port, "-servername", "b.test"))
        # Normalised as a Host is: a trailing dot and the case make no difference.
        self.assertIn("DNS:b.test", subject_of(self.tls_port, "-servername", "B.Test."))
        default = subject_of(self.tls_port, "-servername", "other.test")
        self.assertIn("localhost", default)
        self.assertNotIn("b.test", default)
        body, _ = self.curl("https://b.test:%d/" % self.tls_port)
        self.assertEqual(body, B_INDEX)

    def test_session_resumption(self):
        for version in ("-tls1_2", "-tls1_3"):
            with tempfile.TemporaryDirectory() as d:
                sess = os.path.join(d, "sess")
                request = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                first = s_client(self.tls_port, version, "-sess_out", sess, stdin=request)
                self.assertIn("New,", first)
                second = s_client(self.tls_port, version, "-sess_in", sess, stdin=request)
                self.assertIn("Reused,", second, version)
                self.assertIn("hello", second)
        # Without tickets, TLS 1.2 resumes from the server's session cache.
        with tempfile.TemporaryDirectory() as d:
            sess = os.path.join(d, "sess")
            s_client(self.tls_port, "-tls1_2", "-no_ticket", "-sess_out", sess)
            self.assertIn("Reused,", s_client(self.tls_port, "-tls1_2", "-no_ticket",
                                              "-sess_in", sess))

    def test_ranges(self):
        body, _ = self.curl("/big.bin", "-r", "1000-1999")
        self.assertEqual(body, self.big[1000:2000])
        body, _ = self.curl("/big.bin", "-r", "%d-" % (BIG - 70000))
        self.assertEqual(body, self.big[-70000:])
        body, _ = self.curl("/big.bin", "-r", "0-9,3000000-3000009")
        self.assertIn(b"Content-Range: bytes 0-9/%d" % BIG, body)
        self.assertIn(self.big[0:10], body)
        self.assertIn(self.big[3000000:3000010], body)

    def test_large_body_arrives_whole(self):
        body, _ = self.curl("/big.bin")
        self.assertEqual(len(body), BIG)
        self.assertEqual(hashlib.sha256(body).hexdigest(), hashlib.sha256(self.big).hexdigest())

    def test_late_bytes_do_not_truncate_a_response(self):
        # As over plain HTTP (test_keepalive): a record that arrives while a closing response
        # is still being sent is ciphertext weft has not read (buffered() cannot see it); a
        # close at once would reset the connection and drop the unsent tail.
        raw = small_window_socket(("127.0.0.1", self.tls_port))
        s = client_context().wrap_socket(raw, server_hostname="localhost")
        try:
            s.sendall(b"GET /big.bin HTTP/1.0\r\n\r\n")
            length, rest = head_of(s)
            self.assertEqual(length, BIG)
            s.sendall(b"\r\n")
            body, reset = read_to_end(s, rest)
            self.assertFalse(reset, "reset after %d of %d bytes" % (len(body), length))
            self.assertEqual(len(body), length)
            self.assertEqual(hashlib.sha256(body).digest(), hashlib.sha256(self.big).digest())
        finally:
            s.close()

    def test_keep_alive_on_one_connection(self):
        c = http.client.HTTPSConnection("127.0.0.1", self.tls_port, timeout=10,
                                        context=client_context())
        try:
            socks = set()
            for i in range(5):
                c.request("GET", "/hello.txt" if i % 2 else "/big.bin")
                r = c.getresponse()
                body = r.read()
                self.assertEqual(r.status, 200)
                self.assertEqual(body, site.HELLO if i % 2 else self.big)
                socks.add(id(c.sock))
                if i == 2:
                    time.sleep(0.4)  # past timeouts.active_wait: the connection idles
            self.assertEqual(len(socks), 1)
        finally:
            c.close()

    def test_pipelined_requests(self):
        with self.connect() as s:
            one = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"
            s.sendall(one * 3 + b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
        self.assertEqual(data.count(b"HTTP/1.1 200 OK"), 4)
        self.assertEqual(data.count(site.HELLO), 4)

    def test_plain_http_to_the_tls_port_is_closed(self):
        with socket.create_connection(("127.0.0.1", self.tls_port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            got = b""
            try:
                while True:
                    b = s.recv(4096)
                    if not b:
                        break
                    got += b
            except ConnectionResetError:
                pass
        self.assertNotIn(b"HTTP/1.1", got)  # an alert at most, never a plain answer
        self.still_serves()

    def test_stalled_handshake_is_closed_after_the_header_timeout(self):
        # The start of a ClientHello: a handshake record whose body never comes.
        partial = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03])
        failures = metric(self.metrics_port, "weft_tls_handshake_failures_total")
        with socket.create_connection(("127.0.0.1", self.tls_port), timeout=5) as s:
            s.sendall(partial)
            started = time.monotonic()
            self.still_serves()  # others are served meanwhile
            # Past timeouts.active_wait it waits as an idle connection does, without a fiber.
            deadline = time.monotonic() + HEADER_TIMEOUT / 2
            while (metric(self.metrics_port, "weft_connections_idle") < 1 and
                   time.monotonic() < deadline):
                time.sleep(0.05)
            self.assertGreaterEqual(metric(self.metrics_port, "weft_connections_idle"), 1)
            s.settimeout(HEADER_TIMEOUT + 8)
            try:
                self.assertEqual(s.recv(4096), b"")
            except ConnectionResetError:
                pass
            waited = time.monotonic() - started
        # Closed by timeouts.header, not at once (generous bounds: a loaded machine).
        self.assertGreater(waited, HEADER_TIMEOUT * 0.5)
        self.still_serves()
        self.assertEqual(metric(self.metrics_port, "weft_tls_handshake_failures_total"),
                         failures + 1)

    def test_client_hello_over_the_bound_is_refused(self):
        # A ClientHello announcing 131 KB (over tls.max_client_hello's 16k): refused when its
        # header arrives, before a buffer is sized by it; not left to timeouts.header.
        failures = metric(self.metrics_port, "weft_tls_handshake_failures_total")
        with socket.create_connection(("127.0.0.1", self.tls_port), timeout=10) as s:
            s.sendall(bytes.fromhex("160301000401020144"))
            try:
                self.assertEqual(s.recv(4096), b"")
            except ConnectionResetError:
                pass
        self.assertEqual(metric(self.metrics_port, "weft_tls_handshake_failures_total"),
                         failures + 1)
        line = "a ClientHello over tls.max_client_hello (16384)"
        deadline = time.monotonic() + 10  # the log is flushed every second
        while line not in self.srv.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertIn(line, self.srv.log())
        self.still_serves()

    def test_weft_load_sessions_with_and_without_resumption(self):
        # With --tls-resume a warm-up handshake brings the first ticket, so every session
        # offers one however they overlap, and weft resumes each.
        for extra, sessions, rate in (([], 40, 200), (["--tls-resume"], 40, 200)):
            run = run_load(["--server", "127.0.0.1", "--port", self.tls_port, "--uri",
                            "/hello.txt", "--rate", rate, "--num-conns", sessions, "--num-calls",
                            3, "--timeout", 5, "--tls"] + extra)
            self.assertEqual(run.returncode, 0, run.describe())
            j = run.json
            self.assertEqual(run.errors()["total"], 0, run.describe())
            self.assertEqual(j["replies"]["status"]["2xx"], sessions * 3, run.describe())
            self.assertEqual(j["replies"]["bytes"]["content"], sessions * 3 * len(site.HELLO))
            self.assertEqual(j["tls"]["handshakes"], sessions, run.describe())
            expected = sessions if extra else 0
            self.assertEqual(j["tls"]["offered"], expected, j["tls"])
            self.assertEqual(j["tls"]["resumed"], expected, j["tls"])

    def test_random_first_bytes(self):
        rng = random.Random(3500)
        for i in range(60):
            n = rng.randint(1, 3000)
            data = rng.randbytes(n)
            if i % 3 == 0:  # a handshake record's header, then noise
                data = bytes([0x16, 0x03, rng.randint(0, 4)]) + data
            with socket.create_connection(("127.0.0.1", self.tls_port), timeout=5) as s:
                try:
                    s.sendall(data)
                    s.shutdown(socket.SHUT_WR)
                    s.settimeout(HEADER_TIMEOUT + 8)
                    while s.recv(4096):
                        pass
                # Refused and reset before the client is done (ENOTCONN at shutdown): fine.
                except OSError:
                    pass
        self.still_serves()
        self.assertGreater(metric(self.metrics_port, "weft_tls_handshake_failures_total"), 0)


class TlsKernelAsked(Tls):
    """Every test of Tls with tls.ktls = "on": the handshakes run on the socket."""

    @classmethod
    def make_root(cls, base):
        root = super(TlsKernelAsked, cls).make_root(base)
        cls.settings["tls"]["ktls"] = "on"
        return root

    def test_start_log_names_where_records_are_made(self):
        self.assertRegex(self.srv.log(), r'kTLS (asked \(tls.ktls = "on"\) but not available: '
                                         r'each session falls back to records in user space|'
                                         r"available: the kernel makes the records)")


@unittest.skipIf(WOLFSSL, "a wolfSSL build does not staple (TlsConfigTest checks it says so)")
class TlsStapling(unittest.TestCase):
    """tls.stapling_file and a [[vhosts]] stapling_file: a client asking for the certificate's
    status (s_client -status) gets the file's response; a revoked one is stapled and named in
    the log."""

    def test_staples_for_the_default_and_the_vhost_certificate(self):
        from weft_harness import WeftServer
        base = tempfile.mkdtemp(prefix="weft-tls-")
        srv = None
        try:
            root = site.build(base)
            ca = make_ca(base)
            chain, key, leaf = make_signed_cert(base, "a", "localhost", ca)
            b_chain, b_key, b_leaf = make_signed_cert(base, "b", "b.test", ca)
            good = make_ocsp_response(base, "a", leaf, ca)
            revoked = make_ocsp_response(base, "b", b_leaf, ca, status="R")
            port = free_port()
            srv = WeftServer(root, "io_uring", {
                "server": {"listen_tls": ["127.0.0.1:%d" % port]},
                "tls": {"certificate": chain, "key": key, "stapling_file": good}},
                extra='\n[[vhosts]]\nhost = "b.test"\nroot = "%s"\ncertificate = "%s"\n'
                      'key = "%s"\nstapling_file = "%s"\n' % (root, b_chain, b_key, revoked))
            srv.start()
            out = s_client(port, "-status", "-servername", "localhost", "-CAfile", ca[0])
            self.assertIn("OCSP Response Status: successful", out)
            self.assertIn("Cert Status: good", out)
            self.assertIn("Verify return code: 0 (ok)", out)
            out = s_client(port, "-status", "-servername", "b.test")
            self.assertIn("Cert Status: revoked", out)
            self.assertIn("says the certificate is revoked; stapled as it is", srv.log())
            self.assertNotIn("OCSP Response Status", s_client(port, "-servername", "localhost"))
            self.assertEqual(srv.stop(), 0, srv.log())
        finally:
            if srv:
                srv.cleanup()
            shutil.rmtree(base, ignore_errors=True)


class TlsReload(unittest.TestCase):
    """SIGHUP reads the certificates again: new connections get the new one, an open
    connection keeps its session and is served on."""

    backend = None

    def test_reload_renews_the_certificate(self):
        from weft_harness import WeftServer
        base = tempfile.mkdtemp(prefix="weft-tls-")
        srv = None
        try:
            root = site.build(base)
            crt, key = make_cert(base, "cert", "first.test")
            port = free_port()
            srv = WeftServer(root, self.backend, {
                "server": {"listen_tls": ["127.0.0.1:%d" % port]},
                "tls": {"certificate": crt, "key": key}}).start()
            self.assertIn("first.test", subject_of(port))
            raw = socket.create_connection(("127.0.0.1", port), timeout=10)
            old = client_context().wrap_socket(raw, server_hostname="x")
            new_crt, new_key = make_cert(base, "next", "second.test")
            os.replace(new_crt, crt)
            os.replace(new_key, key)
            srv.proc.send_signal(signal.SIGHUP)
            deadline = time.monotonic() + 10
            while "second.test" not in subject_of(port) and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertIn("second.test", subject_of(port))
            old.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                b = old.recv(65536)
                if not b:
                    break
                data += b
            self.assertIn(b"200 OK", data)
            self.assertTrue(data.endswith(site.HELLO))
            old.close()
            self.assertEqual(srv.stop(), 0, srv.log())
        finally:
            if srv:
                srv.cleanup()
            shutil.rmtree(base, ignore_errors=True)


@unittest.skipUnless(os.path.exists(NGINX), "NGINX (nginx-light) is not installed")
class TlsTicketKeysWithNginx(unittest.TestCase):
    """A ticket NGINX issued under an ssl_session_ticket_key file resumes against weft with the
    same file in tls.session_ticket_keys: both layouts, 48 bytes (name | AES | HMAC) and 80
    (name | HMAC | AES)."""

    def start_nginx(self, base, crt, key, ticket_key):
        conf = os.path.join(base, "nginx.conf")
        port = free_port()
        with open(conf, "w") as f:
            f.write("daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\n"
                    "error_log {d}/error.log warn;\nevents {{ worker_connections 64; }}\n"
                    "http {{\n access_log off;\n client_body_temp_path {d}/cb;\n"
                    " proxy_temp_path {d}/p;\n fastcgi_temp_path {d}/f;\n"
                    " uwsgi_temp_path {d}/u;\n scgi_temp_path {d}/s;\n"
                    " server {{\n  listen 127.0.0.1:{port} ssl;\n  ssl_certificate {crt};\n"
                    "  ssl_certificate_key {key};\n  ssl_session_ticket_key {tk};\n"
                    "  ssl_protocols TLSv1.2 TLSv1.3;\n"
                    "  root {d};\n }}\n}}\n".format(d=base, port=port, crt=crt, key=key,
                                                     tk=ticket_key))
        proc = subprocess.Popen([NGINX, "-p", base, "-e", os.path.join(base, "error.log"),
                                 "-c", conf], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        wait_for_port(port, proc)
        return proc, port

    def test_a_ticket_nginx_issued_resumes_against_weft(self):
        from weft_harness import WeftServer
        base = tempfile.mkdtemp(prefix="weft-tls-")
        try:
            root = site.build(base)
            crt, key = make_cert(base, "cert", "localhost")
            for size in (48, 80):
                ticket_key = os.path.join(base, "ticket%d.key" % size)
                with open(ticket_key, "wb") as f:
                    f.write(os.urandom(size))
                nginx, nginx_port = self.start_nginx(base, crt, key, ticket_key)
                sess = os.path.join(base, "sess%d" % size)
                try:
                    for version in ("-tls1_2", "-tls1_3"):
                        first = s_client(nginx_port, version, "-sess_out", sess,
                                         stdin=b"GET / HTTP/1.0\r\n\r\n")
                        self.assertIn("New, TLSv1", first)
                        self.assertIn("Reused,", s_client(nginx_port, version, "-sess_in", sess,
                                                          stdin=b"GET / HTTP/1.0\r\n\r\n"))
                        port = free_port()
                        srv = WeftServer(root, "io_uring", {
                            "server": {"listen_tls": ["127.0.0.1:%d" % port]},
                            "tls": {"certificate": crt, "key": key,
                                    "session_ticket_keys": [ticket_key]}}).start()
                        try:
                            again = s_client(port, version, "-sess_in", sess,
                                             stdin=b"GET /hello.txt HTTP/1.0\r\n\r\n")
                            self.assertIn("Reused,", again, "%d bytes %s" % (size, version))
                            self.assertIn("hello", again)
                            self.assertEqual(srv.stop(), 0, srv.log())
                        finally:
                            srv.cleanup()
                finally:
                    nginx.terminate()
                    nginx.wait(10)
        finally:
            shutil.rmtree(base, ignore_errors=True)


class TlsConfigTest(unittest.TestCase):
    """weft -t loads the certificates: a key of another certificate is refused by name."""

    def test_mismatched_key_is_named(self):
        base = tempfile.mkdtemp(prefix="weft-tls-")
        try:
            crt, _ = make_cert(base, "a", "a.test")
            _, other_key = make_cert(base, "b", "b.test")
            conf = os.path.join(base, "weft.toml")
            with open(conf, "w") as f:
                f.write('[server]\nroot = "%s"\nlisten_tls = ["127.0.0.1:1"]\n'
                        '[tls]\ncertificate = "%s"\nkey = "%s"\n' % (base, crt, other_key))
            out = subprocess.run([WEFT, "-t", "-c", conf], capture_output=True, timeout=30)
            err = out.stderr.decode()
            self.assertEqual(out.returncode, 1, err)
            self.assertIn("tls key " + other_key, err)
            self.assertIn("does not match", err)
            self.assertIn("test failed", err)
        finally:
            shutil.rmtree(base, ignore_errors=True)

    def weft_t(self, text):
        """Runs weft -t on the configuration `text`; returns (exit status, stderr)."""
        conf = os.path.join(self.base, "weft.toml")
        with open(conf, "w") as f:
            f.write(text)
        out = subprocess.run([WEFT, "-t", "-c", conf], capture_output=True, timeout=30)
        return out.returncode, out.stderr.decode()

    @unittest.skipUnless(WOLFSSL, "a build with OpenSSL has both")
    def test_a_wolfssl_build_refuses_kernel_tls_and_stapling_by_name(self):
        self.base = tempfile.mkdtemp(prefix="weft-tls-")
        try:
            crt, key = make_cert(self.base, "a", "a.test")
            head = ('[server]\nroot = "%s"\nlisten_tls = ["127.0.0.1:1"]\n[tls]\n'
                    'certificate = "%s"\nkey = "%s"\n' % (self.base, crt, key))
            rc, err = self.weft_t(head + 'ktls = "on"\n')
            self.assertEqual(rc, 1, err)
            self.assertIn('tls.ktls = "on": wolfSSL', err)
            rc, err = self.weft_t(head + 'stapling_file = "%s"\n' % crt)
            self.assertEqual(rc, 1, err)
            self.assertIn("not available with wolfSSL", err)
            self.assertEqual(self.weft_t(head)[0], 0)
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    @unittest.skipIf(WOLFSSL, "a wolfSSL build does not staple")
    def test_stapling_file_that_does_not_fit_is_named(self):
        self.base = tempfile.mkdtemp(prefix="weft-tls-")
        try:
            ca = make_ca(self.base)
            chain, key, _ = make_signed_cert(self.base, "a", "a.test", ca)
            _, _, other_leaf = make_signed_cert(self.base, "b", "b.test", ca)
            garbage = os.path.join(self.base, "garbage.der")
            with open(garbage, "wb") as f:
                f.write(b"not an OCSP response")
            other = make_ocsp_response(self.base, "b", other_leaf, ca)
            head = ('[server]\nroot = "%s"\nlisten_tls = ["127.0.0.1:1"]\n[tls]\n'
                    'certificate = "%s"\nkey = "%s"\n' % (self.base, chain, key))
            for staple, why in ((garbage, "not a DER OCSP response"),
                                (other, "not about this certificate"),
                                (os.path.join(self.base, "none.der"), "No such file")):
                rc, err = self.weft_t(head + 'stapling_file = "%s"\n' % staple)
                self.assertEqual(rc, 1, err)
                self.assertIn("tls stapling file " + staple + ": " + why, err)
            rc, err = self.weft_t(head + '[[vhosts]]\nhost = "c.test"\nroot = "%s"\n'
                                  'stapling_file = "%s"\n' % (self.base, other))
            self.assertEqual(rc, 1, err)
            self.assertIn("'vhosts.stapling_file'", err)
            self.assertIn("has no certificate of its own", err)
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


per_backend(globals(), Tls, *([] if WOLFSSL else [TlsKernelAsked]))
for _backend in os.environ.get("WEFT_BACKENDS", "io_uring epoll").split():
    globals()["TlsReload_" + _backend] = type("TlsReload_" + _backend, (TlsReload,),
                                             {"backend": _backend})
del TlsReload

if __name__ == "__main__":
    unittest.main()
