"""Device plugin + GPU Feature Discovery rules (reference sections 1-2), driven through the API."""

import pytest
import yaml
from simulator_helpers import (
    gpu_labels,
    label_node,
    labels,
    nvidia_resources,
    patch_policy,
    put_configmap,
    read_node,
    restart_device_plugin,
    wait_for,
    wait_for_node,
    wait_for_node_event,
)

from testbed.simulator.kube import as_dict
from testbed.simulator.names import CONFIG_DEFAULT_ENV, CONFIG_NAME_ENV, MIG_STRATEGY_ENV

CONFIGMAP = "time-slicing-config"
A100 = "gpu-a100-0"  # 2 x NVIDIA-A100-PCIE-40GB
H100 = "gpu-h100-0"  # 8 x NVIDIA-H100-80GB-HBM3
CONFIG_LABEL = "nvidia.com/device-plugin.config"


def sharing_config(method="timeSlicing", replicas=4, resource="nvidia.com/gpu", **options):
    body = dict(options, resources=[{"name": resource, "replicas": replicas}])
    return yaml.safe_dump({"version": "v1", "sharing": {method: body}})


def use_config(kube, profile, data, default="any", strategy=None):
    """Store the device plugin ConfigMap and point the ClusterPolicy at it, as the docs tell users."""
    put_configmap(kube, profile.operator_namespace, CONFIGMAP, data)
    spec = {"devicePlugin": {"config": {"name": CONFIGMAP, "default": default}}}
    if strategy:
        spec["mig"] = {"strategy": strategy}
    patch_policy(kube, profile, spec)


def replicas_are(count):
    return lambda node: labels(node).get("nvidia.com/gpu.replicas") == str(count)


def test_operator_copies_the_policy_config_into_the_plugin_template(kube, profile):
    patch_policy(
        kube, profile, {"devicePlugin": {"config": {"name": CONFIGMAP, "default": "any"}}, "mig": {"strategy": "mixed"}}
    )

    def env_of(daemonset):
        return {
            item["name"]: item.get("value")
            for item in daemonset["spec"]["template"]["spec"]["containers"][0].get("env", [])
        }

    daemonset = wait_for(
        kube.apps.list_namespaced_daemon_set,
        lambda ds: env_of(ds).get(CONFIG_NAME_ENV) == CONFIGMAP,
        "device plugin template",
        profile.operator_namespace,
        field_selector="metadata.name=nvidia-device-plugin-daemonset",
    )
    assert env_of(daemonset) == {CONFIG_NAME_ENV: CONFIGMAP, CONFIG_DEFAULT_ENV: "any", MIG_STRATEGY_ENV: "mixed"}


def test_time_slicing_default_key_shares_every_gpu_node(kube, profile):
    use_config(kube, profile, {"any": sharing_config(replicas=4)})

    node = wait_for_node(kube, A100, replicas_are(4))
    assert gpu_labels(node, "gpu.replicas", "gpu.sharing-strategy", "gpu.product", "gpu.count", "mps.capable") == {
        "gpu.replicas": "4",
        "gpu.sharing-strategy": "time-slicing",
        "gpu.product": "NVIDIA-A100-PCIE-40GB-SHARED",
        "gpu.count": "2",
        "mps.capable": None,
    }
    assert nvidia_resources(node, "capacity") == nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "8"}
    assert nvidia_resources(wait_for_node(kube, "gpu-t4-1", replicas_are(4)), "allocatable") == {"nvidia.com/gpu": "4"}


def test_node_label_picks_another_key_and_removing_it_falls_back(kube, profile):
    use_config(kube, profile, {"any": sharing_config(replicas=4), "mps-2": sharing_config("mps", replicas=2)})
    wait_for_node(kube, H100, replicas_are(4))

    label_node(kube, H100, {CONFIG_LABEL: "mps-2"})
    node = wait_for_node(kube, H100, replicas_are(2))
    assert gpu_labels(node, "gpu.sharing-strategy", "mps.capable", "gpu.product") == {
        "gpu.sharing-strategy": "mps",
        "mps.capable": "true",
        "gpu.product": "NVIDIA-H100-80GB-HBM3-SHARED",
    }
    assert nvidia_resources(node, "capacity") == {"nvidia.com/gpu": "16"}

    label_node(kube, H100, {CONFIG_LABEL: None})
    node = wait_for_node(kube, H100, replicas_are(4))
    assert gpu_labels(node, "gpu.sharing-strategy", "mps.capable") == {
        "gpu.sharing-strategy": "time-slicing",
        "mps.capable": None,
    }


def test_unknown_key_is_skipped_and_the_node_stays_as_is(kube, profile):
    use_config(kube, profile, {"any": sharing_config(replicas=4)})
    wait_for_node(kube, A100, replicas_are(4))

    label_node(kube, A100, {CONFIG_LABEL: "no-such-key"})
    event = wait_for_node_event(kube, A100, "InvalidDevicePluginConfig")
    assert "no-such-key" in event["message"]
    assert gpu_labels(read_node(kube, A100), "gpu.replicas")["gpu.replicas"] == "4"


INVALID_CONFIGS = {
    "replicas below 2": (sharing_config(replicas=1), "single", "replicas"),
    "both time-slicing and MPS": (
        yaml.safe_dump(
            {
                "sharing": {
                    "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
                    "mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
                }
            }
        ),
        "single",
        "both",
    ),
    "unknown version": ("version: v2\n" + sharing_config(replicas=4).replace("version: v1\n", ""), "single", "version"),
    "no resources": (yaml.safe_dump({"sharing": {"timeSlicing": {"resources": []}}}), "single", "no resources"),
    "MPS with the mixed MIG strategy": (sharing_config("mps", replicas=2), "mixed", "mixed"),
    "MPS of a MIG resource": (sharing_config("mps", replicas=2, resource="nvidia.com/mig-1g.5gb"), "single", "MPS"),
}


