"""The deployment files agree with the image: the Kubernetes manifests (deploy/k8s/), the
compose file (deploy/compose.yaml), the Dockerfile, the container config and the seccomp
profile. No cluster or engine runs here: the files are parsed (PyYAML, Debian's
python3-yaml) and the fields that matter are checked: image, ports, probes, seccomp, user.
"""

import json
import math
import os
import re
import tomllib
import unittest

import yaml

SOURCE_DIR = os.path.abspath(os.environ.get(
    "WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
DEPLOY = os.path.join(SOURCE_DIR, "deploy")
PROFILE_NAME = "seccomp-io_uring.json"
IO_URING_SYSCALLS = {"io_uring_setup", "io_uring_enter", "io_uring_register"}


def source(*parts):
    return os.path.join(SOURCE_DIR, *parts)


def read(*parts):
    with open(source(*parts)) as f:
        return f.read()


def project_version():
    return re.search(r"project\(weft VERSION (\d+\.\d+\.\d+)", read("CMakeLists.txt")).group(1)


def dockerfile(path=("Dockerfile",)):
    """Returns the Dockerfile's instructions as (KEYWORD, rest) pairs, continuations joined."""
    text = re.sub(r"\\\n", " ", read(*path))
    lines = [line.strip() for line in text.splitlines()]
    return [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]


def instruction(instructions, keyword):
    """Returns the arguments of the last `keyword` instruction (the one in force)."""
    return [rest for kw, rest in instructions if kw == keyword][-1]


def container_config():
    with open(source("conf", "weft-container.toml"), "rb") as f:
        return tomllib.load(f)


def container_port():
    """The port the image's config listens on."""
    (address,) = container_config()["server"]["listen"]
    return int(address.rsplit(":", 1)[1])


def image_user():
    return instruction(dockerfile(), "USER")


def healthcheck_command():
    """The image's HEALTHCHECK command, as the exec-form list after CMD."""
    rest = instruction(dockerfile(), "HEALTHCHECK")
    return json.loads(rest.split(" CMD ", 1)[1])


def quantity(text):
    """A Kubernetes quantity as a number: '500m' -> 0.5, '2' -> 2, '64Mi' -> 67108864."""
    text = str(text)
    suffixes = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6, "G": 1e9}
    for suffix, factor in suffixes.items():
        if text.endswith(suffix):
            return float(text[:-len(suffix)]) * factor
    return float(text)


def load_k8s():
    """Returns {kind: object} of every manifest in deploy/k8s/ (one object per kind)."""
    objects = {}
    folder = os.path.join(DEPLOY, "k8s")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".yaml"):
            with open(os.path.join(folder, name)) as f:
                for doc in yaml.safe_load_all(f):
                    if doc:
                        assert doc["kind"] not in objects, "two %s objects" % doc["kind"]
                        objects[doc["kind"]] = doc
    return objects


class Image(unittest.TestCase):
    """The Dockerfile: bases, user, port, stop signal, health check, entry point."""

    def test_bases_are_debian_bookworm_and_slim(self):
        froms = [rest for kw, rest in dockerfile() if kw == "FROM"]
        self.assertEqual(froms, ["debian:bookworm AS build", "debian:bookworm-slim"])

    def test_runs_as_a_numeric_non_root_user(self):
        uid, gid = image_user().split(":")
        self.assertNotEqual(int(uid), 0)
        self.assertNotEqual(int(gid), 0)

    def test_exposes_the_configs_port_and_stops_on_sigterm(self):
        self.assertEqual(instruction(dockerfile(), "EXPOSE"), "%d" % container_port())
        self.assertEqual(instruction(dockerfile(), "STOPSIGNAL"), "SIGTERM")
        self.assertEqual(instruction(dockerfile(), "VOLUME"), container_config()["server"]["root"])

    def test_healthcheck_asks_the_configs_port(self):
        command = healthcheck_command()
        self.assertEqual(command[0], "/usr/local/bin/weft-healthcheck")
        self.assertEqual(command[1], str(container_port()))

    def test_entrypoint_uses_the_container_config(self):
        entry = json.loads(instruction(dockerfile(), "ENTRYPOINT"))
        self.assertEqual(entry, ["/usr/local/bin/weft", "-c", "/etc/weft/weft-container.toml"])
        self.assertIn(("COPY", "conf/ /etc/weft/"), dockerfile())

    def test_container_logs_go_to_stdout_and_stderr(self):
        log = container_config()["log"]
        self.assertEqual((log["error_log"], log["access_log"]), ("stderr", "stdout"))


