"""Compression on the fly ([compression]) over raw sockets on both backends: each codec decoded
by a real decoder (Python's zlib, brotli, zstandard; curl --compressed) byte-identical to the
file; q-values; Vary and a strong ETag per coding; 304 and If-Range per representation; Range
over the compressed bytes; HEAD; a file changed while its compressed copy is cached; one
compression for many concurrent first requests; the cache's byte bound; f.zst and RFC 9659's
window; HTTPS decoded by curl. The first request for a representation gets identity while a
worker compresses, so the tests poll (bounded in count and time) until the response is
compressed."""

import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import RawClient, free_port, metric, per_backend  # noqa: E402

try:
    import brotli
    import zstandard
except ImportError:  # a Python of its own (pyenv) beside Debian's python3-brotli/-zstandard
    sys.path.append("/usr/lib/python3/dist-packages")
    import brotli
    import zstandard


def script(seed, lines):
    """Returns a generated JavaScript text of `lines` functions: compressible, not trivially."""
    rnd = random.Random(seed)
    return "".join("function f%d(a, b) { return a * %d + b - %d; } // %s\n"
                   % (i, rnd.randrange(1000), i, "x" * rnd.randrange(20))
                   for i in range(lines)).encode()


APP = script(1, 1500)  # ~75 KB: read from its descriptor by the worker
STYLE = (b"body { color: #333; margin: 0 auto; }\n" * 200)[:6000]  # in the fd cache's memory
TINY = b"too small to compress\n"  # under min_size
RANDOM = random.Random(3).randbytes(4000)  # text/plain that no coding shrinks
PNG = b"\x89PNG\r\n\x1a\n" + random.Random(4).randbytes(3000)  # not a compressible type

DECODERS = {
    "gzip": lambda b: zlib.decompress(b, 16 + zlib.MAX_WBITS),
    "br": brotli.decompress,
    "zstd": lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b),
}
SUFFIX = {"zstd": "+zs", "br": "+br", "gzip": "+gz"}
ORDER = ("zstd", "br", "gzip")  # compression.codecs' default order
POLL_TRIES = 400  # each a request and at most 50 ms: the poll gives up after ~20 s


def tag(size, suffix="", mtime=site.MTIME):
    """Returns the ETag weft gives a file of `size` bytes, with a coding's suffix."""
    return site.etag(size, mtime)[:-1] + suffix + '"'


def write(root, name, data, mtime=site.MTIME):
    """Writes `name` under `root` atomically (renamed into place) with mtime `mtime`."""
    path = os.path.join(root, name)
    tmp = path + ".tmp~"
    with open(tmp, "wb") as f:
        f.write(data)
    os.utime(tmp, (mtime, mtime))
    os.rename(tmp, path)


