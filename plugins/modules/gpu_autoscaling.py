#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_autoscaling
short_description: Tell the cluster autoscaler what GPU pools bring
version_added: 0.1.0
description:
  - "On OpenShift, for each GPU MachineSet (or those named in O(machinesets)): sets the node label
    C(cluster-api/accelerator) (the GPU type the autoscaler matches against its limits) in
    C(spec.template.spec.metadata.labels); sets the annotation C(machine.openshift.io/GPU) (physical GPUs per
    machine, what the autoscaler reads when it scales a MachineSet from zero) when the MachineSet has none (a
    present one is never rewritten: on AWS the Machine API sets it from the instance type on every reconcile);
    when it scales from zero, adds the
    zone label C(topology.kubernetes.io/zone) from the provider spec; creates or updates the MachineAutoscaler
    targeting it; and gives the ClusterAutoscaler C(default) a C(spec.resourceLimits.gpus) entry of that type."
  - The GPU limit is in the autoscaler's unit, which is not always physical GPUs. The autoscaler counts each node of
    the type as its allocatable C(nvidia.com/gpu), time-slicing and MPS replicas included (unless renamed), MIG
    devices under the single strategy. A node showing none (renamed replicas, every GPU in MIG mixed) counts as the
    GPU annotation. So a MachineSet of one T4 time-sliced 4 ways counts 4 a machine.
  - When the MachineSet's GPUs are shared, a warning says so. Scaling from zero, the autoscaler takes a new machine for
    its physical GPUs only, so it may add more machines than the pods need.
  - Every other field of those objects is left as it is; the list C(resourceLimits.gpus) is written whole with
    the object's C(resourceVersion), so a concurrent change makes the task fail instead of being lost.
  - "When it writes C(resourceLimits.gpus), it drops, with a warning naming each, the entries that can never limit
    anything: a C(type) that is not a label value (such as C(nvidia.com/gpu), a resource name, where the GPU type
    such as C(tesla-t4) belongs), since the autoscaler compares it with the nodes' C(cluster-api/accelerator) value;
    and an entry followed by another of the same C(type), since the autoscaler applies only the last one (its values
    are kept). An entry of a valid type that no MachineSet carries is kept with a warning, as it may be meant for a
    MachineSet yet to be created; entries of other types, other vendors' included, are kept as they are."
  - On Scaleway Kapsule and VNG Cloud VKS, which have no MachineSets, only sets the node label their autoscaler
    reads (C(k8s.scw.cloud/gpu), C(vks.vngcloud.vn/accelerator); the VKS one is not confirmed in production, so
    O(autoscaler_gpu_label) can name another) on the GPU nodes chosen by O(nodes) (by default every GPU node;
    O(nodes) is refused on OpenShift). Labels set on nodes do not reach nodes created later, so set them in the
    pool's labels too.
  - M(gpushare.k8s.gpu_preflight) with C(checks=[autoscaling]) lists what this module fixes.
  - M(gpushare.k8s.gpu_reset) does not undo these changes (they describe the hardware, not its sharing), except
    node labels on platforms without MachineSets.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.nodes
  - gpushare.k8s.attributes
