"""Label, annotation and object names shared by the seeding, the simulator and its tests.

NVIDIA's names are those of GPU Feature Discovery, the device plugin and mig-manager (reference
file, sections 1-4); ``sim.gpushare.k8s/*`` names belong to the simulator alone.
"""

NVIDIA = "nvidia.com/"
GPU_RESOURCE = "nvidia.com/gpu"
SHARED_SUFFIX = ".shared"

# Physical truth of a node (JSON), written once by the seeding.
HARDWARE_ANNOTATION = "sim.gpushare.k8s/hardware"
# What the simulated operands last applied on a node (JSON); the simulator keeps no other state.
APPLIED_ANNOTATION = "sim.gpushare.k8s/applied"
# Test knobs (DESIGN.md, "The simulator's contract").
MIG_FAIL_ANNOTATION = "sim.gpushare.k8s/mig-fail"
MIG_STUCK_ANNOTATION = "sim.gpushare.k8s/mig-stuck"

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_STATE_LABEL = "nvidia.com/mig.config.state"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
DEPLOY_LABEL_PREFIX = "nvidia.com/gpu.deploy."
# Operands mig-manager stops while it repartitions (reconfigure-mig.sh).
MIG_PAUSED_COMPONENTS = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "nvsm")
PAUSED_FOR_MIG_CHANGE = "paused-for-mig-change"

# Operand DaemonSets (reference section 3) and the node label that gates each.
DEVICE_PLUGIN_DAEMONSET = "nvidia-device-plugin-daemonset"
MPS_CONTROL_DAEMONSET = "nvidia-device-plugin-mps-control-daemon"
OPERAND_DAEMONSETS = {
    "nvidia-driver-daemonset": "driver",
    "nvidia-container-toolkit-daemonset": "container-toolkit",
    DEVICE_PLUGIN_DAEMONSET: "device-plugin",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "nvidia-mig-manager": "mig-manager",
    "nvidia-dcgm-exporter": "dcgm-exporter",
    MPS_CONTROL_DAEMONSET: None,  # gated by nvidia.com/mps.capable instead
    "nvidia-operator-validator": "operator-validator",
}
DEPLOYED_COMPONENTS = (
    "driver",
    "container-toolkit",
    "device-plugin",
    "gpu-feature-discovery",
    "mig-manager",
    "dcgm-exporter",
    "dcgm",
    "nvsm",
    "operator-validator",
)

# The operator passes these to the device plugin's pod template; changing them restarts the plugin.
CONFIG_NAME_ENV = "CONFIG_FILE_NAME"
CONFIG_DEFAULT_ENV = "DEFAULT_CONFIG"
MIG_STRATEGY_ENV = "MIG_STRATEGY"

DEFAULT_MIG_CONFIGMAP = "default-mig-parted-config"
MIG_CONFIG_KEY = "config.yaml"

NODE_EVENT_NAMESPACE = "default"
INVALID_DEVICE_PLUGIN_CONFIG = "InvalidDevicePluginConfig"
MIG_CONFIG_FAILED = "MigConfigFailed"


def is_gfd_label(key):
    """True for the labels GPU Feature Discovery (with the device plugin's resources) derives.

    Labels set by users (``device-plugin.config``, ``mig.config``), by mig-manager
    (``mig.config.state``) or by the operator (``gpu.deploy.*``, ``gpu.present``) are not.
    """
    if key.startswith(DEPLOY_LABEL_PREFIX) or key == GPU_PRESENT_LABEL:
        return False
    return key.startswith(("nvidia.com/gpu.", "nvidia.com/mig-", "nvidia.com/cuda.", "nvidia.com/gfd.")) or key in (
        "nvidia.com/mig.capable",
        "nvidia.com/mig.strategy",
        "nvidia.com/mps.capable",
    )
