"""gpu_tolerations against the local cluster (issue 10): gpu_preflight's taint finding fixed by the module it
names, check mode and diff, idempotence, refusals before any write, and gpu_reset restore undoing it."""

import json

from integration_helpers import MERGE_PATCH

from testbed import seed
from testbed.simulator.kube import discard

MODULE = "gpu_tolerations"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
DEDICATED = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
MAINTENANCE = {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}


def ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    return result


def nfd_worker(kube, profile):
    body = seed.nfd_worker_daemonset(profile)
    namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
    worker = kube.apps.read_namespaced_daemon_set(name, namespace, _preload_content=False)
    return namespace, name, json.loads(worker.data)


def worker_tolerations(kube, profile):
    return nfd_worker(kube, profile)[2]["spec"]["template"]["spec"].get("tolerations")


def taint(kube, name, *taints):
    discard(
        kube.core.patch_node,
        name,
        {"spec": {"taints": [dict(seed.GPU_TAINT)] + list(taints)}},
        _content_type=MERGE_PATCH,
    )


def taint_problems(run_module):
    result = ok(run_module("gpu_preflight", {"checks": ["taints"]}))
    return [f for f in result["findings"] if f["severity"] == "error"]


def test_preflights_taint_finding_is_fixed_by_the_module_it_names(run_module, kube, profile):
    node = kube.gpu_nodes()[0]
    taint(
        kube,
        node,
        {"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
        {"key": "maintenance", "effect": "NoExecute"},
    )
    found = taint_problems(run_module)
    assert all("gpu_tolerations" in f["fixed_by"] or "NodeFeatureDiscovery" in f["fixed_by"] for f in found)
    result = ok(run_module(MODULE, {"tolerations": [DEDICATED, MAINTENANCE]}))
    assert result["changed"] and result["tolerations"] == [GPU_TOLERATION, DEDICATED, MAINTENANCE]
    assert kube.policy()["spec"]["daemonsets"]["tolerations"] == [GPU_TOLERATION, DEDICATED, MAINTENANCE]
    remaining = taint_problems(run_module)
    if profile.name == "openshift":
        # OpenShift's NFD operator owns its worker: the module warns and leaves it; preflight still names it.
        assert [f["object"] for f in remaining] == ["DaemonSet/openshift-nfd/nfd-worker"]
        assert any("NodeFeatureDiscovery" in w for w in result.get("warnings", []))
    else:
        assert remaining == []
        assert worker_tolerations(kube, profile)[-2:] == [DEDICATED, MAINTENANCE]
        assert any("node-feature-discovery.worker.tolerations" in w for w in result.get("warnings", []))


def test_check_mode_diff_and_idempotence(run_module, kube, audit_writes):
    before = kube.policy()["spec"]["daemonsets"]["tolerations"]
    with audit_writes() as audit:
        checked = ok(run_module(MODULE, {"tolerations": [DEDICATED]}, check=True, diff=True))
    assert audit.writes == [] and checked["changed"]
    assert checked["diff"]["before"]["cluster_policy"]["daemonsets"]["tolerations"] == before
    assert checked["diff"]["after"]["cluster_policy"]["daemonsets"]["tolerations"] == [GPU_TOLERATION, DEDICATED]
    assert kube.policy()["spec"]["daemonsets"]["tolerations"] == before
    ok(run_module(MODULE, {"tolerations": [DEDICATED]}))
    with audit_writes() as audit:
        again = ok(run_module(MODULE, {"tolerations": [DEDICATED]}))
    assert again["changed"] is False and audit.writes == []
    removed = ok(run_module(MODULE, {"tolerations": [DEDICATED], "state": "absent"}))
    assert removed["changed"] and removed["tolerations"] == [GPU_TOLERATION]


def test_bad_input_and_removing_the_gpu_toleration_are_refused_before_any_write(run_module, kube, audit_writes):
    with audit_writes() as audit:
        bad = run_module(MODULE, {"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]})
        gpu = run_module(MODULE, {"tolerations": [GPU_TOLERATION], "state": "absent"})
        unknown = run_module(MODULE, {"tolerations": [{"key": "a", "effect": "Sometimes"}]})
    assert bad["failed"] and "operator Exists takes no value" in bad["msg"]
    assert gpu["failed"] and "keep_gpu_toleration: false" in gpu["msg"]
    assert unknown["failed"] and "effect" in unknown["msg"]
    assert audit.writes == []


def test_gpu_reset_restore_undoes_it(run_module, kube, profile):
    policy_before = kube.policy()["spec"]["daemonsets"]["tolerations"]
    worker_before = worker_tolerations(kube, profile)
    ok(run_module(MODULE, {"tolerations": [DEDICATED]}))
    restored = ok(run_module("gpu_reset", {"restore": True}))
    assert restored["restored"]["cluster_policy"] is True
    assert kube.policy()["spec"]["daemonsets"]["tolerations"] == policy_before
    assert "gpushare.k8s/restore" not in (kube.policy()["metadata"].get("annotations") or {})
    assert worker_tolerations(kube, profile) == worker_before
    if profile.name != "openshift":
        namespace, name, worker = nfd_worker(kube, profile)
        assert restored["restored"]["daemon_sets"] == ["%s/%s" % (namespace, name)]
        assert "gpushare.k8s/restore" not in (worker["metadata"].get("annotations") or {})
