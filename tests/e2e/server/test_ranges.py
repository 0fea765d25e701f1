"""Range requests (RFC 9110 §14) and large bodies, through every body path (io.body =
"auto", with its files cached and with them dropped from the page cache, "sendfile" and
"splice") on both backends: exact bytes, Content-Range, 416, If-Range, several
ranges as multipart/byteranges (RFC 9110 §14.6), and limits.max_ranges."""

import email.parser
import email.policy
import hashlib
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import drop_pages, error_page, http_date, per_backend  # noqa: E402

HELLO_TAG = site.etag(len(site.HELLO))
BIG_TAG = site.etag(site.BIG_SIZE)
MIB = 1024 * 1024
MULTIPART = re.compile(r"multipart/byteranges; boundary=([0-9a-f]{20})")


def parse_multipart(test, r):
    """Parses the multipart/byteranges body of `r` strictly (RFC 2046 framing as weft sends
    it); returns [(part headers, first, last, size, bytes)]."""
    m = MULTIPART.fullmatch(r.header("Content-Type") or "")
    test.assertIsNotNone(m, r)
    delimiter = b"\r\n--" + m.group(1).encode()
    body, at, parts = r.body, 0, []
    while True:
        test.assertEqual(body[at:at + len(delimiter)], delimiter, (at, body[at:at + 80]))
        at += len(delimiter)
        if body[at:at + 4] == b"--\r\n":
            test.assertEqual(at + 4, len(body), "bytes after the close delimiter")
            return parts
        test.assertEqual(body[at:at + 2], b"\r\n")
        end = body.index(b"\r\n\r\n", at + 2)
        headers = dict(line.split(": ", 1) for line in body[at + 2:end].decode().split("\r\n"))
        at = end + 4
        first, last, size = map(int, re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)",
                                                  headers["Content-Range"]).groups())
        parts.append((headers, first, last, size, body[at:at + last - first + 1]))
        at += last - first + 1


