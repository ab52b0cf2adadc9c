"""mig-manager and mig-parted rules (reference section 4, mig-parted-rules.md), driven through the API
as a user would. The default ConfigMap holds NVIDIA's shipped configs; MIG facts (profiles, most
instances, memory) are the simulator's own data (testbed/nvidia_data/, testbed/simulator/nvml.py)."""

import pytest
import yaml
from simulator_helpers import (
    annotate_node,
    gpu_labels,
    gpu_pod,
    label_node,
    labels,
    nvidia_resources,
    patch_policy,
    put_configmap,
    read_node,
    wait_for_node,
    wait_for_node_event,
    wait_for_pod,
)

from testbed.simulator.kube import discard

A100 = "gpu-a100-0"  # 2 x NVIDIA-A100-PCIE-40GB
H100 = "gpu-h100-0"  # 8 x NVIDIA-H100-80GB-HBM3
T4 = "gpu-t4-0"  # 1 x Tesla-T4, no MIG
PAUSED = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "nvsm")


def state_is(*states):
    return lambda node: labels(node).get("nvidia.com/mig.config.state") in states


def deploy_labels(node):
    return {component: labels(node).get("nvidia.com/gpu.deploy." + component) for component in PAUSED}


def change_mig(kube, node, config_name):
    """Label the node and wait until mig-manager paused its operands, then until it finished."""
    labelled = label_node(kube, node, {"nvidia.com/mig.config": config_name})
    pending = wait_for_node(kube, node, state_is("pending"), since=labelled)
    assert set(deploy_labels(pending).values()) == {"paused-for-mig-change"}
    finished = wait_for_node(kube, node, state_is("success", "failed"))
    assert set(deploy_labels(finished).values()) == {"true"}
    return finished


def test_single_strategy_advertises_mig_devices_as_gpus(kube):
    node = change_mig(kube, H100, "all-1g.10gb")
    assert labels(node)["nvidia.com/mig.config.state"] == "success"
    # 9984 MiB: what NVML reports for a 1g.10gb instance on an H100 80GB HBM3, not 10 x 1024.
    assert gpu_labels(node, "gpu.product", "gpu.count", "gpu.memory", "mig.strategy") == {
        "gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        "gpu.count": "56",
        "gpu.memory": "9984",
        "mig.strategy": "single",
    }
    assert nvidia_resources(node, "capacity") == nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "56"}


def test_shipped_config_honours_the_device_filter(kube):
    # all-1g.10gb has one entry per device-filter group: 7 per GPU on 80GB parts, 4 on 40GB ones (0x20F110DE).
    node = change_mig(kube, A100, "all-1g.10gb")
    assert gpu_labels(node, "gpu.product", "gpu.count", "gpu.memory") == {
        "gpu.product": "NVIDIA-A100-PCIE-40GB-MIG-1g.10gb",
        "gpu.count": "8",
        "gpu.memory": "10240",
    }


def test_media_extension_profile_is_written_with_a_dot_in_mixed_resources(kube, profile):
    use_mixed_strategy(kube, profile, H100)
    node = change_mig(kube, H100, "all-1g.10gb.me")
    assert labels(node)["nvidia.com/mig.config.state"] == "success"
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb.me": "8"}
    assert gpu_labels(
        node, "mig-1g.10gb.me.count", "mig-1g.10gb.me.memory", "mig-1g.10gb.me.slices.gi", "mig-1g.10gb.me.product"
    ) == {
        "mig-1g.10gb.me.count": "8",
        "mig-1g.10gb.me.memory": "9984",
        "mig-1g.10gb.me.slices.gi": "1",
        "mig-1g.10gb.me.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gbme",
    }


def use_mixed_strategy(kube, profile, node):
    """Patch the policy, then wait until the node's plugin runs with it: the operator rolls the
    strategy out to the device plugin asynchronously, so a MIG change finishing first would be
    advertised under the old strategy (as on a real cluster)."""
    patch_policy(kube, profile, {"mig": {"strategy": "mixed"}})
    wait_for_node(kube, node, lambda n: labels(n).get("nvidia.com/mig.strategy") == "mixed")


