"""The gpu_autoplan rulebook (issue 30) run by ansible-rulebook from PyPI (Java from Debian, tools/install_java.sh)
against the local Kapsule fleet: its gpu_demand source follows the cluster, and the rulebook runs
playbooks/sharing_plan.yml from the installed collection when GPU pods wait. Nothing here calls a module or a
playbook: pods are created, and the test waits until they run, then counts the plans ansible-rulebook ran.

The fleet is three idle H100 nodes of one GPU each (pool gpu-h100), none partitioned: pods asking for MIG instances
wait until a plan partitions GPUs. The rulebook runs with its defaults but for the pool label and shorter settle and
cool-down times (moves stay off: nothing runs on the GPUs, so partitioning them moves no pod)."""

import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from integration_helpers import REPO, VENV_BIN, module_env, wait_for_objects
from kubernetes import client
from workloads import TOLERATE_GPU

pytestmark = pytest.mark.profiles("scaleway")

POOL_LABEL = "k8s.scaleway.com/pool-name"
POOL = "gpu-h100"
SETTLE_SECONDS = 8
COOL_DOWN_SECONDS = 20
# The play of playbooks/sharing_plan.yml, as ansible-rulebook prints the playbook's output.
PLAN_PLAY = "PLAY [Plan the GPU sharing layout, then apply it]"
STARTED = "gpu_demand: following unschedulable GPU pods"
NOTHING_WAITS = "gpu_demand: no event: no pod waits for planned GPU resources"
PLANS_TIMEOUT = 600


@pytest.fixture(scope="module")
def java():
    install = subprocess.run(
        ["bash", os.path.join(REPO, "tools", "install_java.sh")], capture_output=True, text=True, check=False
    )
    assert install.returncode == 0, "tools/install_java.sh: %s%s" % (install.stdout, install.stderr)


