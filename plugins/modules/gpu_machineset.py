#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_machineset
short_description: Scale an OpenShift GPU MachineSet, its new nodes booting into a planned GPU sharing
version_added: 1.0.0
description:
  - "Sets what the new nodes of one OpenShift GPU MachineSet boot into, and how many nodes it has. It is the module
    that applies the C(apply.gpu_machineset) entries of M(gpushare.k8s.gpu_sharing_plan) with C(capacity=true)
    (docs/PLANNER.md, Adding nodes), and it can be used on its own."
  - "With O(sharing), writes the configuration first: the mig-parted layout under O(sharing.config_name) in the
    ConfigMap C(custom-mig-parted-config) (with the ClusterPolicy's C(spec.migManager.config.name) and the mixed MIG
    strategy), or the device-plugin profile O(sharing.config_key) in the ConfigMap the ClusterPolicy names. No node
    is labelled. Then it sets the labels C(nvidia.com/mig.config) or C(nvidia.com/device-plugin.config) in the
    MachineSet's C(spec.template.spec.metadata.labels), which the Machine API copies to every new node, so that
    the GPU Operator configures each node as it joins. The nodes the MachineSet already has keep their own labels
    (M(gpushare.k8s.gpu_mig_config) and M(gpushare.k8s.gpu_timeslicing) change those)."
  - "A MIG layout is checked, before anything is written, as mig-parted would check it on the new nodes' GPUs: the
    model of a ready node the MachineSet made, else of the product its template labels."
  - "With O(replicas), sets C(spec.replicas). A MachineSet a MachineAutoscaler targets is refused: its replicas
    are the cluster autoscaler's. More replicas are refused when the nodes they add would exceed the
    ClusterAutoscaler C(default)'s C(resourceLimits) (C(maxNodesTotal), cores, memory, or the GPUs of the
    MachineSet's C(cluster-api/accelerator) type, counted as the autoscaler counts them: time-sliced replicas
    included)."
  - "Fewer replicas remove only nodes that run no GPU pod. The Machines to remove are annotated
    C(machine.openshift.io/delete-machine) before the replicas drop, so the MachineSet deletes them and no other,
    whatever its C(deletePolicy). When fewer nodes are free of GPU pods than the nodes to remove, nothing is
    written and the error names the pods."
  - "Records on the MachineSet how many nodes the collection added (C(gpushare.k8s/added-nodes)) and its scale-ups
    of the last hour (C(gpushare.k8s/scale-ups)), which M(gpushare.k8s.gpu_sharing_plan) reads for its scale-in
    and its hourly cap."
  - "Waits, with O(wait), for the MachineSet's ready replicas, for each new node to show the sharing of O(sharing)
    (the MIG devices of the layout, or the replicas of the profile), and for the removed nodes to leave; a timeout
    lists what each still shows."
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.attributes
attributes:
  diff_mode:
    description: >-
      Shows the MachineSet's replicas, the template's sharing labels and the Machines to remove before and after,
      with the configuration written.