def test_mixed_strategy_advertises_one_resource_per_profile(kube, profile):
    use_mixed_strategy(kube, profile, A100)
    node = change_mig(kube, A100, "all-balanced")
    assert nvidia_resources(node, "capacity") == {
        "nvidia.com/gpu": "0",
        "nvidia.com/mig-1g.5gb": "4",
        "nvidia.com/mig-2g.10gb": "2",
        "nvidia.com/mig-3g.20gb": "2",
    }
    assert gpu_labels(
        node,
        "mig-2g.10gb.count",
        "mig-2g.10gb.memory",
        "mig-2g.10gb.slices.gi",
        "mig-2g.10gb.slices.ci",
        "mig-2g.10gb.product",
        "gpu.product",
        "mig.strategy",
    ) == {
        "mig-2g.10gb.count": "2",
        "mig-2g.10gb.memory": "10240",
        "mig-2g.10gb.slices.gi": "2",
        "mig-2g.10gb.slices.ci": "2",
        "mig-2g.10gb.product": "NVIDIA-A100-PCIE-40GB-MIG-2g.10gb",
        "gpu.product": "NVIDIA-A100-PCIE-40GB",
        "mig.strategy": "mixed",
    }


def test_mixed_layout_under_single_strategy_is_invalid(kube):
    node = change_mig(kube, A100, "all-balanced")
    assert gpu_labels(node, "gpu.product", "gpu.count") == {
        "gpu.product": "NVIDIA-A100-PCIE-40GB-MIG-INVALID",
        "gpu.count": "0",
    }
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "0"}


def test_all_disabled_gives_the_full_gpus_back(kube):
    change_mig(kube, A100, "all-3g.20gb")
    node = change_mig(kube, A100, "all-disabled")
    assert gpu_labels(node, "gpu.product", "gpu.count", "mig.config.state") == {
        "gpu.product": "NVIDIA-A100-PCIE-40GB",
        "gpu.count": "2",
        "mig.config.state": "success",
    }
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "2"}


def assert_failed(kube, node_name, config_name, reason_text):
    node = change_mig(kube, node_name, config_name)
    assert labels(node)["nvidia.com/mig.config.state"] == "failed"
    event = wait_for_node_event(kube, node_name, "MigConfigFailed")
    assert reason_text in event["message"]
    return node


def test_gpu_without_mig_has_no_mig_manager_and_keeps_the_label_unhandled(kube, profile):
    # The operator deploys mig-manager only on MIG-capable nodes (nvidia.com/gpu.deploy.mig-manager).
    assert "nvidia.com/gpu.deploy.mig-manager" not in labels(read_node(kube, T4))
    label_node(kube, T4, {"nvidia.com/mig.config": "all-1g.5gb"})
    # A later change the simulator does act on: once it shows, the MIG label was seen and left alone.
    put_configmap(kube, profile.operator_namespace, "time-slicing-config", {"x2": TIME_SLICED_X2})
    patch_policy(kube, profile, {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "x2"}}})
    node = wait_for_node(kube, T4, lambda node: labels(node).get("nvidia.com/gpu.replicas") == "2")
    assert "nvidia.com/mig.config.state" not in labels(node)
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "2"}


TIME_SLICED_X2 = yaml.safe_dump(
    {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}
)


def test_unknown_config_name_fails(kube):
    assert_failed(kube, A100, "all-everything", "selected mig-config not present: all-everything")


def test_profile_of_another_model_fails(kube):
    # all-3g.40gb has no device-filter in the shipped config: mig-parted tries it on the A100 40GB too.
    node = assert_failed(kube, A100, "all-3g.40gb", 'MIG profile "3g.40gb" not found on this GPU')
    assert gpu_labels(node, "gpu.product")["gpu.product"] == "NVIDIA-A100-PCIE-40GB"


def test_layout_beyond_the_gpu_fails(kube, profile):
    use_custom_config(
        kube,
        profile,
        {"too-much": [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2, "1g.5gb": 2}}]},
    )
    assert_failed(kube, A100, "too-much", "all orderings failed")


def test_gpu_pod_still_running_makes_the_change_fail(kube, namespace):
    discard(kube.core.create_namespaced_pod, namespace, gpu_pod("trainer", A100))
    wait_for_pod(kube, namespace, "trainer", lambda pod: pod["status"].get("phase") == "Running")

    node = assert_failed(kube, A100, "all-1g.5gb", "In use by another client")
    assert nvidia_resources(node, "allocatable") == {"nvidia.com/gpu": "2"}


CUSTOM_CONFIG = "custom-mig-parted-config"


def custom_mig_config(instances):
    return yaml.safe_dump(
        {
            "version": "v1",
            "mig-configs": {
                "all-disabled": [{"devices": "all", "mig-enabled": False}],
                "two-halves": [
                    {
                        "device-filter": ["0x20F110DE"],
                        "devices": "all",
                        "mig-enabled": True,
                        "mig-devices": {"3g.20gb": instances},
                    }
                ],
            },
        }
    )