options:
  machinesets:
    description:
      - OpenShift MachineSets to set up. By default every GPU MachineSet (one with the accelerator label, the GPU
        annotation, or GPU nodes).
    type: list
    elements: str
  machine_api_namespace:
    description: Namespace of the MachineSets and MachineAutoscalers.
    type: str
    default: openshift-machine-api
  accelerator:
    description:
      - The GPU type, the value of the autoscaler's GPU label and of the C(type) of its GPU limit; a label value
        (letters, digits, C(-), C(_) and C(.), for example C(nvidia-t4)), never C(nvidia.com/gpu).
      - By default the MachineSet's current valid value, else derived from its nodes' C(nvidia.com/gpu.product)
        label (C(Tesla-T4) gives C(tesla-t4)).
    type: str
  gpus_per_machine:
    description:
      - Physical GPUs per machine, written to the C(machine.openshift.io/GPU) annotation when the MachineSet has
        none. By default the nodes' C(nvidia.com/gpu.count). Needed when a MachineSet scales from zero and has
        neither the annotation nor nodes.
      - A MachineSet whose annotation already holds a number keeps it, and a different value here gives a warning.
    type: int
  min_replicas:
    description:
      - The MachineAutoscaler's C(minReplicas). With O(max_replicas), creates the MachineAutoscaler when none
        targets the MachineSet; otherwise updates the existing one. Leave both out to keep a MachineSet
        without autoscaling as it is.
    type: int
  max_replicas:
    description: The MachineAutoscaler's C(maxReplicas). See O(min_replicas).
    type: int
  gpu_limit:
    description:
      - The C(min) and C(max) GPUs of the accelerator's type in the cluster, in the ClusterAutoscaler's
        C(spec.resourceLimits.gpus), which then holds one entry of that type. The autoscaler counts them in its own
        unit, described above, so time-sliced nodes count their replicas.
      - When omitted, an existing entry is kept (the last one, which the autoscaler applies, when there are several).
        A missing one is added with C(min=0) and C(max) = what a machine counts x O(max_replicas), summed over the
        type's MachineSets. What a machine counts is the largest allocatable C(nvidia.com/gpu) of its nodes, or
        its physical GPUs if that is more.
    type: dict
    suboptions:
      min:
        description: Fewest GPUs of this type, as the autoscaler counts them.
        type: int
        required: true
      max:
        description: Most GPUs of this type, as the autoscaler counts them.
        type: int
        required: true
  delay_after_add:
    description:
      - The ClusterAutoscaler's C(spec.scaleDown.delayAfterAdd), a Go duration such as C(15m). GPU nodes take
        10 to 15 minutes to install the driver and advertise GPUs. Left as it is when omitted.
    type: str
  zone_label:
    description:
      - Add C(topology.kubernetes.io/zone) to the node labels of MachineSets that scale from zero and lack it,
        from the provider spec's zone, so pods pinned to a zone can trigger them.
    type: bool
    default: true
  create_cluster_autoscaler:
    description:
      - Create the ClusterAutoscaler C(default) when it is missing (with the GPU limits and
        C(scaleDown.delayAfterAdd) of O(delay_after_add), default C(15m)). This turns autoscaling on for the
        whole cluster, so it is off by default and a missing ClusterAutoscaler only gives a warning.
    type: bool
    default: false
  autoscaler_gpu_label:
    description:
      - On platforms without MachineSets, the node label to write in place of the one the platform's autoscaler
        is known to read (C(k8s.scw.cloud/gpu) on Scaleway Kapsule; C(vks.vngcloud.vn/accelerator) on VNG Cloud
        VKS, read by VNG Cloud's public autoscaler fork and not confirmed on VKS itself). With it the nodes are
        labelled even when the platform is not recognised. Refused on OpenShift.
    type: str
notes:
  - Needs C(get), C(list), C(patch) and C(create) on C(machinesets.machine.openshift.io),
    C(machineautoscalers.autoscaling.openshift.io) and C(clusterautoscalers.autoscaling.openshift.io), or
    C(list) and C(patch) on nodes elsewhere.
"""

EXAMPLES = r"""
- name: Every GPU MachineSet known to the autoscaler, scaling from zero to four machines
  gpushare.k8s.gpu_autoscaling:
    min_replicas: 0
    max_replicas: 4
    delay_after_add: 15m

- name: One pool with an explicit type and GPU limit
  gpushare.k8s.gpu_autoscaling:
    machinesets: [ocp-gpu-a100-us-east-1a]
    accelerator: nvidia-a100
    gpus_per_machine: 8
    gpu_limit: {min: 0, max: 32}

- name: Scaleway pool nodes labelled for Kapsule's autoscaler
  gpushare.k8s.gpu_autoscaling:
    nodes:
      selector: k8s.scaleway.com/pool-name=gpu
    accelerator: h100-1-80g
"""

RETURN = r"""
platform:
  description: The platform recognised (C(OpenShift), C(Scaleway Kapsule), C(VNG Cloud VKS)), or null.
  returned: always
  type: str
  sample: OpenShift
autoscaling:
  description:
    - The fields this module owns after the task, by object (C(MachineSet/<namespace>/<name>),
      C(MachineAutoscaler/...), C(ClusterAutoscaler/default)), or by node under C(nodes) on other platforms.
  returned: always
  type: dict
  sample:
    MachineSet/openshift-machine-api/ocp-gpu-t4:
      labels.cluster-api/accelerator: tesla-t4
      annotations.machine.openshift.io/GPU: "1"
    MachineAutoscaler/openshift-machine-api/ocp-gpu-t4: {minReplicas: 0, maxReplicas: 4}
    ClusterAutoscaler/default:
      resourceLimits.gpus: [{type: tesla-t4, min: 0, max: 4}]
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import AUTOSCALING_ARG_SPEC, AUTOSCALING_MODULE_KWARGS
from ansible_collections.gpushare.k8s.plugins.module_utils.run.autoscaling import run_gpu_autoscaling


def main():
    GpuShareModule(AUTOSCALING_ARG_SPEC, **AUTOSCALING_MODULE_KWARGS).run(run_gpu_autoscaling)


if __name__ == "__main__":
    main()
