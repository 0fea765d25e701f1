"""The deployment files agree with the image: the Kubernetes manifests (deploy/k8s/), the
compose file (deploy/compose.yaml), the Dockerfile, the container config and the seccomp
profile. No cluster or engine runs here: the files are parsed (PyYAML, Debian's
python3-yaml) and the fields that matter are checked: image, ports, probes, seccomp, user.
"""

import json
import math
import os
import re
import shlex
import subprocess
import tomllib
import unittest

import kubernetes.client
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


# The Kubernetes API models python3-kubernetes generates from the API's OpenAPI schema, by
# (apiVersion, kind): what every manifest here is checked against.
MODELS = {
    ("apps/v1", "Deployment"): "V1Deployment",
    ("v1", "Service"): "V1Service",
    # Debian 12's client (22.6) predates the autoscaling/v2 models; v2beta2's have the same
    # fields (v2 promoted it unchanged).
    ("autoscaling/v2", "HorizontalPodAutoscaler"):
        "V2HorizontalPodAutoscaler" if hasattr(kubernetes.client, "V2HorizontalPodAutoscaler")
        else "V2beta2HorizontalPodAutoscaler",
    ("batch/v1", "Job"): "V1Job",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
}
SCALARS = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str}


def schema_errors(value, typ, path):
    """Returns what in `value` does not fit the API model type `typ` ("V1Job", "list[str]",
    "dict(str, str)", "object" for int-or-string and quantities): unknown fields, wrong types."""
    if typ.startswith("list["):
        if not isinstance(value, list):
            return ["%s: a list expected" % path]
        return [e for i, v in enumerate(value) for e in schema_errors(v, typ[5:-1],
                                                                      "%s[%d]" % (path, i))]
    if typ.startswith("dict("):
        if not isinstance(value, dict):
            return ["%s: a map expected" % path]
        inner = typ[5:-1].split(", ", 1)[1]
        return [e for k, v in value.items() for e in schema_errors(v, inner, path + "." + k)]
    if typ == "object":
        return [] if isinstance(value, (str, int)) else ["%s: a string or number expected" % path]
    if typ in SCALARS:
        ok = isinstance(value, SCALARS[typ]) and (typ == "bool" or not isinstance(value, bool))
        return [] if ok else ["%s: %s expected, not %r" % (path, typ, value)]
    model = getattr(kubernetes.client, typ)
    if not isinstance(value, dict):
        return ["%s: an object (%s) expected" % (path, typ)]
    fields = {json_name: name for name, json_name in model.attribute_map.items()}
    errors = []
    for key, v in value.items():
        if key not in fields:
            errors.append("%s.%s: not a field of %s" % (path, key, typ))
        else:
            errors += schema_errors(v, model.openapi_types[fields[key]], path + "." + key)
    return errors


def required_errors(doc, typ):
    """Returns the model's own complaint (a required field missing) when it is built from doc."""
    try:
        kubernetes.client.ApiClient()._ApiClient__deserialize(doc, typ)
    except ValueError as e:
        return [str(e)]
    return []


def k8s_documents(*folders):
    """Yields (file, object) for every manifest in deploy/k8s/<folders>."""
    folder = os.path.join(DEPLOY, "k8s", *folders)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".yaml"):
            with open(os.path.join(folder, name)) as f:
                for doc in yaml.safe_load_all(f):
                    if doc:
                        yield name, doc


