# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``nvidia-smi -L`` and ``nvidia-smi mig -lgi`` print, parsed, and the operand pod of a node they run in.

Pure: no I/O. The formats, as real GPUs print them (copies and their sources in
``tests/unit/plugins/module_utils/data/nvidia/README.md``):

``nvidia-smi -L``: one line per GPU, its MIG devices indented under it. Drivers from R470 on print
``MIG-<uuid>`` device UUIDs with a padded profile column; older ones ``MIG-GPU-<gpu uuid>/<GI>/<CI>``::

    GPU 0: NVIDIA H100 PCIe (UUID: GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02)
      MIG 3g.40gb     Device  0: (UUID: MIG-da06d78f-7534-56a0-a062-62fef012be91)
    GPU 0: A100-SXM4-40GB (UUID: GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f)
      MIG 1g.5gb Device 0: (UUID: MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/7/0)

``nvidia-smi mig -lgi``: a table, one row per GPU instance (the column widths vary between drivers)::

    | GPU   Name             Profile  Instance   Placement  |
    |                          ID       ID       Start:Size |
    |=======================================================|
    |   0  MIG 1g.10gb         19        7          0:1     |

On a GPU without MIG it prints ``No MIG-enabled devices found.``, and with MIG on but no instance
``No GPU instances found: Not Found`` (both with a non-zero exit status): no instances, not a failure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import is_profile_string

# The operator's driver DaemonSet; on OpenShift's Driver Toolkit path and with precompiled drivers it
# makes one per kernel or RHCOS version, named with that version as a suffix, hence a prefix.
DRIVER_DAEMONSET_PREFIX = "nvidia-driver-daemonset"
# Where the driver is preinstalled on the host the operator runs no driver pod; its toolkit pod runs there.
TOOLKIT_DAEMONSET = "nvidia-container-toolkit-daemonset"

LIST_GPUS_COMMAND = ("nvidia-smi", "-L")
LIST_GPU_INSTANCES_COMMAND = ("nvidia-smi", "mig", "-lgi")

# What `nvidia-smi -L` prints when the driver sees no GPU.
NO_GPU_MESSAGE = "No devices were found"
# What `nvidia-smi mig -lgi` prints instead of its table when there is nothing to list.
NO_GPU_INSTANCE_MESSAGES = ("No MIG-enabled devices found", "No GPU instances found")

_GPU_LINE = re.compile(r"^GPU (\d+): (.+) \(UUID: (GPU-[^)\s]+)\)$")
_MIG_DEVICE_LINE = re.compile(r"^MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)\s]+)\)$")
_TABLE_BORDER = re.compile(r"^\+-+\+$")
_TABLE_RULE = re.compile(r"^\|=+\|$")
_TABLE_HEADINGS = (
    re.compile(r"^GPU instances:$"),
    re.compile(r"^GPU\s+Name\s+Profile\s+Instance\s+Placement$"),
    re.compile(r"^ID\s+ID\s+Start:Size$"),
)
_GPU_INSTANCE_ROW = re.compile(r"^(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)$")


def _owner_daemonset(pod):
    for owner in pod["metadata"].get("ownerReferences") or []:
        if owner.get("kind") == "DaemonSet":
            return owner.get("name") or ""
    return ""


