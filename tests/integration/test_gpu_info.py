"""gpu_info against the local cluster, on every platform profile (issue 3, "Done when").

The module only reads: every test also proves it made no write and, for the inventory itself,
exactly one LIST of nodes and one of pods (counted in the API server's audit log).
"""

import json
import os
import subprocess
import uuid

import pytest
import yaml
from integration_helpers import ONE_PROFILE, REPO, allocatable, labels, wait_for_object
from kubernetes import client

from testbed.simulator.kube import discard
from testbed.simulator.names import MIG_FAIL_ANNOTATION, MIG_STUCK_ANNOTATION

pytestmark = pytest.mark.profiles("openshift", "scaleway", "vks")

MODULE = "gpu_info"
CONFIG_MAP = "time-slicing-config"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def assert_ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    assert result["changed"] is False


def messages(result, obj):
    """The findings' messages about ``obj`` (``Node/<name>`` or ``ClusterPolicy/<name>``)."""
    return [finding["message"] for finding in result["findings"] if finding["object"] == obj]


def time_slicing_text(replicas):
    return yaml.safe_dump(
        {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}}
    )


def mig_capable_node_or_skip(kube, index=0):
    nodes = kube.mig_capable_nodes()
    if len(nodes) <= index:
        pytest.skip(
            "the %s fleet has no MIG-capable GPU (%s)"
            % (kube.profile.name, ", ".join(sorted({p.product for p in kube.profile.gpu_pools})))
        )
    return nodes[index]


def a_mig_config_for(kube, node):
    from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import find_gpu_model

    node_labels = labels(kube.node(node))
    model = find_gpu_model(node_labels["nvidia.com/gpu.product"], int(node_labels["nvidia.com/gpu.memory"]))
    return "all-" + next(name for name in sorted(model.profiles) if name.startswith("1g.") and "+" not in name)


def pod(name, node, limits):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [GPU_TOLERATION],
            "automountServiceAccountToken": False,
            "containers": [
                {"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubi9", "resources": {"limits": limits}}
            ],
        },
    }


# --- the inventory ---------------------------------------------------------------------------


def test_a_fresh_fleet_with_one_list_of_nodes_and_one_of_pods(kube, run_module, audit_writes):
    with audit_writes() as audit:
        result = run_module(MODULE, {})

    assert_ok(result)
    assert audit.count(verb="list", resource="nodes") == 1
    assert audit.count(verb="list", resource="pods") == 1
    assert audit.count(resource="nodes") == 1 and audit.count(resource="pods") == 1, audit.summary()
    assert audit.writes == []
    assert result["namespace"] == kube.namespace
    assert result["cluster_policy"]["name"] == kube.profile.policy_name
    assert result["cluster_policy"]["device_plugin_config"] == {"name": None, "default": None}
    assert result["profiles"] == {} and result["findings"] == []
    assert sorted(result["nodes"]) == sorted(kube.gpu_nodes()), "GPU nodes only, every one of them"
    for name, entry in result["nodes"].items():
        node_labels = labels(kube.node(name))
        count = int(node_labels["nvidia.com/gpu.count"])
        assert entry["product"] == entry["base_product"] == node_labels["nvidia.com/gpu.product"]
        assert (entry["count"], entry["memory_mib"]) == (count, int(node_labels["nvidia.com/gpu.memory"]))
        assert (entry["replicas"], entry["sharing_strategy"], entry["device_plugin_config"]) == (1, "none", None)
        assert entry["mig_capable"] == (node_labels["nvidia.com/mig.capable"] == "true")
        assert entry["mig_enabled"] is False and entry["mps_capable"] is False
        assert entry["capacity"] == entry["allocatable"] == {"nvidia.com/gpu": count}
        assert {"key": "nvidia.com/gpu", "effect": "NoSchedule"} in entry["taints"]
        assert entry["gpu_pods"] == [] and entry["findings"] == []


