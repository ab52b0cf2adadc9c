"""The gpu_autoplan rulebook (issue 30) run by ansible-rulebook from PyPI (Java from Debian, tools/install_java.sh)
against the local Kapsule fleet: its gpu_demand source follows the cluster, and the rulebook runs
playbooks/sharing_plan.yml from the installed collection when GPU pods wait. Nothing here calls a module or a
playbook: pods are created, and the test waits until they run, then counts the plans ansible-rulebook ran.

The fleet is three idle H100 nodes of one GPU each (pool gpu-h100), none partitioned: pods asking for MIG instances
wait until a plan partitions GPUs. The rulebook runs with its defaults but for the pool label and shorter settle and
cool-down times (moves stay off: nothing runs on the GPUs, so partitioning them moves no pod)."""

import os
import re

import pytest
import yaml
from integration_helpers import REPO
from rulebook import NOTHING_WAITS, STARTED, Rulebook, install_java
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


def test_pods_asking_for_mig_instances_no_node_has_run_after_exactly_one_plan_and_each_later_wave_after_one_more(
    cluster, api_client, namespace, rulebook
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

    # The kube-apiserver restarts (the source's watches end, connections are refused until it serves again); pods
    # that come then are planned as well.
    cluster.restart_apiserver()
    create_pods(api_client, namespace, [mig_pod("late-%d" % n, "1g.10gb") for n in range(3)])
    wait_for_pods(api_client, namespace, running=len(FIRST_WAVE) + 5, waiting=0, timeout=PLANS_TIMEOUT)
    output = rulebook.wait_for(NOTHING_WAITS, count=4, timeout=COOL_DOWN_SECONDS + 3 * SETTLE_SECONDS)
    assert rulebook.plans() == 3, output
    assert output.count("failed=0") == 3


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


def test_when_ansible_rulebook_stops_taking_events_the_source_ends_it_with_status_1_and_says_why(
    java, cluster, api_client, namespace, tmp_path
):
    """ansible-rulebook 1.3.2's event reader ends, without a word, on an event it cannot read (here an event filter
    gives each event an empty key, as gpu_demand's events without a pool label had one before issue 37); the process
    stays up and idle. The source sees its second event not taken and ends ansible-rulebook, so that whatever runs
    it learns it stopped (EDA controller restarts an activation that failed)."""
    rulebook_file = tmp_path / "unread.yml"
    rulebook_file.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Show the demand, with an event reader that stops",
                    "hosts": "all",
                    "sources": [
                        {
                            "gpushare.k8s.gpu_demand": {
                                "pool_label": KAPSULE_POOL_LABEL,
                                "settle_seconds": 2,
                                "cool_down_seconds": 0,
                                "handoff_timeout_seconds": 5,
                            },
                            "filters": [{"empty_key": {}}],
                        }
                    ],
                    "rules": [
                        {
                            "name": "Show the demand",
                            "condition": "event.gpu_demand is defined",
                            "action": {"debug": {"msg": "planned: {{ event.gpu_demand.reason }}"}},
                        }
                    ],
                }
            ]
        )
    )
    rulebook = Rulebook(
        cluster,
        tmp_path,
        {},
        rulebook=str(rulebook_file),
        options=["--filter-dir", os.path.join(REPO, "tests", "integration", "eda_filters")],
    )
    try:
        rulebook.wait_for(STARTED)
        rulebook.wait_for(NOTHING_WAITS)
        create_pods(api_client, namespace, [mig_pod("first", "1g.10gb")])
        rulebook.wait_for("planned: nvidia.com/mig-1g.10gb waiting for pool gpu-h100: 1, was 0")
        create_pods(api_client, namespace, [mig_pod("second", "1g.10gb")])
        assert rulebook.exited(timeout=60) == 1
    finally:
        rulebook.stop()
    output = rulebook.output()
    assert "gpu_demand: ansible-rulebook takes no more events (the event given 5 s ago is still waiting" in output
    assert "planned: nvidia.com/mig-1g.10gb waiting for pool gpu-h100: 2" not in output