class Compression:
    processors = 2

    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.settings = dict(cls.settings)
        cls.settings.setdefault("metrics", {"enabled": True,
                                            "listen": "127.0.0.1:%d" % cls.metrics_port})
        super().setUpClass()

    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        for name, data in {"app.js": APP, "style.css": STYLE, "tiny.txt": TINY,
                           "random.txt": RANDOM, "img.png": PNG}.items():
            write(root, name, data)
        return root

    def metric(self, name):
        return metric(self.metrics_port, name)

    def get(self, path, headers=(), method="GET"):
        lines = "".join("%s: %s\r\n" % kv for kv in headers)
        data = ("%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (method, path, lines)).encode()
        return self.srv.exchange(data, (method,), timeout=10)[0]

    def poll_coded(self, path, coding, accept=None):
        """Asks for `path` until it comes in `coding` (the worker has made it); returns that
        response. Every response on the way must be the file's identity or that coding."""
        for _ in range(POLL_TRIES):
            r = self.get(path, [("Accept-Encoding", accept or coding)])
            self.assertEqual(r.status, 200, r)
            if r.header("Content-Encoding") == coding:
                return r
            self.assertIsNone(r.header("Content-Encoding"), r)
            time.sleep(0.05)
        self.fail("%s never came in %s" % (path, coding))

    def wait_idle(self):
        """Waits until no compression runs or waits for a worker."""
        for _ in range(POLL_TRIES):
            # The queue first: a job leaves it already counted as running, so an empty queue
            # and then nothing running leave no job behind (the other order can miss one
            # between the two reads, as a job of the test before this one once was).
            if (self.metric("weft_compressions_queued") == 0 and
                    self.metric("weft_compressions_running") == 0):
                return
            time.sleep(0.05)
        self.fail("the compression workers never went idle")

    def check_coded(self, r, data, coding, content_type="application/javascript"):
        self.assertEqual(r.header("Content-Encoding"), coding)
        self.assertEqual(r.header("Content-Type"), content_type)
        self.assertEqual(r.header("Vary"), "Accept-Encoding")
        self.assertEqual(r.header("ETag"), tag(len(data), SUFFIX[coding]))
        self.assertEqual(r.header("Content-Length"), str(len(r.body)))
        self.assertEqual(DECODERS[coding](r.body), data)
        self.assertLess(len(r.body), len(data))

    def made_sizes(self):
        """Makes app.js in each coding (one request starts one); returns each coding's size."""
        return {c: len(self.poll_coded("/app.js", c).body) for c in ORDER}

    def smallest(self, sizes, *codings):
        """The coding of `codings` with the fewest bytes; on a tie the server's order."""
        return min(codings, key=lambda c: (sizes[c], ORDER.index(c)))

    def check_choices(self, cases):
        for accept, want in cases:
            with self.subTest(accept=accept):
                r = self.get("/app.js", [("Accept-Encoding", accept)] if accept is not None else [])
                self.assertEqual(r.header("Vary"), "Accept-Encoding")
                if want == 406:
                    self.assertEqual(r.status, 406)
                    continue
                self.assertEqual(r.status, 200)
                self.assertEqual(r.header("Content-Encoding"), want)
                if want:
                    self.check_coded(r, APP, want)
                else:
                    self.assertEqual(r.body, APP)
                    self.assertEqual(r.header("ETag"), tag(len(APP)))


class On(Compression):
    settings = {"log": {"access_log": "access.log", "access_format": "json"}}

    def test_each_codec_decoded(self):
        for coding in ("zstd", "br", "gzip"):
            with self.subTest(coding=coding):
                self.check_coded(self.poll_coded("/app.js", coding), APP, coding)
                # From the fd cache's own copy of a small file too.
                self.check_coded(self.poll_coded("/style.css", coding), STYLE, coding, "text/css")
        # RFC 9659: a window of at most 8 MiB.
        r = self.poll_coded("/app.js", "zstd")
        self.assertLessEqual(zstandard.get_frame_parameters(r.body).window_size, 8 << 20)

    def test_curl_decodes(self):
        for coding in ("gzip", "br"):
            with self.subTest(coding=coding):
                self.poll_coded("/app.js", coding)
                r = self.srv.curl("/app.js", "--compressed", "-H", "Accept-Encoding: " + coding)
                self.assertEqual(r.header("Content-Encoding"), coding)
                self.assertEqual(r.body, APP)

    def test_q_values(self):
        sizes = self.made_sizes()
        every = self.smallest(sizes, *ORDER)
        cases = [  # Accept-Encoding (None: absent), the coding sent (None: identity; 406)
            ("gzip, deflate, br, zstd", every),  # equal weights: the smallest made
            ("zstd;q=0.5, br", "br"),
            ("gzip;q=1, br;q=0.9, zstd;q=0.1", "gzip"),
            ("zstd;q=0, br;q=0, gzip", "gzip"),
            ("*", every),
            ("*, zstd;q=0", self.smallest(sizes, "br", "gzip")),
            ("*;q=0.5, gzip", "gzip"),
            ("identity;q=0, gzip", "gzip"),
            ("identity", None),
            ("", None),
            (None, None),
            ("deflate", None),
            ("zstd;q=0, br;q=0, gzip;q=0", None),
            ("identity;q=0, zstd;q=0, br;q=0, gzip;q=0", 406),
            ("*;q=0", 406),
            ("deflate, identity;q=0", 406),
        ]
        self.check_choices(cases)

    def test_identity_refused_waits_for_its_coding(self):
        # The first request of a client that takes no identity: answered coded, after the
        # worker made it (its fiber waited), never identity, never 406.
        data = script(30, 700)
        write(self.root, "strict.js", data)
        r = self.get("/strict.js", [("Accept-Encoding", "identity;q=0, br")])
        self.assertEqual(r.status, 200, r)
        self.check_coded(r, data, "br")
        # A client that takes identity is never held: a new file's first answer is identity.
        write(self.root, "lenient.js", data)
        r = self.get("/lenient.js", [("Accept-Encoding", "br")])
        self.assertEqual((r.status, r.header("Content-Encoding"), r.body), (200, None, data))

    def test_uncompressible_responses_unchanged(self):
        # Too small, not a compressible type: no Vary, no coding, whatever is asked.
        for path, data in (("/tiny.txt", TINY), ("/img.png", PNG)):
            for _ in range(3):
                r = self.get(path, [("Accept-Encoding", "gzip, br, zstd")])
                self.assertEqual((r.status, r.body), (200, data))
                self.assertIsNone(r.header("Vary"))
                self.assertIsNone(r.header("Content-Encoding"))
                self.assertEqual(r.header("ETag"), tag(len(data)))

    def test_incompressible_text_stays_identity(self):
        # The worker finds that gzip does not shrink random bytes, and remembers it.
        self.wait_idle()  # what earlier tests started counts before
        before = self.metric("weft_compressions_total")
        r = self.get("/random.txt", [("Accept-Encoding", "gzip")])
        self.assertEqual((r.body, r.header("Vary")), (RANDOM, "Accept-Encoding"))
        for _ in range(POLL_TRIES):
            if self.metric("weft_compressions_total") > before:
                break
            time.sleep(0.05)
        else:
            self.fail("random.txt was never compressed")
        for _ in range(3):
            r = self.get("/random.txt", [("Accept-Encoding", "gzip")])
            self.assertIsNone(r.header("Content-Encoding"))
            self.assertEqual(r.body, RANDOM)
        self.wait_idle()
        # tried once; on a failure, whether the record went stale or was evicted
        total = self.metric("weft_compressions_total")
        if total != before + 1:
            self.fail("%s compressions, %s due; %r" % (
                total, before + 1, {n: self.metric(n) for n in (
                    "weft_compression_stale_total", "weft_compression_evictions_total")}))

    def test_conditionals_per_representation(self):
        z = self.poll_coded("/app.js", "zstd")
        ztag = z.header("ETag")
        r = self.get("/app.js", [("Accept-Encoding", "zstd"), ("If-None-Match", ztag)])
        self.assertEqual((r.status, r.body), (304, b""))
        self.assertEqual((r.header("ETag"), r.header("Vary")), (ztag, "Accept-Encoding"))
        # The identity tag does not match the zstd representation, nor the zstd tag identity.
        r = self.get("/app.js", [("Accept-Encoding", "zstd"), ("If-None-Match", tag(len(APP)))])
        self.check_coded(r, APP, "zstd")
        r = self.get("/app.js", [("If-None-Match", ztag)])
        self.assertEqual((r.status, r.body, r.header("ETag")), (200, APP, tag(len(APP))))
        r = self.get("/app.js", [("Accept-Encoding", "zstd"), ("If-Match", tag(len(APP)))])
        self.assertEqual((r.status, r.header("Vary")), (412, "Accept-Encoding"))

    def test_ranges_over_the_compressed_bytes(self):
        body = self.poll_coded("/app.js", "br").body
        r = self.get("/app.js", [("Accept-Encoding", "br"), ("Range", "bytes=10-99")])
        self.assertEqual((r.status, r.header("Content-Encoding")), (206, "br"))
        self.assertEqual(r.header("Content-Range"), "bytes 10-99/%d" % len(body))
        self.assertEqual(r.body, body[10:100])
        btag = tag(len(APP), "+br")
        r = self.get("/app.js", [("Accept-Encoding", "br"), ("Range", "bytes=-7"),
                                 ("If-Range", btag)])
        self.assertEqual((r.status, r.body), (206, body[-7:]))
        # If-Range with the identity tag: the whole br representation.
        r = self.get("/app.js", [("Accept-Encoding", "br"), ("Range", "bytes=-7"),
                                 ("If-Range", tag(len(APP)))])
        self.assertEqual((r.status, r.body), (200, body))
        # Several ranges: the whole representation (no multipart of coded bytes).
        r = self.get("/app.js", [("Accept-Encoding", "br"), ("Range", "bytes=0-0,5-5")])
        self.assertEqual((r.status, r.body), (200, body))
        r = self.get("/app.js", [("Accept-Encoding", "br"), ("Range", "bytes=%d-" % len(body))])
        self.assertEqual((r.status, r.header("Content-Range")), (416, "bytes */%d" % len(body)))

    def test_head_is_get_head(self):
        self.poll_coded("/app.js", "gzip")
        for accept in ("gzip", "identity"):
            get = self.get("/app.js", [("Accept-Encoding", accept)])
            head = self.get("/app.js", [("Accept-Encoding", accept)], "HEAD")
            self.assertEqual(head.body, b"")
            for field in ("Content-Type", "Content-Encoding", "Content-Length", "ETag", "Vary",
                          "Last-Modified", "Accept-Ranges"):
                self.assertEqual(head.header(field), get.header(field), field)

    def test_changed_file_never_stale(self):
        old, new = script(10, 900), script(11, 1000)
        write(self.root, "changing.js", old)
        self.check_coded(self.poll_coded("/changing.js", "zstd"), old, "zstd")
        stale = self.metric("weft_compression_stale_total")
        write(self.root, "changing.js", new, site.MTIME + 60)
        # The very next response is the new content, identity or compressed.
        r = self.get("/changing.js", [("Accept-Encoding", "zstd")])
        body = DECODERS["zstd"](r.body) if r.header("Content-Encoding") else r.body
        self.assertEqual(body, new)
        r = self.poll_coded("/changing.js", "zstd")
        self.assertEqual(r.header("ETag"), tag(len(new), "+zs", site.MTIME + 60))
        self.assertEqual(DECODERS["zstd"](r.body), new)
        self.assertGreater(self.metric("weft_compression_stale_total"), stale)

    def test_one_compression_for_concurrent_first_requests(self):
        data = script(20, 12000)  # ~600 KB: zstd -19 takes a while, the requests overlap it
        write(self.root, "burst.js", data)
        self.wait_idle()
        before = self.metric("weft_compressions_total")
        request = b"GET /burst.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: zstd\r\n\r\n"
        clients = [RawClient(("127.0.0.1", self.srv.port), timeout=10) for _ in range(20)]
        start = threading.Barrier(len(clients))
        results = [None] * len(clients)

        def ask(i):
            start.wait(10)
            clients[i].send(request)
            results[i] = clients[i].response()

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(clients))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        for c in clients:
            c.close()
        for r in results:
            self.assertIsNotNone(r)
            coded = r.header("Content-Encoding") == "zstd"
            self.assertEqual(DECODERS["zstd"](r.body) if coded else r.body, data)
        self.check_coded(self.poll_coded("/burst.js", "zstd"), data, "zstd")
        self.wait_idle()
        self.assertEqual(self.metric("weft_compressions_total"), before + 1)

    def test_metrics_and_access_log(self):
        self.poll_coded("/style.css", "gzip")
        hits = self.metric("weft_compression_hits_total")
        saved = self.metric("weft_compression_saved_bytes_total")
        r = self.get("/style.css", [("Accept-Encoding", "gzip")])
        self.assertEqual(self.metric("weft_compression_hits_total"), hits + 1)
        self.assertEqual(self.metric("weft_compression_saved_bytes_total"),
                         saved + len(STYLE) - len(r.body))
        self.assertGreater(self.metric("weft_compression_misses_total"), 0)
        log = os.path.join(self.srv.tmp, "access.log")
        for _ in range(POLL_TRIES):
            lines = []
            if os.path.exists(log):
                with open(log) as f:
                    lines = f.read().splitlines()
            if any('"content_encoding":"gzip"' in line and "/style.css" in line for line in lines):
                break
            time.sleep(0.05)
        else:
            self.fail("no access line says gzip")