class SeccompProfile(unittest.TestCase):
    """conf/seccomp-io_uring.json: a default-deny profile that allows the io_uring calls."""

    def setUp(self):
        self.profile = json.loads(read("conf", PROFILE_NAME))

    def test_denies_by_default_with_enosys(self):
        self.assertEqual(self.profile["defaultAction"], "SCMP_ACT_ERRNO")
        self.assertEqual(self.profile["defaultErrnoRet"], 38)

    def test_allows_io_uring_unconditionally(self):
        allowed = set()
        for rule in self.profile["syscalls"]:
            if (rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("args")
                    and not rule.get("includes") and not rule.get("excludes")):
                allowed.update(rule["names"])
        self.assertLessEqual(IO_URING_SYSCALLS, allowed)
        # Still the runtime's default list: the calls every program makes are there.
        self.assertLessEqual({"read", "write", "openat", "epoll_wait", "accept4", "sendfile"},
                             allowed)

    def test_names_the_profile_it_derives_from(self):
        self.assertIn("containers-common", self.profile["comment"])


class Kubernetes(unittest.TestCase):
    """deploy/k8s/: Deployment, Service and HorizontalPodAutoscaler."""

    @classmethod
    def setUpClass(cls):
        cls.objects = load_k8s()
        cls.deployment = cls.objects["Deployment"]
        cls.pod = cls.deployment["spec"]["template"]["spec"]
        (cls.container,) = cls.pod["containers"]

    def test_all_three_objects(self):
        self.assertEqual(set(self.objects), {"Deployment", "Service", "HorizontalPodAutoscaler"})
        self.assertEqual(self.deployment["apiVersion"], "apps/v1")
        self.assertEqual(self.objects["HorizontalPodAutoscaler"]["apiVersion"], "autoscaling/v2")

    def test_image_is_this_versions(self):
        self.assertEqual(self.container["image"], "weft:" + project_version())

    def test_port_is_the_configs(self):
        (port,) = self.container["ports"]
        self.assertEqual((port["name"], port["containerPort"]), ("http", container_port()))

    def test_probes_run_the_images_health_check_on_the_http_port(self):
        port = [p for p in self.container["ports"] if p["name"] == "http"][0]["containerPort"]
        for probe in ("readinessProbe", "livenessProbe"):
            command = self.container[probe]["exec"]["command"]
            self.assertEqual(command, ["/usr/local/bin/weft-healthcheck", str(port), "/"], probe)
        with open(os.path.join(SOURCE_DIR, "Dockerfile")) as f:
            self.assertIn("COPY scripts/container-healthcheck.sh /usr/local/bin/weft-healthcheck",
                          f.read())

    def test_seccomp_is_the_shipped_profile_as_localhost(self):
        seccomp = self.pod["securityContext"]["seccompProfile"]
        self.assertEqual(seccomp["type"], "Localhost")
        self.assertEqual(seccomp["localhostProfile"], "weft-" + PROFILE_NAME)
        self.assertTrue(os.path.exists(source("conf", PROFILE_NAME)))
        self.assertNotIn("seccompProfile", self.container.get("securityContext", {}))
        # The annotation podman kube play reads names the same profile.
        annotations = self.deployment["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["seccomp.security.alpha.kubernetes.io/pod"],
                         "localhost/weft-" + PROFILE_NAME)

    def test_non_root_read_only_no_privileges(self):
        pod = self.pod["securityContext"]
        uid, gid = image_user().split(":")
        self.assertIs(pod["runAsNonRoot"], True)
        self.assertEqual((pod["runAsUser"], pod["runAsGroup"]), (int(uid), int(gid)))
        c = self.container["securityContext"]
        self.assertIs(c["readOnlyRootFilesystem"], True)
        self.assertIs(c["allowPrivilegeEscalation"], False)
        self.assertEqual(c["capabilities"]["drop"], ["ALL"])

    def test_resources_requested_and_limited(self):
        res = self.container["resources"]
        for key in ("cpu", "memory"):
            self.assertLessEqual(quantity(res["requests"][key]), quantity(res["limits"][key]), key)
        args = self.container["args"]
        processors = int(args[args.index("--processors") + 1])
        self.assertEqual(processors, math.ceil(quantity(res["limits"]["cpu"])))

    def test_termination_grace_covers_prestop_and_weft_grace(self):
        grace = container_config()["timeouts"]["shutdown_grace"]
        self.assertRegex(grace, r"^\d+s$")
        pre_stop = self.container["lifecycle"]["preStop"]["exec"]["command"]
        self.assertEqual(pre_stop[0], "sleep")
        self.assertGreater(self.pod["terminationGracePeriodSeconds"],
                           int(grace[:-1]) + int(pre_stop[1]))

    def test_service_and_hpa_select_the_deployment(self):
        labels = self.deployment["spec"]["template"]["metadata"]["labels"]
        match = self.deployment["spec"]["selector"]["matchLabels"]
        self.assertLessEqual(match.items(), labels.items())
        service = self.objects["Service"]["spec"]
        self.assertLessEqual(service["selector"].items(), labels.items())
        (port,) = service["ports"]
        self.assertEqual(port["targetPort"], "http")
        hpa = self.objects["HorizontalPodAutoscaler"]["spec"]
        target = hpa["scaleTargetRef"]
        self.assertEqual((target["kind"], target["name"]),
                         ("Deployment", self.deployment["metadata"]["name"]))
        self.assertLessEqual(2, hpa["minReplicas"])
        self.assertLessEqual(hpa["minReplicas"], hpa["maxReplicas"])
        # The autoscaler owns the replica count: a fixed one would fight it on each apply.
        self.assertNotIn("replicas", self.deployment["spec"])
        (metric,) = hpa["metrics"]
        self.assertEqual(metric["resource"]["name"], "cpu")