def test_sharing_profiles_and_the_gpu_pods_of_each_node(kube, api_client, run_module):
    target = kube.gpu_nodes()[0]
    shared = run_module("gpu_timeslicing", dict(replicas=4, nodes=dict(names=[target])))
    assert not shared.get("failed"), shared.get("msg")
    core = client.CoreV1Api(api_client)
    discard(core.create_namespaced_pod, "default", pod("trainer", target, {"nvidia.com/gpu": "2"}))
    discard(core.create_namespaced_pod, "default", pod("sidecar", target, {"cpu": "100m"}))
    # The operator's own GPU pods (its validators) are not workloads.
    validator = pod("nvidia-cuda-validator", target, {"nvidia.com/gpu": "1"})
    discard(core.create_namespaced_pod, kube.namespace, validator)
    for namespace, name in (("default", "trainer"), ("default", "sidecar"), (kube.namespace, "nvidia-cuda-validator")):
        wait_for_object(
            core.list_namespaced_pod,
            lambda p: (p.get("status") or {}).get("phase") == "Running",
            "pod " + name,
            namespace,
            field_selector="metadata.name=" + name,
        )

    result = run_module(MODULE, {})

    assert_ok(result)
    entry = result["nodes"][target]
    count = entry["count"]
    assert entry["product"] == entry["base_product"] + "-SHARED"
    assert (entry["replicas"], entry["sharing_strategy"], entry["device_plugin_config"]) == (
        4,
        "time-slicing",
        "time-slicing",
    )
    assert entry["capacity"] == entry["allocatable"] == {"nvidia.com/gpu": count * 4}
    assert entry["gpu_pods"] == [
        {"namespace": "default", "name": "trainer", "phase": "Running", "requests": {"nvidia.com/gpu": 2}}
    ]
    assert result["profiles"] == {
        "time-slicing": {"method": "time-slicing", "rename_by_default": False, "resources": {"nvidia.com/gpu": 4}}
    }
    assert result["cluster_policy"]["device_plugin_config"] == {"name": CONFIG_MAP, "default": None}
    assert result["findings"] == []
    for name in kube.gpu_nodes()[1:]:
        assert result["nodes"][name]["sharing_strategy"] == "none"


@ONE_PROFILE
def test_node_selector_limits_the_report(kube, run_module):
    product = labels(kube.node(kube.gpu_nodes()[0]))["nvidia.com/gpu.product"]
    wanted = [name for name in kube.gpu_nodes() if labels(kube.node(name))["nvidia.com/gpu.product"] == product]

    result = run_module(MODULE, dict(node_selector="nvidia.com/gpu.product=" + product))

    assert_ok(result)
    assert sorted(result["nodes"]) == sorted(wanted)


# --- findings --------------------------------------------------------------------------------


@ONE_PROFILE
def test_capacity_that_is_not_count_times_replicas(kube, api_client, run_module):
    """A node whose GPU Feature Discovery labels say 4 replicas while the kubelet still advertises
    its 2 GPUs once each: its device plugin never re-registered. Such a node is registered here
    directly (the simulator manages only the nodes it seeded, so nothing repairs it)."""
    name = "gpu-stale-0"
    node_labels = {
        "kubernetes.io/hostname": name,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        "nvidia.com/gpu.count": "2",
        "nvidia.com/gpu.memory": "15360",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/mig.capable": "false",
    }
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2"}
    discard(
        client.CoreV1Api(api_client).create_node,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": node_labels},
            "status": {"capacity": resources, "allocatable": resources},
        },
    )
    assert allocatable(kube.node(name)) == 2

    result = run_module(MODULE, {})

    assert_ok(result)
    capacity = (
        "capacity nvidia.com/gpu is 2, expected nvidia.com/gpu.count 2 x nvidia.com/gpu.replicas 4 = 8; the device "
        "plugin has not applied the current config (restart its DaemonSet)"
    )
    found = messages(result, "Node/" + name)
    # A node no kubelet runs gets the control plane's not-ready taint, sooner or later (before or after the module's
    # read, under load): its finding may be there too, nothing else.
    assert capacity in found and all(
        message == capacity or "node.kubernetes.io/not-ready" in message for message in found
    )
    assert result["nodes"][name]["findings"] == found
    assert [finding["object"] for finding in result["findings"]] == ["Node/" + name]


