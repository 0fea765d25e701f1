"""Precompressed files (server.precompressed, like NGINX's gzip_static) over raw sockets on
both backends: f.br / f.gz served to a client that accepts them, with Content-Encoding, f's
Content-Type, Vary and the variant's own ETag; ranges and conditionals on the variant;
"always"; "off"."""

import gzip
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import error_page, per_backend  # noqa: E402

TEXT = b"precompressed text, " * 40 + b"\n"
GZ = gzip.compress(TEXT, mtime=0)
BR = b"not really brotli, but bytes of its own\n"  # weft never decodes what it sends
INDEX_GZ = gzip.compress(site.DIR_INDEX, mtime=0)
# A variant too big for the fd cache's in-memory files: sent from its descriptor.
LARGE = "".join("%08x\n" % random.Random(7).getrandbits(32) for _ in range(20000)).encode()
LARGE_GZ = gzip.compress(LARGE, mtime=0)


def tag(size, suffix=""):
    """Returns the ETag weft gives a file of `size` bytes, with a variant's suffix."""
    return site.etag(size)[:-1] + suffix + '"'


class Precompressed:
    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        files = {"f.txt": TEXT, "f.txt.gz": GZ, "f.txt.br": BR, "dir/index.html.gz": INDEX_GZ,
                 "large.txt": LARGE, "large.txt.gz": LARGE_GZ, "lone.txt.gz": GZ}
        for name, data in files.items():
            path = os.path.join(root, name)
            with open(path, "wb") as f:
                f.write(data)
            os.utime(path, (site.MTIME, site.MTIME))
        return root

    def get(self, path, headers=(), method="GET"):
        lines = "".join("%s: %s\r\n" % kv for kv in headers)
        data = ("%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (method, path, lines)).encode()
        return self.srv.exchange(data, (method,), timeout=10)[0]

    def check_variant(self, r, body, coding, content_type="text/plain", status=200):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.header("Content-Encoding"), coding)
        self.assertEqual(r.header("Content-Type"), content_type)
        self.assertEqual(r.header("Vary"), "Accept-Encoding")
        self.assertEqual(r.body, body)

    def check_identity(self, r, body, vary=True):
        self.assertEqual(r.status, 200, r)
        self.assertIsNone(r.header("Content-Encoding"))
        self.assertEqual(r.header("Vary"), "Accept-Encoding" if vary else None)
        self.assertEqual(r.body, body)