class Bounded(Compression):
    settings = {"compression": {"cache_size": "40k", "codecs": ["gzip"]}}

    def test_cache_bound_under_many_files(self):
        # 30 files of ~40 KB, each ~9 KB gzipped: far more than the 40 KiB bound together.
        datas = {"m%02d.js" % i: script(100 + i, 800) for i in range(30)}
        for name, data in datas.items():
            write(self.root, name, data)
        for name, data in datas.items():
            r = self.poll_coded("/" + name, "gzip")
            self.assertEqual(DECODERS["gzip"](r.body), data)
            self.assertLessEqual(self.metric("weft_compression_cache_bytes"), 40 * 1024)
        self.assertGreater(self.metric("weft_compression_evictions_total"), 0)
        # zstd is not among this server's codecs.
        r = self.get("/m00.js", [("Accept-Encoding", "zstd")])
        self.assertIsNone(r.header("Content-Encoding"))


class Precompressed(Compression):
    settings = {"server": {"precompressed": "on"}}

    @classmethod
    def make_root(cls, base):
        root = super().make_root(base)
        small = zstandard.ZstdCompressor(level=3).compress(APP)
        params = zstandard.ZstdCompressionParameters.from_level(3, window_log=24)
        o = zstandard.ZstdCompressor(compression_params=params).compressobj()
        wide = o.compress(APP) + o.flush()  # no content size: the frame says its 16 MiB window
        assert zstandard.get_frame_parameters(wide).window_size > 8 << 20
        cls.SMALL_ZST = small
        write(root, "app.js.zst", small)
        write(root, "wide.js", APP)
        write(root, "wide.js.zst", wide)
        write(root, "style.css.gz", zlib.compress(STYLE))  # a precompressed gzip, any bytes
        return root

    def test_zst_served_with_its_tag(self):
        r = self.get("/app.js", [("Accept-Encoding", "zstd")])
        self.assertEqual((r.status, r.header("Content-Encoding")), (200, "zstd"))
        self.assertEqual(r.body, self.SMALL_ZST)
        self.assertEqual(r.header("ETag"), tag(len(self.SMALL_ZST), "-zst"))

    def test_precompressed_keeps_priority(self):
        # gzip: style.css.gz is there, so it goes out, never a gzip made on the fly.
        for _ in range(5):
            r = self.get("/style.css", [("Accept-Encoding", "gzip")])
            self.assertEqual(r.header("ETag"), tag(len(zlib.compress(STYLE)), "-gz"))

    def test_wide_window_refused(self):
        for _ in range(3):
            r = self.get("/wide.js", [("Accept-Encoding", "zstd")])
            self.assertNotEqual(r.header("ETag"), tag(os.path.getsize(
                os.path.join(self.root, "wide.js.zst")), "-zst"))
        # Compressed on the fly instead, with a window RFC 9659 allows.
        r = self.poll_coded("/wide.js", "zstd")
        self.assertEqual(DECODERS["zstd"](r.body), APP)
        for _ in range(POLL_TRIES):
            if "RFC 9659" in self.srv.log():
                break
            time.sleep(0.05)
        else:
            self.fail("no log line about the window")


