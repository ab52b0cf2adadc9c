"""gpu_preflight against the local cluster (issue 10): each check's problem is seeded as a user would cause
it, gpu_preflight finds it with the right fix, the fix is applied, and gpu_preflight is then clean.

The module only reads: the tests also prove it made no write.
"""

import json

import pytest
from integration_helpers import (
    CLUSTER_AUTOSCALERS,
    MACHINE_AUTOSCALERS,
    MACHINESETS,
    MERGE_PATCH,
    ONE_PROFILE,
    wait_for_object,
    wait_for_objects,
)
from kubernetes import client
from workloads import gpu_pod

from testbed import seed
from testbed.simulator.kube import discard

MODULE = "gpu_preflight"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def nfd_worker(profile):
    body = seed.nfd_worker_daemonset(profile)
    return body["metadata"]["namespace"], body["metadata"]["name"]


def wait_for_operands(api_client, profile):
    """Every operand DaemonSet (and NFD's worker) has rolled out and has a ready pod on every GPU node it selects.

    A DaemonSet's status alone can be stale: the controller writes it from its cache in the same sync that deletes
    a pod (a rollout after the reset put the seeded template back), and a node's labels can change after its last
    sync. So the rollout is judged as ``kubectl rollout status`` judges it, and the pods are then read themselves.
    """
    apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)

    def rolled_out(daemonset):
        status = daemonset.get("status") or {}
        desired = status.get("desiredNumberScheduled", -1)
        return (
            status.get("observedGeneration") == daemonset["metadata"].get("generation")
            and status.get("updatedNumberScheduled", 0) == desired
            and status.get("numberAvailable", 0) == desired
            and status.get("numberMisscheduled", 0) == 0
        )

    gpu_nodes = set(name for name, pool in seed.fleet(profile) if pool.product)
    node_labels = dict(
        (node.metadata.name, node.metadata.labels or {})
        for node in core.list_node().items
        if node.metadata.name in gpu_nodes
    )
    names = [(profile.operator_namespace, name) for name in seed.OPERAND_DAEMONSETS] + [nfd_worker(profile)]
    selecting = {}  # namespace -> {DaemonSet uid: (name, the GPU nodes its nodeSelector selects)}
    for namespace, name in names:
        daemonset = wait_for_object(
            apps.list_namespaced_daemon_set,
            rolled_out,
            "DaemonSet %s/%s rolled out" % (namespace, name),
            namespace,
            field_selector="metadata.name=" + name,
            timeout=120,
        )
        selector = daemonset["spec"]["template"]["spec"].get("nodeSelector") or {}
        selecting.setdefault(namespace, {})[daemonset["metadata"]["uid"]] = (
            name,
            set(node for node, labels in node_labels.items() if all(labels.get(k) == v for k, v in selector.items())),
        )
    for namespace, daemonsets in selecting.items():
        wait_for_objects(
            core.list_namespaced_pod,
            nodes_without_a_ready_pod(daemonsets),
            "a ready pod of each DaemonSet of %s on every GPU node it selects" % namespace,
            namespace,
            timeout=120,
        )


def nodes_without_a_ready_pod(daemonsets):
    """For wait_for_objects over a namespace's pods: {DaemonSet name: [selected nodes without a ready pod of it]},
    None when there is none; ``daemonsets``: {uid: (name, the nodes it selects)}."""

    def missing(pods):
        ready = set(
            (owner.get("uid"), pod["spec"].get("nodeName"))
            for pod in pods
            if not pod["metadata"].get("deletionTimestamp")
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (pod.get("status") or {}).get("conditions") or []
            )
            for owner in pod["metadata"].get("ownerReferences") or []
        )
        without = dict(
            (name, sorted(node for node in nodes if (uid, node) not in ready))
            for uid, (name, nodes) in daemonsets.items()
        )
        return dict((name, nodes) for name, nodes in without.items() if nodes) or None

    return missing


def preflight(run_module, audit_writes=None, **args):
    if audit_writes is None:
        result = run_module(MODULE, args)
    else:
        with audit_writes() as audit:
            result = run_module(MODULE, args)
        assert audit.writes == []
    assert result["changed"] is False
    return result


def ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    return result


def problems(result, severities=("error", "warning")):
    return [f for f in result["findings"] if f["severity"] in severities]


def about(result, obj, check=None):
    return [f for f in result["findings"] if f["object"] == obj and (check is None or f["check"] == check)]


