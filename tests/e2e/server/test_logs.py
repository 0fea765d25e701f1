"""The access log (NGINX combined and JSON lines, one per request) and the error log (client
bytes in it are escaped)."""

import calendar
import json
import os
import re
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import error_page, per_backend  # noqa: E402

NOT_FOUND_PAGE = len(error_page(404, "Not Found"))
COMBINED_TIME = re.compile(r"\[(\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d) \+0000\]")


class AccessLogCase:
    def setUp(self):
        # A relative path in the config is relative to the config file's folder.
        self.log_path = os.path.join(self.srv.tmp, "access.log")
        self.seen = self.read_lines()

    def read_lines(self, want=0, timeout=5):
        """Returns the lines written so far; waits until there are at least `want`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(self.log_path, "rb") as f:
                    lines = f.read().decode("utf-8").splitlines()
            except FileNotFoundError:
                lines = []
            if len(lines) >= want or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)

    def new_lines(self, n):
        """Waits for `n` lines after those present when the test began; returns them."""
        lines = self.read_lines(len(self.seen) + n)[len(self.seen):]
        self.assertEqual(len(lines), n, lines)
        return lines

    def send(self, data, methods=("GET",)):
        return self.srv.exchange(data, methods)


class Combined(AccessLogCase):
    settings = {"log": {"access_log": "access.log", "access_format": "combined"}}

    def check_time(self, line):
        m = COMBINED_TIME.search(line)
        self.assertIsNotNone(m, line)
        t = calendar.timegm(time.strptime(m.group(1), "%d/%b/%Y:%H:%M:%S"))
        self.assertLess(abs(t - time.time()), 300, line)
        return COMBINED_TIME.sub("[TIME]", line)

    def test_combined_lines(self):
        self.send(b"GET /hello.txt?x=1 HTTP/1.1\r\nHost: x\r\nReferer: http://ref.example/a\r\n"
                  b"User-Agent: e2e-agent/1.0 (test)\r\n\r\n"
                  b"HEAD /medium.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /medium.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=10-29\r\n\r\n"
                  b"GET /nope HTTP/1.1\r\nHost: x\r\nUser-Agent: say \"hi\"\\ \xe9\r\n\r\n"
                  b"GET /medium.bin HTTP/1.0\r\n\r\n", ("GET", "HEAD", "GET", "GET", "GET"))
        lines = [self.check_time(line) for line in self.new_lines(5)]
        self.assertEqual(lines, [
            '127.0.0.1 - - [TIME] "GET /hello.txt?x=1 HTTP/1.1" 200 12 "http://ref.example/a" '
            '"e2e-agent/1.0 (test)"',
            '127.0.0.1 - - [TIME] "HEAD /medium.bin HTTP/1.1" 200 0 "-" "-"',
            '127.0.0.1 - - [TIME] "GET /medium.bin HTTP/1.1" 206 20 "-" "-"',
            '127.0.0.1 - - [TIME] "GET /nope HTTP/1.1" 404 %d "-" "say \\x22hi\\x22\\x5C \\xE9"'
            % NOT_FOUND_PAGE,
            '127.0.0.1 - - [TIME] "GET /medium.bin HTTP/1.0" 200 %d "-" "-"' % len(site.MEDIUM),
        ])

    def test_multipart_body_bytes(self):
        # A multipart/byteranges body is logged with every byte sent, framing included: its
        # Content-Length, from memory (hello.txt) and from the descriptor (medium.bin).
        rs = self.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1,5-6\r\n\r\n"
                       b"GET /medium.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9,-10\r\n\r\n",
                       ("GET", "GET"))
        lines = [self.check_time(line) for line in self.new_lines(2)]
        self.assertEqual([r.status for r in rs], [206, 206])
        self.assertEqual(lines, [
            '127.0.0.1 - - [TIME] "GET %s HTTP/1.1" 206 %d "-" "-"' % (path, len(r.body))
            for path, r in (("/hello.txt", rs[0]), ("/medium.bin", rs[1]))])
        self.assertGreater(len(rs[1].body), 20)

    def test_with_curl(self):
        self.srv.curl("/dir/", "-A", "curl-e2e", "-e", "http://r/")
        line = self.check_time(self.new_lines(1)[0])
        self.assertEqual(line, '127.0.0.1 - - [TIME] "GET /dir/ HTTP/1.1" 200 %d "http://r/" '
                               '"curl-e2e"' % len(site.DIR_INDEX))

    def test_bad_request_logged(self):
        self.send(b"GET /a b HTTP/1.1\r\nHost: x\r\n\r\n")
        line = self.check_time(self.new_lines(1)[0])
        self.assertRegex(line, r'^127\.0\.0\.1 - - \[TIME\] "-" 400 %d "-" "-"$'
                         % len(error_page(400, "Bad Request")))


class Json(AccessLogCase):
    settings = {"log": {"access_log": "access.log", "access_format": "json"}}

    def test_json_lines(self):
        self.send(b"GET /hello.txt?q=%22 HTTP/1.1\r\nHost: x\r\nReferer: http://r/\r\n"
                  b"User-Agent: ua \xc3\xa9 \xff\r\n\r\n"
                  b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", ("GET", "GET"))
        first, second = [json.loads(line, object_pairs_hook=list) for line in self.new_lines(2)]
        self.assertEqual([k for k, _ in first],
                         ["time", "remote_addr", "method", "target", "protocol", "status",
                          "body_bytes", "referer", "user_agent", "request_time"])
        first, second = dict(first), dict(second)
        t = calendar.timegm(time.strptime(first["time"], "%Y-%m-%dT%H:%M:%SZ"))
        self.assertLess(abs(t - time.time()), 300)
        self.assertIsInstance(first["request_time"], float)
        self.assertGreaterEqual(first["request_time"], 0)
        del first["time"], first["request_time"], second["time"], second["request_time"]
        self.assertEqual(first, {"remote_addr": "127.0.0.1", "method": "GET",
                                 "target": "/hello.txt?q=%22", "protocol": "HTTP/1.1",
                                 "status": 200, "body_bytes": 12, "referer": "http://r/",
                                 "user_agent": "ua \u00e9 \u00ff"})
        self.assertEqual(second, {"remote_addr": "127.0.0.1", "method": "GET", "target": "/nope",
                                  "protocol": "HTTP/1.1", "status": 404,
                                  "body_bytes": NOT_FOUND_PAGE, "referer": "", "user_agent": ""})

    def test_client_that_leaves_mid_body(self):
        # The line is written once the response is over, with the body bytes that went out:
        # at least what the client read, at most that plus what the two socket buffers can
        # hold, and less than the file.
        big = os.path.getsize(os.path.join(self.root, "big.bin"))
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.settimeout(10)
        sock.connect(("127.0.0.1", self.srv.port))
        sock.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        received = 0
        while received < 1024 * 1024:
            chunk = sock.recv(65536)
            self.assertTrue(chunk, "the server closed early")
            received += len(chunk)
        # Leave with a reset, so the server's next send fails rather than fills a buffer.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        line = json.loads(self.new_lines(1)[0])
        self.assertEqual((line["target"], line["status"]), ("/big.bin", 200))
        head = 400  # the head's bytes, which `received` counted too: an upper bound
        self.assertGreaterEqual(line["body_bytes"], received - head, line)
        self.assertLess(line["body_bytes"], min(big, received + 16 * 1024 * 1024), line)


class ErrorLog:
    def test_client_bytes_escaped(self):
        # A decoded "%0a" in a path that is logged (a link out of the root, at info) must not
        # start a line of its own.
        marker = "FORGED-%d" % os.getpid()
        self.srv.exchange(b"GET /out-dir-link/%%0a2026/01/01%%2000:00:00.000%%20[critical]%%20%s "
                          b"HTTP/1.1\r\nHost: x\r\n\r\n" % marker.encode())
        self.srv.exchange(b"GET /out-link%%0d%%0a%s HTTP/1.1\r\nHost: x\r\n\r\n" % marker.encode())
        # Lines below warn reach the file when spdlog flushes: at the latest, at exit.
        self.assertEqual(self.srv.stop(), 0)
        log = self.srv.log()
        self.assertIn(marker, log)
        for line in log.splitlines():
            self.assertFalse(line.startswith("2026/01/01") or line.startswith(marker), line)


per_backend(globals(), Combined, Json, ErrorLog)

if __name__ == "__main__":
    unittest.main()
