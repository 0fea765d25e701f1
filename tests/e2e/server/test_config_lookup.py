"""weft runs from any folder: without -c it reads $WEFT_CONFIG, else the installed
etc/weft/weft.toml if there is one, else built-in defaults, with the command line on top;
-T prints the configuration in force with each value's source; a default start sizes
limits.max_connections and fd_cache.max_entries from RLIMIT_NOFILE and logs no warning."""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from weft_harness import SOURCE_DIR, WEFT, free_port  # noqa: E402


def installed_config():
    """The installed default config weft would find, if any (its -T says so)."""
    out = subprocess.run([WEFT, "--help"], capture_output=True, text=True).stdout
    for word in out.split():
        if word.endswith("weft.toml"):
            return word
    return None


class ConfigLookup(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="weft-anywhere-")  # no conf/ in it
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.root = os.path.join(self.dir, "public")
        os.makedirs(self.root)
        with open(os.path.join(self.root, "index.html"), "w") as f:
            f.write("anywhere\n")
        self.env = {k: v for k, v in os.environ.items() if k != "WEFT_CONFIG"}
        default = installed_config()
        if default and os.path.exists(default):
            self.skipTest("an installed %s would be read instead of the defaults" % default)

    def weft(self, *args, env=None, limit=None):
        def cap():
            if limit:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
        return subprocess.Popen([WEFT] + list(args), cwd=self.dir, env=env or self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=cap)

    def serve_once(self, limit=None):
        """Starts weft with --root and --listen only, fetches /, stops it; returns its log."""
        port = free_port()
        p = self.weft("--root", "public", "--listen", "127.0.0.1:%d" % port, limit=limit)
        try:
            body = None
            deadline = time.monotonic() + 10
            while body is None and time.monotonic() < deadline:
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=2) as r:
                        body = r.read()
                except OSError:
                    if p.poll() is not None:
                        break
                    time.sleep(0.05)
            self.assertEqual(body, b"anywhere\n", p.poll())
        finally:
            p.terminate()
            out, _ = p.communicate(timeout=15)
        self.assertEqual(p.returncode, 0, out)
        return out

    def test_runs_from_any_folder_on_built_in_defaults_without_a_warning(self):
        log = self.serve_once()
        self.assertNotIn("[warning]", log)
        self.assertNotIn("[warn]", log)
        self.assertIn("fd budget: limit", log)

    def test_a_small_descriptor_limit_sizes_the_defaults_without_a_warning(self):
        log = self.serve_once(limit=1024)
        self.assertNotIn("[warn]", log)
        # Two thirds of what the reserve leaves go to connections, the rest to the cache.
        self.assertRegex(log, r"fd budget: limit 1024 >= connections [0-9]{3} \+ fd cache "
                              r"[0-9]{3} \+ reserve")

    def test_dump_names_every_source(self):
        p = self.weft("-T", "--root", "public", "--listen", "127.0.0.1:1")
        out, _ = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0, out)
        self.assertTrue(out.startswith("# built-in defaults"), out[:200])
        self.assertIn("root = '%s'  # --root" % self.root, out)
        self.assertIn("listen = ['127.0.0.1:1']  # --listen", out)
        self.assertIn("max_connections = 10000  # default, sized from RLIMIT_NOFILE", out)
        self.assertIn("[fd_cache]", out)

    def test_weft_config_names_the_file(self):
        conf = os.path.join(self.dir, "site.toml")
        with open(conf, "w") as f:
            f.write('[server]\nroot = "public"\n[limits]\nmax_connections = 77\n')
        env = dict(self.env, WEFT_CONFIG=conf)
        p = self.weft("-T", env=env)
        out, _ = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("# configuration file %s" % conf, out)
        self.assertIn("max_connections = 77  # %s:4:" % conf, out)
        # The dump is TOML weft reads back, to the same values.
        again = os.path.join(self.dir, "again.toml")
        with open(again, "w") as f:
            f.write(out)
        p = self.weft("-T", "-c", again)
        out2, _ = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 0, out2)
        strip = lambda text: [line.split("  #")[0] for line in text.splitlines()[1:]]
        self.assertEqual(strip(out), strip(out2))

    def test_a_missing_weft_config_is_an_error(self):
        env = dict(self.env, WEFT_CONFIG=os.path.join(self.dir, "nope.toml"))
        p = self.weft("-t", env=env)
        out, _ = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertIn("nope.toml: cannot open the configuration file", out)

    def test_defaults_without_a_root_say_what_to_do(self):
        p = self.weft("-t")
        out, _ = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertIn("document root", out)
        self.assertIn("does not exist", out)


if __name__ == "__main__":
    unittest.main()