class On(Precompressed):
    settings = {"server": {"precompressed": "on"}}

    def test_gzip(self):
        r = self.get("/f.txt", [("Accept-Encoding", "gzip")])
        self.check_variant(r, GZ, "gzip")
        self.assertEqual(gzip.decompress(r.body), TEXT)
        self.assertEqual(r.header("ETag"), tag(len(GZ), "-gz"))
        self.assertEqual(r.header("Content-Length"), str(len(GZ)))

    def test_br_preferred_on_a_tie_and_weights(self):
        r = self.get("/f.txt", [("Accept-Encoding", "gzip, deflate, br")])
        self.check_variant(r, BR, "br")
        self.assertEqual(r.header("ETag"), tag(len(BR), "-br"))
        self.check_variant(self.get("/f.txt", [("Accept-Encoding", "br;q=0.5, GZIP")]), GZ, "gzip")
        self.check_variant(self.get("/f.txt", [("Accept-Encoding", "*")]), BR, "br")
        self.check_variant(self.get("/f.txt", [("Accept-Encoding", "*, br;q=0")]), GZ, "gzip")

    def test_identity_still_varies(self):
        for ae in (None, "", "identity", "gzip;q=0, br;q=0", "deflate"):
            with self.subTest(ae=ae):
                r = self.get("/f.txt", [("Accept-Encoding", ae)] if ae is not None else [])
                self.check_identity(r, TEXT)
                self.assertEqual(r.header("ETag"), tag(len(TEXT)))
        # A file with no variant on disk: Vary too (whether one exists is the server's business).
        self.check_identity(self.get("/hello.txt", [("Accept-Encoding", "gzip")]), site.HELLO)

    def test_head(self):
        r = self.get("/f.txt", [("Accept-Encoding", "gzip")], "HEAD")
        self.check_variant(r, b"", "gzip")
        self.assertEqual(r.header("Content-Length"), str(len(GZ)))

    def test_ranges_apply_to_the_variant(self):
        for path, data in (("/f.txt", GZ), ("/large.txt", LARGE_GZ)):
            with self.subTest(path=path):
                r = self.get(path, [("Accept-Encoding", "gzip"), ("Range", "bytes=3-12")])
                self.check_variant(r, data[3:13], "gzip", status=206)
                self.assertEqual(r.header("Content-Range"), "bytes 3-12/%d" % len(data))
                r = self.get(path, [("Accept-Encoding", "gzip"), ("Range", "bytes=-5"),
                                    ("If-Range", tag(len(data), "-gz"))])
                self.check_variant(r, data[-5:], "gzip", status=206)
                # If-Range with the identity tag: the whole variant.
                r = self.get(path, [("Accept-Encoding", "gzip"), ("Range", "bytes=-5"),
                                    ("If-Range", tag(len(TEXT if path == "/f.txt" else LARGE)))])
                self.check_variant(r, data, "gzip")
                # Several ranges of a variant: the whole variant (no multipart of encoded bytes).
                r = self.get(path, [("Accept-Encoding", "gzip"), ("Range", "bytes=0-0,5-5")])
                self.check_variant(r, data, "gzip")
                r = self.get(path, [("Accept-Encoding", "gzip"), ("Range", "bytes=%d-" % len(data))])
                self.assertEqual(r.status, 416)
                self.assertEqual(r.header("Content-Range"), "bytes */%d" % len(data))
                self.assertEqual(r.header("Vary"), "Accept-Encoding")
                self.assertEqual(r.body, error_page(416, "Range Not Satisfiable"))

    def test_conditionals_apply_to_the_variant(self):
        gz_tag = tag(len(GZ), "-gz")
        r = self.get("/f.txt", [("Accept-Encoding", "gzip"), ("If-None-Match", gz_tag)])
        self.assertEqual((r.status, r.body), (304, b""))
        self.assertEqual(r.header("ETag"), gz_tag)
        self.assertEqual(r.header("Vary"), "Accept-Encoding")
        self.assertIsNone(r.header("Content-Length"))
        # The identity tag does not match the variant, nor the variant's the identity file.
        r = self.get("/f.txt", [("Accept-Encoding", "gzip"), ("If-None-Match", tag(len(TEXT)))])
        self.check_variant(r, GZ, "gzip")
        self.check_identity(self.get("/f.txt", [("If-None-Match", gz_tag)]), TEXT)
        r = self.get("/f.txt", [("Accept-Encoding", "gzip"), ("If-Match", tag(len(TEXT)))])
        self.assertEqual((r.status, r.header("Vary")), (412, "Accept-Encoding"))
        r = self.get("/f.txt", [("Accept-Encoding", "gzip"), ("If-Match", gz_tag)])
        self.check_variant(r, GZ, "gzip")

    def test_index_file_variant(self):
        r = self.get("/dir/", [("Accept-Encoding", "gzip")])
        self.check_variant(r, INDEX_GZ, "gzip", "text/html")

    def test_variant_requested_by_name_is_a_file(self):
        r = self.get("/f.txt.gz", [("Accept-Encoding", "gzip")])
        self.assertEqual(r.status, 200)
        self.assertIsNone(r.header("Content-Encoding"))
        self.assertEqual(r.body, GZ)
        self.assertEqual(r.header("ETag"), tag(len(GZ)))

    def test_no_variant_without_its_original(self):
        r = self.get("/lone.txt", [("Accept-Encoding", "gzip")])
        self.assertEqual(r.status, 404)

    def test_keep_alive_between_encodings(self):
        with self.srv.client(timeout=10) as c:
            c.send(b"GET /large.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n"
                   b"GET /large.txt HTTP/1.1\r\nHost: x\r\n\r\n"
                   b"GET /f.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n")
            self.check_variant(c.response(), LARGE_GZ, "gzip")
            self.check_identity(c.response(), LARGE)
            self.check_variant(c.response(), BR, "br")

    def test_with_curl(self):
        # curl decodes what it asked for: the same text as the identity file.
        r = self.srv.curl("/f.txt", "--compressed", "-H", "Accept-Encoding: gzip")
        self.assertEqual(r.header("Content-Encoding"), "gzip")
        self.assertEqual(r.body, TEXT)


class Always(Precompressed):
    # Without compression on the fly: with it, a client refusing identity ("*;q=0") and every
    # coding of a compressible file gets 406 (test_compression.py).
    settings = {"server": {"precompressed": "always"}, "compression": {"enabled": False}}

    def test_gzip_for_every_client(self):
        for ae in (None, "identity", "deflate"):
            with self.subTest(ae=ae):
                r = self.get("/f.txt", [("Accept-Encoding", ae)] if ae is not None else [])
                self.check_variant(r, GZ, "gzip")
        # An explicit q=0 refuses gzip (RFC 9110 §12.5.3): the identity file.
        for ae in ("gzip;q=0", "*;q=0"):
            with self.subTest(ae=ae):
                self.check_identity(self.get("/f.txt", [("Accept-Encoding", ae)]), TEXT)
        self.check_variant(self.get("/f.txt", [("Accept-Encoding", "br")]), BR, "br")
        self.check_identity(self.get("/hello.txt"), site.HELLO)  # no variant: the file


class Off(Precompressed):
    # Nothing compressed on the fly either ([compression], test_compression.py): no Vary.
    settings = {"compression": {"enabled": False}}

    def test_names_served_as_they_are(self):
        r = self.get("/f.txt", [("Accept-Encoding", "gzip, br")])
        self.check_identity(r, TEXT, vary=False)
        self.assertEqual(r.header("ETag"), tag(len(TEXT)))
        r = self.get("/f.txt.gz", [("Accept-Encoding", "gzip")])
        self.check_identity(r, GZ, vary=False)


per_backend(globals(), On, Always, Off)

if __name__ == "__main__":
    unittest.main()
