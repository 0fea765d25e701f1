"""The metrics endpoint (metrics.enabled): served by the same connection loop as the site, so
it keeps connections alive, answers HEAD and OPTIONS, and refuses other paths and methods;
and its counters count each request once its bytes are sent, with the body bytes sent."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import RawClient, free_port, metric, per_backend  # noqa: E402


class MetricsEndpoint:
    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.settings = {"metrics": {"enabled": True,
                                    "listen": "127.0.0.1:%d" % cls.metrics_port}}
        super().setUpClass()

    def metrics_client(self):
        return RawClient(("127.0.0.1", self.metrics_port))

    def test_exposition_with_keep_alive(self):
        with self.metrics_client() as c:
            for _ in range(2):  # two answers on one connection
                c.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                r = c.response()
                self.assertEqual(r.status, 200)
                self.assertEqual(r.header("Content-Type"), "text/plain; version=0.0.4")
                self.assertEqual(r.header("Content-Length"), str(len(r.body)))
                self.assertIn(b"# TYPE weft_requests_total counter", r.body)
            c.send(b"HEAD /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.response("HEAD")
            self.assertEqual((r.status, r.body), (200, b""))
            c.send(b"OPTIONS /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.response()
            self.assertEqual((r.status, r.header("Allow")), (200, "GET, HEAD, OPTIONS"))

    def test_other_paths_and_methods(self):
        with self.metrics_client() as c:
            c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().status, 404)  # the site is not served here
            c.send(b"DELETE /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.response()
            self.assertEqual((r.status, r.header("Allow")), (405, "GET, HEAD, OPTIONS"))
            c.send(b"GET /metrics/ HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertEqual(c.response().status, 404)

    def test_requests_and_bytes_counted_once_sent(self):
        before_200 = self.requests(200)
        before_bytes = metric(self.metrics_port, "weft_response_bytes_total")
        self.srv.exchange(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"
                          b"HEAD /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n", ("GET", "HEAD"))
        # A metrics scrape is a request too, counted with its own bytes: count the site's.
        deadline = time.monotonic() + 5
        while self.requests(200) < before_200 + 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        after_bytes = metric(self.metrics_port, "weft_response_bytes_total")
        self.assertGreaterEqual(self.requests(200), before_200 + 2)
        self.assertGreaterEqual(after_bytes - before_bytes, len(site.HELLO))

    def requests(self, code):
        return metric(self.metrics_port, 'weft_requests_total{code="%d"}' % code)


per_backend(globals(), MetricsEndpoint)

if __name__ == "__main__":
    unittest.main()
