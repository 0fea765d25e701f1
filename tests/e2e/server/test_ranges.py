"""Range requests (RFC 9110 §14) and large bodies, through both body paths (io.body =
"sendfile" and "splice") on both backends: exact bytes, Content-Range, 416, If-Range."""

import hashlib
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import error_page, http_date, per_backend  # noqa: E402

HELLO_TAG = site.etag(len(site.HELLO))
BIG_TAG = site.etag(site.BIG_SIZE)
MIB = 1024 * 1024


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

    def test_multiple_ranges_give_whole_file(self):
        # Documented choice: no multipart/byteranges; several disjoint ranges get a 200.
        self.check_full("/hello.txt", [("Range", "bytes=0-1,5-6")], site.HELLO)
        self.check_full("/medium.bin", [("Range", "bytes=0-0,-1")], site.MEDIUM)

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


class RangesSendfile(Ranges):
    settings = {"io": {"body": "sendfile"}}


class RangesSplice(Ranges):
    settings = {"io": {"body": "splice"}}


class RangesSpliceSmallPipe(Ranges):
    # Many splice rounds per body, and ranges that start and end inside a pipe's worth.
    settings = {"io": {"body": "splice", "pipe_size": "4k"}}


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


per_backend(globals(), RangesSendfile, RangesSplice, RangesSpliceSmallPipe, SpliceStall)

if __name__ == "__main__":
    unittest.main()
