"""The local Helm charts (testbed/charts/) with the pinned helm (tools/install_helm.py), on the vks fleet.

NVIDIA's operator installed with Helm on a fleet seeded without it ends as the seeded profile does;
HAMi replaces NVIDIA's device plugin where it runs and gives it back when it goes. These tests run in the
vks job of tests/run-cluster-tests.sh (``python testbed/cluster.py up --profile vks``); elsewhere they skip.
"""

import json
import os
import subprocess
import uuid

import pytest
import yaml
from simulator_helpers import label_node, patch_policy, read_node, wait_for, wait_for_deletion, wait_for_node

from testbed import seed
from testbed.simulator import gpu_operator
from testbed.simulator.kube import CLUSTER_POLICY, MERGE_PATCH, Kube, as_dict, discard
from testbed.simulator.names import (
    DEVICE_PLUGIN_DAEMONSET,
    GPU_PRESENT_LABEL,
    HAMI_REGISTER_ANNOTATION,
    HARDWARE_ANNOTATION,
    MIG_CONFIG_LABEL,
    NFD_NVIDIA_PCI_LABEL,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_DIR = os.environ.get("GPUSHARE_CLUSTER_DIR", os.path.join(REPO, ".cluster"))
CHARTS = os.path.join(REPO, "testbed", "charts")
HELM = os.path.join(REPO, ".venv", "bin", "helm")
PROFILE = seed.PROFILES["vks"]
NAMESPACE = PROFILE.operator_namespace
A10, T4, L4 = "vks-gpu-a10-0", "vks-gpu-t4-0", "vks-gpu-l4-0"
# What a VKS user sets (reference section 5); the chart's driver default is VKS's 550.54.15 already.
VKS_VALUES = ["--set", "operator.defaultRuntime=containerd", "--set", "dcgmExporter.serviceMonitor.enabled=true"]
# HAMi's device plugin tolerates nothing by default; the fleet's GPU nodes are tainted nvidia.com/gpu.
HAMI_TOLERATES_GPU_TAINT = ["--set-json", "devicePlugin.tolerations=%s" % json.dumps([gpu_operator.GPU_TOLERATION])]
TIMEOUT = 60  # a Helm install brings up ~50 pods on this fleet; the machine may be shared


@pytest.fixture
def kube(api_client):
    with open(os.path.join(CLUSTER_DIR, "profile")) as profile_file:
        if profile_file.read().strip() != PROFILE.name:
            pytest.skip("these tests use the vks fleet")
    if not os.access(HELM, os.X_OK):
        pytest.fail("%s is missing: run 'make venv' (tools/install_helm.py installs the pinned helm)" % HELM)
    seed.reset(api_client, PROFILE.name)
    return Kube(api_client)


@pytest.fixture
def hami_namespace():
    """A namespace of its own for HAMi: the previous test's, deleted by the reset, may still be terminating."""
    return "hami-" + uuid.uuid4().hex[:8]


def helm(*args):
    result = subprocess.run(
        [HELM, "--kubeconfig", os.path.join(CLUSTER_DIR, "kubeconfig")] + list(args),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, "helm %s failed: %s" % (" ".join(args), result.stderr)
    return result.stdout


def gpu_nodes():
    return [name for name, pool in seed.fleet(PROFILE) if pool.product]


def nvidia_resources(node):
    return {
        field: {key: value for key, value in node["status"][field].items() if key.startswith("nvidia.com/")}
        for field in ("capacity", "allocatable")
    }


def node_state(node):
    """What the operator, GFD and the device plugin show on a node (not when GFD last wrote)."""
    annotations = node["metadata"].get("annotations") or {}
    applied = json.loads(annotations.get("sim.gpushare.k8s/applied") or "{}")
    applied.pop("daemonSet", None)  # the device plugin DaemonSet's uid, new with every install
    labels = {key: value for key, value in node["metadata"]["labels"].items() if key != "nvidia.com/gfd.timestamp"}
    return {"labels": labels, "resources": nvidia_resources(node), "applied": applied}


def policy_state(policy):
    """The ClusterPolicy fields the collection reads or writes, its owner and its status."""
    spec = policy["spec"]
    return {
        "helm release": (policy["metadata"]["labels"].get("app.kubernetes.io/managed-by"), release_of(policy)),
        "status": policy.get("status"),
        "defaultRuntime": spec["operator"]["defaultRuntime"],
        "tolerations": spec["daemonsets"]["tolerations"],
        "mig": spec["mig"],
        "devicePlugin": (spec["devicePlugin"]["enabled"], spec["devicePlugin"].get("config")),
        "migManager": {key: spec["migManager"][key] for key in ("enabled", "config", "env")},
        "dcgmExporter": (spec["dcgmExporter"]["enabled"], spec["dcgmExporter"]["serviceMonitor"]["enabled"]),
        "driver": (
            spec["driver"]["enabled"],
            spec["driver"]["version"],
            spec["driver"]["licensingConfig"]["nlsEnabled"],
        ),
        "enabled": (spec["toolkit"]["enabled"], spec["gfd"]["enabled"]),
        "validator": spec["validator"]["plugin"]["env"],
    }


def release_of(obj):
    annotations = obj["metadata"].get("annotations") or {}
    return annotations.get("meta.helm.sh/release-name"), annotations.get("meta.helm.sh/release-namespace")


def owners(obj, policy):
    """``obj``'s ownerReferences, each uid replaced by whether it is the policy's (a new one with every install)."""
    return [
        dict(reference, uid=reference["uid"] == policy["metadata"]["uid"])
        for reference in obj["metadata"].get("ownerReferences") or []
    ]


def operator_state(kube):
    policy = kube.custom.get_cluster_custom_object(
        CLUSTER_POLICY["group"], CLUSTER_POLICY["version"], CLUSTER_POLICY["plural"], PROFILE.policy_name
    )
    daemonsets = {
        ds["metadata"]["name"]: ds for ds in as_dict(kube.apps.list_namespaced_daemon_set, NAMESPACE)["items"]
    }
    nfd = daemonsets[seed.nfd_worker_daemonset(PROFILE)["metadata"]["name"]]
    mig_configmap = as_dict(kube.core.read_namespaced_config_map, "default-mig-parted-config", NAMESPACE)
    return {
        "policy": policy_state(policy),
        "daemonsets": sorted(daemonsets),
        "nfd worker": (nfd["spec"]["template"]["spec"]["tolerations"], release_of(nfd)),
        "mig configmap": (mig_configmap["data"], owners(mig_configmap, policy)),
        "nodes": {name: node_state(read_node(kube, name)) for name in gpu_nodes()},
    }


def install_operator(kube, api_client, *values):
    """The fleet without the operator (the fixture just seeded it with), then NVIDIA's chart; returns once the
    operator reports ready and every GPU node shows what it showed as seeded."""
    seeded_nodes = {name: node_state(read_node(kube, name)) for name in gpu_nodes()}
    seed.reset(api_client, PROFILE.name, operator=False)
    bare = read_node(kube, A10)
    assert nvidia_resources(bare) == {"capacity": {}, "allocatable": {}}
    assert not [key for key in bare["metadata"]["labels"] if "nvidia.com/" in key or "feature.node" in key]
    assert HARDWARE_ANNOTATION in bare["metadata"]["annotations"]
    # The chart's CRD first, once the API server serves it in discovery: Helm builds the chart's objects right after
    # its CRDs are Established, and kube-apiserver serves a new group version's discovery a moment later (under load,
    # "no matches for kind ClusterPolicy ... ensure CRDs are installed first"). Helm skips a CRD that exists; the
    # chart's is the seed's (test_the_operator_chart_carries_the_seeds_cluster_policy_crd).
    seed.Writer(kube).crd(seed.CLUSTER_POLICY_CRD)
    helm("install", "gpu-operator", os.path.join(CHARTS, "gpu-operator"), "-n", NAMESPACE, *(VKS_VALUES + list(values)))
    wait_for(
        kube.custom.list_cluster_custom_object,
        lambda policy: (policy.get("status") or {}).get("state") == "ready",
        "ClusterPolicy %s ready" % PROFILE.policy_name,
        CLUSTER_POLICY["group"],
        CLUSTER_POLICY["version"],
        CLUSTER_POLICY["plural"],
        field_selector="metadata.name=" + PROFILE.policy_name,
        timeout=TIMEOUT,
    )
    for name, state in seeded_nodes.items():
        wait_for_node(kube, name, lambda node, state=state: node_state(node) == state, timeout=TIMEOUT)


def set_device_plugin(kube, enabled):
    patch_policy(kube, PROFILE, {"devicePlugin": {"enabled": enabled}})


def wait_for_nvidia_resources(kube, name, expected, hami=False):
    """Wait until node ``name`` advertises exactly ``expected`` (``{resource: quantity}``) of ``nvidia.com/*``
    (and, with ``hami``, carries HAMi's annotation, written just after the resources)."""
    wanted = {"capacity": expected, "allocatable": expected}
    return wait_for_node(
        kube,
        name,
        lambda node: nvidia_resources(node) == wanted
        and (not hami or HAMI_REGISTER_ANNOTATION in node["metadata"]["annotations"]),
        timeout=TIMEOUT,
    )


def hami_devices(node):
    """HAMi's description of the node's GPUs without their ids (made up by the simulator)."""
    devices = json.loads(node["metadata"]["annotations"][HAMI_REGISTER_ANNOTATION])
    return [{key: value for key, value in device.items() if key != "id"} for device in devices]


# the charts ------------------------------------------------------------------------------------------


def test_the_operator_chart_carries_the_seeds_cluster_policy_crd():
    with open(os.path.join(CHARTS, "gpu-operator", "crds", "nvidia.com_clusterpolicies_crd.yaml")) as crd:
        assert yaml.safe_load(crd) == seed.CLUSTER_POLICY_CRD


def test_the_operator_labels_the_gpu_nodes_nfd_found_and_keeps_what_users_set():
    """What the operator adds on a MIG-capable node (none in the vks fleet): Scaleway's H100 PCIe."""
    policy = seed.cluster_policy(seed.PROFILES["scaleway"])
    found = {NFD_NVIDIA_PCI_LABEL: "true", "nvidia.com/gpu.deploy.dcgm-exporter": "false"}
    added = gpu_operator.gpu_node_labels(found, True, policy)
    assert added[GPU_PRESENT_LABEL] == "true" and added["nvidia.com/gpu.deploy.mig-manager"] == "true"
    assert added[MIG_CONFIG_LABEL] == "all-disabled" and "nvidia.com/gpu.deploy.dcgm-exporter" not in added
    assert MIG_CONFIG_LABEL not in gpu_operator.gpu_node_labels(
        dict(found, **{MIG_CONFIG_LABEL: "all-1g.10gb"}), True, policy
    )
    assert "nvidia.com/gpu.deploy.mig-manager" not in gpu_operator.gpu_node_labels(found, False, policy)
    assert gpu_operator.gpu_node_labels({}, True, policy) == {}  # NFD found no NVIDIA device there


def test_the_operator_installed_with_helm_ends_as_the_seeded_profile(kube, api_client):
    seeded = operator_state(kube)
    install_operator(kube, api_client)
    installed = operator_state(kube)
    assert installed == seeded
    assert installed["policy"]["helm release"] == ("Helm", ("gpu-operator", NAMESPACE))
    deployment = as_dict(kube.apps.read_namespaced_deployment, "gpu-operator", NAMESPACE)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/gpu-operator:v24.3.0"


def test_a_value_switching_an_operand_off_leaves_its_daemonset_out(kube, api_client):
    install_operator(kube, api_client, "--set", "dcgmExporter.enabled=false")
    daemonsets = [ds["metadata"]["name"] for ds in as_dict(kube.apps.list_namespaced_daemon_set, NAMESPACE)["items"]]
    assert "nvidia-dcgm-exporter" not in daemonsets and DEVICE_PLUGIN_DAEMONSET in daemonsets


# HAMi --------------------------------------------------------------------------------------------------


def test_hami_replaces_the_device_plugin_on_its_nodes_and_gives_it_back(kube, api_client, hami_namespace):
    install_operator(kube, api_client)
    set_device_plugin(kube, False)
    # The operator deletes the switched-off operand; its resources go, GFD's labels stay.
    wait_for_deletion(
        kube.apps.list_namespaced_daemon_set,
        DEVICE_PLUGIN_DAEMONSET,
        NAMESPACE,
        field_selector="metadata.name=" + DEVICE_PLUGIN_DAEMONSET,
        timeout=TIMEOUT,
    )
    for name in gpu_nodes():
        off = wait_for_nvidia_resources(kube, name, {})
        assert off["metadata"]["labels"]["nvidia.com/gpu.count"] in ("1", "2")

    label_node(kube, A10, {"gpu": "on"})
    label_node(kube, T4, {"gpu": "on"})
    split_and_scaling = ["--set", "devicePlugin.deviceSplitCount=4", "--set", "devicePlugin.deviceMemoryScaling=1.5"]
    hami_chart = os.path.join(CHARTS, "hami")
    helm(
        "install",
        "hami",
        hami_chart,
        "-n",
        hami_namespace,
        "--create-namespace",
        *(split_and_scaling + HAMI_TOLERATES_GPU_TAINT),
    )
    # nvidia.com/gpu = GPUs x deviceSplitCount; memory and cores only in the annotation (no mock device plugin).
    a10 = wait_for_nvidia_resources(kube, A10, {"nvidia.com/gpu": "4"}, hami=True)
    t4 = wait_for_nvidia_resources(kube, T4, {"nvidia.com/gpu": "8"}, hami=True)
    hami_a10 = {"count": 4, "devmem": 34542, "devcore": 100, "type": "NVIDIA A10", "mode": "hami-core"}
    assert hami_devices(a10) == [dict(hami_a10, health=True, devicepairscore={})]  # 23028 MiB x 1.5
    hami_t4 = {"count": 4, "devmem": 23040, "devcore": 100, "type": "NVIDIA-Tesla T4", "mode": "hami-core"}
    assert hami_devices(t4) == [
        dict(hami_t4, health=True, devicepairscore={}),
        dict(hami_t4, index=1, health=True, devicepairscore={}),
    ]
    assert nvidia_resources(read_node(kube, L4)) == {"capacity": {}, "allocatable": {}}  # not labelled gpu=on

    # New values restart HAMi's device plugin (the chart's checksum annotation), which reads them as it starts.
    helm(
        "upgrade",
        "hami",
        hami_chart,
        "-n",
        hami_namespace,
        "--reuse-values",
        "--set",
        "devicePlugin.deviceSplitCount=10",
    )
    wait_for_nvidia_resources(kube, A10, {"nvidia.com/gpu": "10"})

    helm("uninstall", "hami", "-n", hami_namespace)
    gone = wait_for_nvidia_resources(kube, A10, {})
    assert HAMI_REGISTER_ANNOTATION in gone["metadata"]["annotations"]  # HAMi never removes it
    set_device_plugin(kube, True)
    wait_for_nvidia_resources(kube, A10, {"nvidia.com/gpu": "1"})
    wait_for_nvidia_resources(kube, T4, {"nvidia.com/gpu": "2"})


def test_hami_needs_the_gpu_taint_tolerated_and_its_mock_plugin_an_untainted_node(kube, hami_namespace):
    """On the seeded profile (no operator Deployment: the plugin's DaemonSet stays, its resources go)."""
    set_device_plugin(kube, False)
    wait_for_nvidia_resources(kube, A10, {})
    assert DEVICE_PLUGIN_DAEMONSET in [
        ds["metadata"]["name"] for ds in as_dict(kube.apps.list_namespaced_daemon_set, NAMESPACE)["items"]
    ]
    label_node(kube, A10, {"gpu": "on"})
    hami_chart = os.path.join(CHARTS, "hami")
    helm(
        "install",
        "hami",
        hami_chart,
        "-n",
        hami_namespace,
        "--create-namespace",
        "--set",
        "mockDevicePlugin.enabled=true",
    )
    # HAMi's chart tolerates no taint by default: the DaemonSet controller places no pod on the GPU node.
    wait_for(
        kube.apps.list_namespaced_daemon_set,
        lambda ds: (ds.get("status") or {}).get("observedGeneration") and ds["status"]["desiredNumberScheduled"] == 0,
        "hami-device-plugin scheduled nowhere",
        hami_namespace,
        field_selector="metadata.name=hami-device-plugin",
        timeout=TIMEOUT,
    )
    assert nvidia_resources(read_node(kube, A10))["capacity"] == {}

    helm("upgrade", "hami", hami_chart, "-n", hami_namespace, "--reuse-values", *HAMI_TOLERATES_GPU_TAINT)
    wait_for_nvidia_resources(kube, A10, {"nvidia.com/gpu": "10"})  # the mock plugin tolerates only CriticalAddonsOnly
    discard(kube.core.patch_node, A10, {"spec": {"taints": []}}, _content_type=MERGE_PATCH)
    memory_and_cores = {
        "nvidia.com/gpumem": "23028",
        "nvidia.com/gpucores": "100",
        "nvidia.com/gpumem-percentage": "100",
    }
    wait_for_nvidia_resources(kube, A10, dict(memory_and_cores, **{"nvidia.com/gpu": "10"}))

    helm("uninstall", "hami", "-n", hami_namespace)
    set_device_plugin(kube, True)
    wait_for_nvidia_resources(kube, A10, {"nvidia.com/gpu": "1"})


def test_the_api_server_fills_in_nvidias_cluster_policy_defaults(kube):
    """A policy written without the fields NVIDIA's CRD defaults reads back with NVIDIA's defaults."""
    patch_policy(kube, PROFILE, {"migManager": {"config": {"default": None}}, "toolkit": {"installDir": None}})
    spec = kube.custom.get_cluster_custom_object(
        CLUSTER_POLICY["group"], CLUSTER_POLICY["version"], CLUSTER_POLICY["plural"], PROFILE.policy_name
    )["spec"]
    assert spec["migManager"]["config"] == {"name": "default-mig-parted-config", "default": "all-disabled"}
    assert spec["toolkit"]["installDir"] == "/usr/local/nvidia"
