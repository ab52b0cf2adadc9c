#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_nvidia_smi
short_description: Read what the GPUs themselves report, with nvidia-smi on each GPU node
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -L) and C(nvidia-smi mig -lgi) on each GPU node through the Kubernetes C(pods/exec)
    API (as C(kubectl exec) does), in the GPU Operator's driver pod (DaemonSet C(nvidia-driver-daemonset),
    or one named with a version suffix), or, on a node with no driver pod because the driver is
    preinstalled on the host, in its container toolkit pod (DaemonSet C(nvidia-container-toolkit-daemonset)).
    The container is the one C(kubectl exec) picks (the pod's C(kubectl.kubernetes.io/default-container)
    annotation, C(nvidia-driver-ctr) in the driver pod, else its first container).
  - Returns per node the GPUs (index, name, UUID) with the MIG devices listed under each, and the MIG GPU
    instances (GPU, profile, profile ID, instance ID, placement). A GPU without MIG, or with MIG and no
    instance, gives an empty list of instances, not an error.
  - Where the labels and advertised resources of M(gpushare.k8s.gpu_info) say what the GPU Operator
    published, this says what the driver sees, e.g. whether a MIG layout was really created.
  - Only reads. A node that cannot be read (no driver or toolkit pod, a pod that is not running, a
    kubelet that does not answer, output this module cannot parse) gets an C(error) in its entry and fails
    the task unless O(fail_on_error=false).
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.nodes
  - gpushare.k8s.attributes.read_only
options:
  nodes:
    description:
      - The nodes to run nvidia-smi on. Default is every GPU node (labelled C(nvidia.com/gpu.present=true), or
        advertising C(nvidia.com/*) resources).
  exec_timeout:
    description:
      - Seconds each of the two commands may take on a node, connecting included; one that takes longer is
        that node's error.
    type: int
    default: 30
  fail_on_error:
    description:
      - Fail the task when a node could not be read. With V(false) the task succeeds and each such node says
        why in its C(error).
    type: bool
    default: true
notes:
  - "RBAC: besides reading the ClusterPolicy, nodes and pods, the module needs C(pods/exec) in the operator's
    namespace. Running a command is a C(create) of C(pods/exec) for C(kubectl exec); the websocket this module
    uses is authorized as C(get) before Kubernetes 1.30 and as C(create) from 1.30, so grant both verbs.
    Check mode runs the commands too: they only read."
  - The API server relays pods/exec to the kubelet of the pod's node (its kubelet port, 10250 by default); a
    control plane that cannot reach it makes every node fail with a message saying so.
"""

EXAMPLES = r"""
- name: What the drivers see
  gpushare.k8s.gpu_nvidia_smi:
  register: smi

- name: Check that gpu-h100-0 has the seven 1g.10gb instances its MIG layout asks for
  ansible.builtin.assert:
    that: >-
      smi.nodes['gpu-h100-0'].gpu_instances | selectattr('profile', 'equalto', '1g.10gb') | list | length
      == 7 * smi.nodes['gpu-h100-0'].gpus | length

- name: Some nodes only, reporting those that cannot be read instead of failing
  gpushare.k8s.gpu_nvidia_smi:
    nodes:
      selector: nvidia.com/gpu.machine=PowerEdge-XE9680
    exec_timeout: 60
    fail_on_error: false
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
nodes:
  description:
    - Per node, the pod and container the commands ran in, what they listed, and C(error) when the node
      could not be read (then what was not read is null).
    - C(gpus) from C(nvidia-smi -L), in its order; each MIG device with its profile, its device index and
      its UUID (C(MIG-<uuid>), or C(MIG-GPU-<gpu uuid>/<GI>/<CI>) from drivers before R470).
    - C(gpu_instances) from C(nvidia-smi mig -lgi); placement is the first memory slice and the number of
      slices (C(start:size) in nvidia-smi).
  returned: always
  type: dict
  sample:
    gpu-h100-0:
      pod: nvidia-gpu-operator/nvidia-driver-daemonset-x7k2p
      container: nvidia-driver-ctr
      gpus:
        - index: 0
          name: NVIDIA H100 PCIe
          uuid: GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02
          mig_devices:
            - {"index": 0, "profile": "3g.40gb", "uuid": "MIG-da06d78f-7534-56a0-a062-62fef012be91"}
            - {"index": 1, "profile": "1g.10gb", "uuid": "MIG-8aa1fc52-9818-58ec-bc64-8f0cae121bb4"}
      gpu_instances:
        - {"gpu": 0, "profile": "1g.10gb", "profile_id": 19, "instance_id": 7, "placement": {"start": 0, "size": 1}}
        - {"gpu": 0, "profile": "3g.40gb", "profile_id": 9, "instance_id": 2, "placement": {"start": 4, "size": 4}}
      error: null
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import NVIDIA_SMI_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.run.nvidia_smi import run_gpu_nvidia_smi


def main():
    GpuShareModule(NVIDIA_SMI_ARG_SPEC).run(run_gpu_nvidia_smi)


if __name__ == "__main__":
    main()
