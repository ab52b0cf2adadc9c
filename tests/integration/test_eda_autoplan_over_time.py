"""The autopilot as users run it, over time (issue 37): ansible-rulebook from PyPI runs gpushare.k8s.gpu_autoplan with
every variable at its default (no pool label, a 10 s settle time, a 60 s cool-down, apply on, no moves) against the
local OpenShift cluster (two H100 nodes of eight GPUs, two A100-40GB nodes of two, none partitioned), while waves of
pods asking for MIG instances no GPU has come one after the other, and pods end: each wave for a node no pod runs on at
the time (with moves off, a plan changes no node where GPU pods run). Each wave must lead to its plan and run where the
hardware allows; plans are counted from the playbooks that ran (their play in ansible-rulebook's output), not from the
source's log.

Without a pool label every event names the pool ``*``: before issue 37 it was the empty string, and ansible-rulebook
1.3.2 read the first event, then never another one. test_eda_autoplan.py runs the rulebook with Kapsule's pool label.
"""

import pytest
from kubernetes import client
from rulebook import Rulebook, install_java
from workloads import create_pods, mig_pod, wait_for_pods

pytestmark = pytest.mark.profiles("openshift")

COOL_DOWN_SECONDS = 60  # the rulebook's default, which every wave waits for
WAVE_TIMEOUT = COOL_DOWN_SECONDS + 300  # the cool-down, then a plan that changes a few GPUs


def wave(api_client, namespace, name, profile, count):
    create_pods(api_client, namespace, [mig_pod("%s-%d" % (name, n), profile, pool=None) for n in range(count)])


def test_every_wave_of_demand_leads_to_its_plan_with_the_rulebooks_defaults(cluster, api_client, namespace, tmp_path):
    install_java()
    rulebook = Rulebook(cluster, tmp_path, {}).started()
    try:
        # 1. Eight pods of 1g.10gb: one plan partitions GPUs; all eight run.
        wave(api_client, namespace, "first", "1g.10gb", 8)
        wait_for_pods(api_client, namespace, running=8, waiting=0, timeout=WAVE_TIMEOUT)
        assert rulebook.plans() == 1
        assert "gpu_demand: any pool: 8 nvidia.com/mig-1g.10gb (" in rulebook.output()

        # 2. A second wave, of another profile, once the first runs: planned at the cool-down's end at the earliest.
        wave(api_client, namespace, "second", "3g.40gb", 2)
        wait_for_pods(api_client, namespace, running=10, waiting=0, timeout=WAVE_TIMEOUT)
        assert rulebook.plans() == 2

        # 3. Demand no GPU here can hold (1g.18gb is an H200 profile): planned once, said unserved, and not again.
        wave(api_client, namespace, "unservable", "1g.18gb", 3)
        rulebook.wait_for("PLAY RECAP", count=3, timeout=WAVE_TIMEOUT)
        wait_for_pods(api_client, namespace, running=10, waiting=3, timeout=WAVE_TIMEOUT)
        assert rulebook.plans() == 3

        # 4. The kube-apiserver restarts; then four pods of 3g.20gb, an A100-40GB profile: planned, they run. (Moves
        # are off by default: a MIG change stops the GPU pods of its node, so a plan now changes no H100 node.)
        cluster.restart_apiserver()
        wave(api_client, namespace, "after-restart", "3g.20gb", 4)
        wait_for_pods(api_client, namespace, running=14, waiting=3, timeout=WAVE_TIMEOUT)
        assert rulebook.plans() == 4

        # 5. The first wave's pods end, and later four pods of 2g.20gb come, an H100 profile no GPU has yet: one more
        # plan, which may now change the H100 node they left.
        core = client.CoreV1Api(api_client)
        for n in range(8):
            core.delete_namespaced_pod("first-%d" % n, namespace, grace_period_seconds=0)
        wait_for_pods(api_client, namespace, running=6, waiting=3, timeout=WAVE_TIMEOUT)
        wave(api_client, namespace, "later", "2g.20gb", 4)
        wait_for_pods(api_client, namespace, running=10, waiting=3, timeout=WAVE_TIMEOUT)
        assert rulebook.plans() == 5
    finally:
        rulebook.stop()
    # The unservable pods waited through waves 4 and 5 and gave no event of their own again: one event per wave.
    output = rulebook.output()
    assert output.count("gpu_demand: any pool: ") == 5, output
    assert output.count("failed=0") == 5 and "unreachable=0" in output