@ONE_PROFILE
def test_a_label_naming_a_missing_key(kube, run_module):
    kube.put_config_map(CONFIG_MAP, {"shared-by-2": time_slicing_text(2)})
    kube.patch_policy({"devicePlugin": {"config": {"name": CONFIG_MAP, "default": "shared-by-3"}}})
    node = kube.gpu_nodes()[0]
    kube.label_node(node, {"nvidia.com/device-plugin.config": "shared-by-4"})

    result = run_module(MODULE, {})

    assert_ok(result)
    assert result["profiles"]["shared-by-2"]["resources"] == {"nvidia.com/gpu": 2}
    assert messages(result, "Node/" + node) == [
        "label nvidia.com/device-plugin.config=shared-by-4 names no key of the device plugin ConfigMap (keys: "
        "shared-by-2); the plugin ignores it"
    ]
    assert messages(result, "ClusterPolicy/" + kube.profile.policy_name) == [
        "spec.devicePlugin.config.default names key shared-by-3, which the ConfigMap lacks"
    ]


@ONE_PROFILE
def test_a_policy_naming_a_missing_configmap(kube, run_module):
    kube.patch_policy({"devicePlugin": {"config": {"name": "no-such-config"}}})

    result = run_module(MODULE, {})

    assert_ok(result)
    assert messages(result, "ClusterPolicy/" + kube.profile.policy_name) == [
        "spec.devicePlugin.config.name names ConfigMap no-such-config, which does not exist: the device plugin hangs "
        "until it does"
    ]
    assert result["profiles"] == {}


def test_paused_for_mig_change_labels_left_behind(kube, run_module):
    """mig-manager pauses the operands with these labels and puts them back when it finishes; one
    killed mid-change leaves them, and the device plugin stays stopped (gpu-operator #2833)."""
    node = (kube.mig_capable_nodes() or kube.gpu_nodes())[0]
    kube.label_node(
        node,
        {
            "nvidia.com/gpu.deploy.device-plugin": "paused-for-mig-change",
            "nvidia.com/gpu.deploy.gpu-feature-discovery": "paused-for-mig-change",
        },
    )

    result = run_module(MODULE, {})

    assert_ok(result)
    assert result["nodes"][node]["paused_components"] == ["device-plugin", "gpu-feature-discovery"]
    assert messages(result, "Node/" + node) == [
        "labels nvidia.com/gpu.deploy.device-plugin, "
        "nvidia.com/gpu.deploy.gpu-feature-discovery=paused-for-mig-change are left behind "
        "while no MIG change is pending; the operands stay stopped until they are removed"
    ]


def test_mig_changes_pending_and_failed(kube, run_module):
    pending, failed = mig_capable_node_or_skip(kube, 0), mig_capable_node_or_skip(kube, 1)
    kube.annotate_node(pending, {MIG_STUCK_ANNOTATION: "true"})
    kube.annotate_node(failed, {MIG_FAIL_ANNOTATION: "In use by another client"})
    pending_config, failed_config = a_mig_config_for(kube, pending), a_mig_config_for(kube, failed)
    kube.label_node(pending, {"nvidia.com/mig.config": pending_config})
    kube.label_node(failed, {"nvidia.com/mig.config": failed_config})
    kube.wait_for_node(pending, lambda n: labels(n).get("nvidia.com/mig.config.state") == "pending")
    kube.wait_for_node(failed, lambda n: labels(n).get("nvidia.com/mig.config.state") == "failed")

    result = run_module(MODULE, {})

    assert_ok(result)
    assert result["nodes"][pending]["mig_config_state"] == "pending"
    assert messages(result, "Node/" + pending) == [
        "MIG change to %s is pending; it cannot finish while GPU pods run on the node (mig-manager never evicts them)"
        % pending_config
    ]
    assert messages(result, "Node/" + failed) == [
        "MIG change to %s failed; stop the GPU pods on the node, then set nvidia.com/mig.config again (or to another "
        "name) to retry" % failed_config
    ]