class Https(Compression):
    """The same representations over TLS, decoded by curl (a self-signed ECDSA certificate)."""

    @classmethod
    def setUpClass(cls):
        cls.tls_dir = tempfile.mkdtemp(prefix="weft-comp-tls-")
        cert, key = (os.path.join(cls.tls_dir, n) for n in ("c.pem", "k.pem"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
        cls.tls_port = free_port()
        server = {"listen_tls": ["127.0.0.1:%d" % cls.tls_port]}
        server.update(getattr(cls, "extra_settings", {}).get("server", {}))
        cls.settings = {"server": server, "tls": {"certificate": cert, "key": key}}
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.tls_dir, ignore_errors=True)

    def test_codings_over_tls(self):
        url = "https://127.0.0.1:%d/app.js" % self.tls_port
        for coding in ("br", "gzip", "zstd"):
            with self.subTest(coding=coding):
                self.poll_coded("/app.js", coding)  # made once, whichever listener asked
                out = subprocess.run(["curl", "-sSk", "-D", "-", "-o", "-", "--max-time", "10",
                                      "-H", "Accept-Encoding: " + coding, url],
                                     capture_output=True, check=True).stdout
                head, _, body = out.partition(b"\r\n\r\n")
                self.assertIn(b"\r\ncontent-encoding: " + coding.encode(), head.lower())
                self.assertEqual(DECODERS[coding](body), APP)


class Http2(Https):
    """The same representations over HTTP/2 (TLS with ALPN h2, and h2c with prior knowledge),
    fetched by curl: codings, Vary, per-coding ETags, 304 and ranges as over HTTP/1.1."""

    @classmethod
    def setUpClass(cls):
        cls.extra_settings = {"server": {"h2c": True}}
        super().setUpClass()

    def h2(self, url, *headers):
        """Returns (status, {field: value}, body) of one HTTP/2 exchange by curl."""
        args = ["--http2"] if url.startswith("https") else ["--http2-prior-knowledge"]
        for h in headers:
            args += ["-H", h]
        out = subprocess.run(["curl", "-sSk", "-D", "-", "-o", "-", "--max-time", "10"] +
                             args + [url], capture_output=True, check=True).stdout
        head, _, body = out.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.assertTrue(lines[0].startswith("HTTP/2 "), lines[0])
        fields = dict(line.split(": ", 1) for line in lines[1:])
        return int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}, body

    def urls(self):
        return ("https://127.0.0.1:%d/app.js" % self.tls_port,
                "http://127.0.0.1:%d/app.js" % self.srv.port)

    def test_codings_over_http2(self):
        for url in self.urls():
            for coding in ("br", "gzip", "zstd"):
                with self.subTest(url=url, coding=coding):
                    self.poll_coded("/app.js", coding)
                    status, f, body = self.h2(url, "Accept-Encoding: " + coding)
                    self.assertEqual(status, 200)
                    self.assertEqual((f.get("content-encoding"), f.get("vary")),
                                     (coding, "Accept-Encoding"))
                    self.assertEqual(f.get("etag"), tag(len(APP), SUFFIX[coding]))
                    self.assertEqual(f.get("content-length"), str(len(body)))
                    self.assertEqual(DECODERS[coding](body), APP)
            status, f, body = self.h2(url)  # no Accept-Encoding: identity, still Vary
            self.assertEqual((status, body, f.get("vary")), (200, APP, "Accept-Encoding"))
            self.assertNotIn("content-encoding", f)

    def test_conditionals_and_ranges_over_http2(self):
        coded = self.poll_coded("/app.js", "zstd").body
        ztag = tag(len(APP), "+zs")
        for url in self.urls():
            with self.subTest(url=url):
                status, f, body = self.h2(url, "Accept-Encoding: zstd", "If-None-Match: " + ztag)
                self.assertEqual((status, body, f.get("etag")), (304, b"", ztag))
                status, f, body = self.h2(url, "Accept-Encoding: zstd", "Range: bytes=5-24",
                                          "If-Range: " + ztag)
                self.assertEqual((status, body), (206, coded[5:25]))
                self.assertEqual(f.get("content-range"), "bytes 5-24/%d" % len(coded))
                status, _, body = self.h2(url, "Accept-Encoding: zstd;q=1, identity;q=0")
                self.assertEqual(DECODERS["zstd"](body), APP)