def taint_node(kube, name, taint):
    node = kube.node(name)
    taints = (node.get("spec") or {}).get("taints") or []
    discard(kube.core.patch_node, name, {"spec": {"taints": taints + [taint]}}, _content_type=MERGE_PATCH)


def get_custom(kube, kind, name, namespace=None):
    if namespace:
        return kube.custom.get_namespaced_custom_object(kind["group"], kind["version"], namespace, kind["plural"], name)
    return kube.custom.get_cluster_custom_object(kind["group"], kind["version"], kind["plural"], name)


# --- the seeded fleet ----------------------------------------------------------------------------


def test_the_seeded_fleet_is_clean_and_nothing_is_written(run_module, audit_writes, api_client, profile):
    wait_for_operands(api_client, profile)
    result = ok(preflight(run_module, audit_writes, fail_on="warning"))
    assert problems(result) == [], json.dumps(result["findings"], indent=1)
    assert result["cluster_policy"] == profile.policy_name
    assert result["namespace"] == profile.operator_namespace
    infos = problems(result, ("info",))
    if profile.name == "vks":
        # VKS's autoscaler label is unconfirmed: information only, once per GPU node.
        assert sorted(f["object"] for f in infos) == sorted(
            "Node/" + name for name, p in seed.fleet(profile) if p.product
        )
        assert all("vks.vngcloud.vn/accelerator" in f["message"] for f in infos)
    else:
        assert infos == []
    assert result["summary"] == {"error": 0, "warning": 0, "info": len(infos)}


@ONE_PROFILE
def test_check_mode_reports_the_same(run_module, kube):
    kube.label_node(kube.gpu_nodes()[0], {"nvidia.com/device-plugin.config": "no-such-profile"})
    normal = preflight(run_module, checks=["sharing"])
    checked = run_module(MODULE, {"checks": ["sharing"]}, check=True)
    assert checked["findings"] == normal["findings"] and len(normal["findings"]) == 1


@ONE_PROFILE
def test_the_nodes_it_returns_are_gpu_infos(run_module, kube, api_client, profile, namespace):
    """The sharing role's table before and after comes from gpu_preflight's nodes: they are gpu_info's, a workload's
    pod on its node, the operator's own GPU pod (a validator, say) left out as gpu_info leaves it out."""
    t4, a100 = "gpu-t4-0", "gpu-a100-0"
    kube.label_node(t4, {"nvidia.com/device-plugin.config": "no-such-profile"})
    gpu_pod(api_client, t4, namespace)
    gpu_pod(api_client, a100, profile.operator_namespace, name="validator")
    nodes = ok(preflight(run_module, checks=["sharing"]))["nodes"]
    assert nodes == ok(run_module("gpu_info", {}))["nodes"]
    assert [pod["name"] for pod in nodes[t4]["gpu_pods"]] == ["trainer"] and nodes[a100]["gpu_pods"] == []
    assert nodes[t4]["device_plugin_config"] == "no-such-profile"


@ONE_PROFILE
def test_bad_input_is_refused(run_module):
    result = run_module(MODULE, {"fail_on": "sometimes"})
    assert result["failed"] and "fail_on" in result["msg"]
    result = run_module(MODULE, {"checks": ["taints", "gpus"]})
    assert result["failed"] and "checks" in result["msg"]


@ONE_PROFILE
def test_fail_on_fails_only_at_or_above_its_severity(run_module, kube, api_client, profile):
    wait_for_operands(api_client, profile)
    kube.label_node(kube.gpu_nodes()[0], {"nvidia.com/gpu.deploy.dcgm-exporter": "false"})  # a warning
    assert ok(preflight(run_module, checks=["operator"]))["summary"]["warning"] == 1
    assert ok(preflight(run_module, checks=["operator"], fail_on="error"))["summary"]["warning"] == 1
    failed = run_module(MODULE, {"checks": ["operator"], "fail_on": "warning"})
    assert failed["failed"] and "dcgm-exporter" in failed["msg"]
    assert failed["findings"][0]["object"] == "Node/" + kube.gpu_nodes()[0]


# --- taints ---------------------------------------------------------------------------------------


