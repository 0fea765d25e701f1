"""The .deb installs into a fresh Debian 12 root, and there `weft` with no arguments reads
/etc/weft/weft.toml and serves the bundled site; `weft -t`, `weft -T`, `weft -s quit` and the
man pages work; purge removes what the package added.

The root is debootstrap's minbase, made once and kept as a tarball in /var/cache/weft-test
(about a minute the first time); each run unpacks a fresh copy. weft runs inside a network
and mount namespace of its own (unshare), so its 127.0.0.1:8080 is nobody else's. Exits 77
(skipped) without root, debootstrap, unshare, or a reachable Debian archive."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("WEFT_SOURCE_DIR",
                            os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = "/var/cache/weft-test"
BASE = os.path.join(CACHE, "bookworm-minbase.tar")
MIRROR = os.environ.get("WEFT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SKIP = 77


def skip(why):
    print("skipped: " + why)
    sys.exit(SKIP)


def make_base():
    """Makes the minbase tarball once; returns None, or the reason it could not."""
    if os.path.exists(BASE):
        return None
    os.makedirs(CACHE, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="weft-debootstrap-", dir="/var/tmp")
    try:
        r = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", tmp, MIRROR],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            return "debootstrap failed (is %s reachable?):\n%s" % (MIRROR, r.stdout[-2000:])
        subprocess.run(["tar", "-C", tmp, "-cf", BASE + ".part", "."], check=True)
        os.rename(BASE + ".part", BASE)
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def in_root(root, script, timeout=300, net=False):
    """Runs bash `script` chrooted in `root`, in a new mount namespace (/proc mounted) and,
    with `net`, a new network namespace (loopback only, up); else on the host's network, as
    apt needs. Returns the CompletedProcess."""
    outer = ("set -e; mount -t proc proc %s/proc; %s"
             "exec chroot %s /bin/bash -ec \"$0\"") % (root, "ip link set lo up; " if net else "",
                                                       root)
    cmd = ["unshare", "--mount"] + (["--net"] if net else []) + ["sh", "-c", outer, script]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


class DebPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "package.sh")],
                           capture_output=True, text=True, timeout=1100)
        if r.returncode != 0:
            raise AssertionError("scripts/package.sh failed:\n" + r.stdout[-3000:] +
                                 r.stderr[-3000:])
        cls.deb = os.path.join(SOURCE_DIR, r.stdout.strip().splitlines()[-1])
        cls.root = tempfile.mkdtemp(prefix="weft-debroot-", dir="/var/tmp")
        subprocess.run(["tar", "-C", cls.root, "-xf", BASE], check=True)
        shutil.copy("/etc/resolv.conf", os.path.join(cls.root, "etc", "resolv.conf"))
        shutil.copy(cls.deb, os.path.join(cls.root, "tmp", "weft.deb"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def run_in_root(self, script, timeout=300, net=False):
        r = in_root(self.root, script, timeout, net)
        self.assertEqual(r.returncode, 0, "script:\n%s\nout:\n%s\nerr:\n%s" %
                         (script, r.stdout[-4000:], r.stderr[-4000:]))
        return r.stdout

    def test_install_run_and_purge(self):
        self.run_in_root("export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; "
                         "apt-get install -y -qq --no-install-recommends /tmp/weft.deb "
                         ">/dev/null", timeout=600)
        out = self.run_in_root("weft -t; weft -T | head -12; getent passwd weft; "
                               "dpkg -L weft | grep -E 'man8/weft.8|weft.service|www/index'")
        self.assertIn("configuration file /etc/weft/weft.toml test is successful", out)
        self.assertIn("root = '/usr/share/weft/www'  # /etc/weft/weft.toml", out)
        self.assertIn("weft:", out)  # the system user postinst added
        self.assertIn("/usr/lib/systemd/system/weft.service", out)
        # No arguments: /etc/weft/weft.toml, 127.0.0.1:8080, the bundled site; then weft -s
        # quit through its pid file, and a clean exit.
        out = self.run_in_root(r"""
weft 2>/tmp/weft.log &
for i in $(seq 100); do
  if (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null; then break; fi
  sleep 0.1
done
exec 3<>/dev/tcp/127.0.0.1/8080
printf 'GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&3
cat <&3 > /tmp/reply
test -s /run/weft/weft.pid
weft -s quit
wait $!
echo "exit $?"
head -1 /tmp/reply
grep -c '<html' /tmp/reply
grep -c '\[warn' /tmp/weft.log || true
""", net=True)
        lines = out.strip().splitlines()
        self.assertEqual(lines[0], "exit 0", out)
        self.assertTrue(lines[1].startswith("HTTP/1.1 200"), out)
        self.assertGreaterEqual(int(lines[2]), 1, out)
        self.assertEqual(lines[3], "0", "a default start logged a warning:\n" + out)
        self.run_in_root("apt-get purge -y -qq weft >/dev/null; ! test -e /usr/bin/weft; "
                         "! test -e /etc/weft/weft.toml; ! getent passwd weft")


if __name__ == "__main__":
    if os.geteuid() != 0:
        skip("needs root (debootstrap, chroot, unshare)")
    for tool in ("debootstrap", "unshare", "chroot", "ip"):
        if not shutil.which(tool):
            skip("no %s (scripts/setup.sh installs debootstrap)" % tool)
    why = make_base()
    if why:
        skip(why)
    unittest.main()
