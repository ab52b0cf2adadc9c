# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The supply gpu_sharing_plan plans with, from what the cluster shows: each GPU node's current GPU states (GPU
Feature Discovery's labels, and for MIG the config the node's label names), what it advertises and runs, its pool.
Pure: no I/O. ``observed``: a node's ``NodeGpuState`` (nvidia/node_labels), what its labels and capacity show."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    RESOURCE_GPU_SHARED,
    mps_max_clients,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import is_planned_resource
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_mig_layout import (
    current_layout,
    layout_per_gpu,
    physical_gpu_count,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import (
    UNKNOWN,
    WHOLE,
    GpuKind,
    mig_gpu,
    shared_gpu,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import PoolNode

# The pool of the nodes that lack the pool label (and of every node when no pool label is given).
NO_POOL = ""
# The selected GPU nodes by pool ({pool: [PoolNode]}, by name) and per pool the most memory one of its GPUs has, in
# MiB (0: unknown).
Supply = namedtuple("Supply", "pools memory")


def current_states(observed, configs):
    """Each GPU's current GpuState: MIG per GPU from the config the node's nvidia.com/mig.config label names
    (``configs``, the ConfigMap mig-manager reads, else NVIDIA's shipped ones); time-slicing or MPS by the replicas GPU
    Feature Discovery reports; else whole. UNKNOWN where a MIG config cannot be read back."""
    count = physical_gpu_count(observed, configs) if observed.mig_enabled else observed.count
    if not count:
        return ()
    if observed.mig_enabled:
        layout = current_layout(observed, configs, count)
        if layout is None:
            return (UNKNOWN,) * count
        per_gpu = layout_per_gpu(layout, count)
        return tuple(WHOLE if per_gpu.get(index) is None else mig_gpu(per_gpu[index]) for index in range(count))
    if observed.sharing_strategy in GpuKind.SHARED and observed.replicas > 1:
        renamed = observed.shared_resource() == RESOURCE_GPU_SHARED
        return (shared_gpu(observed.sharing_strategy, observed.replicas, renamed),) * count
    return (WHOLE,) * count


def pool_node(observed, pool, configs, running, mig_allowed):
    """The PoolNode of one GPU node: MPS only where GPU Feature Discovery labels it capable."""
    model = observed.gpu_model
    return PoolNode(
        name=observed.name,
        pool=pool,
        model=model,
        current=current_states(observed, configs),
        supply=dict((r, n) for r, n in observed.capacity.items() if is_planned_resource(r) and n),
        running=running,
        mig_allowed=bool(mig_allowed and model is not None and model.mig_capable and observed.mig_capable),
        mps_max=mps_max_clients(observed.compute_capability) if observed.mps_capable else 0,
    )


def gpu_memory_mib(observed):
    """The memory of one of a node's GPUs: GPU Feature Discovery's gpu.memory label (NVML's figure), or the catalog's
    largest MIG profile where that is more (under the single strategy the label gives the MIG device's); 0 unknown."""
    memory = observed.memory_mib or 0
    model = observed.gpu_model
    if model is not None and model.facts:
        memory = max([memory] + [facts["memory_mib"] for facts in model.facts.values()])
    return memory


def supply_of(observed_nodes, configs, running, pool_label, mig_allowed):
    """The ``Supply`` of the selected GPU nodes (``running``: {node: {resource: count}} of the pods they run)."""
    pools, memory = {}, {}
    for observed in sorted(observed_nodes, key=lambda observed: observed.name):
        pool = observed.labels.get(pool_label, NO_POOL) if pool_label else NO_POOL
        node = pool_node(observed, pool, configs, running.get(observed.name, {}), mig_allowed)
        if node.current:
            pools.setdefault(pool, []).append(node)
            memory[pool] = max(memory.get(pool, 0), gpu_memory_mib(observed))
    return Supply(pools, memory)


def pool_models(nodes):
    """The MIG models of a pool's nodes that may take MIG, most GPUs first."""
    models, gpus = {}, {}
    for node in nodes:
        if node.mig_allowed:
            models[node.model.name] = node.model
            gpus[node.model.name] = gpus.get(node.model.name, 0) + len(node.current)
    return [models[name] for name in sorted(gpus, key=lambda name: (-gpus[name], name))]
