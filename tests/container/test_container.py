"""The container image: builds it with podman or docker and runs it with and without the
io_uring seccomp profile.

Checks: files are served; the log names io_uring with conf/seccomp-io_uring.json and the epoll
fallback (one line naming the cause and the fix) without it; SIGTERM (the image's STOPSIGNAL)
stops it with exit status 0 before the engine's stop timeout; weft runs as a non-root user;
the image's HEALTHCHECK command succeeds; a site mounted over the /srv/www volume is served;
deploy/k8s/ runs under `podman kube play`, passes its probes and stops cleanly.

Skips (exit status 77, which ctest reports as skipped) when no engine is installed or can run
a container, or when the base images are missing (scripts/container-base.sh makes them).
scripts/container-test.sh installs the tools, makes the base images and runs this file.

Environment: WEFT_CONTAINER_ENGINE (podman or docker; default: whichever works, podman
first), WEFT_CONTAINER_IMAGE (tag to build; default weft:test), WEFT_CONTAINER_RUN_FLAGS
(extra `run` flags; default: RLIMIT_NOFILE 16384 and RLIMIT_NPROC 4096, since these VMs
refuse podman's higher default limits, see docs/containers.md).
"""

import http.client
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = os.path.abspath(os.environ.get(
    "WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
PROFILE = os.path.join(SOURCE_DIR, "conf", "seccomp-io_uring.json")
SITE = os.path.join(SOURCE_DIR, "www-fixtures", "site")
IMAGE = os.environ.get("WEFT_CONTAINER_IMAGE", "weft:test")
RUN_FLAGS = shlex.split(os.environ.get(
    "WEFT_CONTAINER_RUN_FLAGS", "--ulimit nofile=16384:16384 --ulimit nproc=4096:4096"))
BASE_IMAGES = ("debian:bookworm", "debian:bookworm-slim")
FALLBACK_LINE = "io_uring unavailable (io_uring_setup returned ENOSYS"
URING_LINE = "io backend: io_uring"

ENGINE = None  # set by setUpModule


def engine(*args, check=True, timeout=120):
    """Runs the container engine; returns the CompletedProcess (text)."""
    r = subprocess.run([ENGINE, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s %s failed (%d):\n%s%s" % (
            ENGINE, " ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def find_engine():
    """Returns (engine, None) for a working engine, or (None, why not)."""
    wanted = os.environ.get("WEFT_CONTAINER_ENGINE")
    why = []
    for name in ([wanted] if wanted else ["podman", "docker"]):
        if shutil.which(name) is None:
            why.append("%s: not installed" % name)
            continue
        try:
            r = subprocess.run([name, "info"], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            why.append("%s: `%s info` hangs" % (name, name))
            continue
        if r.returncode != 0:
            why.append("%s: `%s info` fails: %s" % (name, name, r.stderr.strip()[-200:]))
            continue
        return name, None
    return None, "; ".join(why)


def setUpModule():
    global ENGINE
    ENGINE, why = find_engine()
    if ENGINE is None:
        raise unittest.SkipTest("no usable container engine (%s)" % why)
    missing = [b for b in BASE_IMAGES if engine("image", "inspect", b, check=False).returncode]
    if missing:
        raise unittest.SkipTest("base image(s) %s missing: scripts/container-base.sh pulls or "
                                "makes them" % ", ".join(missing))
    probe = engine("run", "--rm", *RUN_FLAGS, BASE_IMAGES[1], "true", check=False)
    if probe.returncode != 0:
        raise unittest.SkipTest("%s cannot run a container here: %s" % (
            ENGINE, probe.stderr.strip()[-300:]))
    build = ["build", "--network", "host", "-t", IMAGE, SOURCE_DIR]
    if ENGINE == "podman":
        build[1:1] = ["--format", "docker"]  # OCI images drop HEALTHCHECK
    engine(*build, timeout=1800)


class Container:
    """One detached container of the image; its port 8080 published on 127.0.0.1."""

    def __init__(self, *flags):
        self.id = engine("run", "-d", "--no-healthcheck", "-p", "127.0.0.1::8080",
                         *RUN_FLAGS, *flags, IMAGE).stdout.strip()
        try:
            host, port = engine("port", self.id, "8080/tcp").stdout.split()[0].rsplit(":", 1)
            self.address = (host, int(port))
            self.wait_ready()
        except BaseException:
            self.remove()
            raise

    def wait_ready(self, timeout=30):
        """Waits until weft answers a request (the timeout only catches one that never does)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.get("/")
                return
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)
        raise AssertionError("weft did not answer in the container:\n" + self.logs()[1])

    def get(self, path, method="GET"):
        """Returns (status, headers, body) of one request on a fresh connection."""
        c = http.client.HTTPConnection(*self.address, timeout=10)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, r, r.read()
        finally:
            c.close()

    def logs(self):
        """Returns (stdout, stderr) of the container so far."""
        r = engine("logs", self.id)
        return r.stdout, r.stderr

    def remove(self):
        engine("rm", "-f", self.id, check=False)


def read_site(name):
    with open(os.path.join(SITE, name), "rb") as f:
        return f.read()


class ContainerChecks:
    """What every run of the image must show; subclasses choose the seccomp profile."""

    flags = ()

    @classmethod
    def setUpClass(cls):
        cls.container = Container(*cls.flags)

    @classmethod
    def tearDownClass(cls):
        cls.container.remove()

    def test_serves_the_bundled_site(self):
        status, r, body = self.container.get("/hello.txt")
        self.assertEqual(status, 200)
        self.assertEqual(body, read_site("hello.txt"))
        self.assertEqual(r.getheader("Content-Type"), "text/plain")
        status, r, body = self.container.get("/")
        self.assertEqual(status, 200)
        self.assertEqual(body, read_site("index.html"))
        self.assertTrue(r.getheader("Content-Type").startswith("text/html"))
        status, _, body = self.container.get("/hello.txt", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(self.container.get("/no-such-file")[0], 404)

    def test_access_log_on_stdout_error_log_on_stderr(self):
        self.container.get("/hello.txt")
        out, err = self.container.logs()
        self.assertIn('"GET /hello.txt HTTP/1.1" 200', out)
        self.assertIn("serving /srv/www on 0.0.0.0:8080", err)

    def test_runs_as_non_root(self):
        self.assertEqual(engine("image", "inspect", "--format", "{{.Config.User}}",
                                IMAGE).stdout.strip(), "10001:10001")
        status = engine("exec", self.container.id, "cat", "/proc/1/status").stdout
        uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
        gids = next(line for line in status.splitlines() if line.startswith("Gid:")).split()[1:]
        self.assertEqual(uids, ["10001"] * 4)  # real, effective, saved, file system
        self.assertEqual(gids, ["10001"] * 4)
        cmdline = engine("exec", self.container.id, "cat", "/proc/1/cmdline").stdout
        self.assertTrue(cmdline.startswith("/usr/local/bin/weft\0"), cmdline)

    def test_healthcheck_command_succeeds(self):
        test = json.loads(engine("image", "inspect", "--format", "{{json .Config.Healthcheck}}",
                                 IMAGE).stdout)["Test"]
        self.assertEqual(test[0], "CMD")
        self.assertEqual(engine("exec", self.container.id, *test[1:], check=False).returncode, 0)


class WithoutProfile(ContainerChecks, unittest.TestCase):
    """The engine's default seccomp profile blocks io_uring: weft falls back to epoll."""

    def test_log_names_the_epoll_fallback_once(self):
        err = self.container.logs()[1]
        fallback = [line for line in err.splitlines() if FALLBACK_LINE in line]
        self.assertEqual(len(fallback), 1, err)
        self.assertIn("using the epoll backend", fallback[0])
        self.assertIn("conf/seccomp-io_uring.json", fallback[0])  # the fix
        self.assertNotIn(URING_LINE, err)


class WithProfile(ContainerChecks, unittest.TestCase):
    """conf/seccomp-io_uring.json lets io_uring through."""

    flags = ("--security-opt", "seccomp=" + PROFILE)

    def test_log_names_io_uring(self):
        err = self.container.logs()[1]
        self.assertIn(URING_LINE, err)
        self.assertNotIn("io_uring unavailable", err)


class StopAndVolume(unittest.TestCase):
    """A site mounted over the volume is served, and `stop` (SIGTERM) ends weft cleanly."""

    def test_mounted_site_then_sigterm_with_an_open_connection(self):
        site = tempfile.mkdtemp(prefix="weft-container-site-")
        self.addCleanup(shutil.rmtree, site)
        os.chmod(site, 0o755)  # the container's user 10001 must read it
        with open(os.path.join(site, "mounted.txt"), "wb") as f:
            f.write(b"from the volume\n")
        os.chmod(os.path.join(site, "mounted.txt"), 0o644)
        c = Container("-v", site + ":/srv/www:ro", "--security-opt", "seccomp=" + PROFILE)
        self.addCleanup(c.remove)
        self.assertEqual(engine("image", "inspect", "--format", "{{.Config.StopSignal}}",
                                IMAGE).stdout.strip(), "SIGTERM")
        status, _, body = c.get("/mounted.txt")
        self.assertEqual((status, body), (200, b"from the volume\n"))
        self.assertEqual(c.get("/hello.txt")[0], 404)  # the volume replaced the bundled site

        # An idle keep-alive connection is open when the stop signal arrives.
        idle = socket.create_connection(c.address, timeout=30)
        self.addCleanup(idle.close)
        idle.sendall(b"GET /mounted.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        head = b""
        while b"from the volume\n" not in head:
            chunk = idle.recv(4096)
            self.assertTrue(chunk, "connection closed before the response")
            head += chunk

        # The engine waits 10 s before SIGKILL (137); the container config's grace is 8 s.
        engine("stop", "-t", "10", c.id, timeout=60)
        self.assertEqual(idle.recv(1), b"", "the idle connection was not closed")
        exit_code = engine("inspect", "--format", "{{.State.ExitCode}}", c.id).stdout.strip()
        err = c.logs()[1]
        self.assertEqual(exit_code, "0", err)
        self.assertIn("SIGTERM: shutting down", err)
        self.assertTrue(err.rstrip().endswith("stopped"), err)


class KubePlay(unittest.TestCase):
    """deploy/k8s/ runs under `podman kube play` (podman runs Kubernetes YAML): the Deployment
    and the Service start a pod that serves the bundled site with io_uring (the manifest's
    seccomp profile, from a profile folder of the test's own), its probes pass, and stopping
    the pod ends weft with exit status 0. The test's copy of the manifests changes only the
    image (the one built here) and publishes the pod's port on a free loopback port
    (hostIP/hostPort), which podman honours."""

    def setUp(self):
        if ENGINE != "podman":
            self.skipTest("kube play is podman's")
        try:
            import yaml
        except ImportError:
            self.skipTest("no python3-yaml")
        self.tmp = tempfile.mkdtemp(prefix="weft-kube-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        docs = []
        for name in ("deployment.yaml", "service.yaml"):
            with open(os.path.join(SOURCE_DIR, "deploy", "k8s", name)) as f:
                docs.append(yaml.safe_load(f))
        pod = docs[0]["spec"]["template"]["spec"]
        container = pod["containers"][0]
        container["image"] = IMAGE
        with socket.socket() as probe:  # a free port; podman binds it right after
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        container["ports"][0].update(hostIP="127.0.0.1", hostPort=self.port)
        self.kube = os.path.join(self.tmp, "weft-kube.yaml")
        with open(self.kube, "w") as f:
            yaml.safe_dump_all(docs, f)
        # The kubelet's profile folder, as the manifest's comment says to fill it.
        profiles = os.path.join(self.tmp, "seccomp")
        os.makedirs(profiles)
        shutil.copy(PROFILE, os.path.join(
            profiles, pod["securityContext"]["seccompProfile"]["localhostProfile"]))
        # kube play takes no --ulimit: the same limits as RUN_FLAGS, from a containers.conf.
        conf = os.path.join(self.tmp, "containers.conf")
        with open(conf, "w") as f:
            f.write('[containers]\ndefault_ulimits = ["nofile=16384:16384", "nproc=4096:4096"]\n')
        self.env = dict(os.environ, CONTAINERS_CONF=conf)
        self.profiles = profiles

    def podman(self, *args, check=True, timeout=120):
        r = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout,
                           env=self.env)
        if check and r.returncode != 0:
            raise AssertionError("podman %s failed (%d):\n%s%s" % (
                " ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    def test_deployment_and_service_run_pass_probes_and_stop_cleanly(self):
        self.podman("kube", "play", "--seccomp-profile-root", self.profiles, self.kube)
        self.addCleanup(self.podman, "kube", "down", self.kube, check=False)
        names = self.podman("ps", "--format", "{{.Names}}").stdout.split()
        ctr = [n for n in names if n.startswith("weft-pod-") and n.endswith("-weft")]
        self.assertEqual(len(ctr), 1, names)
        ctr = ctr[0]
        c = Container.__new__(Container)  # reuse its client on the published port
        c.id, c.address = ctr, ("127.0.0.1", self.port)
        c.wait_ready()
        status, _, body = c.get("/")
        self.assertEqual((status, body), (200, read_site("index.html")))
        # The probes: podman runs the liveness probe as the container's health check.
        health = self.podman("healthcheck", "run", ctr, check=False)
        self.assertEqual(health.returncode, 0, health.stdout + health.stderr)
        err = self.podman("logs", ctr).stderr
        self.assertIn(URING_LINE, err)  # the manifest's seccomp profile is in force
        self.assertNotIn(FALLBACK_LINE, err)
        pod = ctr[:-len("-weft")]
        self.podman("pod", "stop", "-t", "30", pod, timeout=60)
        exit_code = self.podman("inspect", "--format", "{{.State.ExitCode}}", ctr).stdout.strip()
        err = self.podman("logs", ctr).stderr
        self.assertEqual(exit_code, "0", err)
        self.assertIn("SIGTERM: shutting down", err)
        self.assertTrue(err.rstrip().endswith("stopped"), err)


if __name__ == "__main__":
    program = unittest.main(exit=False, verbosity=2)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    # Everything skipped (no engine, no base image): tell ctest (SKIP_RETURN_CODE 77).
    sys.exit(77 if result.testsRun == len(result.skipped) or not result.testsRun else 0)
