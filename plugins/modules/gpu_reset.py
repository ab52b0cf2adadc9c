#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_reset
short_description: Bring NVIDIA GPUs back to unshared, or to exactly what they were before
version_added: 0.1.0
description:
  - Removes the chosen nodes' C(nvidia.com/device-plugin.config) labels (or points them at
    I(config_key)), clears the ClusterPolicy's default profile when every GPU node is reset, sets
    C(nvidia.com/mig.config=all-disabled) where MIG is enabled, restarts the device plugin and waits
    until the nodes show C(nvidia.com/gpu.replicas=1) and C(nvidia.com/gpu.sharing-strategy=none).
  - When only some nodes are reset and the policy's default profile shares GPUs, those nodes are
    pointed at a profile C(unshared) (written if missing), since without a label they would fall
    back to the sharing default.
  - With I(restore=true), puts back exactly what was there before this collection first changed
    anything, from the C(gpushare.k8s/restore) annotation the other modules leave on the objects
    they change (ConfigMap keys, ClusterPolicy fields, node labels); ConfigMaps the collection
    created are deleted.
  - Refuses while GPU pods run on a node whose GPUs the reset (or restore) changes, unless I(drain=true) or
    I(force=true). Check mode runs every validation the real run does, the MIG part included, so it refuses
    what the real run would refuse.
author:
  - gpushare.k8s contributors (@gpushare)
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.nodes
  - gpushare.k8s.attributes
attributes:
  diff_mode:
    description: >-
      Shows labels, policy fields and ConfigMap keys before and after, and under C(mig) the MIG part
      (node labels, policy fields).
options:
  nodes:
    description:
      - The nodes to reset, by I(names) and/or label I(selector). Default is every GPU node.
    type: dict
  config_key:
    description:
      - Point the nodes at this existing profile instead of removing their label.
    type: str
  remove_profiles:
    description:
      - Also remove the ConfigMap keys this collection added that no node uses any more.
    type: bool
    default: false
  mig:
    description:
      - Set C(nvidia.com/mig.config=all-disabled) on nodes whose MIG configuration is anything else.
    type: bool
    default: true
  restore:
    description:
      - Restore every object this collection changed to its state before the first change, instead
        of resetting. It cannot be combined with I(nodes), I(config_key), I(remove_profiles) or I(mig), since a
        restore puts back every record on every object.
      - With nothing recorded (nothing changed yet, or restored already), it changes nothing and warns.
    type: bool
    default: false
  drain:
    description:
      - When GPU pods run on a node whose GPUs change (its sharing profile or its MIG layout, for a reset
        or a restore), cordon the changing nodes, evict those pods through the Eviction API (a
        PodDisruptionBudget that allows no disruption stops the module, which then uncordons the nodes),
        wait until they are gone, make the change and uncordon the nodes once it succeeded.
      - A node whose change fails or times out stays cordoned, and the error says so.
    type: bool
    default: false
  force:
    description:
      - Reset even while GPU pods run. Their CUDA contexts break and a MIG change fails while they
        hold the GPU ("In use by another client"); use only when those pods can be lost.
    type: bool
    default: false
  restart_device_plugin:
    description:
      - Restart the device-plugin DaemonSet. Default restarts when anything changed or a node is not
        yet unshared.
    type: bool
  wait:
    description:
      - Wait until the nodes are unshared (or show their restored profile) and MIG changes finished.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for each step. On timeout the module fails and lists what each node shows.
    type: int
    default: 600
"""

EXAMPLES = r"""
- name: Every GPU node back to whole, unshared GPUs
  gpushare.k8s.gpu_reset:

- name: Unshare two nodes, evicting their GPU pods first
  gpushare.k8s.gpu_reset:
    nodes:
      names: [gpu-a100-0, gpu-a100-1]
    drain: true

- name: Put everything back as it was before this collection changed it
  gpushare.k8s.gpu_reset:
    restore: true
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
config_map:
  description: The device-plugin ConfigMap.
  returned: when I(restore=false)
  type: str
  sample: time-slicing-config
restarted:
  description: Whether the device-plugin DaemonSet was (or in check mode would be) restarted.
  returned: when I(restore=false)
  type: bool
mig_disabled:
  description: Nodes whose MIG configuration was set to C(all-disabled).
  returned: when I(restore=false)
  type: list
  elements: str
nodes:
  description:
    - Per reset node (every target, and every node whose MIG is disabled), what it advertised before and,
      after waiting, advertises now, MIG configuration and state included.
    - After waiting, C(rebooted) says whether the node rebooted meanwhile (its C(status.nodeInfo.bootID) changed);
      disabling MIG, mig-manager with C(WITH_REBOOT=true) reboots a node whose GPUs cannot leave MIG mode without one.
  returned: when I(restore=false)
  type: dict
  sample:
    gpu-a100-0:
      before: {"sharing_strategy": "time-slicing", "replicas": 2, "mig_config": "all-1g.5gb",
               "mig_config_state": "success"}
      after: {"sharing_strategy": "none", "replicas": 1, "mig_config": "all-disabled", "mig_config_state": "success"}
      rebooted: false
restored:
  description:
    - The objects put back; C(daemon_sets) lists Node Feature Discovery workers whose tolerations
      M(gpushare.k8s.gpu_tolerations) changed, as namespace/name.
  returned: when I(restore=true)
  type: dict
  sample: {"cluster_policy": true, "config_maps": ["time-slicing-config"], "nodes": ["gpu-t4-0"], "daemon_sets": []}
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import RESET_ARG_SPEC, RESET_MODULE_KWARGS
from ansible_collections.gpushare.k8s.plugins.module_utils.run.reset import run_gpu_reset


def main():
    GpuShareModule(RESET_ARG_SPEC, **RESET_MODULE_KWARGS).run(run_gpu_reset)


if __name__ == "__main__":
    main()
