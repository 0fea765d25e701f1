"""server.pid_file: the running server holds it (locked) for weft -s; a second start with the
same pid file fails without touching it, whatever made it fail; a pid file left by a server
that died is taken over."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import weft_site as site  # noqa: E402
from weft_harness import WEFT, BACKENDS, WeftServer  # noqa: E402


class PidFile:
    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="weft-pid-")
        self.addCleanup(shutil.rmtree, self.base, True)
        self.root = site.build(self.base)
        self.pid_file = os.path.join(self.base, "run", "weft.pid")
        self.settings = {"server": {"pid_file": self.pid_file}}
        self.srv = self.server()
        self.srv.start()

    def server(self, listen=None):
        srv = WeftServer(self.root, self.backend, self.settings, listen=listen)
        self.addCleanup(srv.cleanup)
        return srv

    def recorded_pid(self):
        with open(self.pid_file) as f:
            return int(f.read())

    def weft_s(self, action):
        return subprocess.run([WEFT, "-c", self.srv.config, "-s", action],
                              capture_output=True, text=True, timeout=10)

    def check_first_still_reachable(self):
        self.assertEqual(self.recorded_pid(), self.srv.proc.pid)
        r = self.weft_s("reopen")  # log rotation still reaches the running server
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIsNone(self.srv.proc.poll())
        r, _ = self.srv.get("/hello.txt")
        self.assertEqual(r.status, 200)

    def test_second_start_on_the_same_address_leaves_the_pid_file(self):
        # Fails to start (its address is taken, or its pid file held): before, its exit
        # removed the running server's pid file, and weft -s lost that server.
        second = self.server(listen=self.srv.listen)
        status, out = second.run_to_exit()
        self.assertEqual(status, 1, out)
        self.check_first_still_reachable()

    def test_second_start_on_another_address_is_refused(self):
        # Sharing one pid file, weft -s could signal only one of the two: refused, naming
        # the server that holds it.
        second = self.server()
        status, out = second.run_to_exit()
        self.assertEqual(status, 1, out)
        self.assertIn("held by a running weft (pid %d)" % self.srv.proc.pid, out)
        self.check_first_still_reachable()

    def test_pid_file_of_a_dead_server_is_taken_over(self):
        self.assertEqual(self.srv.stop(), 0)
        self.assertFalse(os.path.exists(self.pid_file), "pid file left behind")
        with open(self.pid_file, "w") as f:
            f.write("999999999\n")  # as a server killed by SIGKILL leaves it
        second = self.server()
        second.start()
        self.assertEqual(self.recorded_pid(), second.proc.pid)
        self.assertEqual(second.stop(), 0)
        self.assertFalse(os.path.exists(self.pid_file), "pid file left behind")


for _backend in BACKENDS:
    _name = "PidFile_" + _backend
    globals()[_name] = type(_name, (PidFile, unittest.TestCase), {"backend": _backend})

if __name__ == "__main__":
    unittest.main()
