"""Issue 33, on both backends: virtual hosts ([[vhosts]]) chosen by the Host header (or an
absolute-form target's authority) as NGINX's server_name: exact names, "*.b.test" wildcards,
any case, without the port; a request for no vhost gets the default site. Each vhost has its
own root (kept fresh: a replaced file is never served old), index, pages and rules; the
access log names the vhost; SIGHUP reloads the vhosts like the rest."""

import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import per_backend  # noqa: E402

B_INDEX = b"<h1>site b</h1>\n"
C_INDEX = b"<h1>site c</h1>\n"
B_404 = b"<h1>b's own 404</h1>\n"


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)  # replaced as a deploy does


VHOSTS = """
[[vhosts]]
host = "b.test"
root = "{base}/b"
error_pages = {{ "404" = "/404.html" }}
headers = [{{ source = "/**", set = {{ "X-Site" = "b" }} }}]
redirects = [{{ source = "/old", destination = "/index.html", status = 302 }}]

[[vhosts]]
host = "*.c.test"
root = "{base}/c"
index = ["home.html"]
"""


class Vhosts:
    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        write(os.path.join(base, "b", "index.html"), B_INDEX)
        write(os.path.join(base, "b", "404.html"), B_404)
        write(os.path.join(base, "c", "home.html"), C_INDEX)
        cls.access_log = os.path.join(base, "access.log")
        cls.settings = {"log": {"access_log": cls.access_log, "access_format": "json"}}
        return root

    @classmethod
    def extra_toml(cls):
        return VHOSTS.format(base=cls.base)

    def get(self, path, host="b.test", headers=(), method="GET", version="HTTP/1.1"):
        lines = "".join("%s: %s\r\n" % kv for kv in headers)
        host_line = "Host: %s\r\n" % host if host is not None else ""
        data = ("%s %s %s\r\n%s%s\r\n" % (method, path, version, host_line, lines)).encode()
        return self.srv.exchange(data, (method,), timeout=10)[0]

    def test_exact_and_wildcard_names_any_case_any_port(self):
        self.assertEqual(self.get("/", "b.test").body, B_INDEX)
        self.assertEqual(self.get("/", "B.Test:%d" % self.srv.port).body, B_INDEX)
        self.assertEqual(self.get("/", "b.test.").body, B_INDEX)
        self.assertEqual(self.get("/", "www.c.test").body, C_INDEX)
        self.assertEqual(self.get("/", "a.b.C.TEST").body, C_INDEX)

    def test_no_matching_host_gets_the_default_site(self):
        for host in ("c.test", "other.test", "127.0.0.1", "xb.test"):
            self.assertEqual(self.get("/", host).body, site.INDEX, host)
        self.assertEqual(self.get("/", None, version="HTTP/1.0").body, site.INDEX)
        self.assertEqual(self.get("/hello.txt", "other").body, site.HELLO)
        self.assertEqual(self.get("/hello.txt", "b.test").status, 404)  # not b's file

    def test_absolute_form_authority_wins_over_host(self):
        self.assertEqual(self.get("http://b.test/", "other.test").body, B_INDEX)

    def test_each_vhost_has_its_pages_and_rules(self):
        r = self.get("/nope", "b.test")
        self.assertEqual((r.status, r.body), (404, B_404))
        r = self.get("/index.html", "b.test")
        self.assertEqual(r.header("X-Site"), "b")
        self.assertEqual(self.get("/old", "b.test").header("Location"), "/index.html")
        r = self.get("/", "other")
        self.assertIsNone(r.header("X-Site"))
        self.assertEqual(self.get("/old", "other").status, 404)

    def test_a_replaced_file_in_a_vhost_root_is_never_served_old(self):
        path = os.path.join(self.base, "c", "fresh.txt")
        for i in range(20):
            data = b"version %d\n" % i
            write(path, data)
            self.assertEqual(self.get("/fresh.txt", "x.c.test").body, data)
        os.unlink(path)
        self.assertEqual(self.get("/fresh.txt", "x.c.test").status, 404)

    def test_the_access_log_names_the_vhost(self):
        self.get("/?marker-b", "b.test")
        self.get("/?marker-default", "other")
        deadline = time.monotonic() + 10
        lines = {}
        while time.monotonic() < deadline and len(lines) < 2:
            with open(self.access_log) as f:
                for line in f:
                    rec = json.loads(line)
                    if rec["target"].startswith("/?marker-"):
                        lines[rec["target"]] = rec
            time.sleep(0.05)
        self.assertEqual(lines["/?marker-b"]["vhost"], "b.test")
        self.assertEqual(lines["/?marker-default"]["vhost"], "")


class Reload:
    @classmethod
    def make_root(cls, base):
        root = site.build(base)
        write(os.path.join(base, "b", "index.html"), B_INDEX)
        write(os.path.join(base, "b2", "index.html"), b"<h1>b, second root</h1>\n")
        return root

    @classmethod
    def extra_toml(cls):
        return '\n[[vhosts]]\nhost = "b.test"\nroot = "%s/b"\n' % cls.base

    def get(self, host):
        data = ("GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode()
        return self.srv.exchange(data, ("GET",), timeout=10)[0]

    def test_sighup_reloads_vhosts_and_rules(self):
        self.assertEqual(self.get("b.test").body, B_INDEX)
        with open(self.srv.config) as f:
            text = f.read()
        text = text.replace("%s/b\"" % self.base, "%s/b2\"" % self.base)
        text += '\n[[headers]]\nsource = "/"\nset = { "X-Reloaded" = "1" }\n'
        with open(self.srv.config, "w") as f:
            f.write(text)
        self.srv.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.get("other").header("X-Reloaded") != "1":
            time.sleep(0.05)
        self.assertEqual(self.get("other").header("X-Reloaded"), "1")
        self.assertEqual(self.get("b.test").body, b"<h1>b, second root</h1>\n")
        self.assertIsNone(self.get("b.test").header("X-Reloaded"))  # the default site's rule


per_backend(globals(), Vhosts, Reload)

if __name__ == "__main__":
    unittest.main()