def nvidia_smi_pod(pods, node, namespace):
    """The pod of ``pods`` (dicts, as the API lists them) to run nvidia-smi in on ``node``: the driver pod,
    else the toolkit pod.

    Raises GpuShareError naming the DaemonSets looked for when neither runs there, or the pod's phase
    when the one found is not Running (a driver pod that is not running means no driver: the toolkit pod
    would not see one either).
    """
    on_node = [
        pod for pod in pods if pod["spec"].get("nodeName") == node and not pod["metadata"].get("deletionTimestamp")
    ]
    for matches in (
        lambda owner: owner.startswith(DRIVER_DAEMONSET_PREFIX),
        lambda owner: owner == TOOLKIT_DAEMONSET,
    ):
        candidates = sorted(
            (pod for pod in on_node if matches(_owner_daemonset(pod))), key=lambda pod: pod["metadata"]["name"]
        )
        running = [pod for pod in candidates if (pod.get("status") or {}).get("phase") == "Running"]
        if running:
            return running[0]
        if candidates:
            pod = candidates[0]
            raise GpuShareError(
                "pod %s/%s on node %s is %s, not Running: nvidia-smi cannot run in it"
                % (namespace, pod["metadata"]["name"], node, (pod.get("status") or {}).get("phase") or "not started")
            )
    raise GpuShareError(
        "No pod of the DaemonSet %s (the operator's driver) or %s (preinstalled drivers) runs on node %s in "
        "namespace %s: check that the GPU Operator deploys its operands there (the node's "
        "nvidia.com/gpu.deploy.driver and nvidia.com/gpu.deploy.container-toolkit labels, taints and tolerations)."
        % (DRIVER_DAEMONSET_PREFIX + "*", TOOLKIT_DAEMONSET, node, namespace)
    )


def _unexpected(command, number, line):
    return GpuShareError(
        "'%s' printed something this module does not know, on line %d: %r" % (" ".join(command), number, line)
    )


def _profile(command, number, line, profile):
    if not is_profile_string(profile):
        raise _unexpected(command, number, line)
    return profile


def parse_gpu_list(text):
    """``nvidia-smi -L`` -> [{index, name, uuid, mig_devices: [{index, profile, uuid}]}], in printed order.

    Raises GpuShareError saying that no GPU was listed, or naming the first line that is neither a GPU nor
    a MIG device under one.
    """
    stripped = text.strip()
    if not stripped or stripped.startswith(NO_GPU_MESSAGE):
        raise GpuShareError("'%s' listed no GPU: %r" % (" ".join(LIST_GPUS_COMMAND), " ".join(stripped.split())))
    gpus = []
    for number, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line:
            continue
        gpu = _GPU_LINE.match(line)
        if gpu:
            gpus.append(dict(index=int(gpu.group(1)), name=gpu.group(2), uuid=gpu.group(3), mig_devices=[]))
            continue
        device = _MIG_DEVICE_LINE.match(line)
        if not device or not gpus:
            raise _unexpected(LIST_GPUS_COMMAND, number, line)
        gpus[-1]["mig_devices"].append(
            dict(
                index=int(device.group(2)),
                profile=_profile(LIST_GPUS_COMMAND, number, line, device.group(1)),
                uuid=device.group(3),
            )
        )
    return gpus


def parse_gpu_instances(text):
    """``nvidia-smi mig -lgi`` -> [{gpu, profile, profile_id, instance_id, placement: {start, size}}], in
    printed order; [] when it says MIG is off or there is no GPU instance.

    Raises GpuShareError naming the first line that is not part of the table.
    """
    stripped = text.strip()
    if stripped.startswith(NO_GPU_INSTANCE_MESSAGES):
        return []
    instances = []
    for number, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line or _TABLE_BORDER.match(line) or _TABLE_RULE.match(line):
            continue
        if not (line.startswith("|") and line.endswith("|") and len(line) > 1):
            raise _unexpected(LIST_GPU_INSTANCES_COMMAND, number, line)
        cell = line[1:-1].strip()
        if any(heading.match(cell) for heading in _TABLE_HEADINGS):
            continue
        row = _GPU_INSTANCE_ROW.match(cell)
        if not row:
            raise _unexpected(LIST_GPU_INSTANCES_COMMAND, number, line)
        gpu, profile, profile_id, instance_id, start, size = row.groups()
        instances.append(
            dict(
                gpu=int(gpu),
                profile=_profile(LIST_GPU_INSTANCES_COMMAND, number, line, profile),
                profile_id=int(profile_id),
                instance_id=int(instance_id),
                placement=dict(start=int(start), size=int(size)),
            )
        )
    if not instances:
        raise GpuShareError(
            "'%s' printed neither its GPU-instance table nor one of %s: %r"
            % (" ".join(LIST_GPU_INSTANCES_COMMAND), ", ".join(NO_GPU_INSTANCE_MESSAGES), " ".join(stripped.split()))
        )
    return instances