@pytest.mark.parametrize("config_text, strategy, reason", INVALID_CONFIGS.values(), ids=list(INVALID_CONFIGS))
def test_invalid_config_changes_nothing_and_is_reported(kube, profile, config_text, strategy, reason):
    before = read_node(kube, A100)
    use_config(kube, profile, {"any": config_text}, strategy=strategy)

    event = wait_for_node_event(kube, A100, "InvalidDevicePluginConfig")
    assert reason in event["message"]
    after = read_node(kube, A100)
    assert gpu_labels(after, "gpu.replicas", "gpu.sharing-strategy", "gpu.product") == gpu_labels(
        before, "gpu.replicas", "gpu.sharing-strategy", "gpu.product"
    )
    assert nvidia_resources(after, "capacity") == nvidia_resources(before, "capacity")


def test_configmap_edit_is_applied_only_after_a_restart_or_a_label_change(kube, profile):
    use_config(kube, profile, {"any": sharing_config(replicas=4), "other": sharing_config(replicas=4)})
    wait_for_node(kube, A100, replicas_are(4))
    wait_for_node(kube, H100, replicas_are(4))

    put_configmap(
        kube,
        profile.operator_namespace,
        CONFIGMAP,
        {"any": sharing_config(replicas=8), "other": sharing_config(replicas=8)},
    )
    # The H100's label change restarts its plugin only: it reads the edit, the A100 keeps the old config.
    label_node(kube, H100, {CONFIG_LABEL: "other"})
    wait_for_node(kube, H100, replicas_are(8))
    assert gpu_labels(read_node(kube, A100), "gpu.replicas")["gpu.replicas"] == "4"

    restart_device_plugin(kube, profile)
    node = wait_for_node(kube, A100, replicas_are(8))
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "16"}


def test_missing_configmap_changes_nothing_until_it_appears(kube, profile):
    patch_policy(kube, profile, {"devicePlugin": {"config": {"name": CONFIGMAP, "default": "any"}}})
    event = wait_for_node_event(kube, A100, "InvalidDevicePluginConfig")
    assert "not found" in event["message"]
    assert gpu_labels(read_node(kube, A100), "gpu.replicas")["gpu.replicas"] == "1"

    put_configmap(kube, profile.operator_namespace, CONFIGMAP, {"any": sharing_config(replicas=3)})
    wait_for_node(kube, A100, replicas_are(3))


def test_rename_by_default_advertises_gpu_shared(kube, profile):
    use_config(kube, profile, {"any": sharing_config("mps", replicas=10, renameByDefault=True)})

    node = wait_for_node(kube, A100, replicas_are(10))
    assert gpu_labels(node, "gpu.product", "gpu.sharing-strategy") == {
        "gpu.product": "NVIDIA-A100-PCIE-40GB",
        "gpu.sharing-strategy": "mps",
    }
    # As seen on a real A100 node with MPS x10: capacity 2, allocatable 0, gpu.shared 20.
    assert nvidia_resources(node, "capacity") == {"nvidia.com/gpu": "2", "nvidia.com/gpu.shared": "20"}
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "20"}


def test_resource_name_gets_the_nvidia_prefix(kube, profile):
    use_config(kube, profile, {"any": sharing_config(replicas=2, resource="gpu")})
    node = wait_for_node(kube, A100, replicas_are(2))
    assert nvidia_resources(node, "capacity") == {"nvidia.com/gpu": "4"}


def test_time_slicing_of_mixed_mig_resources(kube, profile):
    patch_policy(kube, profile, {"mig": {"strategy": "mixed"}})
    label_node(kube, A100, {"nvidia.com/mig.config": "all-1g.5gb"})
    wait_for_node(kube, A100, lambda node: nvidia_resources(node, "capacity").get("nvidia.com/mig-1g.5gb") == "14")

    use_config(kube, profile, {"any": sharing_config(replicas=2, resource="nvidia.com/mig-1g.5gb")}, strategy="mixed")
    node = wait_for_node(kube, A100, lambda node: labels(node).get("nvidia.com/mig-1g.5gb.replicas") == "2")
    assert gpu_labels(node, "mig-1g.5gb.sharing-strategy", "mig-1g.5gb.product", "gpu.replicas") == {
        "mig-1g.5gb.sharing-strategy": "time-slicing",
        "mig-1g.5gb.product": "NVIDIA-A100-PCIE-40GB-MIG-1g.5gb-SHARED",
        "gpu.replicas": "1",
    }
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.5gb": "28"}


def test_removing_the_config_unshares(kube, profile):
    use_config(kube, profile, {"any": sharing_config(replicas=4)})
    wait_for_node(kube, A100, replicas_are(4))

    patch_policy(kube, profile, {"devicePlugin": {"config": None}})
    node = wait_for_node(kube, A100, replicas_are(1))
    assert gpu_labels(node, "gpu.sharing-strategy", "gpu.product") == {
        "gpu.sharing-strategy": "none",
        "gpu.product": "NVIDIA-A100-PCIE-40GB",
    }
    assert nvidia_resources(node, "capacity") == {"nvidia.com/gpu": "2"}
    assert as_dict(kube.core.read_node, A100)["status"]["allocatable"]["nvidia.com/gpu"] == "2"