class Ranges:
    def get(self, path, headers=(), method="GET"):
        lines = "".join("%s: %s\r\n" % kv for kv in headers)
        data = ("%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (method, path, lines)).encode()
        return self.srv.exchange(data, (method,), timeout=20)[0]

    def check_206(self, path, spec, content, first, last, size, extra=()):
        r = self.get(path, [("Range", spec)] + list(extra))
        self.assertEqual(r.status, 206, (spec, r))
        self.assertEqual(r.reason, "Partial Content")
        self.assertEqual(r.header("Content-Range"), "bytes %d-%d/%d" % (first, last, size))
        self.assertEqual(r.header("Content-Length"), str(last - first + 1))
        self.assertEqual(r.body, content[first:last + 1] if content is not None
                         else site.big_bytes(first, last - first + 1))
        self.assertEqual(r.header("Accept-Ranges"), "bytes")
        return r

    def check_full(self, path, headers, content):
        r = self.get(path, headers)
        self.assertEqual(r.status, 200, (headers, r))
        self.assertIsNone(r.header("Content-Range"))
        self.assertEqual(r.body, content)

    def check_416(self, path, spec, size):
        r = self.get(path, [("Range", spec)])
        self.assertEqual(r.status, 416, (spec, r))
        self.assertEqual(r.header("Content-Range"), "bytes */%d" % size)
        self.assertEqual(r.body, error_page(416, "Range Not Satisfiable"))

    def test_single_ranges(self):
        for path, content in (("/hello.txt", site.HELLO), ("/medium.bin", site.MEDIUM)):
            n = len(content)
            with self.subTest(path=path):
                self.check_206(path, "bytes=0-9", content, 0, 9, n)
                self.check_206(path, "bytes=-5", content, n - 5, n - 1, n)
                self.check_206(path, "bytes=10-", content, 10, n - 1, n)
                self.check_206(path, "bytes=0-0", content, 0, 0, n)
                self.check_206(path, "bytes=5-100000000", content, 5, n - 1, n)  # clamped
                self.check_206(path, "bytes=-100000000", content, 0, n - 1, n)  # all of it
                self.check_206(path, "bytes=0-3,2-5", content, 0, 5, n)  # coalesced
                self.check_206(path, "bytes=0-3,4-5", content, 0, 5, n)  # adjacent
        self.check_206("/medium.bin", "bytes=65535-131072", site.MEDIUM, 65535, 131072,
                       len(site.MEDIUM))

    def test_with_curl(self):
        n = len(site.MEDIUM)
        for spec, first, last in (("0-9", 0, 9), ("-5", n - 5, n - 1), ("100000-", 100000, n - 1)):
            with self.subTest(spec=spec):
                r = self.srv.curl("/medium.bin", "-r", spec)
                self.assertEqual(r.status, 206)
                self.assertEqual(r.header("Content-Range"), "bytes %d-%d/%d" % (first, last, n))
                self.assertEqual(r.body, site.MEDIUM[first:last + 1])
        r = self.srv.curl("/medium.bin", "-r", "%d-" % n)
        self.assertEqual((r.status, r.header("Content-Range")), (416, "bytes */%d" % n))

    def test_head_with_range(self):
        r = self.get("/medium.bin", [("Range", "bytes=10-19")], "HEAD")
        self.assertEqual((r.status, r.body), (206, b""))
        self.assertEqual(r.header("Content-Range"), "bytes 10-19/%d" % len(site.MEDIUM))
        self.assertEqual(r.header("Content-Length"), "10")

    def test_unsatisfiable(self):
        for path, n in (("/hello.txt", len(site.HELLO)), ("/medium.bin", len(site.MEDIUM))):
            for spec in ("bytes=%d-" % n, "bytes=%d-%d" % (n + 10, n + 20), "bytes=-0"):
                with self.subTest(path=path, spec=spec):
                    self.check_416(path, spec, n)

    def check_multi(self, path, spec, content, want, size, extra=(), response=None):
        """Asks for `spec` (or checks `response`) and checks a multipart 206 whose parts are
        `want` [(first, last)] of `content` (None: big.bin) of `size` bytes; returns it."""
        r = response or self.get(path, [("Range", spec)] + list(extra))
        self.assertEqual((r.status, r.reason), (206, "Partial Content"), (spec, r))
        self.assertEqual(r.header("Content-Length"), str(len(r.body)))
        self.assertIsNone(r.header("Content-Range"))
        self.assertEqual(r.header("Accept-Ranges"), "bytes")
        self.assertEqual(r.header("ETag"), site.etag(size))
        self.assertEqual(r.header("Last-Modified"), http_date(site.MTIME))
        parts = parse_multipart(self, r)
        self.assertEqual([(first, last) for _, first, last, _, _ in parts], want)
        for headers, first, last, part_size, data in parts:
            self.assertEqual(part_size, size)
            self.assertEqual(headers["Content-Type"], "text/plain" if path.endswith(".txt")
                             else "application/octet-stream")
            self.assertEqual(data, content[first:last + 1] if content is not None
                             else site.big_bytes(first, last - first + 1))
        return r

    def test_multiple_ranges(self):
        n, m = len(site.HELLO), len(site.MEDIUM)
        self.check_multi("/hello.txt", "bytes=0-1,5-6", site.HELLO, [(0, 1), (5, 6)], n)
        self.check_multi("/hello.txt", "bytes=6-7,0-1", site.HELLO, [(0, 1), (6, 7)], n)  # sorted
        self.check_multi("/hello.txt", "bytes=0-1,2-3,-2", site.HELLO, [(0, 3), (n - 2, n - 1)], n)
        self.check_multi("/medium.bin", "bytes=0-0,-1", site.MEDIUM, [(0, 0), (m - 1, m - 1)], m)
        self.check_multi("/medium.bin", "bytes=65535-131072, 100-199,150000-", site.MEDIUM,
                         [(100, 199), (65535, 131072), (150000, m - 1)], m)
        # Every part but one byte: still multipart (the ranges add up to less than the file).
        self.check_multi("/medium.bin", "bytes=0-99999,100001-", site.MEDIUM,
                         [(0, 99999), (100001, m - 1)], m)

    def test_multiple_ranges_parse_as_mime(self):
        # A general MIME parser reads the same parts back.
        r = self.get("/hello.txt", [("Range", "bytes=0-1,6-10")])
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + r.header("Content-Type").encode() + b"\r\n\r\n" + r.body)
        self.assertTrue(msg.is_multipart())
        parts = list(msg.iter_parts())
        self.assertEqual([p["Content-Range"] for p in parts],
                         ["bytes 0-1/12", "bytes 6-10/12"])
        self.assertEqual([p.get_payload(decode=True) for p in parts], [b"he", b"world"])

    def test_multiple_ranges_of_the_big_file(self):
        size = site.BIG_SIZE
        want = [(at, at + len(mark) - 1) for at, mark in sorted(site.MARKS.items())]
        spec = "bytes=" + ",".join("%d-%d" % fl for fl in reversed(want))
        self.check_multi("/big.bin", spec, None, want, size)
        self.check_multi("/big.bin", "bytes=%d-%d,-16" % (50 * MIB - 7, 58 * MIB), None,
                         [(50 * MIB - 7, 58 * MIB), (size - 16, size - 1)], size,
                         [("If-Range", BIG_TAG)])

    def test_multiple_ranges_head(self):
        get = self.get("/medium.bin", [("Range", "bytes=0-9,100-")])
        head = self.get("/medium.bin", [("Range", "bytes=0-9,100-")], "HEAD")
        self.assertEqual((head.status, head.body), (206, b""))
        self.assertRegex(head.header("Content-Type"), MULTIPART)
        # The boundary is new each time but always as long: the same Content-Length.
        self.assertEqual(head.header("Content-Length"), get.header("Content-Length"))
        self.assertNotEqual(head.header("Content-Type"), get.header("Content-Type"))

    def test_multiple_ranges_keep_the_connection(self):
        # A multipart response ends exactly at its Content-Length: the next response on the
        # connection (pipelined, then sent after it) starts right after it.
        for path, content in (("/hello.txt", site.HELLO), ("/medium.bin", site.MEDIUM)):
            with self.subTest(path=path), self.srv.client(timeout=20) as c:
                req = ("GET %s HTTP/1.1\r\nHost: x\r\nRange: bytes=1-2,4-5\r\n\r\n" % path)
                c.send(req.encode() * 2)
                for _ in range(2):
                    self.check_multi(path, None, content, [(1, 2), (4, 5)], len(content),
                                     response=c.response())
                c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertEqual(c.response().body, site.HELLO)

    def test_multiple_ranges_that_add_up_to_the_file(self):
        # Overlaps that would send bytes twice (or a cover of the whole file): a 200.
        self.check_full("/hello.txt", [("Range", "bytes=0-5,0-5,8-9")], site.HELLO)
        self.check_full("/hello.txt", [("Range", "bytes=0-3,0-3,8-11")], site.HELLO)
        self.check_full("/medium.bin", [("Range", "bytes=0-150000,100000-150001,160000-")], site.MEDIUM)

    def test_multiple_ranges_with_if_range(self):
        n = len(site.HELLO)
        self.check_multi("/hello.txt", "bytes=0-1,5-6", site.HELLO, [(0, 1), (5, 6)], n,
                         [("If-Range", HELLO_TAG)])
        self.check_full("/hello.txt", [("Range", "bytes=0-1,5-6"), ("If-Range", '"x"')],
                        site.HELLO)

    def test_multiple_ranges_with_curl(self):
        r = self.srv.curl("/hello.txt", "-r", "0-1,5-6")
        self.check_multi("/hello.txt", None, site.HELLO, [(0, 1), (5, 6)], len(site.HELLO),
                         response=r)

    def test_too_many_ranges_give_whole_file(self):
        # 17 range-specs, over limits.max_ranges' default of 16: the Range is ignored.
        spec = "bytes=" + ",".join("%d-%d" % (i * 10, i * 10) for i in range(17))
        self.check_full("/medium.bin", [("Range", spec)], site.MEDIUM)
        self.check_multi("/medium.bin", spec.rsplit(",", 1)[0], site.MEDIUM,
                         [(i * 10, i * 10) for i in range(16)], len(site.MEDIUM))

    def test_invalid_range_ignored(self):
        for spec in ("bytes=a-b", "items=0-1", "bytes=5-2", "bytes=", "bytes 0-1"):
            with self.subTest(spec=spec):
                self.check_full("/hello.txt", [("Range", spec)], site.HELLO)
        # Two Range fields: invalid, so ignored (RFC 9110 §5.3).
        self.check_full("/hello.txt", [("Range", "bytes=0-1"), ("Range", "bytes=2-3")],
                        site.HELLO)

    def test_if_range(self):
        n = len(site.HELLO)
        self.check_206("/hello.txt", "bytes=0-4", site.HELLO, 0, 4, n, [("If-Range", HELLO_TAG)])
        self.check_206("/hello.txt", "bytes=0-4", site.HELLO, 0, 4, n,
                       [("If-Range", http_date(site.MTIME))])
        for value in ('"other"', "W/" + HELLO_TAG, http_date(site.MTIME - 1),
                      http_date(site.MTIME + 1), "junk"):
            with self.subTest(value=value):
                self.check_full("/hello.txt", [("Range", "bytes=0-4"), ("If-Range", value)],
                                site.HELLO)
        # If-Range failing turns an unsatisfiable range into the whole file, not a 416.
        self.check_full("/hello.txt", [("Range", "bytes=100-"), ("If-Range", '"x"')], site.HELLO)

    def test_if_range_on_a_file_whose_second_is_not_over(self):
        # Its mtime's second has not ended (set a minute ahead, so that the test does not
        # race the clock): a second version could still share that second, so Last-Modified
        # would be no strong validator. No Last-Modified goes out, an If-Range date never
        # matches, and the ETag (with the mtime's nanoseconds) still does.
        path = os.path.join(self.root, "young.txt")
        with open(path, "wb") as f:
            f.write(site.HELLO)
        t = time.time_ns() + 60 * 10**9
        os.utime(path, ns=(t, t))
        r = self.get("/young.txt")
        self.assertEqual((r.status, r.body), (200, site.HELLO))
        self.assertIsNone(r.header("Last-Modified"))
        tag = '"%x.%x-%x"' % (t // 10**9, t % 10**9, len(site.HELLO)) if t % 10**9 else \
            site.etag(len(site.HELLO), t // 10**9)
        self.assertEqual(r.header("ETag"), tag)
        self.check_full("/young.txt", [("Range", "bytes=0-4"),
                                       ("If-Range", http_date(t // 10**9))], site.HELLO)
        self.check_206("/young.txt", "bytes=0-4", site.HELLO, 0, 4, len(site.HELLO),
                       [("If-Range", tag)])

    def test_big_file_ranges(self):
        size = site.BIG_SIZE
        for at, mark in site.MARKS.items():
            with self.subTest(at=at):
                self.check_206("/big.bin", "bytes=%d-%d" % (at, at + len(mark) - 1), None,
                               at, at + len(mark) - 1, size)
        self.check_206("/big.bin", "bytes=-16", None, size - 16, size - 1, size)
        self.check_206("/big.bin", "bytes=%d-%d" % (50 * MIB - 7, 58 * MIB), None,
                       50 * MIB - 7, 58 * MIB, size, [("If-Range", BIG_TAG)])
        self.check_416("/big.bin", "bytes=%d-" % size, size)

    def test_big_file_whole(self):
        expected = hashlib.sha256()
        with open(os.path.join(self.root, "big.bin"), "rb") as f:
            while chunk := f.read(8 * MIB):
                expected.update(chunk)
        with self.srv.client(timeout=20) as c:
            # Twice on one connection: the second response starts exactly after the first.
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n" * 2)
            for _ in range(2):
                r = c.response(body=False)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.header("Content-Length"), str(site.BIG_SIZE))
                self.assertEqual(r.header("ETag"), BIG_TAG)
                got, left = hashlib.sha256(), site.BIG_SIZE
                while left:
                    chunk = c.read_exactly(min(left, 8 * MIB))
                    got.update(chunk)
                    left -= len(chunk)
                self.assertEqual(got.hexdigest(), expected.hexdigest())
            c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().body, site.HELLO)


class RangesAuto(Ranges):
    settings = {"io": {"body": "auto"}}


class RangesAutoCold(Ranges):
    # Every file dropped from the page cache before each test, so that "auto" reads them
    # through the driver, in reads that start and end inside ranges.
    settings = {"io": {"body": "auto", "cold_read_size": "4k"}}

    def setUp(self):
        for dirpath, _, names in os.walk(self.root):
            for name in names:
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue  # the site has a FIFO, which an open would wait on
                try:
                    drop_pages(path, tries=1)  # best effort: a tmpfs keeps its pages
                except PermissionError:
                    continue  # the site's unreadable file


class RangesSendfile(Ranges):
    settings = {"io": {"body": "sendfile"}}


class RangesSplice(Ranges):
    settings = {"io": {"body": "splice"}}


class RangesSpliceSmallPipe(Ranges):
    # Many splice rounds per body, and ranges that start and end inside a pipe's worth.
    settings = {"io": {"body": "splice", "pipe_size": "4k"}}


class RangesLimited:
    """limits.max_ranges = 2: two ranges still make a multipart body, three get the file."""

    settings = {"limits": {"max_ranges": 2}}

    def test_max_ranges(self):
        r = Ranges.get(self, "/hello.txt", [("Range", "bytes=0-0,2-2")])
        self.assertEqual(r.status, 206)
        self.assertEqual([p[1:3] for p in parse_multipart(self, r)], [(0, 0), (2, 2)])
        for spec in ("bytes=0-0,2-2,4-4", "bytes=0-0,1-1,2-2"):  # specs count, coalesced or not
            with self.subTest(spec=spec):
                r = Ranges.get(self, "/hello.txt", [("Range", spec)])
                self.assertEqual((r.status, r.body), (200, site.HELLO))
                self.assertEqual(r.header("Accept-Ranges"), "bytes")


class RangesOff:
    """limits.max_ranges = 0: every Range is ignored (no 206, no 416), Accept-Ranges: none."""

    settings = {"limits": {"max_ranges": 0}}

    def test_ranges_ignored(self):
        for path, content in (("/hello.txt", site.HELLO), ("/medium.bin", site.MEDIUM)):
            for spec in ("bytes=0-0", "bytes=0-0,2-2", "bytes=%d-" % len(content)):
                with self.subTest(path=path, spec=spec):
                    r = Ranges.get(self, path, [("Range", spec)])
                    self.assertEqual((r.status, r.body), (200, content))
                    self.assertEqual(r.header("Accept-Ranges"), "none")
                    self.assertIsNone(r.header("Content-Range"))


class SpliceStall:
    """Large downloads one after another through the splice path with two processors, each
    watched for a stall (no byte for 10 s while the server still owes most of the body).

    A regression test: before the runtime's io_uring driver gained MSG_RING wake-ups and
    timer-heap deadlines, the first or one of the first few such downloads stalled for good
    (a fiber parked inside IoUringDriver::execute() was stolen by the other processor, and
    its retry after -EAGAIN went onto the first processor's ring from the wrong thread)."""

    settings = {"io": {"body": "splice"}}

    def test_sequential_downloads_never_stall(self):
        if self.backend != "io_uring":
            self.skipTest("about io_uring's per-processor rings; epoll's splice path is "
                          "covered by the Ranges classes")
        for i in range(6):
            with self.srv.client(timeout=10) as c:
                c.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertEqual(c.response(body=False).status, 200)
                left = site.BIG_SIZE
                try:
                    while left:
                        left -= len(c.read_exactly(min(left, 8 * MIB)))
                except TimeoutError:
                    self.fail("download %d stalled with %d bytes to come" % (i, left))


per_backend(globals(), RangesAuto, RangesAutoCold, RangesSendfile, RangesSplice, RangesSpliceSmallPipe, RangesLimited,
            RangesOff, SpliceStall)

if __name__ == "__main__":
    unittest.main()
