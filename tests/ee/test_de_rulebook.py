"""The decision environment (decision-environment.yml, built by tests/ee/build.sh) runs the gpu_autoplan rulebook as an
EDA controller activation runs it (issue 30): ansible-rulebook inside the image, the project's rulebook file given
with ``--rulebook extensions/eda/rulebooks/gpu_autoplan.yml``, the gpushare.k8s.gpu_demand source taken from the
collection installed in the image, the cluster's connection as the activation's credential injects it
(eda/gpushare-k8s.yml: K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL, K8S_AUTH_SSL_CA_CERT naming the CA file;
no kubeconfig). The test: the source follows the cluster, one waiting GPU pod gives one event, and the rulebook's plan
runs inside the image (its solver included) and, with ``gpu_autoplan_apply: false``, writes nothing.

EDA controller runs gpu_autoplan_controller.yml, the same source and rule with run_job_template, which needs an
Automation Controller; run_playbook runs the same plan in the DE itself (tests/unit/test_eda_objects.py keeps the two
rulebooks equal but for the action). Run by ``make test-ee`` (tests/ee/run.sh) on its cluster (openshift profile)."""

import os
import subprocess
import threading
import uuid

import pytest
import yaml
from integration_helpers import AuditWindow
from kubernetes import client
from workloads import fresh_namespace

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

with open(os.path.join(REPO, "extensions", "environments", "decision-environment.yml")) as _stream:
    # The DE's one name (decision-environment.yml's tag), as podman names an image built without a registry.
    IMAGE = os.environ.get("GPUSHARE_DE_IMAGE") or "localhost/" + yaml.safe_load(_stream)["options"]["tags"][0]
RULEBOOK_DIR = "extensions/eda/rulebooks"
RULEBOOK = RULEBOOK_DIR + "/gpu_autoplan.yml"
STARTED = "gpu_demand: following unschedulable GPU pods"
NOTHING_WAITS = "gpu_demand: no event: no pod waits for planned GPU resources"
EVENT = "gpu_demand: any pool: 100 nvidia.com/gpu ("
PLAN_PLAY = "PLAY [Plan the GPU sharing layout, then apply it]"
RECAP = "PLAY RECAP"
# The JVM's start and the first LISTs, then one settle window and the plan (the solver's time limit is 10 s).
TIMEOUT = 300


class ContainerLog(object):
    """A container's output, read line by line as it comes; ``wait_for`` blocks on that, not on a clock."""

    def __init__(self, command, env):
        self.lines = []
        self.changed = threading.Condition()
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            with self.changed:
                self.lines.append(line)
                self.changed.notify_all()
        with self.changed:
            self.process.wait()
            self.changed.notify_all()

    def text(self):
        with self.changed:
            return "".join(self.lines)

    def wait_for(self, text, timeout=TIMEOUT):
        """The output once ``text`` is in it; fails when the container exits first or at ``timeout``."""
        with self.changed:
            found = self.changed.wait_for(
                lambda: text in "".join(self.lines) or self.process.poll() is not None, timeout=timeout
            )
            output = "".join(self.lines)
        assert found and text in output, "no %r (within %ss, exit code %s) in the DE's output:\n%s" % (
            text,
            timeout,
            self.process.poll(),
            output,
        )
        return output


@pytest.fixture
def activation(cluster, tmp_path):
    """ansible-rulebook in the DE on the project's rulebook, as an activation starts it; removed after the test."""
    (tmp_path / "env").mkdir()
    with open(cluster.ca_cert) as source, open(tmp_path / "env" / "k8s_ca.crt", "w") as copy:
        copy.write(source.read())
    (tmp_path / "inventory.yml").write_text(
        yaml.safe_dump({"all": {"hosts": {"localhost": {"ansible_connection": "local"}}}})
    )
    # The rulebook's variables, as the activation's extra variables give them: no moves, no writes, a short settle.
    (tmp_path / "vars.yml").write_text(yaml.safe_dump({"gpu_autoplan_apply": False, "gpu_autoplan_settle_seconds": 3}))
    name = "gpushare-de-test-" + uuid.uuid4().hex[:8]
    environment = {
        "K8S_AUTH_HOST": cluster.server(),
        "K8S_AUTH_API_KEY": cluster.token(),
        "K8S_AUTH_VERIFY_SSL": "True",
        "K8S_AUTH_SSL_CA_CERT": "/runner/env/k8s_ca.crt",
    }
    command = ["podman", "run", "--rm", "--name", name, "--network=host"]
    # Root in the container: pytest's temporary folder is the caller's, mode 0700 (as tests/ee/test_awx_jobs.py runs
    # the EE). The token goes by name from this process's environment, never on a command line.
    command += ["--user=%d" % os.getuid()] + ["--env=%s" % variable for variable in sorted(environment)]
    command += ["--volume=%s:/runner/project/extensions/eda/rulebooks:ro" % os.path.join(REPO, RULEBOOK_DIR)]
    command += ["--volume=%s:/runner/env:ro" % (tmp_path / "env"), "--volume=%s:/runner/input:ro" % tmp_path]
    command += ["--workdir=/runner/project", IMAGE, "ansible-rulebook", "--rulebook", RULEBOOK]
    command += ["--inventory", "/runner/input/inventory.yml", "--vars", "/runner/input/vars.yml", "-v"]
    log = ContainerLog(command, dict(os.environ, **environment))
    yield log
    subprocess.run(["podman", "rm", "--force", "--time", "10", name], capture_output=True, check=False)
    log.process.wait(timeout=60)


def test_the_de_runs_the_rulebook_and_a_waiting_gpu_pod_gives_one_plan_that_writes_nothing(
    cluster, api_client, activation
):
    activation.wait_for(STARTED)
    activation.wait_for(NOTHING_WAITS)
    namespace = fresh_namespace(api_client)
    with AuditWindow(cluster, api_client) as audit:
        client.CoreV1Api(api_client).create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": "more-gpus-than-any-node"},
                "spec": {
                    "containers": [
                        {
                            "name": "cuda",
                            "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                            "resources": {"limits": {"nvidia.com/gpu": "100"}},
                        }
                    ]
                },
            },
        )
        activation.wait_for(EVENT)
        output = activation.wait_for(RECAP)
    assert output.count(PLAN_PLAY) == 1 and "failed=0" in output, output
    assert audit.writes == [], audit.summary()
