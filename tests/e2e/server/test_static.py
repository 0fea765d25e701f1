"""Static files with curl: methods, representation headers, MIME types, index files, redirects."""

import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import (HTTP_DATE, SOURCE_DIR, WeftServer, error_page, http_date,  # noqa: E402
                          per_backend)

FILE_FIELDS = ["Accept-Ranges", "Content-Length", "Content-Type", "Date", "ETag",
               "Last-Modified", "Server"]
ERROR_FIELDS = ["Content-Length", "Content-Type", "Date", "Server"]


def names(r):
    return sorted(k for k, _ in r.fields)


class Static:
    def assert_file(self, r, body, content_type):
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, body)
        self.assertEqual(names(r), FILE_FIELDS)
        self.assertEqual(r.header("Server"), "weft")
        self.assertRegex(r.header("Date"), HTTP_DATE)
        self.assertEqual(r.header("Content-Type"), content_type)
        self.assertEqual(r.header("Content-Length"), str(len(body)))
        self.assertEqual(r.header("Last-Modified"), http_date(site.MTIME))
        self.assertEqual(r.header("ETag"), site.etag(len(body)))
        self.assertEqual(r.header("Accept-Ranges"), "bytes")

    def assert_error(self, r, status, reason, extra=()):
        self.assertEqual((r.status, r.reason), (status, reason), r)
        self.assertEqual(r.body, error_page(status, reason))
        self.assertEqual(r.header("Content-Type"), "text/html")
        self.assertEqual(r.header("Content-Length"), str(len(r.body)))
        self.assertEqual(names(r), sorted(ERROR_FIELDS + list(extra)))

    def test_get(self):
        self.assert_file(self.srv.curl("/hello.txt"), site.HELLO, "text/plain")
        self.assert_file(self.srv.curl("/dir/sub/deep.txt"), site.DEEP, "text/plain")
        self.assert_file(self.srv.curl("/medium.bin"), site.MEDIUM, "application/octet-stream")

    def test_head_has_headers_only(self):
        for path, body in (("/hello.txt", site.HELLO), ("/medium.bin", site.MEDIUM)):
            r = self.srv.curl(path, "-I")
            self.assertEqual(r.status, 200)
            self.assertEqual(r.body, b"")
            self.assertEqual(names(r), FILE_FIELDS)
            self.assertEqual(r.header("Content-Length"), str(len(body)))
            self.assertEqual(r.header("ETag"), site.etag(len(body)))
        # On the wire: no body bytes, so the pipelined GET after it parses cleanly.
        head, get = self.srv.exchange(b"HEAD /medium.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                                      b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
                                      ("HEAD", "GET"))
        self.assertEqual(head.header("Content-Length"), str(len(site.MEDIUM)))
        self.assertEqual((get.status, get.body), (200, site.HELLO))
        # HEAD of an error: its headers, without the page.
        r = self.srv.curl("/nope", "-I")
        self.assertEqual((r.status, r.body), (404, b""))
        self.assertEqual(r.header("Content-Length"), str(len(error_page(404, "Not Found"))))

    def test_options(self):
        for target in ("/hello.txt", "*", "/nope"):
            r = self.srv.exchange(b"OPTIONS %s HTTP/1.1\r\nHost: x\r\n\r\n" % target.encode())[0]
            self.assertEqual(r.status, 200, target)
            self.assertEqual(r.header("Allow"), "GET, HEAD, OPTIONS")
            self.assertEqual(r.header("Content-Length"), "0")
            self.assertEqual(r.body, b"")
        r = self.srv.curl("/hello.txt", "-X", "OPTIONS")
        self.assertEqual((r.status, r.header("Allow")), (200, "GET, HEAD, OPTIONS"))

    def test_other_methods_405(self):
        for method in ("POST", "PUT", "DELETE", "PATCH", "TRACE"):
            r = self.srv.curl("/hello.txt", "-X", method)
            self.assert_error(r, 405, "Method Not Allowed", ["Allow"])
            self.assertEqual(r.header("Allow"), "GET, HEAD, OPTIONS")
        # A POST with a body: the body is read and dropped, the connection stays usable.
        post, get = self.srv.exchange(b"POST /hello.txt HTTP/1.1\r\nHost: x\r\n"
                                      b"Content-Length: 4\r\n\r\nabcd"
                                      b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
                                      ("POST", "GET"))
        self.assertEqual(post.status, 405)
        self.assertEqual((get.status, get.body), (200, site.HELLO))

    def test_unknown_method_501(self):
        for method in ("FOO", "BREW", "GETS"):
            with self.subTest(method=method):
                r = self.srv.curl("/hello.txt", "-X", method)
                self.assert_error(r, 501, "Not Implemented", ["Connection"])
                self.assertEqual(r.header("Connection"), "close")

    def test_content_types(self):
        for path, ctype in (("/index.html", "text/html"), ("/style.css", "text/css"),
                            ("/data.json", "application/json"),
                            ("/blob.unknownext", "application/octet-stream"),
                            ("/noext", "application/octet-stream")):
            with self.subTest(path=path):
                self.assert_file(self.srv.curl(path), site.FILES[path[1:]], ctype)

    def test_content_type_from_system_mime_types(self):
        with open(os.path.join(SOURCE_DIR, "conf", "mime.types")) as f:
            if any("flac" in line.split()[1:] for line in f if not line.startswith("#")):
                self.skipTest("conf/mime.types lists flac: the fallback is not exercised")
        try:
            with open("/etc/mime.types") as f:
                types = [line.split() for line in f if not line.startswith("#")]
        except OSError:
            self.skipTest("no /etc/mime.types on this machine")
        flac = [t[0] for t in types if "flac" in t[1:]]
        if not flac:
            self.skipTest("/etc/mime.types does not list flac")
        self.assert_file(self.srv.curl("/song.flac"), site.FILES["song.flac"], flac[0])

    def test_index_files(self):
        self.assert_file(self.srv.curl("/"), site.INDEX, "text/html")
        self.assert_file(self.srv.curl("/dir/"), site.DIR_INDEX, "text/html")
        self.assert_file(self.srv.curl("/dir/?q=1"), site.DIR_INDEX, "text/html")

    def test_directory_redirect(self):
        for path, location in (("/dir", "/dir/"), ("/dir?x=1&y=%20", "/dir/?x=1&y=%20"),
                               ("/dir/sub", "/dir/sub/"), ("/a%20b", "/a%20b/"),
                               ("/dir/sub/..//sub", "/dir/sub/")):
            with self.subTest(path=path):
                r = self.srv.curl(path)
                self.assert_error(r, 301, "Moved Permanently", ["Location"])
                self.assertEqual(r.header("Location"), location)
        # curl follows it to the index.
        out = subprocess.run(["curl", "-sSL", "--max-time", "10", "-w",
                              "%{http_code} %{num_redirects}", self.srv.url("/dir")],
                             capture_output=True, check=True).stdout
        self.assertEqual(out, site.DIR_INDEX + b"200 1")

    def test_directory_without_index_403(self):
        self.assert_error(self.srv.curl("/noindex/"), 403, "Forbidden")
        self.assert_file(self.srv.curl("/noindex/file.txt"), b"not an index\n", "text/plain")

    def test_query_ignored_for_lookup(self):
        for q in ("?x=1", "?", "?../../canary.txt", "?a=%00", "#frag"):
            with self.subTest(q=q):
                data = b"GET /hello.txt%s HTTP/1.1\r\nHost: x\r\n\r\n" % q.encode()
                r = self.srv.exchange(data)[0]
                self.assertEqual((r.status, r.body), (200, site.HELLO))
        self.assert_error(self.srv.curl("/nope.txt?hello.txt"), 404, "Not Found")

    def test_not_found(self):
        self.assert_error(self.srv.curl("/nope.txt"), 404, "Not Found")
        self.assert_error(self.srv.curl("/hello.txt/more"), 404, "Not Found")  # ENOTDIR
        self.assert_error(self.srv.curl("/" + "n" * 300), 404, "Not Found")  # NAME_MAX

    def test_file_named_as_directory_404(self):
        # A trailing slash names a directory (path.hpp); a file there is ENOTDIR, as in NGINX.
        for path in ("/hello.txt/", "/dir/index.html/", "/in-link/", "/hello.txt/.",
                     "/hello.txt/?q"):
            with self.subTest(path=path):
                self.assert_error(self.srv.curl(path), 404, "Not Found")

    def test_empty_file(self):
        self.assert_file(self.srv.curl("/empty.txt"), b"", "text/plain")

    def test_redirect_with_a_long_query(self):
        # The Location repeats the query: one that fits is redirected with it, one too long
        # for the response head is 414, never a 301 without its Location.
        q = "q" * 1200
        r = self.srv.exchange(b"GET /dir?%s HTTP/1.1\r\nHost: x\r\n\r\n" % q.encode())[0]
        self.assertEqual((r.status, r.header("Location")), (301, "/dir/?" + q))
        r = self.srv.exchange(b"GET /dir?%s HTTP/1.1\r\nHost: x\r\n\r\n" % (b"q" * 1800))[0]
        self.assert_error(r, 414, "URI Too Long")

    def test_absolute_form(self):
        for target, body in ((b"http://other.example/hello.txt", site.HELLO),
                             (b"HTTP://x:80/dir/sub/deep.txt?q", site.DEEP),
                             (b"http://x", site.INDEX), (b"http://x?q=1", site.INDEX)):
            with self.subTest(target=target):
                r = self.srv.exchange(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % target)[0]
                self.assertEqual((r.status, r.body), (200, body))

    def test_directory_listing(self):
        # server.directory_listing = true: a directory without an index gets an HTML list.
        srv = WeftServer(self.root, self.backend, {"server": {"directory_listing": True}})
        try:
            srv.start()
            r = srv.curl("/noindex/")
            self.assertEqual(r.status, 200)
            self.assertEqual(r.header("Content-Type"), "text/html; charset=utf-8")
            self.assertEqual(r.header("Vary"), "Accept")
            self.assertIn(b'href="./file.txt"', r.body)
        finally:
            srv.cleanup()

    def test_fifo_is_never_served(self):
        self.assert_error(self.srv.curl("/fifo"), 403, "Forbidden")

    def test_unix_socket_file_403(self):
        # The type is looked at before the file is opened (open(2) on a socket file says
        # ENXIO; on a device it can have side effects): 403 like a FIFO, and no critical line.
        for _ in range(3):
            self.assert_error(self.srv.curl("/sock"), 403, "Forbidden")
        self.assertNotIn("critical", self.srv.log())

    def test_refused_symlink_lines_are_rate_limited(self):
        # 60 requests for a link out of the root in one burst: each is a 404, but the error
        # log gets at most ten lines a second of them, and later says how many it dropped.
        burst = b"GET /out-link HTTP/1.1\r\nHost: x\r\n\r\n" * 60
        with self.srv.client() as c:
            c.send(burst)
            for _ in range(60):
                self.assertEqual(c.response().status, 404)
            time.sleep(1.1)
            c.send(b"GET /out-link HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().status, 404)
        deadline = time.monotonic() + 5
        while "similar lines dropped" not in self.srv.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        log = self.srv.log()
        lines = [ln for ln in log.splitlines() if '"/out-link"' in ln]
        self.assertLessEqual(len(lines), 21, log[-3000:])  # two seconds' budget at most
        self.assertRegex(log, r"\(\d+ similar lines dropped before this one\)")

    def test_unreadable_file_403(self):
        if not site.secret_readable(self.root):
            self.assert_error(self.srv.curl("/secret.txt"), 403, "Forbidden")
            return
        # Running as root, mode 000 does not stop reads (CAP_DAC_OVERRIDE). Run a second weft
        # without the capabilities that bypass file modes, so that its open gets EACCES.
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            self.skipTest("secret.txt is readable despite mode 000, and setpriv is not there "
                          "to drop CAP_DAC_OVERRIDE: no way to get EACCES")
        caps = "-dac_override,-dac_read_search"
        srv = WeftServer(self.root, self.backend,
                         prefix=["setpriv", "--bounding-set=" + caps, "--inh-caps=" + caps])
        try:
            srv.start()
            self.assert_error(srv.curl("/secret.txt"), 403, "Forbidden")
            self.assert_file(srv.curl("/hello.txt"), site.HELLO, "text/plain")
            self.assertEqual(srv.stop(), 0)
        finally:
            srv.cleanup()


per_backend(globals(), Static)

if __name__ == "__main__":
    unittest.main()