def test_a_taint_the_operator_does_not_tolerate_is_found_with_the_toleration_that_fixes_it(run_module, kube, profile):
    node = kube.gpu_nodes()[-1]
    taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    taint_node(kube, node, taint)
    result = preflight(run_module, checks=["taints"])
    policy_object = "ClusterPolicy/" + profile.policy_name
    [found] = about(result, policy_object)
    assert found["severity"] == "error" and "dedicated=ml:NoSchedule" in found["message"] and node in found["message"]
    wanted = [GPU_TOLERATION, {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    assert json.dumps(wanted, sort_keys=True) in found["fix"]
    assert "gpu_tolerations" in found["fixed_by"]
    namespace, name = nfd_worker(profile)
    nfd = about(result, "DaemonSet/%s/%s" % (namespace, name))
    if profile.name == "openshift":
        assert nfd == []  # OpenShift's NFD operator tolerates every NoSchedule taint
    else:
        assert len(nfd) == 1 and "Node Feature Discovery" in nfd[0]["message"]
        assert "node-feature-discovery.worker.tolerations" in nfd[0]["fixed_by"]

    # The fix as given: the policy's list with the built-in toleration kept, and NFD's worker.
    kube.patch_policy({"daemonsets": {"tolerations": wanted}})
    kube.apps.patch_namespaced_daemon_set(
        name,
        namespace,
        {
            "spec": {
                "template": {
                    "spec": {
                        "tolerations": seed.nfd_worker_daemonset(profile)["spec"]["template"]["spec"]["tolerations"]
                        + [wanted[1]]
                    }
                }
            }
        },
        _content_type=MERGE_PATCH,
    )
    assert problems(preflight(run_module, checks=["taints"])) == []


@ONE_PROFILE
def test_replace_semantics_a_list_without_the_gpu_toleration_leaves_gpu_tainted_nodes(run_module, kube, profile):
    kube.patch_policy({"daemonsets": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}})
    result = preflight(run_module, checks=["taints"])
    [found] = about(result, "ClusterPolicy/" + profile.policy_name)
    assert "nvidia.com/gpu:NoSchedule" in found["message"]
    assert all(name in found["message"] for name in kube.gpu_nodes())
    assert json.dumps(GPU_TOLERATION, sort_keys=True)[1:-1] in found["fix"]


def test_a_no_execute_taint_is_not_tolerated_by_openshifts_nfd_worker(run_module, kube, profile):
    node = kube.gpu_nodes()[0]
    taint_node(kube, node, {"key": "maintenance", "effect": "NoExecute"})
    result = preflight(run_module, checks=["taints"])
    namespace, name = nfd_worker(profile)
    [nfd] = about(result, "DaemonSet/%s/%s" % (namespace, name))
    assert "maintenance:NoExecute" in nfd["message"] and node in nfd["message"]
    assert '"operator": "Exists"' in nfd["fix"] and '"effect": "NoExecute"' in nfd["fix"]
    if profile.name == "openshift":
        assert "NodeFeatureDiscovery" in nfd["fixed_by"]


# --- operator components -------------------------------------------------------------------------


def test_missing_switched_off_and_absent_operands_are_named(run_module, kube, api_client, profile):
    wait_for_operands(api_client, profile)
    first, second = kube.gpu_nodes()[:2]
    kube.label_node(first, {"nvidia.com/gpu.deploy.dcgm-exporter": "false"})
    kube.label_node(second, {"nvidia.com/gpu.deploy.gpu-feature-discovery": None})
    kube.apps.delete_namespaced_daemon_set("nvidia-operator-validator", kube.namespace)
    wait_for_object(
        kube.apps.list_namespaced_daemon_set,
        lambda ds: (ds.get("status") or {}).get("desiredNumberScheduled") == len(kube.gpu_nodes()) - 1
        and ds["status"].get("numberMisscheduled", 0) == 0
        and ds["status"].get("currentNumberScheduled") == len(kube.gpu_nodes()) - 1,
        "gpu-feature-discovery gone from " + second,
        kube.namespace,
        field_selector="metadata.name=gpu-feature-discovery",
    )
    result = preflight(run_module, checks=["operator"])
    [off] = about(result, "Node/" + first)
    assert off["severity"] == "warning" and "DCGM exporter" in off["message"]
    assert "nvidia.com/gpu.deploy.dcgm-exporter=true" in off["fix"]
    [validator] = about(result, "DaemonSet/%s/nvidia-operator-validator" % kube.namespace)
    assert validator["severity"] == "error" and "does not exist" in validator["message"]
    gfd = about(result, "DaemonSet/%s/gpu-feature-discovery" % kube.namespace)
    assert len(gfd) == 1 and "no pod on GPU node(s) %s" % second in gfd[0]["message"]

    # Fixed: the labels back, the validator back (as the operator recreates it).
    kube.label_node(first, {"nvidia.com/gpu.deploy.dcgm-exporter": "true"})
    kube.label_node(second, {"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"})
    seed.reset(api_client, profile.name)
    wait_for_operands(api_client, profile)
    assert problems(preflight(run_module, checks=["operator"])) == []


# --- sharing consistency -------------------------------------------------------------------------


@ONE_PROFILE
def test_sharing_findings_come_with_their_fix_and_the_fixing_module_clears_them(run_module, kube, profile):
    node = kube.gpu_nodes()[0]
    kube.label_node(node, {"nvidia.com/device-plugin.config": "no-such-profile"})
    kube.patch_policy({"devicePlugin": {"config": {"name": "missing-config", "default": "any"}}})
    result = preflight(run_module, checks=["sharing"])
    [policy_finding] = about(result, "ClusterPolicy/" + profile.policy_name)
    assert "missing-config" in policy_finding["message"] and policy_finding["severity"] == "error"
    [node_finding] = about(result, "Node/" + node)
    assert "no-such-profile" in node_finding["message"] and "nvidia.com/device-plugin.config" in node_finding["fix"]
    assert "gpu_reset" in node_finding["fixed_by"]

    kube.patch_policy({"devicePlugin": {"config": None}})
    fixed = run_module("gpu_reset", {"nodes": {"names": [node]}})
    assert not fixed.get("failed"), fixed.get("msg")
    assert problems(preflight(run_module, checks=["sharing"])) == []


@ONE_PROFILE
def test_paused_operands_left_behind_are_named_once(run_module, kube):
    node = kube.gpu_nodes()[0]
    kube.label_node(node, {"nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change"})
    result = preflight(run_module, checks=["operator", "sharing"])
    [left] = [f for f in about(result, "Node/" + node) if "paused-for-mig-change" in f["message"]]
    assert left["check"] == "sharing"
    assert left["fix"] == "kubectl label node %s nvidia.com/gpu.deploy.device-plugin=true --overwrite" % node
    kube.label_node(node, {"nvidia.com/gpu.deploy.device-plugin": "true"})
    assert [f for f in preflight(run_module, checks=["sharing"])["findings"] if "paused" in f["message"]] == []


# --- autoscaling ---------------------------------------------------------------------------------


@pytest.mark.profiles("openshift")
def test_openshift_machineset_and_autoscaler_problems(run_module, kube):
    name, namespace = seed.OPENSHIFT_T4_MACHINESET, seed.MACHINE_API_NAMESPACE
    kube.patch_custom(
        MACHINESETS,
        name,
        {
            "metadata": {"annotations": {"machine.openshift.io/GPU": None}},
            "spec": {"template": {"spec": {"metadata": {"labels": {"cluster-api/accelerator": None}}}}},
        },
        namespace,
    )
    kube.patch_custom(MACHINE_AUTOSCALERS, name, {"spec": {"minReplicas": 0}}, namespace)
    kube.patch_custom(CLUSTER_AUTOSCALERS, "default", {"spec": {"scaleDown": {"delayAfterAdd": "5m"}}})
    result = preflight(run_module, checks=["autoscaling"])
    machineset = about(result, "MachineSet/%s/%s" % (namespace, name))
    messages = " | ".join(f["message"] for f in machineset)
    assert "no cluster-api/accelerator node label" in messages
    assert "no machine.openshift.io/GPU annotation" in messages
    assert "topology.kubernetes.io/zone" in messages
    label_fix = next(f for f in machineset if "accelerator" in f["message"])
    assert label_fix["fix"] == "set spec.template.spec.metadata.labels.cluster-api/accelerator: tesla-t4"
    [entry, delay] = about(result, "ClusterAutoscaler/default")  # errors first
    assert delay["severity"] == "warning" and "5m" in delay["message"] and delay["fix"].endswith("15m")
    # The seeded tesla-t4 limit matches no MachineSet until the label is back.
    assert entry["fix"].startswith("label MachineSet %s with cluster-api/accelerator=tesla-t4" % name)

    # An invalid type, and a ClusterAutoscaler without it, then no MachineAutoscaler at all.
    kube.patch_custom(
        MACHINESETS,
        name,
        {"spec": {"template": {"spec": {"metadata": {"labels": {"cluster-api/accelerator": "nvidia.com/gpu"}}}}}},
        namespace,
    )
    result = preflight(run_module, checks=["autoscaling"])
    assert any("not a valid GPU type" in f["message"] for f in about(result, "MachineSet/%s/%s" % (namespace, name)))
    kube.patch_custom(
        MACHINESETS,
        name,
        {"spec": {"template": {"spec": {"metadata": {"labels": {"cluster-api/accelerator": "nvidia-t4"}}}}}},
        namespace,
    )
    result = preflight(run_module, checks=["autoscaling"])
    assert any(
        "no entry of type nvidia-t4" in f["message"] for f in about(result, "ClusterAutoscaler/default")
    ), result["findings"]
    kube.custom.delete_namespaced_custom_object(
        MACHINE_AUTOSCALERS["group"], MACHINE_AUTOSCALERS["version"], namespace, MACHINE_AUTOSCALERS["plural"], name
    )
    result = preflight(run_module, checks=["autoscaling"])
    assert [f["message"] for f in about(result, "MachineSet/%s/%s" % (namespace, name))] == [
        "no MachineAutoscaler targets this GPU MachineSet: it never scales"
    ]


@pytest.mark.profiles("openshift")
def test_the_fixes_for_openshift_autoscaling_leave_it_clean(run_module, kube):
    name, namespace = seed.OPENSHIFT_T4_MACHINESET, seed.MACHINE_API_NAMESPACE
    kube.patch_custom(MACHINE_AUTOSCALERS, name, {"spec": {"minReplicas": 0}}, namespace)
    kube.patch_custom(MACHINESETS, name, {"metadata": {"annotations": {"machine.openshift.io/GPU": None}}}, namespace)
    result = preflight(run_module, checks=["autoscaling"])
    assert len(problems(result)) == 2
    kube.patch_custom(
        MACHINESETS,
        name,
        {
            "metadata": {"annotations": {"machine.openshift.io/GPU": "1"}},
            "spec": {"template": {"spec": {"metadata": {"labels": {"topology.kubernetes.io/zone": "us-east-1a"}}}}},
        },
        namespace,
    )
    assert problems(preflight(run_module, checks=["autoscaling"])) == []


@pytest.mark.profiles("openshift")
def test_gpu_limits_that_limit_nothing_are_each_found_with_their_fix(run_module, kube):
    name, namespace = seed.OPENSHIFT_T4_MACHINESET, seed.MACHINE_API_NAMESPACE
    machineset_ref = "MachineSet/%s/%s" % (namespace, name)

    def set_limits(*entries):
        gpus = [{"type": gpu_type, "min": low, "max": high} for gpu_type, low, high in entries]
        kube.patch_custom(CLUSTER_AUTOSCALERS, "default", {"spec": {"resourceLimits": {"gpus": gpus}}})

    def set_accelerator(value):
        labels = {"cluster-api/accelerator": value}
        kube.patch_custom(
            MACHINESETS, name, {"spec": {"template": {"spec": {"metadata": {"labels": labels}}}}}, namespace
        )

    # The resource name where the GPU type belongs, on a MachineSet that lost its accelerator label too.
    set_limits(("nvidia.com/gpu", 0, 4))
    set_accelerator(None)
    result = preflight(run_module, checks=["autoscaling"])
    [entry] = about(result, "ClusterAutoscaler/default")
    assert entry["severity"] == "error" and "nvidia.com/gpu is not a label value" in entry["message"]
    assert entry["fix"] == (
        "set spec.resourceLimits.gpus[0].type: tesla-t4, the cluster-api/accelerator value to give MachineSet %s" % name
    )
    [label] = about(result, machineset_ref)
    assert label["fix"] == "set spec.template.spec.metadata.labels.cluster-api/accelerator: tesla-t4"

    # A valid type on the same unlabelled MachineSet: the label is what to fix, with the entry's type.
    set_limits(("nvidia-t4", 0, 4))
    result = preflight(run_module, checks=["autoscaling"])
    [entry] = about(result, "ClusterAutoscaler/default")
    assert entry["fix"] == (
        "label MachineSet %s with cluster-api/accelerator=nvidia-t4 (spec.template.spec.metadata.labels), keeping "
        "this entry" % name
    )
    [label] = about(result, machineset_ref)
    assert label["fix"] == "set spec.template.spec.metadata.labels.cluster-api/accelerator: nvidia-t4"

    # The MachineSet labelled again: the resource name entry is the one problem, its fix the type to set.
    set_accelerator("tesla-t4")
    set_limits(("nvidia.com/gpu", 0, 4))
    result = preflight(run_module, checks=["autoscaling"])
    assert [(f["object"], f["fix"]) for f in problems(result)] == [
        (
            "ClusterAutoscaler/default",
            "set spec.resourceLimits.gpus[0].type: tesla-t4 (the cluster-api/accelerator value of MachineSet %s)"
            % name,
        )
    ]

    # A duplicate, another vendor's type its MachineSet carries, and a type no MachineSet carries yet.
    kube.add_gpu_machineset("gpushare-ocp-gpu-mi300x-us-east-1a", "amd-mi300x", 8)
    set_limits(("tesla-t4", 0, 2), ("amd-mi300x", 0, 16), ("tesla-t4", 0, 4), ("nvidia-a100", 0, 8))
    result = preflight(run_module, checks=["autoscaling"])
    assert [(f["severity"], f["fix"]) for f in problems(result)] == [
        (
            "warning",
            "remove spec.resourceLimits.gpus[0], keeping gpus[2] {type: tesla-t4, min: 0, max: 4} (the limit in force)",
        ),
        (
            "warning",
            "remove spec.resourceLimits.gpus[3], unless a MachineSet labelled cluster-api/accelerator=nvidia-a100 "
            "is to be created",
        ),
    ]


@pytest.mark.profiles("openshift")
def test_time_slicing_an_autoscaled_pool_warns_that_the_autoscaler_counts_the_replicas(run_module, kube):
    shared = run_module("gpu_timeslicing", {"replicas": 4, "nodes": {"selector": "cluster-api/accelerator=tesla-t4"}})
    assert not shared.get("failed"), shared.get("msg")
    result = preflight(run_module, checks=["autoscaling"])
    t4 = [name for name in kube.gpu_nodes() if name.startswith("gpu-t4")]
    warned = sorted(f["object"] for f in problems(result) if "#3427" in f["message"])
    assert warned == sorted("Node/" + name for name in t4)
    # What the simulated device plugin advertises (one T4 x 4 replicas) is what the autoscaler counts.
    assert "counts its 4 allocatable nvidia.com/gpu" in problems(result)[0]["message"]
    fixed = run_module("gpu_reset", {"nodes": {"selector": "cluster-api/accelerator=tesla-t4"}})
    assert not fixed.get("failed"), fixed.get("msg")
    assert problems(preflight(run_module, checks=["autoscaling"])) == []


@pytest.mark.profiles("openshift")
def test_an_autoscaled_node_advertising_only_shared_gpus_warns_of_autoscaler_8095(run_module, kube):
    shared = run_module(
        "gpu_timeslicing",
        {"replicas": 2, "rename_by_default": True, "nodes": {"selector": "cluster-api/accelerator=tesla-t4"}},
    )
    assert not shared.get("failed"), shared.get("msg")
    result = preflight(run_module, checks=["autoscaling"])
    only_shared = [f for f in problems(result) if "#8095" in f["message"]]
    assert len(only_shared) == 2 and "nvidia.com/gpu.shared" in only_shared[0]["message"]
    assert "rename_by_default: false" in only_shared[0]["fixed_by"]


@pytest.mark.profiles("scaleway")
def test_scaleway_gpu_nodes_need_the_autoscaler_gpu_label(run_module, kube):
    node = kube.gpu_nodes()[0]
    kube.label_node(node, {"k8s.scw.cloud/gpu": None, "k8s.scaleway.com/gpu": "true"})
    result = preflight(run_module, checks=["autoscaling"])
    [found] = about(result, "Node/" + node)
    assert found["severity"] == "warning" and "k8s.scw.cloud/gpu" in found["message"]
    assert "before September 2025" in found["message"]
    kube.label_node(node, {"k8s.scw.cloud/gpu": "true", "k8s.scaleway.com/gpu": None})
    assert problems(preflight(run_module, checks=["autoscaling"])) == []


# --- quotas --------------------------------------------------------------------------------------


@ONE_PROFILE
def test_a_namespace_running_gpu_pods_without_a_quota_is_found_and_a_quota_clears_it(
    run_module, kube, api_client, namespace
):
    gpu_pod(api_client, kube.gpu_nodes()[0], namespace)
    result = preflight(run_module, checks=["quota"])
    [found] = about(result, "Namespace/" + namespace)
    assert found["severity"] == "warning" and "nvidia.com/gpu" in found["message"]
    assert '"requests.nvidia.com/gpu": <n>' in found["fix"]
    client.CoreV1Api(api_client).create_namespaced_resource_quota(
        namespace,
        {"metadata": {"name": "gpus"}, "spec": {"hard": {"requests.nvidia.com/gpu": "2"}}},
    )
    assert problems(preflight(run_module, checks=["quota"])) == []
