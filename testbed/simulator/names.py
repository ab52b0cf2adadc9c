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
# The node's GPUs change MIG mode only across a reboot (no GPU reset in place, as in a VM whose hypervisor does not
# allow one: NVIDIA's MIG user guide). mig-manager then reboots the node with WITH_REBOOT=true, or fails.
MIG_MODE_NEEDS_REBOOT_ANNOTATION = "sim.gpushare.k8s/mig-mode-needs-reboot"
# Set while the node is rebooting: when it comes back (epoch seconds). Written by mig-manager, removed by the kubelet.
DOWN_UNTIL_ANNOTATION = "sim.gpushare.k8s/down-until"

DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
GFD_TIMESTAMP_LABEL = "nvidia.com/gfd.timestamp"
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

# The ClusterPolicy section whose ``enabled`` switches each operand DaemonSet (None: always deployed), as the
# operator's isStateEnabled (NVIDIA/gpu-operator v24.3.0 controllers/state_manager.go) decides.
OPERAND_POLICY_SECTIONS = {
    "nvidia-driver-daemonset": "driver",
    "nvidia-container-toolkit-daemonset": "toolkit",
    DEVICE_PLUGIN_DAEMONSET: "devicePlugin",
    "gpu-feature-discovery": "gfd",
    "nvidia-mig-manager": "migManager",
    "nvidia-dcgm-exporter": "dcgmExporter",
    MPS_CONTROL_DAEMONSET: "devicePlugin",
    "nvidia-operator-validator": None,
}
# Every operand DaemonSet carries this label (the simulator watches them by it).
OPERAND_LABEL = ("app.kubernetes.io/part-of", "nvidia-gpu")
# The operator's Deployment, as NVIDIA's Helm chart labels it (templates/operator.yaml); its namespace is
# where the operator puts its operands (OPERATOR_NAMESPACE).
OPERATOR_DEPLOYMENT_SELECTOR = "app.kubernetes.io/component=gpu-operator"

# Node Feature Discovery labels nodes with an NVIDIA PCI device (vendor 0x10de) so; the operator treats
# such nodes as GPU nodes. Its worker's pods, as its Helm chart labels them (worker.yaml).
NFD_NVIDIA_PCI_LABEL = "feature.node.kubernetes.io/pci-10de.present"
NFD_WORKER_POD_SELECTOR = "app.kubernetes.io/name=node-feature-discovery,role=worker"

# HAMi (reference section 5): its device plugin's and mock device plugin's pods, as its chart labels them
# (charts/hami/templates/device-plugin/), and the node annotation its device plugin describes the GPUs in.
HAMI_DEVICE_PLUGIN = "hami-device-plugin"
HAMI_MOCK_DEVICE_PLUGIN = "hami-mock-device-plugin"
HAMI_POD_SELECTOR = "app.kubernetes.io/component in (%s,%s)" % (HAMI_DEVICE_PLUGIN, HAMI_MOCK_DEVICE_PLUGIN)
HAMI_REGISTER_ANNOTATION = "hami.io/node-nvidia-register"

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
