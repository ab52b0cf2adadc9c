"""Check mode refuses what the real run refuses, with the same message, and neither writes anything:
for each module, a state of the cluster the module must refuse, then the same task in check mode and for
real. (gpu_reset's own cases are in test_gpu_reset.py.)"""

import pytest
from integration_helpers import labels

pytestmark = pytest.mark.profiles("openshift")


def nothing(kube, run_module):
    """The freshly seeded fleet."""


def mig_single_on_the_a100s(kube, run_module):
    result = run_module(
        "gpu_mig_config", {"strategy": "single", "config": "all-1g.5gb", "nodes": {"names": ["gpu-a100-0"]}}
    )
    assert result["changed"], result["_stdout"]


def mig_change_stuck_pending(kube, run_module):
    kube.annotate_node("gpu-a100-0", {"sim.gpushare.k8s/mig-stuck": "true"})
    kube.label_node("gpu-a100-0", {"nvidia.com/mig.config": "all-1g.5gb"})
    kube.wait_for_node("gpu-a100-0", lambda node: labels(node).get("nvidia.com/mig.config.state") == "pending")


def time_slicing_under_key_mps(kube, run_module):
    result = run_module("gpu_timeslicing", {"replicas": 2, "config_key": "mps", "nodes": {"names": ["gpu-t4-0"]}})
    assert result["changed"], result["_stdout"]


CASES = [
    # (cluster state, module, arguments, words the message must hold)
    (nothing, "gpu_timeslicing", {"replicas": 4, "nodes": {"names": ["no-such-node"]}}, "no-such-node"),
    (nothing, "gpu_timeslicing", {"replicas": 4, "nodes": {"selector": "pool=none"}}, "matches no node"),
    (nothing, "gpu_timeslicing", {"replicas": 4, "nodes": {"names": ["worker-0"]}}, "no NVIDIA GPU"),
    (nothing, "gpu_timeslicing", {"replicas": 1, "nodes": {"names": ["gpu-t4-0"]}}, "replicas"),
    (mig_single_on_the_a100s, "gpu_timeslicing", {"replicas": 2, "nodes": {"names": ["gpu-a100-0"]}}, "MIG"),
    (mig_single_on_the_a100s, "gpu_mps", {"replicas": 2, "nodes": {"names": ["gpu-a100-0"]}}, "MIG"),
    (time_slicing_under_key_mps, "gpu_mps", {"replicas": 2, "nodes": {"names": ["gpu-t4-1"]}}, "time-slicing"),
    (nothing, "gpu_mig_config", {"config": "all-1g.5gb", "nodes": {"names": ["gpu-t4-0"]}}, "gpu-t4-0"),
    (nothing, "gpu_mig_config", {"config": "all-3g.40gb", "nodes": {"names": ["gpu-a100-0"]}}, "3g.40gb"),
    (
        mig_change_stuck_pending,
        "gpu_mig_config",
        {"config": "all-balanced", "nodes": {"names": ["gpu-a100-0"]}},
        "pending",
    ),
]


@pytest.mark.parametrize(
    "make_state, module, args, words",
    CASES,
    ids=["%s-%s-%d" % (case[1], case[0].__name__, index) for index, case in enumerate(CASES)],
)
def test_check_mode_refuses_what_the_real_run_refuses(kube, run_module, audit_writes, make_state, module, args, words):
    make_state(kube, run_module)
    with audit_writes() as audit:
        checked = run_module(module, args, check=True)
        real = run_module(module, args)
    assert checked.get("failed") and real.get("failed"), (checked.get("msg"), real.get("msg"))
    assert words in real["msg"], real["msg"]
    assert checked["msg"] == real["msg"]
    assert "Traceback" not in real["_stdout"]
    assert audit.writes == []
