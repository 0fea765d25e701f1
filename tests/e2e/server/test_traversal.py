"""Path traversal never reaches outside the document root, whatever the encoding; symbolic
links follow server.symlinks ("inside_root", "follow", "deny")."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import per_backend  # noqa: E402

# Targets that try to climb out of the root; each must get 400 or 404, never a file.
ATTACKS = [
    b"/../canary.txt", b"/../../canary.txt", b"/../../../../../../../../etc/passwd",
    b"/%2e%2e/canary.txt", b"/%2E%2E/canary.txt", b"/.%2e/canary.txt", b"/%2e./canary.txt",
    b"/%2e%2e%2fcanary.txt", b"/..%2fcanary.txt", b"/..%2Fcanary.txt",
    b"/%252e%252e%252fcanary.txt", b"/%252e%252e/canary.txt",
    b"//etc/passwd", b"///../canary.txt", b"/./../canary.txt", b"/dir/../../canary.txt",
    b"/dir/%2e%2e/%2e%2e/canary.txt", b"/dir/sub/../../../canary.txt",
    b"/dir-link/../../canary.txt", b"/out-dir-link/../../canary.txt",
    b"/..\\canary.txt", b"/..\\..\\canary.txt", b"/%5c..%5ccanary.txt", b"\\..\\canary.txt",
    b"/%2e%2e%5ccanary.txt", b"/%c0%ae%c0%ae/canary.txt", b"/%c0%af../canary.txt",
    b"/..;/canary.txt", b"/canary.txt", b"/../canary.txt%00", b"/%00/../canary.txt",
    b"/hello.txt%00../../canary.txt", b"/..%00/canary.txt",
    b"http://x/../../etc/passwd", b"http://x/../canary.txt", b"http://x/%2e%2e/canary.txt",
    b"http://x/..%2f..%2fetc/passwd", b"https://x/../canary.txt", b"http://x/../",
    b"/..", b"/../", b"/%2e%2e", b"/out-link/../../canary.txt",
]


class Confined:
    """Checks shared by every symlink policy: no request reads outside the root."""

    def assert_confined(self, r):
        self.assertNotIn(site.CANARY, r.body)
        self.assertNotIn(b"root:x:0:0", r.body)
        self.assertNotIn(site.CANARY, r.head)

    def test_traversal_attempts(self):
        for target in ATTACKS:
            with self.subTest(target=target):
                for method in ("GET", "HEAD"):
                    data = b"%s %s HTTP/1.1\r\nHost: x\r\n\r\n" % (method.encode(), target)
                    r = self.srv.exchange(data, (method,))[0]
                    self.assert_confined(r)
                    self.assertIn(r.status, (400, 404), r)

    def test_traversal_with_curl(self):
        for target in ("/../canary.txt", "/%2e%2e/canary.txt", "/..%2f..%2fcanary.txt"):
            with self.subTest(target=target):
                r = self.srv.curl(target)
                self.assert_confined(r)
                self.assertIn(r.status, (400, 404))

    def test_traversal_in_redirect_and_index(self):
        # A directory redirect never points outside either.
        r = self.srv.exchange(b"GET /dir/sub/.. HTTP/1.1\r\nHost: x\r\n\r\n")[0]
        self.assertEqual((r.status, r.body), (200, site.DIR_INDEX))
        r = self.srv.exchange(b"GET /dir/%2e%2e/dir HTTP/1.1\r\nHost: x\r\n\r\n")[0]
        self.assertEqual((r.status, r.header("Location")), (301, "/dir/"))

    def get(self, path):
        r = self.srv.exchange(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())[0]
        self.assert_confined(r)
        return r

    def assert_served(self, path, body):
        r = self.get(path)
        self.assertEqual((r.status, r.body), (200, body), path)

    def assert_refused(self, path):
        r = self.get(path)
        self.assertEqual(r.status, 404, path)
        self.assertNotIn(site.OUTSIDE, r.body)


class InsideRoot(Confined):
    # The default: settings leave server.symlinks unset.
    def test_symlinks(self):
        self.assert_served("/in-link", site.HELLO)
        self.assert_served("/dir-link/", site.DIR_INDEX)
        self.assert_served("/dir-link/sub/deep.txt", site.DEEP)
        self.assert_refused("/out-link")
        self.assert_refused("/out-dir-link/target.txt")


class Follow(Confined):
    settings = {"server": {"symlinks": "follow"}}

    def test_symlinks(self):
        self.assert_served("/in-link", site.HELLO)
        self.assert_served("/dir-link/sub/deep.txt", site.DEEP)
        self.assert_served("/out-link", site.OUTSIDE)
        self.assert_served("/out-dir-link/target.txt", site.OUTSIDE)


class Deny(Confined):
    settings = {"server": {"symlinks": "deny"}}

    def test_symlinks(self):
        self.assert_served("/hello.txt", site.HELLO)
        self.assert_refused("/in-link")
        self.assert_refused("/dir-link/")
        self.assert_refused("/dir-link/sub/deep.txt")
        self.assert_refused("/out-link")
        self.assert_refused("/out-dir-link/target.txt")


per_backend(globals(), InsideRoot, Follow, Deny)

if __name__ == "__main__":
    unittest.main()
