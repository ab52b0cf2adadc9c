#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_preflight
short_description: Find what stops GPU sharing from working, with the fix for each problem
version_added: 0.1.0
description:
  - Reads the cluster and reports one finding per problem, each with its severity, the object
    concerned, what is wrong, the exact fix and the module, option or setting that makes it.
  - C(taints) checks that every C(NoSchedule)/C(NoExecute) taint on a GPU node (labelled
    C(nvidia.com/gpu.present=true) or, by Node Feature Discovery,
    C(feature.node.kubernetes.io/pci-10de.present=true)) is tolerated by the ClusterPolicy's
    C(spec.daemonsets.tolerations) and by Node Feature Discovery's worker. That list replaces the
    operands' built-in C(nvidia.com/gpu) toleration; an empty or unset list means only that one.
  - C(operator) checks that Node Feature Discovery's worker, GPU Feature Discovery, the device
    plugin, the DCGM exporter, the MIG manager (on MIG-capable nodes), the MPS control daemon (where
    MPS is on) and the operator validator each have a ready pod on every GPU node, and names the
    operands switched off (C(nvidia.com/gpu.deploy.<component>=false)) or paused for a MIG change.
  - C(sharing) reports what M(gpushare.k8s.gpu_info) finds (labels naming missing profiles, a
    ConfigMap the policy names that does not exist, capacity other than count x replicas, MIG changes
    failed or pending, C(paused-for-mig-change) labels left behind) with the fix for each.
  - "C(autoscaling) checks, on OpenShift, every GPU MachineSet (C(cluster-api/accelerator) label with
    a valid value, a ClusterAutoscaler C(resourceLimits.gpus) entry of that type,
    C(scaleDown.delayAfterAdd) of at least 10 minutes, a MachineAutoscaler, the
    C(machine.openshift.io/GPU) annotation and zone labels when it scales from zero) and every
    C(resourceLimits.gpus) entry that limits nothing: a C(type) no node can carry (C(nvidia.com/gpu)
    is a resource name, not a label value), a C(type) no GPU MachineSet carries, an entry a later one
    of the same C(type) overrides. The fix says which type to set, or which MachineSet to label with
    the entry's type, when one choice is exact, and lists the choices otherwise; it is an error when
    an autoscaled MachineSet is left without its limit, else a warning. On Scaleway
    Kapsule the C(k8s.scw.cloud/gpu) and pool labels; on VNG Cloud VKS the node-group label
    (O(autoscaler_gpu_label); information only, as no VNG Cloud source confirms it). On every platform it
    warns when sharing misleads the autoscaler
    (only C(nvidia.com/gpu.shared) or C(nvidia.com/mig-*) advertised, kubernetes/autoscaler issue 8095;
    time-slicing replicas, which count against its GPU limit but not in a new machine's template when it scales from
    zero, AKS issue 3427)."
  - C(quota) reports namespaces running GPU pods without a ResourceQuota on each NVIDIA resource
    they request.
  - Never changes anything. Fails only when O(fail_on) asks for it.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.attributes.read_only
options:
  checks:
    description:
      - The checks to run.
    type: list
    elements: str
    choices: [taints, operator, sharing, autoscaling, quota]
    default: [taints, operator, sharing, autoscaling, quota]
  fail_on:
    description:
      - Fail the task when a finding of this severity or worse exists (C(warning) also fails on errors).
      - The default C(never) only reports, so a playbook can read RV(findings) and decide; use
        C(error) as a gate before sharing GPUs.
    type: str
    choices: [error, warning, never]
    default: never
  node_selector:
    description:
      - Only check nodes matching this label selector.
    type: str
  autoscaler_gpu_label:
    description:
      - The node label the cluster autoscaler reads for a GPU pool's type, checked by C(autoscaling) on platforms
        without MachineSets in place of the platform's own.
      - By default C(k8s.scw.cloud/gpu) on Scaleway Kapsule (the Kapsule provider of the Kubernetes cluster
        autoscaler) and C(vks.vngcloud.vn/accelerator) on VNG Cloud VKS (read by VNG Cloud's public autoscaler
        fork; no VNG Cloud source says VKS's own autoscaler reads it). Ignored on OpenShift, whose autoscaler reads
        the MachineSets' C(cluster-api/accelerator).
    type: str
"""

EXAMPLES = r"""
- name: Check the cluster before sharing GPUs, failing on errors
  gpushare.k8s.gpu_preflight:
    fail_on: error

- name: Only the taint and operator checks, on the T4 pool
  gpushare.k8s.gpu_preflight:
    checks: [taints, operator]
    node_selector: cluster-api/accelerator=tesla-t4
  register: preflight

- name: Show each problem with its fix
  ansible.builtin.debug:
    msg: "{{ item.severity }} {{ item.object }}: {{ item.message }} -> {{ item.fix }} ({{ item.fixed_by }})"
  loop: "{{ preflight.findings }}"
"""

RETURN = r"""
platform:
  description:
    - The platform recognised from the nodes' labels, OpenShift's MachineSets (read with the C(autoscaling) check)
      or the ClusterPolicy's name (C(OpenShift), C(Scaleway Kapsule), C(VNG Cloud VKS)); null when none.
  returned: always
  type: str
  sample: OpenShift
cluster_policy:
  description: Name of the ClusterPolicy checked; null when the GPU Operator was not found.
  returned: always
  type: str
  sample: gpu-cluster-policy
namespace:
  description: Namespace of the operator's operands; null when not found.
  returned: always
  type: str
  sample: nvidia-gpu-operator
findings:
  description: One entry per problem, errors first, then warnings, then information.
  returned: always
  type: list
  elements: dict
  contains:
    severity:
      description: C(error) (GPU sharing does not work), C(warning) (it works, with a risk), C(info).
      type: str
    check:
      description: The check that found it (C(taints), C(operator), C(sharing), C(autoscaling), C(quota)).
      type: str
    object:
      description: The object concerned, as Kind/name or Kind/namespace/name.
      type: str
    message:
      description: What is wrong, and what it breaks.
      type: str
    fix:
      description: The exact change that fixes it.
      type: str
    fixed_by:
      description: The gpushare.k8s module and option, Helm value or field that makes the fix.
      type: str
  sample:
    - severity: error
      check: taints
      object: ClusterPolicy/gpu-cluster-policy
      message: "taint dedicated=ml:NoSchedule on GPU node(s) gpu-t4-0 is not tolerated by ..."
      fix: 'set spec.daemonsets.tolerations to [{"effect": "NoSchedule", "key": "nvidia.com/gpu", ...}, ...]'
      fixed_by: gpushare.k8s.gpu_tolerations (tolerations ...), or the Helm value daemonsets.tolerations
summary:
  description: Number of findings per severity.
  returned: always
  type: dict
  sample: {"error": 1, "warning": 0, "info": 0}
nodes:
  description:
    - The GPU nodes, as M(gpushare.k8s.gpu_info) returns them in its RV(gpushare.k8s.gpu_info#module:nodes), from the
      same reads as the checks; limited by O(node_selector) too.
    - The sharing role shows them before and after a change, with no M(gpushare.k8s.gpu_info) call of its own.
  returned: always
  type: dict
  sample:
    gpu-t4-0:
      product: Tesla-T4-SHARED
      count: 1
      replicas: 4
      sharing_strategy: time-slicing
      allocatable: {"nvidia.com/gpu": 4}
      gpu_pods: []
      findings: []
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import PREFLIGHT_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.run.preflight import run_gpu_preflight


def main():
    GpuShareModule(PREFLIGHT_ARG_SPEC).run(run_gpu_preflight)


if __name__ == "__main__":
    main()
