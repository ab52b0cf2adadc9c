#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_mps
short_description: Share NVIDIA GPUs between pods with CUDA MPS
version_added: 0.1.0
description:
  - Writes an MPS profile into the GPU Operator's device-plugin ConfigMap (merging, never dropping
    other keys), points the ClusterPolicy at it, labels the chosen nodes, restarts the device plugin
    when needed, and waits until every node advertises C(count x replicas) GPUs with
    C(nvidia.com/gpu.sharing-strategy=mps) and C(nvidia.com/mps.capable=true), and the MPS control
    daemon DaemonSet runs on them.
  - Unlike time-slicing, MPS caps each client's share of the GPU's threads (C(100 // replicas) percent)
    and pinned memory (C(memory // replicas) MiB); the module returns those limits per node.
  - Refuses, before writing anything, replicas below 2 or above the MPS control daemon's limit (48 clients per
    GPU, 16 on GPUs below compute capability 7.5 as the C(nvidia.com/gpu.compute.major/minor) labels say), nodes
    with MIG enabled (MPS is not supported on MIG devices), the C(mixed) MIG strategy (the device plugin refuses
    MPS with it even on GPUs without MIG; the fix is the strategy), and a profile key that already holds
    time-slicing.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.device_plugin_profile
  - gpushare.k8s.operator
  - gpushare.k8s.nodes
  - gpushare.k8s.attributes
options:
  config_key:
    description:
      - Name of the profile. Default C(mps).
    type: str
notes:
  - With MPS the device plugin rejects pods asking for more than one C(nvidia.com/gpu) unless
    I(fail_requests_greater_than_one=false), which only device plugin v0.18 and later honour.
"""

EXAMPLES = r"""
- name: Ten MPS clients per GPU on the A100 nodes
  gpushare.k8s.gpu_mps:
    replicas: 10
    nodes:
      selector: nvidia.com/gpu.machine=a2-highgpu-2g

- name: MPS with an explicit opt-in resource (nvidia.com/gpu.shared)
  gpushare.k8s.gpu_mps:
    replicas: 4
    rename_by_default: true
    nodes:
      names: [gpu-a100-0]

- name: Stop MPS on every node
  gpushare.k8s.gpu_mps:
    state: absent
"""

RETURN = r"""
# BEGIN RETURN FRAGMENT gpushare.k8s.operator: make docs writes it from the fragment, edit that
cluster_policy:
  description: Name of the ClusterPolicy used.
  returned: always
  type: str
  sample: gpu-cluster-policy
namespace:
  description: Namespace of the GPU Operator's operands.
  returned: always
  type: str
  sample: nvidia-gpu-operator
# END RETURN FRAGMENT gpushare.k8s.operator
# BEGIN RETURN FRAGMENT gpushare.k8s.device_plugin_profile: make docs writes it from the fragment, edit that
config_map:
  description: The device-plugin ConfigMap.
  returned: always
  type: str
  sample: time-slicing-config
config_key:
  description: The profile's key in the ConfigMap.
  returned: always
  type: str
  sample: time-slicing
restarted:
  description: Whether the device-plugin DaemonSet was (or in check mode would be) restarted.
  returned: always
  type: bool
# END RETURN FRAGMENT gpushare.k8s.device_plugin_profile
# BEGIN RETURN FRAGMENT gpushare.k8s.drain: make docs writes it from the fragment, edit that
evicted:
  description: Per node, the GPU pods evicted by I(drain) (in check mode, those that would be).
  returned: always
  type: dict
  sample: {"gpu-a100-0": ["team-a/trainer-0"]}
cordoned:
  description: Nodes cordoned for the change (and uncordoned after it succeeded).
  returned: always
  type: list
  elements: str
# END RETURN FRAGMENT gpushare.k8s.drain
config:
  description: The device-plugin configuration written under I(config_key) (null when I(state=absent)).
  returned: always
  type: dict
  sample:
    version: v1
    sharing: {"mps": {"renameByDefault": false, "resources": [{"name": "nvidia.com/gpu", "replicas": 10}]}}
nodes:
  description:
    - Per affected node, what it advertised before and after, whether it rebooted meanwhile (C(rebooted), its
      C(status.nodeInfo.bootID) changed) and the per-client MPS limits.
  returned: always
  type: dict
  sample:
    gpu-a100-0:
      before: {"product": "NVIDIA-A100-PCIE-40GB", "count": 2, "replicas": 1, "sharing_strategy": "none"}
      after: {"product": "NVIDIA-A100-PCIE-40GB-SHARED", "count": 2, "replicas": 10, "sharing_strategy": "mps",
              "mps_capable": true}
      rebooted: false
      mps_limits: {"active_thread_percentage": 10, "pinned_device_memory_limit_mib": 4096}
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import MPS_ARG_SPEC, PROFILE_REQUIRED_IF
from ansible_collections.gpushare.k8s.plugins.module_utils.run.sharing import run_gpu_mps


def main():
    GpuShareModule(MPS_ARG_SPEC, required_if=PROFILE_REQUIRED_IF).run(run_gpu_mps)


if __name__ == "__main__":
    main()
