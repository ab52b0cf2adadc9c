"""The autopilot as users run it, over time (issue 37): ansible-rulebook from PyPI runs gpushare.k8s.gpu_autoplan
with every variable at its default (no pool label, a 10 s settle time, a 60 s cool-down, apply on, no moves) against
the local OpenShift cluster (two H100 nodes of eight GPUs, two A100-40GB nodes of two), while waves of pods asking for
MIG instances no GPU has come one after the other. Each wave must lead to its plan and run where the hardware allows;
plans are counted from the playbooks that ran (their play in ansible-rulebook's output), not from the source's log.

Without a pool label every event names the pool ``*``: before issue 37 it was the empty string, and ansible-rulebook
1.3.2 read the first event, then never another one. test_eda_autoplan.py runs the rulebook with Kapsule's pool label.
"""

import pytest
from rulebook import Rulebook, install_java
from test_eda_autoplan import restart_apiserver
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

        # 4. The kube-apiserver restarts; five pods of 3g.40gb that free GPUs can hold come then: planned, they run.
        restart_apiserver(cluster)
        wave(api_client, namespace, "after-restart", "3g.40gb", 5)
        wait_for_pods(api_client, namespace, running=15, waiting=3, timeout=WAVE_TIMEOUT)
        assert rulebook.plans() == 4

        # 5. Later, more of the first wave's profile than the GPUs partitioned so far have room for (a GPU holds
        # seven): those that fit run at once, the others wait for one more plan, then run.
        wave(api_client, namespace, "later", "1g.10gb", 20)
        wait_for_pods(api_client, namespace, running=35, waiting=3, timeout=WAVE_TIMEOUT)
        assert rulebook.plans() == 5
    finally:
        rulebook.stop()
    # The unservable pods waited through waves 4 and 5 and gave no event of their own again: one event per wave.
    output = rulebook.output()
    assert output.count("gpu_demand: any pool: ") == 5, output
    assert output.count("failed=0") == 5 and "unreachable=0" in output
