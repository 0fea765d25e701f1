"""`cmake --install BUILD --prefix P` (with DESTDIR) is whole under any prefix: every file lands
under P (the configuration in /etc/weft for /usr and in /etc/opt/X/weft for /opt/X, as
GNUInstallDirs has it), the installed weft.toml and systemd unit name P's files, and the
installed weft finds its own etc/weft/weft.toml and share/weft/ next to its binary, whatever
prefix the build was configured with. Installs this build (WEFT_BUILD_DIR) into temporary
folders only."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

BUILD_DIR = os.environ.get("WEFT_BUILD_DIR", "")


def install(prefix, destdir):
    """Installs the build under `prefix` into `destdir`; returns cmake's output."""
    env = dict(os.environ, DESTDIR=destdir)
    r = subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", prefix],
                       capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0:
        raise AssertionError("cmake --install failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    return r.stdout


def files_under(top):
    """Returns every file under `top`, as paths relative to it."""
    out = set()
    for folder, _, names in os.walk(top):
        out.update(os.path.relpath(os.path.join(folder, n), top) for n in names)
    return out


def read(path):
    with open(path) as f:
        return f.read()


class Install(unittest.TestCase):
    def setUp(self):
        if not BUILD_DIR:
            self.skipTest("WEFT_BUILD_DIR is not set")
        self.dest = tempfile.mkdtemp(prefix="weft-install-")
        self.addCleanup(shutil.rmtree, self.dest, True)

    def check_layout(self, prefix, etc):
        """Installs under `prefix` and checks that every file is under it (and the
        configuration in `etc`) and that the configuration and the unit name them."""
        install(prefix, self.dest)
        rel = prefix.lstrip("/")
        files = files_under(self.dest)
        expected = {
            rel + "/bin/weft", rel + "/bin/weft-load", etc.lstrip("/") + "/weft.toml",
            rel + "/share/weft/mime.types", rel + "/share/weft/www/index.html",
            rel + "/lib/systemd/system/weft.service",
            rel + "/share/man/man8/weft.8", rel + "/share/man/man1/weft-load.1",
        }
        self.assertEqual(expected - files, set(), "missing")
        stray = {f for f in files
                 if not f.startswith(rel + "/") and not f.startswith(etc.lstrip("/") + "/")}
        self.assertEqual(stray, set(), "installed outside the prefix")
        toml = read(os.path.join(self.dest + etc, "weft.toml"))
        self.assertIn('\nroot = "%s/share/weft/www"\n' % prefix, toml)
        self.assertIn('\nmime_types = "%s/share/weft/mime.types"\n' % prefix, toml)
        self.assertIn('\npid_file = "/run/weft/weft.pid"\n', toml)
        unit = read(os.path.join(self.dest, rel, "lib/systemd/system/weft.service"))
        self.assertIn("\nExecStart=%s/bin/weft\n" % prefix, unit)
        self.assertIn("\nExecStartPre=%s/bin/weft -t\n" % prefix, unit)

    def test_usr_prefix_puts_the_configuration_in_etc(self):
        self.check_layout("/usr", "/etc/weft")

    def test_opt_prefix_puts_the_configuration_in_etc_opt(self):
        self.check_layout("/opt/weft", "/etc/opt/weft/weft")

    def test_installed_weft_finds_its_own_files(self):
        prefix = "/srv/weft-install-test"
        self.check_layout(prefix, prefix + "/etc/weft")
        top = self.dest + prefix
        weft = os.path.join(top, "bin", "weft")
        env = {k: v for k, v in os.environ.items() if k != "WEFT_CONFIG"}
        # Its own etc/weft/weft.toml, not the configured prefix's. (The files it names are
        # under DESTDIR here: the test points them there, as if installed without one.)
        toml = os.path.join(top, "etc/weft/weft.toml")
        text = read(toml)
        with open(toml, "w") as f:
            f.write(text.replace('"%s/' % prefix, '"%s/' % top))
        r = subprocess.run([weft, "-t"], capture_output=True, text=True, timeout=30, env=env,
                           cwd=self.dest)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("configuration file %s/etc/weft/weft.toml test is successful" % top,
                      r.stdout + r.stderr)
        # Without a configuration file: its own share/weft as the root and MIME map.
        os.remove(os.path.join(top, "etc/weft/weft.toml"))
        r = subprocess.run([weft, "-T"], capture_output=True, text=True, timeout=30, env=env,
                           cwd=self.dest)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(r.stdout.startswith("# built-in defaults"), r.stdout[:200])
        self.assertRegex(r.stdout, r"\nroot = '%s/share/weft/www'  # default\n" % re.escape(top))
        self.assertRegex(r.stdout,
                         r"\nmime_types = '%s/share/weft/mime.types'  # default\n" % re.escape(top))


if __name__ == "__main__":
    unittest.main()
