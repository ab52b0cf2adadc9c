#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_timeslicing
short_description: Share NVIDIA GPUs between pods by time-slicing
version_added: 0.1.0
description:
  - Writes a time-slicing profile into the GPU Operator's device-plugin ConfigMap (merging, never
    dropping other keys), points the ClusterPolicy at it (patching only C(spec.devicePlugin.config)),
    labels the chosen nodes, restarts the device plugin when it would otherwise not notice, and waits
    until every node advertises C(count x replicas) GPUs.
  - Refuses, before writing anything, replicas below 2, resource names the device plugin refuses (longer than
    63 characters, not a lowercase DNS subdomain after C(nvidia.com/), a C(+) instead of C(.)), a profile key
    that already holds MPS, node lists that match nothing, and nodes whose GPUs are in MIG mode when sharing
    C(nvidia.com/gpu).
  - A well-formed resource that matches no device on a node (C(nvidia.com/mig-1g.10gb) on a node without that
    MIG profile, or without the C(mixed) strategy) is accepted by the device plugin and silently ignored; the
    module warns about it and does not wait for it.
  - Time-slicing gives no memory or fault isolation between the pods sharing a GPU.
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
  resources:
    description:
      - Resources to share. C(nvidia.com/gpu) for whole GPUs, or mixed-strategy MIG resources
        such as C(nvidia.com/mig-1g.10gb), with a profile's C(+) written C(.) (C(nvidia.com/mig-1g.10gb.me)).
        The C(nvidia.com/) prefix may be omitted.
    type: list
    elements: str
    default: [nvidia.com/gpu]
  config_key:
    description:
      - Name of the profile. Default C(time-slicing).
    type: str
"""

EXAMPLES = r"""
# Select nodes by a label that sharing does not change: nvidia.com/gpu.product gains -SHARED.
- name: Four pods per GPU on the T4 machine pool
  gpushare.k8s.gpu_timeslicing:
    replicas: 4
    nodes:
      selector: cluster-api/accelerator=Tesla-T4

- name: Every GPU node shares its GPUs by 2, pods opt in through nvidia.com/gpu.shared
  gpushare.k8s.gpu_timeslicing:
    config_key: shared-by-2
    replicas: 2
    rename_by_default: true
    make_default: true

- name: Two pods per MIG 1g.10gb device (mixed strategy)
  gpushare.k8s.gpu_timeslicing:
    config_key: mig-1g-x2
    replicas: 2
    resources: [nvidia.com/mig-1g.10gb]
    nodes:
      names: [gpu-h100-0]

- name: Stop time-slicing everywhere
  gpushare.k8s.gpu_timeslicing:
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
    sharing: {"timeSlicing": {"renameByDefault": false, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}
nodes:
  description:
    - Per affected node, what it advertised before and, after waiting, what it advertises now, and whether it
      rebooted meanwhile (C(rebooted), its C(status.nodeInfo.bootID) changed).
  returned: always
  type: dict
  sample:
    gpu-t4-0:
      before: {"product": "Tesla-T4", "count": 1, "replicas": 1, "sharing_strategy": "none",
               "allocatable": {"nvidia.com/gpu": 1}}
      after: {"product": "Tesla-T4-SHARED", "count": 1, "replicas": 4, "sharing_strategy": "time-slicing",
              "allocatable": {"nvidia.com/gpu": 4}}
      rebooted: false
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import PROFILE_REQUIRED_IF, TIMESLICING_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.run.sharing import run_gpu_timeslicing


def main():
    GpuShareModule(TIMESLICING_ARG_SPEC, required_if=PROFILE_REQUIRED_IF).run(run_gpu_timeslicing)


if __name__ == "__main__":
    main()
