"""The seeded fleets: what each platform has (reference section 5)."""

import copy
import json

import pytest
import yaml
from simulator_helpers import annotate_node, read_node, wait_for, wait_for_node

from testbed import seed
from testbed.simulator import nvml
from testbed.simulator.kube import CLUSTER_POLICY, as_dict
from testbed.simulator.names import HARDWARE_ANNOTATION, OPERAND_DAEMONSETS
from testbed.simulator.nodes import render

TTL = "node.alpha.kubernetes.io/ttl"


def test_openshift_cluster_has_the_operator_and_its_fleet(kube, profile):
    policy = kube.custom.get_cluster_custom_object(
        CLUSTER_POLICY["group"], CLUSTER_POLICY["version"], CLUSTER_POLICY["plural"], "gpu-cluster-policy"
    )
    assert policy["spec"]["mig"] == {"strategy": "single"}
    assert policy["spec"]["migManager"]["config"] == {"name": "default-mig-parted-config", "default": "all-disabled"}
    assert "config" not in policy["spec"]["devicePlugin"]
    daemonsets = as_dict(kube.apps.list_namespaced_daemon_set, "nvidia-gpu-operator")["items"]
    assert {daemonset["metadata"]["name"] for daemonset in daemonsets} == set(OPERAND_DAEMONSETS)

    nodes = {node["metadata"]["name"]: node for node in as_dict(kube.core.list_node)["items"]}
    products = sorted(
        (node["metadata"]["labels"].get("nvidia.com/gpu.product"), node["status"]["capacity"].get("nvidia.com/gpu"))
        for node in nodes.values()
        if HARDWARE_ANNOTATION in node["metadata"]["annotations"]
    )
    assert (
        products
        == [("NVIDIA-A100-PCIE-40GB", "2")] * 2 + [("NVIDIA-H100-80GB-HBM3", "8")] * 2 + [("Tesla-T4", "1")] * 2
    )
    hardware = json.loads(nodes["gpu-h100-0"]["metadata"]["annotations"][HARDWARE_ANNOTATION])
    # NVML's figures for an H100 80GB HBM3 (nvidia_data/h100-80gb-hbm3-nvml.json) and its PCI device id.
    assert (hardware["memory_mib"], hardware["pci_device_id"]) == (81559, "0x233010DE")
    assert nodes["gpu-h100-0"]["spec"]["taints"][0] == {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    assert "taints" not in nodes["worker-0"]["spec"]

    machineset = kube.custom.get_namespaced_custom_object(
        "machine.openshift.io", "v1beta1", "openshift-machine-api", "machinesets", seed.OPENSHIFT_T4_MACHINESET
    )
    assert machineset["metadata"]["annotations"]["machine.openshift.io/GPU"] == "1"
    assert machineset["spec"]["template"]["spec"]["metadata"]["labels"]["cluster-api/accelerator"] == "tesla-t4"
    autoscaler = kube.custom.get_cluster_custom_object(
        "autoscaling.openshift.io", "v1", "clusterautoscalers", "default"
    )
    assert autoscaler["spec"]["resourceLimits"]["gpus"] == [{"type": "tesla-t4", "min": 0, "max": 4}]


@pytest.mark.parametrize(
    "name, namespace, policy, mig_capable",
    [
        ("scaleway", "kube-system", "cluster-policy", {"true"}),
        ("vks", "gpu-operator", "cluster-policy", {"false"}),
    ],
)
def test_other_profiles_describe_their_platform(name, namespace, policy, mig_capable):
    """Checked without a cluster: these profiles cannot run next to the openshift one."""
    profile = seed.PROFILES[name]
    assert (profile.operator_namespace, profile.policy_name) == (namespace, policy)
    members = seed.fleet(profile)
    gpu_pools = [pool for _name, pool in members if pool.product]
    capable = {
        render(seed.hardware_of(profile, pool.product, pool.gpus), [None] * pool.gpus, "single", None).labels[
            "nvidia.com/mig.capable"
        ]
        for pool in gpu_pools
    }
    assert capable == mig_capable
    assert sum(1 for _name, pool in members if not pool.product) == 2


def test_large_fleet_spreads_over_the_gpu_pools():
    members = seed.fleet(seed.PROFILES["openshift"], gpu_nodes=1000)
    gpu_members = [name for name, pool in members if pool.product]
    assert len(gpu_members) == 1000 and len(set(gpu_members)) == 1000
    assert gpu_members[0] == "gpu-a100-0000"


def shipped_configs():
    """NVIDIA's shipped MIG configs (nvidia_data/default-mig-parted-config.json) as mig-parted reads them."""
    shipped = nvml.load(nvml.SHIPPED_MIG_CONFIG)
    return {
        name: [{key: value for key, value in entry.items() if value is not None} for entry in entries]
        for name, entries in shipped["configs"].items()
    }


def test_mig_configmap_holds_nvidia_shipped_configs(kube, profile):
    configmap = as_dict(kube.core.read_namespaced_config_map, "default-mig-parted-config", profile.operator_namespace)
    document = yaml.safe_load(configmap["data"]["config.yaml"])
    assert document["version"] == "v1"
    configs = document["mig-configs"]
    assert list(configs) == list(shipped_configs()) and len(configs) == 81
    # The one scalar device-filter of the source stays a scalar; everything else is the JSON as is.
    assert configs["all-balanced"][8]["device-filter"] == "0x20B710DE"
    configs["all-balanced"][8]["device-filter"] = ["0x20B710DE"]
    assert configs == shipped_configs()


def test_mig_configmap_is_owned_by_the_cluster_policy(kube, profile):
    """As NVIDIA's operator creates it: the ClusterPolicy its controller (gpu-operator controllers/object_controls.go,
    ConfigMap(): controllerutil.SetControllerReference)."""
    configmap = as_dict(kube.core.read_namespaced_config_map, "default-mig-parted-config", profile.operator_namespace)
    policy = kube.custom.get_cluster_custom_object(
        CLUSTER_POLICY["group"], CLUSTER_POLICY["version"], CLUSTER_POLICY["plural"], profile.policy_name
    )
    assert configmap["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "name": profile.policy_name,
            "uid": policy["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_seeded_gpus_are_the_simulated_gpu_table():
    pci_ids = {item["id"] for item in nvml.load("pci-device-ids.json")["ids"]}
    for name, profile in seed.PROFILES.items():
        for pool in profile.gpu_pools:
            hardware = seed.hardware_of(profile, pool.product, pool.gpus)
            gpu = nvml.gpu(pool.product)
            assert (hardware["memory_mib"], hardware["pci_device_id"]) == (gpu.memory_mib, gpu.pci_device_id), name
            # Every MIG GPU is one the shipped config's device filters know.
            assert not gpu.mig_capable or gpu.pci_device_id in pci_ids, pool.product


@pytest.mark.parametrize(
    "key, kept",
    [
        ("node.alpha.kubernetes.io/ttl", True),
        ("volumes.kubernetes.io/controller-managed-attach-detach", True),
        ("kubernetes.io/anything", True),
        ("csi.volume.kubernetes.io/nodeid", True),
        ("node.k8s.io/something", True),
        ("kubectl.kubernetes.io/last-applied-configuration", False),
        ("gpushare.k8s/restore", False),
        ("sim.gpushare.k8s/applied", False),
        ("machine.openshift.io/machine", False),
        ("example.com/kubernetes.io", False),
        ("no-prefix", False),
    ],
)
def test_control_plane_annotations_are_those_under_kubernetes_prefixes(key, kept):
    assert seed.is_control_plane_annotation(key) is kept


def test_reset_keeps_the_control_planes_annotations_and_drops_the_rest(api_client, kube, profile):
    """Every version of a node a reset writes still carries what kube-controller-manager put there.

    In 1.20 a PUT of nodes/status writes metadata from its body: a reset that sent only the seed's
    annotations removed node.alpha.kubernetes.io/ttl, which the TTL controller added back a moment
    later, so a snapshot taken right after a reset could lack it while a later one had it.
    """
    node = "gpu-a100-0"
    ttl = wait_for_node(kube, node, lambda item: TTL in item["metadata"]["annotations"])["metadata"]["annotations"][TTL]
    annotate_node(
        kube,
        node,
        {
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",  # as a kubelet registers it
            "gpushare.k8s/restore": json.dumps({"labels": {"nvidia.com/mig.config": "all-disabled"}}),
            "example.com/note": "left by a test",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
        },
    )
    before = as_dict(kube.core.list_node, field_selector="metadata.name=" + node)["metadata"]["resourceVersion"]

    seed.reset(api_client, profile.name)
    after = read_node(kube, node)

    written = []

    def record(item):
        written.append(item)
        return item["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]

    wait_for(
        kube.core.list_node,
        record,
        "node %s as read after the reset" % node,
        since=before,
        field_selector="metadata.name=" + node,
    )
    assert written, "the reset wrote no version of the node"
    for version in written:
        assert version["metadata"]["annotations"].get(TTL) == ttl, version["metadata"]["resourceVersion"]
        assert version["metadata"]["labels"].get("beta.kubernetes.io/arch") == "amd64"
    annotations = after["metadata"]["annotations"]
    assert annotations[TTL] == ttl
    assert annotations["volumes.kubernetes.io/controller-managed-attach-detach"] == "true"
    for dropped in ("gpushare.k8s/restore", "example.com/note", "kubectl.kubernetes.io/last-applied-configuration"):
        assert dropped not in annotations


def test_reset_deletes_the_machinesets_and_autoscalers_tests_created(api_client, kube, profile):
    extra = copy.deepcopy(seed.openshift_objects(seed.fleet(profile)))
    for group, version, plural, body in extra:
        body["metadata"]["name"] = "test-made"
        if body["metadata"].get("namespace"):
            kube.custom.create_namespaced_custom_object(group, version, body["metadata"]["namespace"], plural, body)
        else:
            kube.custom.create_cluster_custom_object(group, version, plural, body)

    seed.reset(api_client, profile.name)
    for group, version, plural, body in extra:
        names = [
            item["metadata"]["name"]
            for item in as_dict(kube.custom.list_cluster_custom_object, group, version, plural)["items"]
        ]
        assert "test-made" not in names and len(names) == 1, (plural, names)
