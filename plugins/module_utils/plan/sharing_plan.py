# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_sharing_plan's plan, from what the cluster shows: the supply (GPU nodes, their models and current states, the
pods running on them), the demand (pending pods and given requests, per pool), plan/layout's search per pool, and the
answer: per node the state it should take and what it serves, the requests left unserved and why, and the arguments
of gpu_reset, gpu_mig_config, gpu_timeslicing and gpu_mps that get there. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import time
from collections import deque

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_RESOURCE_PREFIX,
    MIG_STRATEGY_MIXED,
    MIG_STRATEGY_SINGLE,
    MIN_REPLICAS,
    RESOURCE_GPU,
    mig_profile_of_resource,
    mig_resource_name,
    most_replicas_advertised,
    mps_max_clients,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIB_PER_GIB
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import gpu_requests
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import layout_entries
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import parse_mig_profile
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.layout import (
    MPS,
    RESOURCE_GPU_SHARED,
    TIME_SLICING,
    UNKNOWN,
    WHOLE,
    Node,
    evaluate,
    mig_gpu,
    pool_demand,
    shared_gpu,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.layout_program import (
    DEFAULT_MAX_REPLICAS,
    DEFAULT_TIME_LIMIT,
    plan_pool,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import (
    current_layout,
    layout_per_gpu,
    physical_gpu_count,
)

# The pool of the nodes that lack the pool label (and of every node when no pool label is given).
NO_POOL = ""
CONFIG_NAME_PREFIX = "gpushare-plan-"
PLANNED_RESOURCES = (RESOURCE_GPU, RESOURCE_GPU_SHARED)


def is_planned_resource(resource):
    return resource in PLANNED_RESOURCES or resource.startswith(MIG_RESOURCE_PREFIX)


def planned_requests(pod):
    """{resource: count} of what a pod requests that the planner places."""
    return dict((r, n) for r, n in gpu_requests(pod).items() if is_planned_resource(r) and n > 0)


# --- supply ----------------------------------------------------------------------------------------------------


def current_descriptors(state, configs):
    """Each GPU's state as plan/layout describes it: MIG per GPU from the config the node's nvidia.com/mig.config
    label names (``configs``, the ConfigMap mig-manager reads, else NVIDIA's shipped ones); time-slicing or MPS by the
    replicas GPU Feature Discovery reports; else whole. UNKNOWN where a MIG config cannot be read back."""
    count = physical_gpu_count(state, configs) if state.mig_enabled else state.count
    if not count:
        return ()
    if state.mig_enabled:
        layout = current_layout(state, configs, count)
        if layout is None:
            return (UNKNOWN,) * count
        per_gpu = layout_per_gpu(layout, count)
        return tuple(WHOLE if per_gpu.get(index) is None else mig_gpu(per_gpu[index]) for index in range(count))
    if state.sharing_strategy in (TIME_SLICING, MPS) and state.replicas > 1:
        renamed = state.shared_resource() == RESOURCE_GPU_SHARED
        return (shared_gpu(state.sharing_strategy, state.replicas, renamed),) * count
    return (WHOLE,) * count


def supply_node(state, pool, configs, running, mig_allowed):
    """plan/layout's Node for one GPU node: MPS only where GPU Feature Discovery labels it capable."""
    current = current_descriptors(state, configs)
    supply = dict((r, n) for r, n in state.capacity.items() if is_planned_resource(r) and n)
    model = state.gpu_model
    mps_max = mps_max_clients(state.compute_capability) if state.mps_capable else 0
    return Node(
        state.name,
        pool,
        model,
        current,
        supply,
        running,
        bool(mig_allowed and model is not None and model.mig_capable and state.mig_capable),
        mps_max,
    )


# --- demand ----------------------------------------------------------------------------------------------------


def scheduler_reason(pod):
    """The scheduler's message for a pending pod ("0/3 nodes are available: 3 Insufficient ..."), or None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition.get("message") or condition.get("reason")
    return None


def pending_gpu_pods(pods):
    """Pods no node holds yet that request planned resources."""
    pending = []
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or (pod.get("status") or {}).get("phase") not in (None, "Pending"):
            continue
        if planned_requests(pod):
            pending.append(pod)
    return pending


def running_by_node(pods, node_names):
    """{node: {resource: count}} of the planned resources the pods bound to ``node_names`` hold, and {node: [(pod,
    its requests)]}."""
    running, pods_by_node = {}, {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in node_names or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        requests = planned_requests(pod)
        if not requests:
            continue
        held = running.setdefault(node, {})
        for resource, count in requests.items():
            held[resource] = held.get(resource, 0) + count
        pods_by_node.setdefault(node, []).append(
            ("%s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"]), requests)
        )
    return running, pods_by_node


def pool_models(nodes):
    """The MIG models of a pool's nodes that may take MIG, most GPUs first."""
    counts = {}
    for node in nodes:
        if node.mig_allowed:
            counts.setdefault(node.model.name, [node.model, 0])[1] += len(node.current)
    return [model for model, _gpus in sorted(counts.values(), key=lambda entry: (-entry[1], entry[0].name))]


def smallest_profile(model, memory_gib, compute_share):
    """The smallest MIG profile of ``model`` with at least ``memory_gib`` of memory and ``compute_share`` of the
    GPU's compute slices (no media extension or graphics attribute), or None."""
    fitting = []
    for profile, facts in model.facts.items():
        if parse_mig_profile(profile).suffix:
            continue
        if facts["memory_mib"] >= memory_gib * MIB_PER_GIB and facts["slices"] >= compute_share * model.compute_slices:
            fitting.append((facts["slices"], facts["memory_mib"], profile))
    return min(fitting)[2] if fitting else None


def gpu_memory_mib(state):
    """The memory of one of a node's GPUs: GPU Feature Discovery's gpu.memory label (NVML's figure), or the catalog's
    largest MIG profile where that is more (under the single strategy the label gives the MIG device's); 0 unknown."""
    memory = state.memory_mib or 0
    model = state.gpu_model
    if model is not None and model.facts:
        memory = max([memory] + [facts["memory_mib"] for facts in model.facts.values()])
    return memory


def request_resource(request, models, largest_mib):
    """(resource, why no GPU of the pool can serve it, or None) of a given request: as given, a profile's resource, or
    for memory and a compute share the smallest MIG profile that holds it on the pool's model; else nvidia.com/gpu
    where some GPU of the pool (``largest_mib``: the most memory one has, 0 unknown) holds the memory."""
    if request.get("resource"):
        return request["resource"], None
    if request.get("profile"):
        return mig_resource_name(request["profile"]), None
    memory, share = request.get("memory_gib") or 0, request.get("compute_share") or 0
    for model in models:
        profile = smallest_profile(model, memory, share)
        if profile:
            return mig_resource_name(profile), None
    if largest_mib and memory * MIB_PER_GIB > largest_mib:
        return RESOURCE_GPU, "it asks for %g GiB of GPU memory, and the largest GPU of the pool has %.1f GiB" % (
            memory,
            largest_mib / float(MIB_PER_GIB),
        )
    return RESOURCE_GPU, None


# No node advertises more replicas of one GPU than this: the kubelet's limit on one device list, for a node of one GPU
# (nvidia/device_plugin_config.most_replicas_advertised); a node of more GPUs stops lower.
REPLICAS_CEILING = most_replicas_advertised(1)


def check_options(params):
    """Refuse options that cannot be planned (requests, max_replicas, time_limit), before anything is read."""
    problems = []
    replicas = params.get("max_replicas")
    if replicas is not None and not MIN_REPLICAS <= replicas <= REPLICAS_CEILING:
        problems.append(
            "max_replicas is %d; give %d (the device plugin's least) to %d (above it one GPU's device list exceeds "
            "the kubelet's 4 MiB limit, kubernetes/kubernetes#109304)" % (replicas, MIN_REPLICAS, REPLICAS_CEILING)
        )
    if params.get("time_limit") is not None and params["time_limit"] <= 0:
        problems.append("time_limit is %s; give the seconds the solver may take, above 0" % params["time_limit"])
    for number, request in enumerate(params.get("requests") or [], 1):
        kinds = [kind for kind in ("resource", "profile") if request.get(kind)]
        sized = request.get("memory_gib") is not None or request.get("compute_share") is not None
        if len(kinds) + int(sized) != 1:
            problems.append("requests[%d]: give exactly one of resource, profile, or memory_gib/compute_share" % number)
        elif request.get("resource") and not is_planned_resource(request["resource"]):
            problems.append(
                "requests[%d]: resource %s is not one the planner places; use nvidia.com/gpu, nvidia.com/gpu.shared "
                "or nvidia.com/mig-<profile>" % (number, request["resource"])
            )
        elif request.get("profile") and not mig_profile_of_resource(mig_resource_name(request["profile"])):
            problems.append("requests[%d]: %s is not a MIG profile name (like 1g.10gb)" % (number, request["profile"]))
        if request.get("count") is None or request["count"] < 1:
            problems.append("requests[%d]: count must be 1 or more" % number)
        share = request.get("compute_share")
        if share is not None and not 0 < share <= 1:
            problems.append("requests[%d]: compute_share is a fraction of one GPU, above 0 and at most 1" % number)
    if problems:
        raise GpuShareError("Fix the options: " + "; ".join(problems))


# --- the answer ------------------------------------------------------------------------------------------------


def describe(descriptors):
    """The node's planned mode, MIG layout (mig-parted's format) and replicas."""
    kinds = set(d[0] for d in descriptors)
    if kinds & set(["mig"]):
        return "mig", mig_parted_layout(descriptors), None
    if kinds == set([TIME_SLICING]) or kinds == set([MPS]):
        return descriptors[0][0], None, descriptors[0][1]
    if kinds == set(["whole"]):
        return "whole", None, None
    return "unknown", None, None


def mig_parted_layout(descriptors):
    """mig-parted entries for per-GPU descriptors: one per distinct state, ``devices: all`` when all GPUs agree."""
    per_gpu = dict(
        (index, descriptor[1] if descriptor[0] == "mig" else None) for index, descriptor in enumerate(descriptors)
    )
    return layout_entries(per_gpu, len(descriptors))


def config_name_of(layout):
    """A name for a planned layout: the same layout always gets the same name, another layout another one (mig-manager
    does not reload a config edited under a name in use)."""
    digest = hashlib.sha256(json.dumps(layout, sort_keys=True).encode("utf-8")).hexdigest()[:10]
    return CONFIG_NAME_PREFIX + digest


def assign_serving(nodes, choices, waiting, pods_by_node):
    """What each node serves, and which of the requests waiting it takes: first the pods it keeps running, then the
    ``waiting`` ([(name, {resource: count})]: pending pods, given requests) and the pods that move, in node order (any
    node of the pool can take any request of its resource). A list of (served counts, names taken) per node."""
    queues = {}

    def enqueue(name, requests):
        for resource, count in sorted(requests.items()):
            queues.setdefault(resource, deque()).append([name, count])

    for name, requests in waiting:
        enqueue(name, requests)
    kept_and_free = []
    for node, choice in zip(nodes, choices):
        gives, moved, _changed, _free = evaluate(node, choice)
        gives = dict(gives)
        kept = {}
        if moved:
            for name, requests in pods_by_node.get(node.name, []):
                enqueue(name, requests)
        else:
            for resource, count in node.running.items():
                kept[resource] = min(count, gives.get(resource, 0))
                gives[resource] = gives.get(resource, 0) - kept[resource]
        kept_and_free.append((kept, gives))
    result = []
    for kept, gives in kept_and_free:
        served, taken = dict(kept), []
        for resource, count in sorted(gives.items()):
            queue = queues.get(resource, ())
            while count > 0 and queue:
                name, wanted = queue[0]
                share = min(count, wanted)
                served[resource] = served.get(resource, 0) + share
                count -= share
                if name not in taken:
                    taken.append(name)
                if share == wanted:
                    queue.popleft()
                else:
                    queue[0][1] -= share
        result.append((dict((r, n) for r, n in served.items() if n), taken))
    return result


def unserved_reason(pool, resource, nodes, allow_moves, mig_blocked=None, max_replicas=DEFAULT_MAX_REPLICAS):
    """Why part of a pool's demand for ``resource`` stays unserved, for the user (``mig_blocked``: why no MIG change is
    planned anywhere, if so)."""
    where = "pool %s" % pool if pool else "the selected nodes"
    if resource in PLANNED_RESOURCES:
        where += " (shared by at most %d replicas per GPU: max_replicas%s)" % (
            max_replicas,
            ", or MPS's client limit" if any(node.mps_max for node in nodes) else "",
        )
    profile = mig_profile_of_resource(resource)
    if profile:
        models = pool_models(nodes)
        if mig_blocked:
            return mig_blocked
        if not models:
            return "no node of %s may take MIG (their GPUs have no MIG, or the platform offers none)" % where
        if not any(profile in model.profiles for model in models):
            return "no GPU model in %s has the MIG profile %s (%s)" % (
                where,
                profile,
                ", ".join("%s: %s" % (m.name, ", ".join(sorted(m.profiles))) for m in models),
            )
    if not allow_moves and any(node.running for node in nodes):
        return (
            "the GPUs of %s are all taken, or run pods that stay where they are (allow_moves: false lets no pod "
            "move)" % where
        )
    return "the GPUs of %s are all taken by the requests served" % where


def _node_sharing(descriptors):
    return set(d[0] for d in descriptors) & set([TIME_SLICING, MPS])


def _has_mig(descriptors):
    return any(d[0] in ("mig", "unknown") for d in descriptors)


def module_arguments(changes, allow_moves):
    """The calls that get every changed node to its planned state, by module, in the order to run them: gpu_reset
    for nodes leaving time-slicing, MPS or MIG; gpu_mig_config per distinct layout (the mixed strategy, one resource
    per profile); gpu_timeslicing and gpu_mps per replica count. ``changes``: (node, planned descriptors, pods on
    it)."""
    calls = dict(gpu_reset=[], gpu_mig_config=[], gpu_timeslicing=[], gpu_mps=[])
    groups = {}

    def add(module, key, arguments, name, drain):
        entry = groups.get((module, key))
        if entry is None:
            entry = groups[(module, key)] = dict(arguments, nodes=dict(names=[]))
            if drain is not None:
                entry["drain"] = False
            calls[module].append(entry)
        entry["nodes"]["names"].append(name)
        if drain:
            entry["drain"] = True

    for node, descriptors, pods in changes:
        drain = bool(pods) and allow_moves
        old_sharing, new_sharing = _node_sharing(node.current), _node_sharing(descriptors)
        if (old_sharing and old_sharing != new_sharing) or (_has_mig(node.current) and not _has_mig(descriptors)):
            add("gpu_reset", None, {}, node.name, drain)
        mode, layout, replicas = describe(descriptors)
        if mode == "mig":
            name = config_name_of(layout)
            add(
                "gpu_mig_config",
                name,
                dict(strategy=MIG_STRATEGY_MIXED, config_name=name, layout=layout),
                node.name,
                drain,
            )
        elif mode in (TIME_SLICING, MPS):
            renamed = descriptors[0][2]
            module = "gpu_timeslicing" if mode == TIME_SLICING else "gpu_mps"
            key = "%s%s-%d%s" % (
                CONFIG_NAME_PREFIX,
                "ts" if mode == TIME_SLICING else "mps",
                replicas,
                "-shared" if renamed else "",
            )
            add(module, key, dict(config_key=key, replicas=replicas, rename_by_default=renamed), node.name, None)
    return calls


def _pool_of_pod(pod, pool_label, pools, spare):
    """The pool a pending pod waits for: the one its nodeSelector names, else the only one, else the one with the most
    room for what it requests (its scheduler could place it in any)."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if pool_label and pool_label in selector:
        return selector[pool_label]
    if len(pools) == 1:
        return next(iter(pools))
    requests = planned_requests(pod)
    return max(sorted(pools), key=lambda pool: sum(min(n, spare[pool].get(r, 0)) for r, n in requests.items()))


def _mig_blocked(options):
    """(why no MIG change may be planned, the finding that says so), or (None, None). The layouts are planned for the
    mixed strategy, and switching a cluster on single to it would change what its MIG nodes advertise
    (nvidia.com/gpu becomes nvidia.com/mig-<profile>) under the pods that use them."""
    nodes = options.get("single_mig_nodes") or []
    if options.get("mig_strategy") != MIG_STRATEGY_SINGLE or not nodes:
        return None, None
    return (
        "no MIG change is planned while the cluster's MIG strategy is single (see findings)",
        "the cluster's MIG strategy is single and %s run MIG under it: switching to mixed, which planned layouts "
        "need, would change what they advertise, so no MIG change is planned; switch the cluster to mixed first "
        "(gpu_mig_config strategy: mixed) to plan with MIG" % ", ".join(nodes),
    )


def _supply_pools(states, configs, running, pool_label, mig_allowed):
    """{pool: [Node]} of the GPU nodes, by name, and {pool: the most memory one of its GPUs has, in MiB}."""
    pools, memory = {}, {}
    for state in sorted(states, key=lambda state: state.name):
        pool = state.labels.get(pool_label, NO_POOL) if pool_label else NO_POOL
        node = supply_node(state, pool, configs, running.get(state.name, {}), mig_allowed)
        if node.current:
            pools.setdefault(pool, []).append(node)
            memory[pool] = max(memory.get(pool, 0), gpu_memory_mib(state))
    return pools, memory


def _waiting_demand(pods, pools, memory, options):
    """The pending pods (as the answer lists them); per pool the waiting demand ({resource: count}) and its requests by
    name ([(name, {resource: count})]): pending pods, then the given requests; and the given requests no GPU of their
    pool can hold (``memory``: {pool: the most memory one of its GPUs has}), as the answer's unserved entries."""
    pending = dict((pool, {}) for pool in pools)
    named = dict((pool, []) for pool in pools)
    spare = {}
    for pool, nodes in pools.items():
        spare[pool] = {}
        for node in nodes:
            for resource, count in node.supply.items():
                spare[pool][resource] = spare[pool].get(resource, 0) + count - node.running.get(resource, 0)

    def add(pool, name, requests):
        named[pool].append((name, requests))
        for resource, count in requests.items():
            pending[pool][resource] = pending[pool].get(resource, 0) + count
            spare[pool][resource] = spare[pool].get(resource, 0) - count

    waiting, unservable = [], []
    for pod in pending_gpu_pods(pods) if options.get("read_pods", True) else []:
        requests = planned_requests(pod)
        pool = _pool_of_pod(pod, options.get("pool_label"), pools, spare) if pools else None
        metadata = pod["metadata"]
        waiting.append(
            dict(
                namespace=metadata["namespace"],
                name=metadata["name"],
                pool=pool,
                requests=requests,
                reason=scheduler_reason(pod),
            )
        )
        if pool in pending:
            add(pool, "%s/%s" % (metadata["namespace"], metadata["name"]), requests)
    for number, request in enumerate(options.get("requests") or [], 1):
        pool = request.get("pool")
        if pool is None:
            if len(pools) != 1:
                raise GpuShareError(
                    "requests[%d] names no pool, and the selected nodes form %d pools (%s): give its pool"
                    % (number, len(pools), ", ".join(sorted(pools)) or "none")
                )
            pool = next(iter(pools))
        if pool not in pools:
            raise GpuShareError(
                "requests[%d]: pool %s has no selected GPU node (pools: %s)"
                % (number, pool, ", ".join(sorted(p for p in pools if p)) or "none")
            )
        resource, impossible = request_resource(request, pool_models(pools[pool]), memory[pool])
        if impossible:
            reason = "no GPU of %s can serve requests[%d]: %s" % (
                "pool %s" % pool if pool else "the selected nodes",
                number,
                impossible,
            )
            unservable.append(dict(pool=pool, resource=resource, count=request["count"], reason=reason))
        else:
            add(pool, "requests[%d]" % number, {resource: request["count"]})
    return waiting, pending, named, unservable


def _answer_pool(pool, nodes, pending, named, pods_by_node, options, mig_blocked, time_limit):
    """One pool's plan, as the answer gives it: (per node, the pool's entry, the unserved, the changes)."""
    allow_moves = bool(options.get("allow_moves"))
    max_replicas = options.get("max_replicas") or DEFAULT_MAX_REPLICAS
    method = options.get("sharing_method") or TIME_SLICING
    plan = plan_pool(nodes, pending, allow_moves, method, max_replicas, time_limit)
    demand = pool_demand(nodes, pending)
    answer_nodes, changes = {}, []
    for node, choice, (served, taken) in zip(
        nodes, plan.choices, assign_serving(nodes, plan.choices, named, pods_by_node)
    ):
        gives, moved, _changed, _free = evaluate(node, choice)
        mode, layout, replicas = describe(node.current if choice is None else choice)
        answer_nodes[node.name] = dict(
            pool=pool,
            gpu_model=node.model.name if node.model else None,
            gpus=len(node.current),
            change=choice is not None,
            mode=mode,
            layout=layout,
            replicas=replicas,
            supply=gives,
            serves=served,
            takes=taken,
            pods_to_move=[name for name, _requests in pods_by_node.get(node.name, [])] if moved else [],
        )
        if choice is not None:
            changes.append((node, choice, node.running))
    unserved = [
        dict(
            pool=pool,
            resource=resource,
            count=count - plan.served.get(resource, 0),
            reason=unserved_reason(pool, resource, nodes, allow_moves, mig_blocked, max_replicas),
        )
        for resource, count in sorted(demand.items())
        if count > plan.served.get(resource, 0)
    ]
    entry = dict(
        nodes=len(nodes),
        gpus=sum(len(node.current) for node in nodes),
        demand=demand,
        served=plan.score.served,
        pods_moved=plan.score.moved,
        gpus_changed=plan.score.changed,
        free_slices=plan.score.free,
        exact=plan.exact,
        bound=dict((name, None if value is None else int(value)) for name, value in plan.bound.items()),
    )
    return answer_nodes, entry, unserved, changes


def sharing_plan_answer(states, pods, configs, options):
    """The whole answer. ``states``: NodeGpuState of the selected GPU nodes; ``pods``: every pod that may hold or
    wait for a GPU; ``configs``: the mig-parted configs mig-manager reads; ``options``: the module's parameters plus
    ``mig_allowed`` (False on platforms without MIG), ``mig_strategy`` (the cluster's) and ``single_mig_nodes`` (the
    nodes running MIG, anywhere in the cluster)."""
    mig_blocked, finding = _mig_blocked(options)
    running, pods_by_node = running_by_node(pods, set(state.name for state in states))
    pools, memory = _supply_pools(
        states, configs, running, options.get("pool_label"), options.get("mig_allowed", True) and not mig_blocked
    )
    waiting, pending, named, unservable = _waiting_demand(pods, pools, memory, options)
    answer = dict(nodes={}, pools={}, pending_pods=waiting, unserved=unservable, findings=[finding] if finding else [])
    changes = []
    # The time limit is the whole plan's: each pool may take an equal share of what the pools before it left.
    deadline = time.monotonic() + (options.get("time_limit") or DEFAULT_TIME_LIMIT)
    for number, (pool, nodes) in enumerate(sorted(pools.items())):
        share = max(0.0, deadline - time.monotonic()) / (len(pools) - number)
        pool_nodes, entry, unserved, pool_changes = _answer_pool(
            pool, nodes, pending[pool], named[pool], pods_by_node, options, mig_blocked, share
        )
        answer["nodes"].update(pool_nodes)
        answer["pools"][pool] = entry
        answer["unserved"].extend(unserved)
        changes.extend(pool_changes)
    answer["unserved"].extend(
        dict(pool=None, resource=", ".join(sorted(entry["requests"])), count=1, reason="no GPU node is selected")
        for entry in waiting
        if entry["pool"] is None
    )
    answer["apply"] = module_arguments(changes, bool(options.get("allow_moves")))
    answer["nodes_to_change"] = sorted(node.name for node, _choice, _pods in changes)
    return answer
