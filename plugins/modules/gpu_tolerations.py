#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_tolerations
short_description: Let the GPU Operator and Node Feature Discovery run on tainted GPU nodes
version_added: 0.1.0
description:
  - Adds or removes tolerations in the ClusterPolicy's C(spec.daemonsets.tolerations), the list every
    operand DaemonSet (driver, toolkit, device plugin, GPU Feature Discovery, DCGM, MIG manager, validator)
    gets.
  - That list replaces the operands' built-in C(nvidia.com/gpu) Exists NoSchedule toleration. An unset or
    empty list means that toleration only, so this module starts from it and keeps it in the list unless
    O(keep_gpu_toleration=false).
  - With O(nfd=true), also gives the same tolerations to Node Feature Discovery's worker DaemonSet where the
    operator's own Helm release deploys it, and warns to set the Helm value
    C(node-feature-discovery.worker.tolerations) too, so that a C(helm upgrade) keeps them. A worker deployed
    otherwise (OpenShift's NFD operator) is left alone, with a warning.
  - Every change is recorded for M(gpushare.k8s.gpu_reset) with O(gpushare.k8s.gpu_reset#module:restore=true).
  - Does not wait for the operands to roll out; run M(gpushare.k8s.gpu_preflight) to see them ready.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.attributes
options:
  tolerations:
    description:
      - The tolerations to add or remove, as in a pod spec. Two tolerations are the same when every field
        is (a missing O(tolerations[].operator) is C(Equal)).
    type: list
    elements: dict
    required: true
    suboptions:
      key:
        description: Taint key; empty with O(tolerations[].operator=Exists) tolerates every taint.
        type: str
      operator:
        description: C(Equal) (the default in Kubernetes) or C(Exists).
        type: str
        choices: [Exists, Equal]
      value:
        description: Taint value, only with C(Equal).
        type: str
      effect:
        description: Taint effect to tolerate; empty tolerates every effect.
        type: str
        choices: [NoSchedule, PreferNoSchedule, NoExecute]
      tolerationSeconds:
        description: With C(NoExecute), how long a pod stays after the taint appears.
        type: int
  state:
    description:
      - C(present) adds the tolerations missing from the lists, C(absent) removes them.
    type: str
    choices: [present, absent]
    default: present
  keep_gpu_toleration:
    description:
      - Keep the C(nvidia.com/gpu) Exists NoSchedule toleration in the policy's list (added back if it is
        missing). Removing it with O(state=absent) is refused unless this is false.
    type: bool
    default: true
  nfd:
    description:
      - Also change Node Feature Discovery's worker when the operator's Helm release deploys it.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Run the operator on nodes tainted dedicated=ml:NoSchedule (the nvidia.com/gpu toleration stays)
  gpushare.k8s.gpu_tolerations:
    tolerations:
      - key: dedicated
        operator: Equal
        value: ml
        effect: NoSchedule

- name: Remove it again
  gpushare.k8s.gpu_tolerations:
    state: absent
    tolerations:
      - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
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
tolerations:
  description: The policy's C(spec.daemonsets.tolerations) after the task (as planned in check mode).
  returned: always
  type: list
  elements: dict
  sample:
    - {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    - {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
nfd_workers:
  description: The tolerations of each NFD worker DaemonSet changed (namespace/name), after the task.
  returned: always
  type: dict
  sample: {"gpu-operator/gpu-operator-node-feature-discovery-worker": [{"key": "dedicated", "operator": "Exists"}]}
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import TOLERATIONS_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.run.tolerations import run_gpu_tolerations


def main():
    GpuShareModule(TOLERATIONS_ARG_SPEC).run(run_gpu_tolerations)


if __name__ == "__main__":
    main()