options:
  name:
    description: The MachineSet.
    type: str
    required: true
  machine_api_namespace:
    description: Namespace of the MachineSet and its Machines.
    type: str
    default: openshift-machine-api
  replicas:
    description:
      - The MachineSet's C(spec.replicas). Left as it is when omitted.
    type: int
  sharing:
    description:
      - What the MachineSet's new nodes boot into. Left as the template says when omitted.
    type: dict
    suboptions:
      mode:
        description:
          - C(mig) (a layout under the mixed strategy), C(time-slicing), C(mps), or C(whole) (both sharing labels
            removed from the template, so new nodes take the ClusterPolicy's defaults).
        type: str
        required: true
        choices: [whole, mig, time-slicing, mps]
      layout:
        description: With C(mode=mig), the mig-parted layout, as M(gpushare.k8s.gpu_mig_config) takes it.
        type: list
        elements: dict
      config_name:
        description: With C(mode=mig), the name of the layout in the mig-parted ConfigMap and in the label.
        type: str
      config_key:
        description: With C(mode=time-slicing) or C(mps), the profile's key in the device-plugin ConfigMap.
        type: str
      replicas:
        description: With C(mode=time-slicing) or C(mps), the replicas per GPU.
        type: int
      rename_by_default:
        description: With C(mode=time-slicing) or C(mps), advertise the replicas as C(nvidia.com/gpu.shared).
        type: bool
        default: false
  wait:
    description: Wait for the replicas, the new nodes in their sharing and the removed nodes gone.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait. A new GPU node takes 10 to 15 minutes to boot and install the driver.
    type: int
    default: 1200
notes:
  - Needs C(list) on nodes, pods, C(machines.machine.openshift.io), C(machinesets.machine.openshift.io) and the
    autoscalers, C(patch) on C(machinesets.machine.openshift.io) and C(machines.machine.openshift.io), and with
    O(sharing) what M(gpushare.k8s.gpu_mig_config) or M(gpushare.k8s.gpu_timeslicing) need for their ConfigMaps
    and the ClusterPolicy.
  - On Scaleway Kapsule and VNG Cloud VKS node pools are not Kubernetes objects; M(gpushare.k8s.gpu_sharing_plan)
    returns the size to set with the platform's own tools (docs/PLANNER.md).
"""

EXAMPLES = r"""
- name: Two more T4 machines, time-sliced two ways as they join
  gpushare.k8s.gpu_machineset:
    name: ocp-gpu-t4-us-east-1a
    replicas: 3
    sharing:
      mode: time-slicing
      config_key: t4-ts-2
      replicas: 2

- name: New H100 machines boot into seven 1g.10gb instances per GPU; no machine added
  gpushare.k8s.gpu_machineset:
    name: ocp-gpu-h100
    sharing:
      mode: mig
      config_name: h100-7x1g
      layout:
        - devices: all
          mig-enabled: true
          mig-devices: {1g.10gb: 7}

- name: Apply the plan's capacity
  gpushare.k8s.gpu_machineset:
    name: "{{ item.name }}"
    machine_api_namespace: "{{ item.machine_api_namespace }}"
    replicas: "{{ item.replicas }}"
    sharing: "{{ item.sharing | default(omit) }}"
  loop: "{{ plan.apply.gpu_machineset }}"
"""

RETURN = r"""
machineset:
  description: The MachineSet, as C(<namespace>/<name>).
  returned: always
  type: str
  sample: openshift-machine-api/ocp-gpu-t4-us-east-1a
replicas:
  description: Its replicas before and after the task.
  returned: always
  type: dict
  sample: {before: 1, after: 3}
removed_machines:
  description: The Machines removed (marked for deletion), each with its node (null when it had none).
  returned: always
  type: dict
  sample: {ocp-gpu-t4-us-east-1a-x7k2p: ip-10-0-3-17.ec2.internal}
new_nodes:
  description: The nodes that joined, each with its summary once in the planned sharing (empty without O(wait)).
  returned: always
  type: dict
  sample:
    ip-10-0-41-9.ec2.internal:
      product: Tesla-T4-SHARED
      allocatable: {nvidia.com/gpu: 2}
cluster_policy:
  description: The ClusterPolicy, when O(sharing) was given.
  returned: when sharing is given and not whole
  type: str
  sample: gpu-cluster-policy
namespace:
  description: The GPU Operator's namespace, when O(sharing) was given.
  returned: when sharing is given and not whole
  type: str
  sample: nvidia-gpu-operator
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import MACHINESET_ARG_SPEC, MACHINESET_MODULE_KWARGS
from ansible_collections.gpushare.k8s.plugins.module_utils.run.machineset import run_gpu_machineset


def main():
    GpuShareModule(MACHINESET_ARG_SPEC, **MACHINESET_MODULE_KWARGS).run(run_gpu_machineset)


if __name__ == "__main__":
    main()