class Compose(unittest.TestCase):
    """deploy/compose.yaml: weft replicas behind the NGINX load balancer of deploy/lb/."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(DEPLOY, "compose.yaml")) as f:
            cls.compose = yaml.safe_load(f)
        cls.weft = cls.compose["services"]["weft"]
        cls.lb = cls.compose["services"]["lb"]

    def test_weft_is_the_same_image_with_several_replicas(self):
        self.assertEqual(self.weft["image"], load_k8s()["Deployment"]["spec"]["template"]
                         ["spec"]["containers"][0]["image"])
        context = os.path.join(DEPLOY, self.weft["build"]["context"])
        self.assertTrue(os.path.samefile(os.path.join(context, "Dockerfile"), source("Dockerfile")))
        self.assertGreaterEqual(self.weft["deploy"]["replicas"], 2)
        self.assertNotIn("ports", self.weft)  # only the load balancer is published

    def test_weft_uses_the_profile_and_the_images_user(self):
        seccomp = [o for o in self.weft["security_opt"] if o.startswith("seccomp=")]
        self.assertEqual(len(seccomp), 1)
        path = os.path.join(DEPLOY, seccomp[0].split("=", 1)[1])
        self.assertTrue(os.path.samefile(path, source("conf", PROFILE_NAME)))
        self.assertEqual(self.weft["user"], image_user())
        self.assertIs(self.weft["read_only"], True)

    def test_weft_healthcheck_and_stop(self):
        self.assertEqual(self.weft["healthcheck"]["test"].split(), healthcheck_command())
        self.assertEqual(self.weft["stop_signal"], "SIGTERM")
        grace = container_config()["timeouts"]["shutdown_grace"]
        self.assertGreater(int(self.weft["stop_grace_period"][:-1]), int(grace[:-1]))

    def test_load_balancer_proxies_to_every_replica(self):
        self.assertEqual(self.lb["depends_on"]["weft"]["condition"], "service_healthy")
        (published,) = self.lb["ports"]
        lb_port = int(published.rsplit(":", 1)[1])
        lb_dir = os.path.join(DEPLOY, self.lb["build"]["context"])
        conf = read(lb_dir, "nginx.conf")
        self.assertRegex(conf, r"upstream weft \{\s*server weft:%d;" % container_port())
        self.assertRegex(conf, r"listen %d;" % lb_port)
        self.assertIn("proxy_pass http://weft;", conf)
        self.assertEqual(instruction(dockerfile((lb_dir, "Dockerfile")), "FROM"),
                         "debian:bookworm-slim")


if __name__ == "__main__":
    unittest.main(verbosity=2)
