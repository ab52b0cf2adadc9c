# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HAMi (Project-HAMi/HAMi), the device plugin that can replace NVIDIA's to share NVIDIA GPUs: what it shows on a
node (reference section 5; HAMi v2.9.0, 3a006c6ae2f077a2683df7805c43656c07f6dc15).

Its device plugin registers ``nvidia.com/gpu`` as ``deviceSplitCount`` devices per GPU
(pkg/device-plugin/nvidiadevice/nvinternal/rm/devices.go ``GetPluginDevices``) and describes each GPU in the node
annotation ``hami.io/node-nvidia-register``, a JSON list (pkg/device/devices.go ``MarshalNodeDevices``) whose
entries carry ``count`` (the split count), ``devmem`` (MiB), ``devcore`` (percent) and ``type``. HAMi never removes
that annotation (it stays after an uninstall), so HAMi runs on a node only where a pod of its device plugin's
DaemonSet (``app.kubernetes.io/component: hami-device-plugin``, charts/hami/templates/device-plugin) runs. NVIDIA's
device plugin, where it still runs, registers the same ``nvidia.com/gpu``: the kubelet keeps whichever registered
last.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
DEVICE_PLUGIN_COMPONENT = "hami-device-plugin"
DEVICE_PLUGIN_POD_SELECTOR = "app.kubernetes.io/component=" + DEVICE_PLUGIN_COMPONENT


def nodes_running_device_plugin(pods):
    """The names of the nodes where a pod of HAMi's device plugin runs (any pods may be given)."""
    return set(
        pod["spec"].get("nodeName")
        for pod in pods
        if ((pod.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/component")
        == DEVICE_PLUGIN_COMPONENT
        and (pod.get("status") or {}).get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp")
    )


def registered_devices(annotations):
    """HAMi's description of a node's GPUs (a list of dicts), or None where its device plugin has not registered
    (or wrote something this version cannot read)."""
    text = (annotations or {}).get(REGISTER_ANNOTATION)
    if not text:
        return None
    try:
        devices = json.loads(text)
    except ValueError:
        return None
    if not isinstance(devices, list) or not all(isinstance(device, dict) for device in devices):
        return None
    return devices


def advertised_count(devices):
    """``nvidia.com/gpu`` HAMi registers for ``devices``: each GPU's split count, summed."""
    total = 0
    for device in devices:
        try:
            total += int(device.get("count") or 0)
        except (TypeError, ValueError):
            pass
    return total
