# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each pool may add (issue 40, docs/CAPACITY_DESIGN.md): its ways to grow, read from OpenShift's MachineSets,
MachineAutoscalers and ClusterAutoscaler, or given for node pools that are not Kubernetes objects (Scaleway Kapsule,
VNG Cloud VKS); the cluster autoscaler's limits they share; and, where an autoscaler owns a size, whether it can scale
for what waits. Pure: no I/O. Every fact relied on is in docs/PLATFORM_FACTS.md, "Cluster autoscaler and node pools
(issue 40)", with its source."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import RESOURCE_GPU
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    autoscaler_gpu_count,
    cluster_autoscaler_gpu_limits,
    machineset_key,
    machineset_node_labels,
    targeting_autoscalers,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    ACCELERATOR_LABEL,
    AUTOSCALER_GPU_LABELS,
    CLUSTER_AUTOSCALER_NAME,
    MACHINESET_GPU_ANNOTATION,
    machineset_node_names,
)

# Who sets a grower's size: a MachineAutoscaler or a platform's autoscaler (the plan never writes it), or the plan.
OWNER_AUTOSCALER = "autoscaler"
OWNER_PLAN = "plan"
KIND_MACHINESET = "MachineSet"
KIND_NODE_POOL = "NodePool"
# The autoscaler's own scale-from-zero annotations, read before OpenShift's historical ones (openshift_utils.go).
CAPACITY_PREFIX = "capacity.cluster-autoscaler.kubernetes.io/"
MACHINESET_CPU_ANNOTATION = "machine.openshift.io/vCPU"
MACHINESET_MEMORY_ANNOTATION = "machine.openshift.io/memoryMb"
# A MachineSet's spec.replicas when unset (the Machine API's default).
DEFAULT_MACHINESET_REPLICAS = 1

# What one new node of a grower brings: its GPU product and one GPU's memory in MiB as GPU Feature Discovery labels
# them (None: unknown; the memory tells apart models one product name covers), physical GPUs, the autoscaler's GPU type
# (its GPU label's value, None: none), CPU cores and memory in GiB (None: unknown), and where those came from.
NewNode = namedtuple("NewNode", "product gpu_memory_mib gpus gpu_type cores memory_gib source")
# One way a pool grows: a MachineSet or a node pool given as input; its size now, its own bounds (max_size None: none
# known), who owns its size (OWNER_*), what a new node brings (NewNode), and the names of the ready nodes it made (the
# autoscaler copies one of them as its template when it scales).
Grower = namedtuple("Grower", "pool kind name size min_size max_size owner new_node ready_nodes")
# What the runner read for the capacity report: OpenShift's objects (empty lists elsewhere), every node of the cluster,
# and the node pools given as input.
CapacitySources = namedtuple(
    "CapacitySources", "machinesets machine_autoscalers cluster_autoscalers machines nodes node_pools"
)
# The ClusterAutoscaler's limits every grower shares (None: no limit, as without a ClusterAutoscaler), and what the
# cluster counts against them now.
# ``gpus``: {type: (max, counted now)} in the autoscaler's unit (plan/autoscaling.autoscaler_gpu_count).
SharedLimits = namedtuple("SharedLimits", "max_nodes_total nodes gpus cores cores_now memory_gib memory_gib_now")


def _meta(obj):
    return obj.get("metadata") or {}