def use_custom_config(kube, profile, configs=None, text=None):
    """Store a custom mig-parted ConfigMap and point the policy's migManager at it."""
    if text is None:
        text = yaml.safe_dump({"version": "v1", "mig-configs": configs})
    put_configmap(kube, profile.operator_namespace, CUSTOM_CONFIG, {"config.yaml": text})
    patch_policy(kube, profile, {"migManager": {"config": {"name": CUSTOM_CONFIG, "default": "all-disabled"}}})


HALVES = [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]
UNPARSABLE_CONFIGS = {
    # mig-parted is strict where the device plugin is lenient (mig-parted-rules.md section 1).
    "unknown top-level field": (
        {"version": "v1", "mig-configs": {"halves": HALVES}, "flags": {}},
        "unexpected field: flags",
    ),
    "unknown entry field": (
        {"version": "v1", "mig-configs": {"halves": [dict(HALVES[0], devicez="all")]}},
        "unexpected field: devicez",
    ),
    "no version": ({"mig-configs": {"halves": HALVES}}, "missing 'version' field"),
    "version as a number": ({"version": 1, "mig-configs": {"halves": HALVES}}, "cannot unmarshal number"),
    "another version": ({"version": "v2", "mig-configs": {"halves": HALVES}}, "unknown version: v2"),
    "config name in mig-devices": (
        {
            "version": "v1",
            "mig-configs": {"halves": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb.me": 1}}]},
        },
        "mig-devices",
    ),
    "devices as a word": (
        {"version": "v1", "mig-configs": {"halves": [dict(HALVES[0], devices="every")]}},
        "invalid string input for 'devices': every",
    ),
    "MIG devices while disabled": (
        {
            "version": "v1",
            "mig-configs": {"halves": [{"devices": "all", "mig-enabled": False, "mig-devices": {"3g.20gb": 2}}]},
        },
        "included when 'mig-enabled' is false",
    ),
}


@pytest.mark.parametrize("document, reason", UNPARSABLE_CONFIGS.values(), ids=list(UNPARSABLE_CONFIGS))
def test_config_mig_parted_cannot_parse_fails(kube, profile, document, reason):
    use_custom_config(kube, profile, text=yaml.safe_dump(document))
    node = assert_failed(kube, A100, "halves", reason)
    assert gpu_labels(node, "gpu.product", "gpu.count") == {"gpu.product": "NVIDIA-A100-PCIE-40GB", "gpu.count": "2"}


def test_custom_mig_configmap_and_its_edits_need_a_new_label(kube, profile):
    put_configmap(kube, profile.operator_namespace, CUSTOM_CONFIG, {"config.yaml": custom_mig_config(2)})
    patch_policy(kube, profile, {"migManager": {"config": {"name": CUSTOM_CONFIG, "default": "all-disabled"}}})
    node = change_mig(kube, A100, "two-halves")
    assert gpu_labels(node, "gpu.product", "gpu.count") == {
        "gpu.product": "NVIDIA-A100-PCIE-40GB-MIG-3g.20gb",
        "gpu.count": "4",
    }

    # #891: an edit under an unchanged name is not reloaded; a node labelled afterwards reads it.
    put_configmap(kube, profile.operator_namespace, CUSTOM_CONFIG, {"config.yaml": custom_mig_config(1)})
    other = change_mig(kube, "gpu-a100-1", "two-halves")
    assert gpu_labels(other, "gpu.count")["gpu.count"] == "2"
    assert gpu_labels(read_node(kube, A100), "gpu.count")["gpu.count"] == "4"


def test_fail_knob_fails_the_next_change_once(kube):
    annotate_node(kube, A100, {"sim.gpushare.k8s/mig-fail": "simulated driver error"})
    assert_failed(kube, A100, "all-1g.5gb", "simulated driver error")
    assert "sim.gpushare.k8s/mig-fail" not in read_node(kube, A100)["metadata"]["annotations"]

    node = change_mig(kube, A100, "all-2g.10gb")
    assert labels(node)["nvidia.com/mig.config.state"] == "success"


def test_stuck_knob_leaves_the_node_pending_and_paused(kube):
    annotate_node(kube, A100, {"sim.gpushare.k8s/mig-stuck": "true"})
    label_node(kube, A100, {"nvidia.com/mig.config": "all-1g.5gb"})
    wait_for_node(kube, A100, state_is("pending"))
    # Another node's change, started later, completes while the stuck one stays where it was.
    change_mig(kube, "gpu-a100-1", "all-1g.5gb")
    stuck = read_node(kube, A100)
    assert labels(stuck)["nvidia.com/mig.config.state"] == "pending"
    assert set(deploy_labels(stuck).values()) == {"paused-for-mig-change"}

    annotate_node(kube, A100, {"sim.gpushare.k8s/mig-stuck": None})
    wait_for_node(kube, A100, state_is("success"))
