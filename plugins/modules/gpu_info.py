#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_info
short_description: Report the GPU sharing state of a Kubernetes cluster
version_added: 0.1.0
description:
  - Reads, per GPU node, what NVIDIA's GPU Feature Discovery and device plugin advertise (product,
    count, memory, replicas, sharing strategy, MIG and MPS state, the device-plugin profile label,
    capacity and allocatable of every C(nvidia.com/*) resource, taints) and the GPU pods running
    there with what they request.
  - Per node also the GPU model the collection's catalog matches (C(gpu_model); null when unknown), its
    compute capability, its PCI device ID when Node Feature Discovery labels it, and every MIG device the
    mixed strategy advertises, attributes included (C(mig_resources), keyed by profile, so C(1g.10gb+me) for
    the resource C(nvidia.com/mig-1g.10gb.me)).
  - Reports the ClusterPolicy's sharing fields, the profiles of its device-plugin ConfigMap, and
    findings, such as capacity that does not equal count x replicas, a label naming a missing
    profile, MIG changes pending or failed, C(paused-for-mig-change) labels left behind, a policy
    naming a ConfigMap that does not exist, or taints the operator does not tolerate.
  - Makes one LIST of nodes and one of pods, whatever the size of the fleet. Never changes anything.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.attributes.read_only
options:
  node_selector:
    description:
      - Only report nodes matching this label selector.
    type: str
"""

EXAMPLES = r"""
- name: Read the GPU inventory
  gpushare.k8s.gpu_info:
  register: gpus

- name: Fail when something looks wrong
  ansible.builtin.assert:
    that: gpus.findings | length == 0
    fail_msg: "{{ gpus.findings | map(attribute='message') | list }}"

- name: Nodes that time-slice their GPUs
  ansible.builtin.debug:
    msg: >-
      {{ gpus.nodes | dict2items | selectattr('value.sharing_strategy', 'equalto', 'time-slicing')
         | map(attribute='key') | list }}
"""

RETURN = r"""
cluster_policy:
  description: The ClusterPolicy's sharing fields; null when the GPU Operator is not installed.
  returned: always
  type: dict
  sample:
    name: gpu-cluster-policy
    device_plugin_enabled: true
    device_plugin_config: {"name": "time-slicing-config", "default": null}
    mig_strategy: single
    mig_manager_config: {"name": "default-mig-parted-config", "default": "all-disabled"}
    daemonset_tolerations: [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
namespace:
  description: Namespace of the operator's operands, null when not found.
  returned: always
  type: str
profiles:
  description: The device-plugin ConfigMap's profiles, by key.
  returned: always
  type: dict
  sample: {"time-slicing": {"method": "time-slicing", "rename_by_default": false, "resources": {"nvidia.com/gpu": 4}}}
nodes:
  description:
    - Per GPU node, what it advertises, the GPU pods on it and its findings.
    - C(gpu_pods) are the running or pending pods that request C(nvidia.com/*) resources, outside the GPU
      Operator's namespace (its operands and validators are not workloads).
    - C(hami_devices) is HAMi's description of the node's GPUs (its C(hami.io/node-nvidia-register) annotation,
      C(count) slices, C(devmem) MiB and C(devcore) percent per GPU) where HAMi's device plugin registered, else
      null; there C(nvidia.com/gpu) is compared with the slices HAMi registers, and NVIDIA's device plugin still
      running beside it is a finding.
  returned: always
  type: dict
  sample:
    gpu-t4-0:
      product: Tesla-T4-SHARED
      base_product: Tesla-T4
      count: 1
      memory_mib: 15360
      replicas: 4
      sharing_strategy: time-slicing
      mig_capable: false
      mps_capable: false
      device_plugin_config: time-slicing
      gpu_model: T4
      compute_capability: "7.5"
      pci_device_id: null
      mig_resources: {}
      capacity: {"nvidia.com/gpu": 4}
      allocatable: {"nvidia.com/gpu": 4}
      gpu_pods: [{"namespace": "ml", "name": "trainer-0", "phase": "Running", "requests": {"nvidia.com/gpu": 1}}]
      hami_devices: null
      findings: []
findings:
  description: Everything that looks wrong, each with the object it concerns.
  returned: always
  type: list
  elements: dict
  sample: [{"object": "Node/gpu-a100-0", "message": "MIG change to all-1g.5gb is pending; ..."}]
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import INFO_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.run.info import run_gpu_info


def main():
    GpuShareModule(INFO_ARG_SPEC).run(run_gpu_info)


if __name__ == "__main__":
    main()