class ServerOrder(Compression):
    """compression.prefer_smallest = false: of codings a client weighs equally, the first made in
    the server's order (codecs), whatever its size."""
    settings = {"compression": {"prefer_smallest": False, "codecs": ["gzip", "br", "zstd"]}}

    def test_server_order_on_a_tie(self):
        sizes = self.made_sizes()
        # Meaningful only where the server's first coding is not the smallest.
        self.assertGreater(sizes["gzip"], min(sizes.values()))
        self.check_choices([("zstd, br, gzip", "gzip"), ("*", "gzip"), ("*, gzip;q=0", "br"),
                            ("zstd;q=0.9, br;q=0.8", "zstd")])


class Off(Compression):
    settings = {"compression": {"enabled": False}}

    def test_nothing_compressed_nothing_varies(self):
        for _ in range(3):
            r = self.get("/app.js", [("Accept-Encoding", "gzip, br, zstd")])
            self.assertEqual((r.status, r.body), (200, APP))
            self.assertIsNone(r.header("Content-Encoding"))
            self.assertIsNone(r.header("Vary"))
        r = self.get("/app.js", [("Accept-Encoding", "identity;q=0")])  # as before: identity
        self.assertEqual((r.status, r.body), (200, APP))


per_backend(globals(), On, ServerOrder, Bounded, Precompressed, Https, Http2, Off)

if __name__ == "__main__":
    unittest.main()