def _number(text):
    """A non-negative number from an annotation or quantity ("8", "16384", "4Gi" not included), else None."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _cpu_cores(quantity):
    text = str(quantity or "")
    if text.endswith("m"):
        value = _number(text[:-1])
        return None if value is None else value / 1000
    return _number(text)


_MEMORY_UNITS = (("Ki", 1.0 / 1024 / 1024), ("Mi", 1.0 / 1024), ("Gi", 1.0), ("Ti", 1024.0))


def _memory_gib(quantity):
    """GiB of a Kubernetes memory quantity in the binary units nodes report (plain bytes too)."""
    text = str(quantity or "")
    for suffix, scale in _MEMORY_UNITS:
        if text.endswith(suffix):
            value = _number(text[: -len(suffix)])
            return None if value is None else value * scale
    value = _number(text)
    return None if value is None else value / 1024**3


def _annotation(annotations, *keys):
    for key in keys:
        value = _number(annotations.get(key))
        if value is not None:
            return value
    return None


def shared_limits(cluster_autoscalers, nodes):
    """The ClusterAutoscaler ``default``'s resourceLimits and what ``nodes`` (every node of the cluster) count against
    them: nodes, cores and memory from their capacity, GPUs per type from their GPU label and allocatable."""
    autoscaler = next((ca for ca in cluster_autoscalers if _meta(ca).get("name") == CLUSTER_AUTOSCALER_NAME), None)
    limits = (((autoscaler or {}).get("spec") or {}).get("resourceLimits")) or {}
    counted = {}
    for node in nodes:
        gpu_type = (_meta(node).get("labels") or {}).get(ACCELERATOR_LABEL)
        if gpu_type:
            counted[gpu_type] = counted.get(gpu_type, 0) + autoscaler_gpu_count(NodeGpuState.from_node(node), 0)
    gpus = {}
    for entry in cluster_autoscaler_gpu_limits(autoscaler):
        if entry.get("type") and entry.get("max") is not None:
            gpus[entry["type"]] = (entry["max"], counted.get(entry["type"], 0))  # the last entry of a type wins
    capacity = [(node.get("status") or {}).get("capacity") or {} for node in nodes]
    return SharedLimits(
        max_nodes_total=limits.get("maxNodesTotal") or None,
        nodes=len(nodes),
        gpus=gpus,
        cores=(limits.get("cores") or {}).get("max"),
        cores_now=sum(_cpu_cores(item.get("cpu")) or 0 for item in capacity),
        memory_gib=(limits.get("memory") or {}).get("max"),
        memory_gib_now=sum(_memory_gib(item.get("memory")) or 0 for item in capacity),
    )


def _new_machine(machineset, made):
    """What a new Machine of ``machineset`` brings: the autoscaler's scale-from-zero annotations, else a node it made
    (``made``: NodeGpuState and node dicts of its ready nodes)."""
    annotations = _meta(machineset).get("annotations") or {}
    gpus = _annotation(annotations, CAPACITY_PREFIX + "gpu-count", MACHINESET_GPU_ANNOTATION)
    cores = _annotation(annotations, CAPACITY_PREFIX + "cpu", MACHINESET_CPU_ANNOTATION)
    memory_mib = _annotation(annotations, MACHINESET_MEMORY_ANNOTATION)
    memory = memory_mib / 1024 if memory_mib is not None else None
    source = "annotations"
    product = gpu_memory = None
    if made:
        state, node = made[0]
        capacity = (node.get("status") or {}).get("capacity") or {}
        product, gpu_memory = state.product, state.memory_mib
        if gpus is None:
            gpus, source = state.count, "node"
        cores = cores if cores is not None else _cpu_cores(capacity.get("cpu"))
        memory = memory if memory is not None else _memory_gib(capacity.get("memory"))
    return NewNode(
        product=product,
        gpu_memory_mib=gpu_memory,
        gpus=int(gpus or 0),
        gpu_type=machineset_node_labels(machineset).get(ACCELERATOR_LABEL),
        cores=cores,
        memory_gib=memory,
        source=source if gpus is not None else None,
    )


def machineset_growers(machinesets, machine_autoscalers, machines, nodes, pool_label, pools):
    """One Grower per GPU MachineSet whose new nodes join one of ``pools`` (None: any pool), the value of ``pool_label``
    in its template labels (without a pool label every GPU MachineSet is in the only pool, "")."""
    by_name = dict((_meta(node).get("name"), node) for node in nodes)
    names_of = machineset_node_names(machines)
    growers = []
    for machineset in machinesets:
        labels = machineset_node_labels(machineset)
        pool = labels.get(pool_label) if pool_label else ""
        if pool is None or (pools is not None and pool not in pools):
            continue
        made = []
        for name in names_of.get(machineset_key(machineset), []):
            if name in by_name:
                state = NodeGpuState.from_node(by_name[name])
                if _is_ready(by_name[name]):
                    made.append((state, by_name[name]))
        new_node = _new_machine(machineset, made)
        if not new_node.gpus and ACCELERATOR_LABEL not in labels:
            continue  # not a GPU MachineSet
        spec = machineset.get("spec") or {}
        size = spec.get("replicas", DEFAULT_MACHINESET_REPLICAS)
        autoscalers = targeting_autoscalers(machineset, machine_autoscalers)
        bounds = (autoscalers[0].get("spec") or {}) if autoscalers else {}
        growers.append(
            Grower(
                pool=pool,
                kind=KIND_MACHINESET,
                name="%s/%s" % (_meta(machineset).get("namespace"), _meta(machineset).get("name")),
                size=size,
                min_size=bounds.get("minReplicas", 0),
                max_size=bounds.get("maxReplicas"),
                owner=OWNER_AUTOSCALER if autoscalers else OWNER_PLAN,
                new_node=new_node,
                ready_nodes=tuple(sorted(state.name for state, _node in made)),
            )
        )
    return growers


def _is_ready(node):
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready and not (node.get("spec") or {}).get("unschedulable")


def node_pool_growers(node_pools, nodes, pool_label):
    """One Grower per node pool given as input (Kapsule, VKS: not Kubernetes objects); its ready nodes are those whose
    ``pool_label`` names it, and its autoscaler's GPU type is their autoscaler GPU label's value."""
    growers = []
    for given in node_pools:
        ready = sorted(
            (
                node
                for node in nodes
                if pool_label and _labels(node).get(pool_label) == given["pool"] and _is_ready(node)
            ),
            key=lambda node: _meta(node).get("name"),
        )
        gpu_type = next((autoscaler_gpu_type(_labels(node)) for node in ready), None)
        growers.append(
            Grower(
                pool=given["pool"],
                kind=KIND_NODE_POOL,
                name=given.get("name") or given["pool"],
                size=given["size"],
                min_size=given.get("min_size") or 0,
                max_size=given.get("max_size"),
                owner=OWNER_AUTOSCALER if given.get("autoscaling") else OWNER_PLAN,
                new_node=NewNode(
                    product=given.get("product"),
                    gpu_memory_mib=given.get("gpu_memory_mib"),
                    gpus=given["gpus"],
                    gpu_type=gpu_type,
                    cores=None,
                    memory_gib=None,
                    source="input",
                ),
                ready_nodes=tuple(_meta(node).get("name") for node in ready),
            )
        )
    return growers


def _labels(node):
    return _meta(node).get("labels") or {}


def autoscaler_gpu_type(labels):
    """The GPU type a node's labels give the autoscaler (the value of its platform's GPU label), or None."""
    return next((labels[label] for label in AUTOSCALER_GPU_LABELS if label in labels), None)


def new_nodes_at_most(grower, limits):
    """The most nodes ``grower`` may add on its own and alone among the growers (the shared limits bind them together),
    and the limits that bind there (names of what stops it; None and [] when nothing bounds it)."""
    bounds = []
    if grower.max_size is not None:
        bounds.append(
            (max(0, grower.max_size - grower.size), "maxReplicas" if grower.kind == KIND_MACHINESET else "max_size")
        )
    if limits.max_nodes_total is not None:
        bounds.append((max(0, limits.max_nodes_total - limits.nodes), "maxNodesTotal"))
    new = grower.new_node
    if new.gpu_type in limits.gpus and new.gpus:
        most, counted = limits.gpus[new.gpu_type]
        bounds.append((max(0, most - counted) // new.gpus, "gpus[%s]" % new.gpu_type))
    if limits.cores is not None and new.cores:
        bounds.append((int(max(0, limits.cores - limits.cores_now) // new.cores), "cores"))
    if limits.memory_gib is not None and new.memory_gib:
        bounds.append((int(max(0, limits.memory_gib - limits.memory_gib_now) // new.memory_gib), "memory"))
    if not bounds:
        return None, []
    least = min(count for count, _name in bounds)
    return least, [name for count, name in bounds if count == least]


def _looks_unready(state, labelled):
    """A node carrying the autoscaler's GPU label but advertising no nvidia.com/gpu: the autoscaler takes its GPUs for
    not ready yet and never copies it as a template (kubernetes/autoscaler#8095, gpu_processor.go)."""
    return labelled and state.allocatable.get(RESOURCE_GPU, 0) <= 0


def autoscaler_can_scale(grower, resource, ready_states):
    """Whether the cluster autoscaler, owning ``grower``'s size, can add a node for pods waiting for ``resource``:
    ``(answer, reason)``, answer "yes", "no", "maybe" or "unknown". ``ready_states``: NodeGpuState of the grower's
    ready nodes; it copies one of those it takes for ready as its template, else it builds the scale-from-zero
    template, which advertises only nvidia.com/gpu (docs/PLATFORM_FACTS.md, "The template node for a scale-up")."""
    labelled = grower.new_node.gpu_type is not None
    candidates = [state for state in ready_states if not _looks_unready(state, labelled)]
    if not candidates and grower.kind == KIND_NODE_POOL:
        return "unknown", (
            "with no ready node to copy, its template is the platform's, and no public source says what that "
            "advertises (docs/PLATFORM_FACTS.md)"
        )
    if not candidates:
        why = "from zero"
        if ready_states:
            why = (
                "its nodes advertise no %s while carrying %s, so it takes them for not ready "
                "(kubernetes/autoscaler#8095) and" % (RESOURCE_GPU, ACCELERATOR_LABEL)
            )
        if resource == RESOURCE_GPU:
            return "yes", "%s its template advertises %d %s a node" % (why, grower.new_node.gpus, RESOURCE_GPU)
        return "no", (
            "%s its template advertises only %s (no annotation advertises %s), so pods waiting for it never trigger "
            "a scale-up" % (why, RESOURCE_GPU, resource)
        )
    serving = sorted(state.name for state in candidates if state.allocatable.get(resource, 0) > 0)
    if len(serving) == len(candidates):
        return "yes", "its template is a copy of one of its ready nodes (%s), which advertise %s" % (
            ", ".join(serving),
            resource,
        )
    if not serving:
        return "no", "its template is a copy of one of its ready nodes (%s), none of which advertises %s" % (
            ", ".join(sorted(state.name for state in candidates)),
            resource,
        )
    return "maybe", "its template is a copy of one of its ready nodes, and only %s of them advertise %s" % (
        ", ".join(serving),
        resource,
    )


def waiting_without_nodes(pending_pods, planned_pools):
    """{pool: {resource: count}} the pending pods (the answer's ``pending_pods``) wait for in pools no selected node is
    in: a MachineSet or node pool at zero, which only a new node can serve."""
    waiting = {}
    for pod in pending_pods:
        pool = pod.get("pool")
        if pool is not None and pool not in planned_pools:
            for resource, count in pod["requests"].items():
                waiting.setdefault(pool, {})[resource] = waiting.get(pool, {}).get(resource, 0) + count
    return waiting


def every_grower(sources, pool_label):
    """The Growers of every pool: MachineSets, then the node pools given."""
    return machineset_growers(
        sources.machinesets, sources.machine_autoscalers, sources.machines, sources.nodes, pool_label, None
    ) + node_pool_growers(sources.node_pools, sources.nodes, pool_label)


def capacity_answer(sources, growers, limits, waiting, pending_pods, planned, scale_ins):
    """The answer's ``capacity``: per pool (those planned, ``waiting``: {pool: {resource: count}}, and those only a
    MachineSet or a node pool given names, which no node is in yet: what ``pending_pods`` wait for there) the ways it
    grows (``growers``), what each may add and what stops it (``limits``: SharedLimits), the nodes the plan adds
    (``planned``: {grower name: its entry}) and takes back (``scale_ins``: {grower name: its entry}), and, where an
    autoscaler owns the size, whether it can scale for each resource waiting there; and the ClusterAutoscaler's limits
    they share."""
    waiting = dict(waiting, **waiting_without_nodes(pending_pods, set(waiting)))
    pools = set(waiting) | set(grower.pool for grower in growers)
    states = dict((state.name, state) for state in map(NodeGpuState.from_node, sources.nodes))
    answer = dict((pool, []) for pool in sorted(pools))
    for grower in growers:
        most, limited_by = new_nodes_at_most(grower, limits)
        entry = dict(
            (field, getattr(grower, field)) for field in ("kind", "name", "size", "min_size", "max_size", "owner")
        )
        entry.update(new_node=grower.new_node._asdict(), new_nodes_at_most=most, limited_by=limited_by)
        if grower.name in planned:
            # The size to set: a MachineSet's spec.replicas, or the pool's size (scw k8s pool update; grn vks
            # update-nodegroup --num-nodes).
            entry["planned"] = dict(planned[grower.name], size=grower.size + planned[grower.name]["new_nodes"])
        if grower.name in scale_ins:
            entry["scale_in"] = scale_ins[grower.name]
        if grower.owner == OWNER_AUTOSCALER:
            ready = [states[name] for name in grower.ready_nodes if name in states]
            entry["autoscaler_can_scale"] = dict(
                (resource, dict(zip(("answer", "reason"), autoscaler_can_scale(grower, resource, ready))))
                for resource in sorted(waiting.get(grower.pool) or {})
            )
        answer[grower.pool].append(entry)
    shared = dict(
        max_nodes_total=limits.max_nodes_total,
        nodes=limits.nodes,
        gpus=dict((gpu_type, dict(max=most, counted=counted)) for gpu_type, (most, counted) in limits.gpus.items()),
        cores=limits.cores,
        cores_now=limits.cores_now,
        memory_gib=limits.memory_gib,
        memory_gib_now=limits.memory_gib_now,
    )
    return dict(pools=answer, limits=shared)
