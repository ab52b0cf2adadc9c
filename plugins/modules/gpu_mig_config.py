#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_mig_config
short_description: Partition NVIDIA GPUs with MIG (Multi-Instance GPU)
version_added: 0.1.0
description:
  - Sets the MIG configuration of chosen nodes through the GPU Operator's mig-manager, which follows the node label
    C(nvidia.com/mig.config), and the ClusterPolicy's C(spec.mig.strategy) (patched only when it differs).
  - A shipped configuration (I(config)) is used as is; a custom I(layout) is merged under I(config_name) into
    a mig-parted ConfigMap (key C(config.yaml); other named configurations are kept, and a new ConfigMap starts
    from the one mig-manager reads now so the shipped names keep working) that C(spec.migManager.config.name)
    then names.
  - Validates, before writing anything, as mig-parted and the GPU decide. The layout (or the shipped
    configuration's entries) is parsed as mig-parted's strict parser does (only C(device-filter), C(devices),
    C(mig-enabled) and C(mig-devices); required fields; counts; a typo such as C(mig-device) is refused, since
    one bad entry makes the whole C(config.yaml) unreadable), its device filters are matched against the node's
    GPU, and every GPU must be matched. Then, per GPU, from the node's GPU model (its PCI device ID from Node
    Feature Discovery's C(pci-<class>_10de_<device>) label when present, else GPU Feature Discovery's product and
    memory labels; an unknown GPU is refused, never guessed), it refuses profiles the GPU lacks (C(3g.20gb) on an H100
    80GB), more instances than it holds, more than one media-extension instance (C(+me), C(+me.all)), more
    compute slices than it has, and instances with no placement in its memory slices. Also GPUs without MIG
    (T4, A10, L4, RTX...), platforms without MIG (VNG Cloud VKS), a node whose previous MIG change is still
    pending, and a layout GPU Feature Discovery's C(single) strategy cannot advertise (several profiles, which
    need C(mixed)).
  - The catalog holds every GPU NVIDIA's shipped MIG configuration targets (A30, A100/A800, H100/H800 and their
    NVL and 96GB parts, H20, GH200, H200, B200, GB200, B300, GB300, RTX PRO 6000 Blackwell), with their profiles
    including attributes (C(1g.10gb+me), C(1g.24gb+gfx), C(1g.24gb-me)) and compute-instance profiles
    (C(1c.7g.80gb)).
  - mig-manager never evicts workloads, and a GPU pod still running makes the change fail. The module refuses
    while pods requesting any C(nvidia.com/*) resource run on a node to reconfigure and lists them; with
    I(drain=true) it cordons the nodes, evicts those pods (respecting PodDisruptionBudgets), waits until they
    are gone, makes the change and uncordons the nodes once it succeeded.
  - Waits for C(nvidia.com/mig.config.state=success) and the MIG devices the layout gives, reports nodes
    mig-manager failed at once with the reason from their C(MigConfigFailed) events, and at the timeout
    reports nodes left C(pending) with C(paused-for-mig-change) operands (gpu-operator issue 2833).
  - Records the previous label, policy fields and ConfigMap content so that M(gpushare.k8s.gpu_reset) with
    I(restore=true) can put them back.
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
      Shows the nodes' C(nvidia.com/mig.config) labels, the policy's MIG fields and the custom layout before
      and after.
options:
  strategy:
    description:
      - How the device plugin advertises MIG devices, cluster-wide (C(spec.mig.strategy)).
      - C(single) advertises them as C(nvidia.com/gpu) and needs every GPU of a node split into instances of one
        profile; C(mixed) advertises one resource per profile, such as C(nvidia.com/mig-1g.5gb), which
        M(gpushare.k8s.gpu_timeslicing) can then share.
      - Default keeps the policy's strategy.
    type: str
    choices: [single, mixed]
  config:
    description:
      - One of the 81 MIG configurations the GPU Operator ships, C(all-disabled), C(all-enabled), C(all-balanced)
        or C(all-<profile>) (as many instances of the profile as each GPU holds, e.g. C(all-1g.10gb)), with a
        profile's C(+) written C(.) (C(all-1g.10gb.me) for C(1g.10gb+me)).
      - It must exist in the ConfigMap mig-manager reads (C(spec.migManager.config.name)); its entries there,
        device filters included, are what is checked against each node's GPU.
      - Exactly one of I(config) and I(layout) is required.
    type: str
  layout:
    description:
      - A custom layout in mig-parted's format, a list of entries C({device-filter, devices, mig-enabled,
        mig-devices}); no other key is accepted.
      - C(devices) (required) is C(all) or a list of GPU indices; C(mig-enabled) (required) is true or false;
        C(device-filter) (optional) is a PCI device ID such as C(0x233010DE) or a list of them; a filter that can
        never match gives a warning.
      - 'C(mig-devices) (required when C(mig-enabled) is true) maps profiles to instances per GPU, for example
        C({"1g.10gb": 2, "2g.20gb": 1}) or C({"1g.10gb+me": 1}); profiles are written with C(+) here, and a
        non-canonical spelling (C(1c.1g.10gb)) is rewritten to the canonical one (C(1g.10gb)) with a warning,
        because mig-parted compares them as strings.'
      - Every GPU of every target node must be matched by an entry, and entries matching the same GPU must agree.
      - Exactly one of I(config) and I(layout) is required; I(layout) needs I(config_name).
    type: list
    elements: dict
  config_name:
    description:
      - Name of the custom I(layout) in the ConfigMap and value of the nodes' C(nvidia.com/mig.config) label.
        Required with I(layout); must not be a shipped name.
      - mig-manager does not reload a configuration edited under an unchanged name (gpu-operator issue 891), so
        giving another layout under a name nodes already use is refused; use a new name.
    type: str
  config_map:
    description:
      - ConfigMap in the operator's namespace that receives the custom I(layout). One that does not exist is
        created, starting from the configurations of the ConfigMap mig-manager reads now.
      - An existing one is used only when nothing owns it (no C(metadata.ownerReferences)) and each of its keys
        holds a mig-parted config file (C(version) and C(mig-configs) only, as mig-parted's strict parser reads
        it, or an empty document); otherwise the module fails before any write, in check mode too, naming each
        owner and key.
      - The GPU Operator's own C(default-mig-parted-config) is refused, since the operator creates it with the
        ClusterPolicy as its controller. Keep the default, or name a ConfigMap of your own.
    type: str
    default: custom-mig-parted-config
  nodes:
    description:
      - The nodes to reconfigure. Give I(names), a label I(selector), or both.
    type: dict
    required: true
  drain:
    description:
      - Cordon the nodes to reconfigure, evict their GPU pods through the Eviction API (a PodDisruptionBudget that
        allows no disruption stops the module, which then uncordons the nodes), wait until the pods are gone,
        make the change, and uncordon the nodes once it succeeded.
      - A node whose change fails or times out stays cordoned, and the error says so.
      - Nodes that were already unschedulable are left so.
    type: bool
    default: false
  wait:
    description:
      - Wait until every node shows C(nvidia.com/mig.config.state=success) and advertises the MIG devices of
        its layout. Also bounds the wait for evicted pods to be gone.
      - Without it, drained nodes stay cordoned (the module cannot tell when to uncordon them).
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait. On timeout the module fails and lists what each node still shows.
    type: int
    default: 600
notes:
  - Reconfiguring MIG restarts the node's GPU operands (device plugin, GPU Feature Discovery, DCGM).
  - Turning MIG on or off needs a GPU reset. A node that cannot reset its GPUs in place (a VM whose hypervisor does
    not allow it, for one) changes MIG mode only across a reboot. With C(WITH_REBOOT=true) in
    C(spec.migManager.env), mig-manager then sets C(nvidia.com/mig.config.state=rebooting) and reboots the node, and
    the module waits through it (the node is NotReady meanwhile; give I(wait_timeout) room for a reboot) and reports
    it in C(nodes.<name>.rebooted). Without it, the change fails on that node.
  - To retry a change that failed, remove the cause and apply another configuration first, because mig-manager
    acts on changes of the label only.
seealso:
  - module: gpushare.k8s.gpu_timeslicing
  - module: gpushare.k8s.gpu_reset
  - name: NVIDIA GPU Operator, GPU Operator with MIG
    description: How mig-manager applies MIG configurations.
    link: https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-mig.html
"""

EXAMPLES = r"""
- name: Seven 1g.10gb instances on every H100 80GB, advertised as nvidia.com/gpu
  gpushare.k8s.gpu_mig_config:
    strategy: single
    config: all-1g.10gb
    nodes:
      selector: nvidia.com/gpu.machine=PowerEdge-XE9680

- name: Balanced partitions on the A100 nodes, one resource per profile, evicting GPU pods first
  gpushare.k8s.gpu_mig_config:
    strategy: mixed
    config: all-balanced
    drain: true
    nodes:
      names: [gpu-a100-0, gpu-a100-1]

- name: A custom layout, GPU 0 split in two, GPU 1 whole
  gpushare.k8s.gpu_mig_config:
    strategy: mixed
    config_name: a100-half-and-whole
    layout:
      - devices: [0]
        mig-enabled: true
        mig-devices: {"3g.20gb": 2}
      - devices: [1]
        mig-enabled: false
    nodes:
      names: [gpu-a100-0]

- name: Seven 1g.5gb devices per A100 40GB, each shared by two pods
  block:
    - name: Partition (mixed strategy, so each profile is its own resource)
      gpushare.k8s.gpu_mig_config:
        strategy: mixed
        config: all-1g.5gb
        nodes:
          names: [gpu-a100-0]
    - name: Time-slice nvidia.com/mig-1g.5gb by 2
      gpushare.k8s.gpu_timeslicing:
        config_key: mig-1g5-x2
        replicas: 2
        resources: [nvidia.com/mig-1g.5gb]
        nodes:
          names: [gpu-a100-0]

- name: MIG off again
  gpushare.k8s.gpu_mig_config:
    config: all-disabled
    drain: true
    nodes:
      selector: nvidia.com/mig.capable=true
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
mig_config:
  description: The MIG configuration the nodes are labelled with (I(config), or I(config_name) for a layout).
  returned: always
  type: str
  sample: all-1g.10gb
config_map:
  description: The mig-parted ConfigMap mig-manager reads for this configuration.
  returned: always
  type: str
  sample: default-mig-parted-config
strategy:
  description: The MIG strategy in effect (C(spec.mig.strategy)).
  returned: always
  type: str
  sample: mixed
skipped_nodes:
  description: Target nodes without MIG left alone by C(config=all-disabled).
  returned: always
  type: list
  elements: str
nodes:
  description:
    - Per target node, its MIG configuration, state and the MIG devices and C(nvidia.com/*) resources it advertised
      before and, after waiting, advertises now.
    - After waiting, C(rebooted) says whether the node rebooted meanwhile (its C(status.nodeInfo.bootID) changed);
      mig-manager with C(WITH_REBOOT=true) reboots a node whose GPUs cannot change MIG mode without one.
  returned: always
  type: dict
  sample:
    gpu-a100-0:
      before: {"mig_config": "all-disabled", "mig_config_state": "success", "mig_strategy": "mixed",
               "product": "NVIDIA-A100-PCIE-40GB",
               "mig_devices": {}, "allocatable": {"nvidia.com/gpu": 2}, "unschedulable": false}
      after: {"mig_config": "all-1g.5gb", "mig_config_state": "success", "mig_strategy": "mixed",
              "product": "NVIDIA-A100-PCIE-40GB", "mig_devices": {"1g.5gb": 14},
              "allocatable": {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.5gb": 14}, "unschedulable": false}
      rebooted: false
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import MIG_ARG_SPEC, MIG_MODULE_KWARGS
from ansible_collections.gpushare.k8s.plugins.module_utils.run.mig import run_gpu_mig_config


def main():
    GpuShareModule(MIG_ARG_SPEC, **MIG_MODULE_KWARGS).run(run_gpu_mig_config)


if __name__ == "__main__":
    main()