# --- connecting ------------------------------------------------------------------------------


@ONE_PROFILE
def test_awx_bearer_token_credential_without_kubeconfig(kube, run_module, awx_env):
    result = run_module(MODULE, {}, env=awx_env())

    assert_ok(result)
    assert sorted(result["nodes"]) == sorted(kube.gpu_nodes())


@ONE_PROFILE
@pytest.mark.parametrize("variable", ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"])
def test_either_certificate_validation_variable_is_honoured(kube, run_module, awx_env, variable):
    """Without the CA, 'False' must connect and 'True' must refuse the server's certificate:
    proof that the variable is read, not merely accepted."""
    env = dict(awx_env(), K8S_AUTH_VERIFY_SSL=None, K8S_AUTH_SSL_CA_CERT=None)

    insecure = run_module(MODULE, {}, env=dict(env, **{variable: "False"}))
    verified = run_module(MODULE, {}, env=dict(env, **{variable: "True"}))

    assert_ok(insecure)
    assert verified["failed"] is True
    assert "CERTIFICATE_VERIFY_FAILED" in verified["msg"] and "cannot reach the Kubernetes API" in verified["msg"]


@ONE_PROFILE
def test_a_user_without_rights_gets_the_api_status(kube, run_module, awx_env, audit_writes):
    with audit_writes() as audit:
        result = run_module(MODULE, {}, env=awx_env("nobody"))

    assert result["failed"] is True
    assert result["status"] == 403 and result["reason"] == "Forbidden"
    assert "forbidden" in result["msg"] and "gpushare-nobody" in result["msg"] and "HTTP 403" in result["msg"]
    assert audit.writes == []


@pytest.mark.profiles("vks")  # the fleet the local HAMi chart is tried on (tests/testbed/test_helm_charts.py)
def test_hami_nodes_are_judged_by_hami_s_split_and_nvidia_s_plugin_beside_it_is_an_error(cluster, kube, run_module):
    """HAMi's device plugin (the local chart) on the T4 node: nvidia.com/gpu is GPUs x deviceSplitCount; while the
    ClusterPolicy still runs NVIDIA's device plugin there too, gpu_info says so; switched off, the node is clean."""
    t4 = "vks-gpu-t4-0"
    namespace = "hami-" + uuid.uuid4().hex[:8]  # a reset may still be deleting the last one
    kube.label_node(t4, {"gpu": "on"})
    helm = os.path.join(REPO, ".venv", "bin", "helm")
    tolerations = json.dumps([GPU_TOLERATION])
    installed = subprocess.run(
        [helm, "--kubeconfig", cluster.kubeconfig, "install", "hami", os.path.join(REPO, "testbed", "charts", "hami")]
        + ["-n", namespace, "--create-namespace", "--set", "devicePlugin.deviceSplitCount=4"]
        + ["--set-json", "devicePlugin.tolerations=" + tolerations],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    wait_for_object(
        kube.core.list_node,
        lambda node: node["status"]["capacity"].get("nvidia.com/gpu") == "8"
        and "hami.io/node-nvidia-register" in node["metadata"]["annotations"],
        "HAMi's 2 x 4 slices on " + t4,
        field_selector="metadata.name=" + t4,
    )

    both = run_module(MODULE, {})
    assert_ok(both)
    assert [device["count"] for device in both["nodes"][t4]["hami_devices"]] == [4, 4]
    [finding] = messages(both, "Node/" + t4)
    assert "advertised by two device plugins" in finding

    kube.patch_policy({"devicePlugin": {"enabled": False}})
    alone = run_module(MODULE, {})
    assert_ok(alone)
    assert messages(alone, "Node/" + t4) == [] and len(alone["nodes"][t4]["hami_devices"]) == 2
    assert all(entry["hami_devices"] is None for name, entry in alone["nodes"].items() if name != t4)