class KubernetesSchema(unittest.TestCase):
    """Every manifest in deploy/k8s/ fits the Kubernetes API's schema: known kinds, no unknown
    field, the right types, the required fields present."""

    def test_every_manifest_fits_the_api(self):
        for folders in ((), ("load",)):
            for name, doc in k8s_documents(*folders):
                with self.subTest(file=name, kind=doc.get("kind")):
                    typ = MODELS.get((doc.get("apiVersion"), doc.get("kind")))
                    self.assertIsNotNone(typ, "unknown apiVersion/kind")
                    self.assertEqual(schema_errors(doc, typ, doc["kind"]), [])
                    self.assertEqual(required_errors(doc, typ), [])

    def test_the_check_catches_mistakes(self):
        job = dict(k8s_documents("load"))["fleet-job.yaml"]
        bad = json.loads(json.dumps(job))
        bad["spec"]["completionMode"] = 4
        bad["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
        errors = schema_errors(bad, "V1Job", "Job")
        self.assertEqual(len(errors), 2, errors)
        del bad["spec"]["template"]["spec"]["containers"]
        self.assertNotEqual(required_errors(bad, "V1Job"), [])


class LoadFleet(unittest.TestCase):
    """deploy/k8s/load/: a weft-load fleet as an Indexed Job, and its merge step."""

    @classmethod
    def setUpClass(cls):
        docs = list(k8s_documents("load"))
        cls.job = [d for n, d in docs if n == "fleet-job.yaml" and d["kind"] == "Job"][0]
        cls.claim = [d for _, d in docs if d["kind"] == "PersistentVolumeClaim"][0]
        cls.merge = [d for n, d in docs if n == "merge-job.yaml"][0]
        cls.pod = cls.job["spec"]["template"]["spec"]
        (cls.container,) = cls.pod["containers"]
        cls.env = {e["name"]: e["value"] for e in cls.container["env"]}

    def test_an_indexed_job_of_n_instances_told_n(self):
        spec = self.job["spec"]
        self.assertEqual(spec["completionMode"], "Indexed")
        self.assertEqual(spec["completions"], spec["parallelism"])
        self.assertEqual(int(self.env["CLIENTS"]), spec["completions"])
        self.assertEqual(spec["backoffLimit"], 0)
        self.assertEqual(self.pod["restartPolicy"], "Never")

    def test_the_image_is_weft_s_and_carries_weft_load(self):
        deployment = load_k8s()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(self.container["image"], deployment["image"])
        self.assertEqual(self.merge["spec"]["template"]["spec"]["containers"][0]["image"],
                         deployment["image"])
        self.assertIn("COPY --from=build /weft-load /usr/local/bin/weft-load", read("Dockerfile"))

    def command(self, env):
        """The container's weft-load command line, as its shell would run it with `env`."""
        (script,) = self.container["args"]
        self.assertEqual(self.container["command"], ["/bin/sh", "-c"])
        for name, value in env.items():
            script = script.replace('"$%s"' % name, value).replace("$" + name, value)
        argv = shlex.split(script)
        self.assertEqual(argv[:2], ["exec", "/usr/local/bin/weft-load"])
        self.assertNotIn("$", " ".join(argv))
        return argv[2:]

    def test_each_pod_runs_its_share_of_one_test_and_weft_load_accepts_it(self):
        binary = os.environ.get("WEFT_LOAD_BINARY")
        n = int(self.env["CLIENTS"])
        for index in range(n):
            argv = self.command(dict(self.env, JOB_COMPLETION_INDEX=str(index)))
            self.assertEqual(argv[argv.index("--client") + 1], "%d/%d" % (index, n))
            self.assertEqual(argv[argv.index("--json") + 1], "/reports/report-%d.json" % index)
            if binary:  # the real weft-load parses it (--dry-run: nothing is sent)
                proc = subprocess.run([binary] + argv + ["--dry-run"], capture_output=True,
                                      text=True, timeout=30)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("client:    %d of %d" % (index, n), proc.stdout)

    def test_reports_meet_on_one_claim_and_the_merge_reads_them_all(self):
        (mount,) = self.container["volumeMounts"]
        (volume,) = self.pod["volumes"]
        self.assertEqual(mount["name"], volume["name"])
        claim = volume["persistentVolumeClaim"]["claimName"]
        self.assertEqual(claim, self.claim["metadata"]["name"])
        self.assertIn("ReadWriteMany", self.claim["spec"]["accessModes"])
        merge_pod = self.merge["spec"]["template"]["spec"]
        self.assertEqual(merge_pod["volumes"][0]["persistentVolumeClaim"]["claimName"], claim)
        (script,) = merge_pod["containers"][0]["args"]
        self.assertIn("weft-load merge --json %s/merged.json %s/report-*.json"
                      % (mount["mountPath"], mount["mountPath"]), script)

    def test_non_root_read_only_no_privileges(self):
        for pod in (self.pod, self.merge["spec"]["template"]["spec"]):
            self.assertIs(pod["securityContext"]["runAsNonRoot"], True)
            c = pod["containers"][0]["securityContext"]
            self.assertIs(c["readOnlyRootFilesystem"], True)
            self.assertIs(c["allowPrivilegeEscalation"], False)
            self.assertEqual(c["capabilities"]["drop"], ["ALL"])


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
