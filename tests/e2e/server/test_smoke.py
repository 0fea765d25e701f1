"""End-to-end smoke test: weft serves the bundled site on both I/O backends."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import BACKENDS, SOURCE_DIR, WeftServer  # noqa: E402

SITE = os.path.join(SOURCE_DIR, "www-fixtures", "site")


class Smoke(unittest.TestCase):
    def test_bundled_site(self):
        for backend in BACKENDS:
            with self.subTest(backend=backend):
                srv = WeftServer(SITE, backend).start()
                try:
                    r, body = srv.get("/")
                    self.assertEqual(r.status, 200)
                    self.assertIn(b"weft is serving", body)
                    self.assertEqual(r.getheader("Content-Type"), "text/html")
                    r, body = srv.get("/css/site.css")
                    self.assertEqual(r.status, 200)
                    self.assertEqual(r.getheader("Content-Type"), "text/css")
                    r, _ = srv.get("/nope")
                    self.assertEqual(r.status, 404)
                    self.assertEqual(srv.stop(), 0)
                    self.assertIn("io_uring" if backend == "io_uring" else "epoll", srv.log())
                finally:
                    srv.cleanup()


if __name__ == "__main__":
    unittest.main()
