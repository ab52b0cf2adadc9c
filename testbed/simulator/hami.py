"""HAMi on one node (reference section 5): its device plugin replaces NVIDIA's (with the ClusterPolicy's
``spec.devicePlugin.enabled: false``) on the nodes its DaemonSet selects (``gpu=on``), and its optional mock
device plugin turns what the device plugin registered into node resources.

What a user can observe, from Project-HAMi/HAMi v2.9.0 (3a006c6ae2f077a2683df7805c43656c07f6dc15) and
Project-HAMi/mock-device-plugin (017d518577a95cd178a2c2ba7005d7c7a9e2174e, release v1.0.1):

- The device plugin reads ``device-config.yaml`` of the ConfigMap mounted as its ``device-config`` volume
  (``<release>-scheduler-device``, charts/hami/templates/scheduler/device-configmap.yaml) when it starts; the
  chart restarts it when that changes (a checksum annotation on the pod template).
- It registers ``nvidia.com/gpu`` (``nvidia.resourceCountName``) with the kubelet as ``deviceSplitCount``
  devices per GPU (pkg/device-plugin/nvidiadevice/nvinternal/rm/devices.go ``GetPluginDevices``).
- It describes each GPU in the node annotation ``hami.io/node-nvidia-register``, a JSON list
  (pkg/device/devices.go ``MarshalNodeDevices``; values from
  pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go ``getAPIDevices``): ``count`` = deviceSplitCount,
  ``devmem`` = the GPU's memory in MiB x deviceMemoryScaling (truncated to an integer), ``devcore`` =
  100 x deviceCoreScaling (truncated), ``type`` = the NVML name, prefixed ``NVIDIA-`` unless it starts with
  ``NVIDIA``, ``mode`` = ``hami-core``.
- ``nvidia.com/gpumem`` and ``nvidia.com/gpucores`` are not node resources: HAMi's scheduler extender manages
  them (``ignoredByScheduler``, charts/hami/templates/_helpers.tpl ``managedResources``). Only where the mock
  device plugin runs does the node advertise the sums over its GPUs: ``nvidia.com/gpumem`` = sum of devmem
  (divided by ``memoryFactor`` when above 1), ``nvidia.com/gpucores`` = sum of devcore,
  ``nvidia.com/gpumem-percentage`` = 100 per GPU (mock-device-plugin
  internal/pkg/api/device/nvidia/device.go ``GetResource``).

Not simulated: per-node overrides (``config.json`` of ``hami-device-plugin``), MIG mode, the scheduler's
handshake annotation ``hami.io/node-handshake``, scheduling itself, and the kubelet keeping a stopped plugin's
resource for a grace period.
"""

import json
import uuid

import yaml

from testbed.simulator import nvml
from testbed.simulator.names import GPU_RESOURCE, HAMI_DEVICE_PLUGIN, HAMI_MOCK_DEVICE_PLUGIN

COMPONENT_LABEL = "app.kubernetes.io/component"
DEVICE_CONFIG_VOLUME = "device-config"
DEVICE_CONFIG_KEY = "device-config.yaml"
HAMI_CORE_MODE = "hami-core"
# HAMi's defaults for what device-config.yaml may leave out (charts/hami/values.yaml, device-configmap.yaml).
DEFAULTS = {
    "resourceCountName": GPU_RESOURCE,
    "resourceMemoryName": "nvidia.com/gpumem",
    "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
    "resourceCoreName": "nvidia.com/gpucores",
    "deviceSplitCount": 10,
    "deviceMemoryScaling": 1,
    "deviceCoreScaling": 1,
    "memoryFactor": 1,
}
# Stable per node and GPU index, so the annotation does not change between reconciles.
GPU_UUID_NAMESPACE = uuid.UUID("1b4e28ba-2fa1-11d2-883f-0016d3cca427")


def running_pod(pods, component):
    """The first running (not terminating) pod of ``component`` among ``pods``, else None."""
    for pod in pods:
        if (
            (pod["metadata"].get("labels") or {}).get(COMPONENT_LABEL) == component
            and not pod["metadata"].get("deletionTimestamp")
            and (pod.get("status") or {}).get("phase") == "Running"
        ):
            return pod
    return None


def device_plugin_pod(pods):
    return running_pod(pods, HAMI_DEVICE_PLUGIN)


def mock_device_plugin_runs(pods):
    return running_pod(pods, HAMI_MOCK_DEVICE_PLUGIN) is not None


def device_config_name(pod):
    """The ConfigMap the device plugin's ``device-config`` volume mounts, else None."""
    for volume in pod["spec"].get("volumes") or []:
        if volume["name"] == DEVICE_CONFIG_VOLUME and volume.get("configMap"):
            return volume["configMap"]["name"]
    return None


def start(pod, configmap):
    """What the device plugin in ``pod`` runs with once started on ``configmap`` (stored on the node)."""
    text = (configmap.get("data") or {}).get(DEVICE_CONFIG_KEY) or ""
    nvidia = (yaml.safe_load(text) or {}).get("nvidia") or {}
    record = {key: nvidia.get(key, default) for key, default in DEFAULTS.items()}
    record["pod"] = pod["metadata"]["uid"]
    return record


def _gpu_type(hardware):
    name = nvml.gpu_of(hardware).nvml_name
    return name if name.startswith("NVIDIA") else "NVIDIA-" + name


def devices(node_name, hardware, record):
    """The GPUs as the device plugin registers them (``DeviceInfo``), in ``MarshalNodeDevices``' field order."""
    memory = hardware["memory_mib"]
    if record["deviceMemoryScaling"] != 1:
        memory = int(memory * record["deviceMemoryScaling"])
    listed = []
    for index in range(hardware["count"]):
        device = {"id": "GPU-%s" % uuid.uuid5(GPU_UUID_NAMESPACE, "%s/%d" % (node_name, index))}
        if index:  # omitempty: Go leaves out a zero index (and numa, devicevendor, custominfo, migtemplate)
            device["index"] = index
        device.update(
            count=record["deviceSplitCount"],
            devmem=memory,
            devcore=int(record["deviceCoreScaling"] * 100),
            type=_gpu_type(hardware),
            mode=HAMI_CORE_MODE,
            health=True,
            devicepairscore={},
        )
        listed.append(device)
    return listed


def register_annotation(node_name, hardware, record):
    """The value of ``hami.io/node-nvidia-register``: Go's compact JSON of the devices."""
    return json.dumps(devices(node_name, hardware, record), separators=(",", ":"))


def resources(node_name, hardware, record, mock_runs):
    """The node resources HAMi's plugins register: ``{name: quantity}`` (capacity and allocatable alike)."""
    listed = devices(node_name, hardware, record)
    registered = {record["resourceCountName"]: str(hardware["count"] * record["deviceSplitCount"])}
    if mock_runs:
        memory = sum(device["devmem"] for device in listed)
        if record["memoryFactor"] > 1:
            memory //= record["memoryFactor"]
        registered[record["resourceMemoryName"]] = str(memory)
        registered[record["resourceCoreName"]] = str(sum(device["devcore"] for device in listed))
        registered[record["resourceMemoryPercentageName"]] = str(100 * len(listed))
    return registered
