#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: gpu_sharing_plan
short_description: Plan the GPU sharing layout that serves the cluster's GPU workloads
version_added: 1.0.0
description:
  - Reads the demand (pending pods' requests of C(nvidia.com/gpu), C(nvidia.com/gpu.shared) and
    C(nvidia.com/mig-<profile>), with the scheduler's reason; the pods running on GPU nodes, which are demand too)
    and adds the I(requests) given. Reads the supply (the selected GPU nodes, their GPU model from the collection's
    catalog, GPU count, current mode and MIG layout per GPU). Then plans, per node pool, the state each node should
    take.
  - The states a node may take are whole GPUs, time-slicing or MPS with some replicas per GPU, or MIG with a layout
    per GPU (GPUs with MIG, on platforms that offer it). Every MIG layout is one the collection's NVIDIA-exact
    validation accepts for the GPU model (most instances, one media extension, compute slices, placement).
  - The objective, in this order. Serve the most requests. With I(max_new_nodes), add the nodes that cost least.
    Move the fewest running pods (a MIG change or an MPS change stops the node's GPU pods; a change of time-slicing
    replicas does not). Change the fewest GPUs. Leave the most MIG compute slices free.
  - The search is a mixed-integer program solved by HiGHS (through C(highspy)), one objective after the other.
    Identical nodes are counted together, so the program grows with the kinds of nodes, not their number. The answer
    is exact (C(pools.<pool>.exact)) only when HiGHS proves it optimal, with no gap, for every objective. When
    I(time_limit) stops it first, the best plan found is returned, with HiGHS's bound on what any plan could reach.
    The unit tests compare the answer with a search over every option of every node on pools of up to 16 GPUs. The
    benchmark plans 1,000 nodes of 8 GPUs, with demand from half to five times what they hold (README).
  - Returns the module arguments (C(apply)) of M(gpushare.k8s.gpu_reset), M(gpushare.k8s.gpu_mig_config),
    M(gpushare.k8s.gpu_timeslicing) and M(gpushare.k8s.gpu_mps) that get every node to its planned state. A second
    plan, once they are applied, changes nothing.
  - Makes one LIST of nodes and one of pods, and reads the ClusterPolicy and the MIG ConfigMap. Under the single MIG
    strategy with a O(node_selector), a second LIST of nodes reads every node (the strategy is the whole cluster's).
    Never changes anything.
author:
  - gpushare.k8s contributors (@gpushare)
requirements:
  - highspy >= 1.15.1 (HiGHS, the solver; it brings numpy) on the host that runs the module
extends_documentation_fragment:
  - gpushare.k8s.k8s_auth_options
  - gpushare.k8s.k8s_auth
  - gpushare.k8s.operator
  - gpushare.k8s.attributes.read_only
options:
  node_selector:
    description:
      - Plan only the GPU nodes matching this label selector. Pending pods are planned on them.
    type: str
  pool_label:
    description:
      - The node label whose value names a node's pool, such as C(k8s.scaleway.com/pool-name). A request is served
        only by the nodes of its pool, so each pool is planned on its own.
      - A pending pod belongs to the pool its C(nodeSelector) names. A pod naming none goes to the only pool, or else
        to the pool with the most room for what it requests.
      - Default is one pool of every selected node.
    type: str
  requests:
    description:
      - Demand to plan for besides the pending pods (with I(read_pods)), such as the jobs a team will start.
    type: list
    elements: dict
    suboptions:
      resource:
        description:
          - The resource a pod would request. C(nvidia.com/gpu) is a whole GPU or a time-slicing or MPS replica,
            C(nvidia.com/gpu.shared) a replica of a renaming profile, C(nvidia.com/mig-<profile>) a MIG instance.
        type: str
      profile:
        description:
          - A MIG profile such as C(1g.10gb) or C(1g.10gb+me); the same as I(resource=nvidia.com/mig-1g.10gb).
        type: str
      memory_gib:
        description:
          - GPU memory one pod needs, in GiB. With I(compute_share), the request becomes the smallest MIG profile of
            the pool's GPU model that holds both, or C(nvidia.com/gpu) where no profile does.
          - When no GPU of the pool has that much memory (GPU Feature Discovery's C(nvidia.com/gpu.memory)), the
            request is unserved, with the reason, and not planned.
          - Give exactly one of I(resource), I(profile), or I(memory_gib) and I(compute_share).
        type: float
      compute_share:
        description:
          - The share of one GPU's compute one pod needs, above 0 and at most 1 (C(0.25) is a quarter of the compute
            slices).
        type: float
      count:
        description:
          - How many pods of this kind.
        type: int
        required: true
      pool:
        description:
          - The pool (the value of I(pool_label)) they run in. Required when the selected nodes form several pools.
        type: str
  read_pods:
    description:
      - Add the pending pods' requests to the demand. Pods running on the selected nodes are always demand.
    type: bool
    default: true
  allow_moves:
    description:
      - Allow the plan to change nodes that run GPU pods in a way that stops them (a MIG or MPS change). The
        arguments it returns then drain those nodes.
      - When false, those nodes keep their MIG layout and MPS replicas.
    type: bool
    default: false
    aliases: [drain]
  max_replicas:
    description:
      - The most replicas per GPU the plan gives a time-sliced or MPS GPU. Demand beyond what the pool's GPUs give at
        this many is unserved, with the reason.
      - The default is the MPS control daemon's client limit (48 per GPU from compute capability 7.5, NVIDIA's
        k8s-device-plugin C(cmd/mps-control-daemon/mps/device.go)). MPS also stops at 16 below compute capability 7.5.
      - At most 70090. A node never gets more than its whole device list fits in the kubelet's 4 MiB gRPC message
        (kubernetes/kubernetes#109304), so 8761 per GPU on a node of 8 GPUs.
    type: int
    default: 48
  time_limit:
    description:
      - The seconds the solver may take for the whole plan, shared among the pools.
      - When it runs out, the plan is the best found, with C(exact=false) and the solver's bound.
    type: float
    default: 10.0
  sharing_method:
    description:
      - How GPUs newly shared are shared. MPS replicas stop at the control daemon's limit (48 per GPU, 16 below
        compute capability 7.5), and only on nodes GPU Feature Discovery labels C(nvidia.com/mps.capable=true).
      - Nodes already time-sliced or shared with MPS may keep their method.
    type: str
    choices: [time-slicing, mps]
    default: time-slicing
  capacity:
    description:
      - Also report what each pool may add (C(capacity)), for demand the nodes it has cannot serve. The plan adds
        nodes only with I(max_new_nodes).
      - On OpenShift, a pool grows through its GPU MachineSets (the ones whose C(spec.template.spec.metadata.labels)
        give I(pool_label) the pool's value; every GPU MachineSet without I(pool_label)), within their
        MachineAutoscaler's C(maxReplicas) and the ClusterAutoscaler C(default)'s C(resourceLimits), its GPU limits
        counted as the autoscaler counts them (a node's allocatable C(nvidia.com/gpu)).
      - Where an autoscaler owns a size, says per waiting resource whether it can scale for it. Scaling from zero, its
        template advertises only C(nvidia.com/gpu). With ready nodes, it copies one of them, so their layout decides.
        It never copies a node that carries C(cluster-api/accelerator) but advertises no C(nvidia.com/gpu)
        (kubernetes/autoscaler#8095).
      - Reads every node, and OpenShift's MachineSets, Machines, MachineAutoscalers and ClusterAutoscalers (none where
        their CRDs are not installed).
    type: bool
    default: false
  max_new_nodes:
    description:
      - The most nodes the plan may add, over all pools, where the nodes that exist cannot serve the demand
        (re-partitioning always comes first). Needs I(capacity=true).
      - Nodes are added only where no autoscaler sets the size (a MachineSet without a MachineAutoscaler, a node pool
        given without C(autoscaling)), within each way to grow's own maximum and the ClusterAutoscaler's limits. A GPU
        limit counts new nodes as the autoscaler counts them, and also what the plan's changes to existing nodes of
        that type add (MIG at most their GPUs or what they count now).
      - The new nodes of one MachineSet or node pool all take one state, every GPU alike, since its template labels
        name one configuration (C(capacity.pools.<pool>[].planned)).
      - A pool no selected node is in yet (a MachineSet at zero, a node pool of size 0) is planned from the pending
        pods whose C(nodeSelector) names it.
      - Pools are planned one by one. When their new nodes together would exceed a shared limit, they are planned
        again one after the other, each within what the ones before left, and C(exact) is false (C(findings) says
        so).
      - C(0) adds none.
    type: int
    default: 0
  max_new_nodes_per_hour:
    description:
      - The most nodes added within any hour. The nodes added are counted from the records
        M(gpushare.k8s.gpu_machineset) keeps on each MachineSet (C(gpushare.k8s/scale-ups)), so the cap holds across
        runs; node pools that are not Kubernetes objects keep none. The plan adds at most what is left of it, and
        C(capacity.decisions) says when it is spent. By default there is no hourly cap.
    type: int
  scale_in_after:
    description:
      - With I(capacity=true), the plan takes back nodes it added that are no longer needed. A node is taken back when
        its MachineSet has no MachineAutoscaler and its record (C(gpushare.k8s/added-nodes)) shows the collection
        added a node it has not removed, the node runs no GPU pod, nothing waits in its pool, the plan changes none
        of it, and it joined at least this many seconds ago (C(capacity.pools.<pool>[].scale_in),
        C(apply.gpu_machineset)).
      - Where a MachineAutoscaler owns the size, the cluster autoscaler's own scale-down takes back unneeded nodes
        (docs/PLANNER.md, Taking nodes back).
    type: int
    default: 1800
  node_costs:
    description:
      - The cost of one new node, per MachineSet (C(<namespace>/<name>)) or node pool (its I(node_pools) name). The
        plan adds the nodes that cost least, after serving the most.
      - By default a node costs its GPUs, every GPU costing the same.
    type: dict
  node_pools:
    description:
      - Node pools that are not Kubernetes objects (Scaleway Kapsule pools, VNG Cloud VKS node groups), for the
        C(capacity) report. Their size and limits are the platform's, as C(scw k8s pool get) shows them on Scaleway
        and the node group's page of the portal on VKS.
      - Only with I(capacity=true).
    type: list
    elements: dict
    suboptions:
      pool:
        description: The pool's value of I(pool_label) on its nodes.
        type: str
        required: true
      name:
        description: The node pool's name on the platform, when it differs from I(pool).
        type: str
      size:
        description: Its nodes now.
        type: int
        required: true
      min_size:
        description: The fewest nodes it may have.
        type: int
        default: 0
      max_size:
        description: The most nodes it may have. Omit when the platform sets none.
        type: int
      gpus:
        description: The GPUs one node of the pool has.
        type: int
        required: true
      product:
        description:
          - Their product, as GPU Feature Discovery names it (C(NVIDIA-H100-80GB-HBM3)). With it, a pool with no
            node yet can be planned for MIG.
        type: str
      gpu_memory_mib:
        description:
          - One GPU's memory in MiB, as GPU Feature Discovery labels it (C(nvidia.com/gpu.memory)). It tells apart the
            models one product name covers, such as C(NVIDIA-H100-PCIe).
        type: int
      autoscaling:
        description: The platform's autoscaler owns the pool's size.
        type: bool
        default: false
notes:
  - The plan counts what the scheduler counts. Node affinities other than the pool label, taints, and the other
    resources pods request are not planned for.
  - A MIG layout is planned for the mixed strategy, which advertises one resource per profile. The arguments of
    M(gpushare.k8s.gpu_mig_config) set it. On a cluster whose strategy is C(single) while nodes run MIG under it, no
    MIG change is planned (see C(findings)).
  - Configuration names are derived from the layout (C(gpushare-plan-<hash>)) and the replicas
    (C(gpushare-plan-ts-4)), so that applying the same plan twice writes nothing new.
seealso:
  - module: gpushare.k8s.gpu_info
  - module: gpushare.k8s.gpu_mig_config
  - module: gpushare.k8s.gpu_timeslicing
  - module: gpushare.k8s.gpu_mps
  - module: gpushare.k8s.gpu_reset
"""

EXAMPLES = r"""
- name: Plan for the pods that are pending now
  gpushare.k8s.gpu_sharing_plan:
  register: plan

- name: Plan, and report what the Kapsule pools could add for what stays unserved
  gpushare.k8s.gpu_sharing_plan:
    pool_label: k8s.scaleway.com/pool-name
    capacity: true
    node_pools:
      - pool: gpu-h100
        size: 2
        max_size: 4
        gpus: 8
        product: NVIDIA-H100-80GB-HBM3
  register: plan

- name: Plan the A100 pool for work that is coming, moving running pods if needed
  gpushare.k8s.gpu_sharing_plan:
    pool_label: k8s.scaleway.com/pool-name
    allow_moves: true
    requests:
      - profile: 3g.40gb
        count: 4
        pool: gpu-a100
      - memory_gib: 10
        compute_share: 0.1
        count: 12
        pool: gpu-a100
  register: plan

- name: Apply the MIG layouts the plan gives
  gpushare.k8s.gpu_mig_config:
    strategy: "{{ item.strategy }}"
    config_name: "{{ item.config_name }}"
    layout: "{{ item.layout }}"
    nodes: "{{ item.nodes }}"
    drain: "{{ item.drain }}"
  loop: "{{ plan.apply.gpu_mig_config }}"
"""

RETURN = r"""
nodes:
  description:
    - Per GPU node, its pool, GPU model and count, whether it changes, and its planned state.
    - C(mode) is C(whole), C(time-slicing), C(mps) or C(mig). C(layout) is the MIG layout in mig-parted's format
      (C(mig) only). C(replicas) is the replicas per GPU (C(time-slicing) and C(mps) only).
    - C(supply) is what the node advertises in its planned state, and C(serves) what of it the plan uses.
    - C(takes) names what it takes of the waiting demand as the plan counts it (the scheduler places the pods), pending
      pods (C(namespace/name)), given requests (C(requests[1])) and pods that move from other nodes.
    - C(pods_to_move) are the pods the change stops.
  returned: always
  type: dict
  sample:
    gpu-a100-0:
      pool: gpu-a100
      gpu_model: A100 80GB
      gpus: 2
      change: true
      mode: mig
      layout: [{"devices": "all", "mig-enabled": true, "mig-devices": {"3g.40gb": 1, "1g.10gb": 3}}]
      replicas: null
      supply: {"nvidia.com/mig-3g.40gb": 2, "nvidia.com/mig-1g.10gb": 6}
      serves: {"nvidia.com/mig-3g.40gb": 2, "nvidia.com/mig-1g.10gb": 5}
      takes: ["ml/trainer-0", "ml/trainer-1", "requests[1]"]
      pods_to_move: []
pools:
  description:
    - Per pool, its demand (pending and running) and the plan's score.
    - C(exact) is true when HiGHS proved the plan optimal, with no gap, for every objective.
    - C(bound) is, per objective, the best any plan could reach, given the objectives before it as the plan reaches
      them. It is HiGHS's dual bound, and equal to the plan's own figure when C(exact). C(served) is the most any plan
      serves. C(pods_moved) is the fewest pods any plan serving as much moves. C(gpus_changed) and C(free_slices)
      continue the same way. It is null past the objective where I(time_limit) stopped the solver.
    - Where the pool may add nodes (I(max_new_nodes)), C(new_nodes) and C(new_node_cost) say how many it adds and what
      they cost, C(served) counts what they serve, and C(bound) has C(new_node_cost) too.
  returned: always
  type: dict
  sample:
    gpu-a100:
      nodes: 4
      gpus: 8
      demand: {"nvidia.com/mig-3g.40gb": 2, "nvidia.com/mig-1g.10gb": 5}
      served: 7
      pods_moved: 0
      gpus_changed: 2
      free_slices: 1
      exact: true
      bound: {"served": 7, "pods_moved": 0, "gpus_changed": 2, "free_slices": 1}
pending_pods:
  description: The pods waiting for a GPU, their pool, what they request, and the scheduler's reason.
  returned: always
  type: list
  elements: dict
  sample:
    - namespace: ml
      name: trainer-0
      pool: gpu-a100
      requests: {"nvidia.com/mig-3g.40gb": 1}
      reason: "0/4 nodes are available: 4 Insufficient nvidia.com/mig-3g.40gb."
unserved:
  description: What the plan cannot serve, per pool and resource, and why.
  returned: always
  type: list
  elements: dict
  sample:
    - pool: gpu-a30
      resource: nvidia.com/mig-7g.80gb
      count: 1
      reason: "no GPU model in pool gpu-a30 has the MIG profile 7g.80gb (A30 24GB: 1g.6gb, 2g.12gb, 4g.24gb, ...)"
apply:
  description:
    - The module arguments that get every changed node to its planned state, by module. Run them in this order,
      C(gpu_reset) then C(gpu_mig_config), then C(gpu_timeslicing) and C(gpu_mps).
    - Connection and operator options are not included. Pass the ones the plan ran with.
    - With I(capacity=true), C(gpu_machineset) gives the M(gpushare.k8s.gpu_machineset) arguments of each MachineSet
      that adds nodes (C(replicas) and the C(sharing) its new nodes boot into, under the configuration names the
      sharing modules get) or takes them back (C(replicas) only). Run them after the sharing modules.
    - C(node_pools) gives the size of each node pool that is not a Kubernetes object (Kapsule, VKS), to set with the
      platform's tools, and the C(labels) its new nodes need.
  returned: always
  type: dict
  sample:
    gpu_reset: []
    gpu_mig_config:
      - strategy: mixed
        config_name: gpushare-plan-3f2a9c01be
        layout: [{"devices": "all", "mig-enabled": true, "mig-devices": {"3g.40gb": 1, "1g.10gb": 3}}]
        nodes: {"names": ["gpu-a100-0"]}
        drain: false
    gpu_timeslicing:
      - config_key: gpushare-plan-ts-4
        replicas: 4
        rename_by_default: false
        nodes: {"names": ["gpu-l4-0"]}
    gpu_mps: []
    gpu_machineset:
      - name: gpu-a100-us-east-1a
        machine_api_namespace: openshift-machine-api
        replicas: 3
        sharing: {mode: mig, config_name: gpushare-plan-3f2a9c01be, layout: [{"devices": "all", "mig-enabled": true,
                  "mig-devices": {"3g.40gb": 2}}]}
    node_pools: []
findings:
  description:
    - What limited the plan, for example a cluster on the C(single) MIG strategy with nodes running MIG under it (no
      MIG change is planned then, since the C(mixed) strategy planned layouts need would change what those nodes
      advertise).
  returned: always
  type: list
  elements: str
capacity:
  description:
    - With I(capacity=true), what each pool may add. C(pools.<pool>) lists its ways to grow, and C(limits) holds the
      ClusterAutoscaler's limits they all share, with what the cluster counts against them now.
    - Each way to grow has C(kind) (C(MachineSet) or C(NodePool)), C(name), C(size), C(min_size) and C(max_size). It
      also has C(owner) (C(autoscaler) when a MachineAutoscaler or the platform's autoscaler sets the size, else
      C(plan)), C(new_node) (C(product), C(gpu_memory_mib), C(gpus), C(gpu_type), C(cores), C(memory_gib),
      C(source)), and
      C(new_nodes_at_most) (null when nothing bounds it) with C(limited_by), what stops it there.
    - With I(max_new_nodes), C(planned) gives what the plan adds through it. It has C(new_nodes), the C(size) to set
      (the MachineSet's C(spec.replicas); on Scaleway C(scw k8s pool update <pool-id> size=<size>), on VKS C(grn vks
      update-nodegroup --cluster-id <id> --nodegroup-id <id> --num-nodes <size>)), the C(mode) the new nodes boot into,
      its C(layout) or C(replicas), and the C(sharing) argument of M(gpushare.k8s.gpu_machineset).
    - C(scale_in), where the plan takes nodes back (see I(scale_in_after)), gives the idle C(nodes) and the C(size) to
      set.
    - C(decisions) says each decision about nodes with its reason. Nodes added or taken back, and why no node is
      added for what stays unserved (I(max_new_nodes) 0, the hourly cap spent, an autoscaler's size, limits).
    - C(limits) also holds C(max_new_nodes), C(max_new_nodes_per_hour), C(added_last_hour) and C(allowed), what this
      plan could add.
    - Where C(owner) is C(autoscaler), C(autoscaler_can_scale) gives per resource waiting in the pool an C(answer)
      (C(yes), C(no), C(maybe), or C(unknown) for a node pool with no ready node, whose template is the platform's)
      and its C(reason).
  returned: when capacity is true
  type: dict
  sample:
    pools:
      t4:
        - kind: MachineSet
          name: openshift-machine-api/gpu-t4
          size: 2
          min_size: 1
          max_size: 4
          owner: autoscaler
          new_node:
            product: Tesla-T4
            gpu_memory_mib: 15360
            gpus: 1
            gpu_type: tesla-t4
            cores: 4.0
            memory_gib: 16.0
            source: annotations
          new_nodes_at_most: 2
          limited_by: [maxReplicas]
          autoscaler_can_scale:
            nvidia.com/mig-1g.10gb:
              answer: "no"
              reason: "its template is a copy of one of its ready nodes (gpu-t4-0), none of which advertises ..."
    limits: {max_nodes_total: 24, nodes: 9, gpus: {tesla-t4: {max: 4, counted: 2}}, cores: null, cores_now: 96.0,
             memory_gib: null, memory_gib_now: 430.0, max_new_nodes: 0, max_new_nodes_per_hour: null,
             added_last_hour: 0, allowed: 0}
    decisions:
      - "pool t4: 3 x nvidia.com/mig-1g.10gb stay unserved and no node is added: max_new_nodes is 0 (...)"
nodes_to_change:
  description: The nodes the plan changes; empty when the cluster already has the planned layout.
  returned: always
  type: list
  elements: str
namespace:
  description: Namespace of the GPU Operator's operands.
  returned: always
  type: str
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.ansible_module import GpuShareModule
from ansible_collections.gpushare.k8s.plugins.module_utils.args import SHARING_PLAN_ARG_SPEC
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.solver import (
    HIGHSPY_IMPORT_ERROR,
    HIGHSPY_REQUIREMENT,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.sharing_plan import run_gpu_sharing_plan


def main():
    GpuShareModule(SHARING_PLAN_ARG_SPEC, libraries=[(HIGHSPY_REQUIREMENT, HIGHSPY_IMPORT_ERROR)]).run(
        run_gpu_sharing_plan
    )


if __name__ == "__main__":
    main()
