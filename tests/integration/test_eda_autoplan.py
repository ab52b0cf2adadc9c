"""The gpu_autoplan rulebook (issue 30) run by ansible-rulebook from PyPI (Java from Debian, tools/install_java.sh)
against the local Kapsule fleet: its gpu_demand source follows the cluster, and the rulebook runs
playbooks/sharing_plan.yml from the installed collection when GPU pods wait. Nothing here calls a module or a
playbook: pods are created, and the test waits until they run, then counts the plans ansible-rulebook ran.

The fleet is three idle H100 nodes of one GPU each (pool gpu-h100), none partitioned: pods asking for MIG instances
wait until a plan partitions GPUs. The rulebook runs with its defaults but for the pool label and shorter settle and
cool-down times (moves stay off: nothing runs on the GPUs, so partitioning them moves no pod)."""

import re

import pytest
from rulebook import NOTHING_WAITS, Rulebook, install_java
from workloads import KAPSULE_POOL_LABEL, create_pods, mig_pod, wait_for_pods

pytestmark = pytest.mark.profiles("scaleway")

SETTLE_SECONDS = 8
COOL_DOWN_SECONDS = 20
PLANS_TIMEOUT = 600


@pytest.fixture(scope="module")
def java():
    install_java()


@pytest.fixture
def start_rulebook(java, cluster, tmp_path):
    """``start_rulebook(**variables)``: ansible-rulebook started with the rulebook's variables, once its source
    follows the cluster; stopped after the test."""
    started = []

    def start(**variables):
        rulebook = Rulebook(
            cluster,
            tmp_path,
            dict(
                variables,
                gpu_autoplan_pool_label=KAPSULE_POOL_LABEL,
                gpu_autoplan_settle_seconds=SETTLE_SECONDS,
                gpu_autoplan_cool_down_seconds=COOL_DOWN_SECONDS,
            ),
        )
        started.append(rulebook)
        return rulebook.started()

    yield start
    for rulebook in started:
        rulebook.stop()


@pytest.fixture
def rulebook(start_rulebook):
    return start_rulebook()


FIRST_WAVE = {"small-0": "1g.10gb", "small-1": "1g.10gb", "small-2": "1g.10gb", "medium-0": "3g.40gb"}


def test_pods_asking_for_mig_instances_no_node_has_run_after_exactly_one_plan_and_a_second_wave_after_one_more(
    api_client, namespace, rulebook
):
    create_pods(api_client, namespace, [mig_pod(name, profile) for name, profile in sorted(FIRST_WAVE.items())])
    wait_for_pods(api_client, namespace, running=len(FIRST_WAVE), waiting=0, timeout=PLANS_TIMEOUT)
    # Once they left the unschedulable pods, the source's next window closes and says why it gives no event.
    output = rulebook.wait_for(NOTHING_WAITS, count=2, timeout=COOL_DOWN_SECONDS + 3 * SETTLE_SECONDS)
    assert rulebook.plans() == 1, output
    assert re.search(r"gpu_demand: pool gpu-h100: 3 nvidia.com/mig-1g.10gb, 1 nvidia.com/mig-3g.40gb \(", output)
    assert output.count("failed=0") == 1 and "unreachable=0" in output

    # Later, pods asking for an instance the first plan's layout does not have: one more plan, another GPU split.
    create_pods(api_client, namespace, [mig_pod("wide-%d" % n, "2g.20gb") for n in range(2)])
    wait_for_pods(api_client, namespace, running=len(FIRST_WAVE) + 2, waiting=0, timeout=PLANS_TIMEOUT)
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
    wait_for_pods(api_client, namespace, running=21, waiting=29, timeout=PLANS_TIMEOUT)
    output = rulebook.wait_for(
        "gpu_demand: no event: the demand (pool gpu-h100: 29 nvidia.com/mig-1g.10gb) holds nothing the last event "
        "did not",
        timeout=COOL_DOWN_SECONDS + 3 * SETTLE_SECONDS,
    )
    assert rulebook.plans() == 1, output
    assert "gpu_demand: pool gpu-h100: 50 nvidia.com/mig-1g.10gb (" in output