class Rulebook(object):
    """ansible-rulebook running gpushare.k8s.gpu_autoplan, its output (the source's log and the playbooks') in
    ``log``."""

    def __init__(self, cluster, folder, variables):
        self.log = str(folder / "ansible-rulebook.log")
        inventory = folder / "inventory.yml"
        inventory.write_text(
            yaml.safe_dump(
                {
                    "all": {
                        "hosts": {
                            "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
                        }
                    }
                }
            )
        )
        variables_file = folder / "vars.yml"
        variables_file.write_text(
            yaml.safe_dump(
                dict(
                    variables,
                    gpu_autoplan_pool_label=POOL_LABEL,
                    gpu_autoplan_settle_seconds=SETTLE_SECONDS,
                    gpu_autoplan_cool_down_seconds=COOL_DOWN_SECONDS,
                )
            )
        )
        env = module_env(cluster, {"PATH": VENV_BIN + os.pathsep + os.environ["PATH"]})
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [
                    os.path.join(VENV_BIN, "ansible-rulebook"),
                    "--rulebook",
                    "gpushare.k8s.gpu_autoplan",
                    "--inventory",
                    str(inventory),
                    "--vars",
                    str(variables_file),
                    "-v",
                ],
                cwd=str(folder),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self):
        with open(self.log) as log:
            return log.read()

    def wait_for(self, text, count=1, timeout=120):
        """Until ``text`` is in the output ``count`` times; the output then."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            output = self.output()
            if output.count(text) >= count:
                return output
            assert self.process.poll() is None, "ansible-rulebook exited %s:\n%s" % (self.process.returncode, output)
            time.sleep(0.5)
        raise AssertionError("no %r (x%d) after %ss in ansible-rulebook's output:\n%s" % (text, count, timeout, output))

    def plans(self):
        return self.output().count(PLAN_PLAY)

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture
def start_rulebook(java, cluster, tmp_path):
    """``start_rulebook(**variables)``: ansible-rulebook started with the rulebook's variables, once its source
    follows the cluster; stopped after the test."""
    started = []

    def start(**variables):
        rulebook = Rulebook(cluster, tmp_path, variables)
        started.append(rulebook)
        rulebook.wait_for(STARTED)
        # The first LISTs open the source's first window; on the freshly reset fleet it closes with nothing waiting.
        rulebook.wait_for(NOTHING_WAITS)
        return rulebook

    yield start
    for rulebook in started:
        rulebook.stop()


@pytest.fixture
def rulebook(start_rulebook):
    return start_rulebook()


def mig_pod(name, profile):
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {POOL_LABEL: POOL},
            "tolerations": TOLERATE_GPU,
            "containers": [
                {
                    "name": "cuda",
                    "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "resources": {"limits": {"nvidia.com/mig-" + profile: "1"}},
                }
            ],
        },
    }


def create_pods(api_client, namespace, pods):
    """All at once (eight requests in flight), as a burst."""
    core = client.CoreV1Api(api_client)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda body: core.create_namespaced_pod(namespace, body), pods))


def wait_for_pods(api_client, namespace, running, waiting, timeout=PLANS_TIMEOUT):
    """Until ``running`` pods run and ``waiting`` are unschedulable (the scheduler's verdict, after the plan)."""

    def problem(pods):
        phases = [(pod.get("status") or {}).get("phase") for pod in pods]
        unschedulable = [
            pod
            for pod in pods
            if any(
                c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
                for c in (pod.get("status") or {}).get("conditions") or []
            )
        ]
        if phases.count("Running") == running and len(unschedulable) == waiting:
            return None
        return "%d running, %d unschedulable of %d" % (phases.count("Running"), len(unschedulable), len(pods))

    wait_for_objects(
        client.CoreV1Api(api_client).list_namespaced_pod,
        problem,
        "%d pods running and %d unschedulable in %s" % (running, waiting, namespace),
        namespace,
        timeout=timeout,
    )


FIRST_WAVE = {"small-0": "1g.10gb", "small-1": "1g.10gb", "small-2": "1g.10gb", "medium-0": "3g.40gb"}


def test_pods_asking_for_mig_instances_no_node_has_run_after_exactly_one_plan_and_a_second_wave_after_one_more(
    api_client, namespace, rulebook
):
    create_pods(api_client, namespace, [mig_pod(name, profile) for name, profile in sorted(FIRST_WAVE.items())])
    wait_for_pods(api_client, namespace, running=len(FIRST_WAVE), waiting=0)
    # Once they left the unschedulable pods, the source's next window closes and says why it gives no event.
    output = rulebook.wait_for(NOTHING_WAITS, count=2, timeout=COOL_DOWN_SECONDS + 3 * SETTLE_SECONDS)
    assert rulebook.plans() == 1, output
    assert re.search(r"gpu_demand: pool gpu-h100: 3 nvidia.com/mig-1g.10gb, 1 nvidia.com/mig-3g.40gb \(", output)
    assert output.count("failed=0") == 1 and "unreachable=0" in output

    # Later, pods asking for an instance the first plan's layout does not have: one more plan, another GPU split.
    create_pods(api_client, namespace, [mig_pod("wide-%d" % n, "2g.20gb") for n in range(2)])
    wait_for_pods(api_client, namespace, running=len(FIRST_WAVE) + 2, waiting=0)
    output = rulebook.wait_for(NOTHING_WAITS, count=3, timeout=COOL_DOWN_SECONDS + 3 * SETTLE_SECONDS)
    assert rulebook.plans() == 2, output
    assert "gpu_demand: pool gpu-h100: 2 nvidia.com/mig-2g.20gb (" in output
    assert output.count("failed=0") == 2


def test_with_apply_off_the_plan_is_shown_and_nothing_is_written(api_client, namespace, start_rulebook, audit_writes):
    rulebook = start_rulebook(gpu_autoplan_apply=False)
    with audit_writes() as audit:
        create_pods(api_client, namespace, [mig_pod(name, profile) for name, profile in sorted(FIRST_WAVE.items())])
        output = rulebook.wait_for("PLAY RECAP", timeout=PLANS_TIMEOUT)
    assert audit.writes == []
    assert rulebook.plans() == 1 and "failed=0" in output, output
    wait_for_pods(api_client, namespace, running=0, waiting=len(FIRST_WAVE), timeout=30)


def test_a_burst_of_fifty_pods_gives_one_plan_and_what_no_gpu_holds_is_not_planned_again(
    api_client, namespace, rulebook
):
    # Three H100 GPUs hold 21 1g.10gb instances (7 each): 21 run, 29 stay unschedulable.
    create_pods(api_client, namespace, [mig_pod("burst-%02d" % n, "1g.10gb") for n in range(50)])
    wait_for_pods(api_client, namespace, running=21, waiting=29)
    output = rulebook.wait_for(
        "gpu_demand: no event: the demand (pool gpu-h100: 29 nvidia.com/mig-1g.10gb) holds nothing the last event "
        "did not",
        timeout=COOL_DOWN_SECONDS + 3 * SETTLE_SECONDS,
    )
    assert rulebook.plans() == 1, output
    assert "gpu_demand: pool gpu-h100: 50 nvidia.com/mig-1g.10gb (" in output
