# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_sharing_plan's answer, from what the cluster shows: the supply (supply.py) and the demand (demand.py) per pool,
each pool's plan (search.py), and per node the GPU states it should take and what it serves, the requests left
unserved and why, and the apply arguments (apply.py) that get there. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time
from collections import deque, namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_STRATEGY_SINGLE,
    mig_profile_of_resource,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import PLANNED_RESOURCES, gpu_pods_by_node
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.capacity_records import nodes_added_within_the_hour
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.apply import (
    Change,
    apply_arguments,
    new_node_sharing,
    node_mode,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.capacity import (
    exceeded,
    left_after,
    new_node_limits,
    node_offers,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.capacity_apply import (
    capacity_apply,
    capacity_decisions,
    new_node_cap,
    templates_following_nodes,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.demand import (
    read_demand,
    running_by_node,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.growth import (
    autoscaler_gpu_type,
    capacity_answer,
    every_grower,
    shared_limits,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import outcome, pool_demand
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.scale_in import scale_in
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.search import plan_pool
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.supply import pool_models, supply_of

# What one node serves once planned ({resource: count}) and the requesters it takes (their names).
Serving = namedtuple("Serving", "served taken")
# Why no MIG change may be planned (for the unserved), and the finding that says so; both None when MIG may be planned.
MigBlock = namedtuple("MigBlock", "reason finding")
# One pool's part of the answer: its nodes' entries ({name: entry}), the pool's entry, its unserved entries, its
# changes ([Change]), per offer the nodes it adds (new_nodes.NewNodes), and per shared limit what it counts against it.
PoolAnswer = namedtuple("PoolAnswer", "nodes entry unserved changes added limit_use")
# What the pools of one plan may add: per pool its offers ({pool: [new_nodes.NodeOffer]}) and the limits they share
# ([new_nodes.NewNodeLimit]).
Growth = namedtuple("Growth", "offers limits")
NO_GROWTH = Growth({}, [])
# The capacity part of a plan before the pools are planned: the growers, the limits they share (growth.SharedLimits),
# the Growth offered to the program and how many nodes it may add (capacity_apply.NewNodeCap).
Capacity = namedtuple("Capacity", "growers limits growth cap")
NO_CAPACITY = Capacity([], None, NO_GROWTH, None)


def assign_serving(nodes, choices, requesters, running_pods):
    """What each node serves, and which requesters it takes: first the pods it keeps running, then the ``requesters``
    waiting ([Requester]: pending pods, given requests) and the pods that move (``running_pods``: {node:
    [Requester]}), in node order (any node of the pool can take any request of its resource). A Serving per node."""
    queues = {}

    def enqueue(requester):
        for resource, count in sorted(requester.requests.items()):
            queues.setdefault(resource, deque()).append([requester.name, count])

    for requester in requesters:
        enqueue(requester)
    kept_and_free = []
    for node, choice in zip(nodes, choices):
        result = outcome(node, choice)
        gives = dict(result.supply)
        kept = {}
        if result.moved:
            for requester in running_pods.get(node.name, []):
                enqueue(requester)
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
        result.append(Serving(dict((r, n) for r, n in served.items() if n), taken))
    return result


def unserved_reason(pool, resource, nodes, settings, mig_blocked=None):
    """Why part of a pool's demand for ``resource`` stays unserved, for the user (``mig_blocked``: why no MIG change is
    planned anywhere, if so)."""
    where = "pool %s" % pool if pool else "the selected nodes"
    if resource in PLANNED_RESOURCES:
        where += " (shared by at most %d replicas per GPU: max_replicas%s)" % (
            settings.max_replicas,
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
    if not settings.allow_moves and any(node.running for node in nodes):
        return (
            "the GPUs of %s are all taken, or run pods that stay where they are (allow_moves: false lets no pod "
            "move)" % where
        )
    return "the GPUs of %s are all taken by the requests served" % where


def mig_block(settings):
    """The MigBlock of the settings. The layouts are planned for the mixed strategy, and switching a cluster on single
    to it would change what its MIG nodes advertise (nvidia.com/gpu becomes nvidia.com/mig-<profile>) under the pods
    that use them."""
    nodes = settings.single_mig_nodes
    if settings.mig_strategy != MIG_STRATEGY_SINGLE or not nodes:
        return MigBlock(None, None)
    return MigBlock(
        "no MIG change is planned while the cluster's MIG strategy is single (see findings)",
        "the cluster's MIG strategy is single and %s run MIG under it: switching to mixed, which planned layouts "
        "need, would change what they advertise, so no MIG change is planned; switch the cluster to mixed first "
        "(gpu_mig_config strategy: mixed) to plan with MIG" % ", ".join(nodes),
    )


def _node_entries(pool, nodes, choices, requesters, running_pods):
    """The answer's entry of each node of a pool ({name: entry}) and the changes the plan makes ([Change])."""
    answer_nodes, changes = {}, []
    for node, choice, serving in zip(nodes, choices, assign_serving(nodes, choices, requesters, running_pods)):
        result = outcome(node, choice)
        mode = node_mode(node.current if choice is None else choice)
        answer_nodes[node.name] = dict(
            pool=pool,
            gpu_model=node.model.name if node.model else None,
            gpus=len(node.current),
            change=choice is not None,
            mode=mode.mode,
            layout=mode.layout,
            replicas=mode.replicas,
            supply=result.supply,
            serves=serving.served,
            takes=serving.taken,
            pods_to_move=[pod.name for pod in running_pods.get(node.name, [])] if result.moved else [],
        )
        if choice is not None:
            changes.append(Change(node, choice, node.running))
    return answer_nodes, changes


def answer_pool(pool, nodes, wanted, settings, mig_blocked, time_limit, growth, gpu_types):
    """One pool's plan, as the answer gives it: a PoolAnswer. ``wanted``: the pool's waiting demand, its requesters and
    the pods running on any node; ``growth``: the nodes it may add (Growth); ``gpu_types``: {node name: its autoscaler
    GPU type}."""
    waiting, requesters, running_pods = wanted
    offers = growth.offers.get(pool, [])
    plan = plan_pool(
        nodes,
        waiting,
        settings.allow_moves,
        settings.method,
        settings.max_replicas,
        time_limit,
        offers,
        growth.limits,
        gpu_types,
    )
    demand = pool_demand(nodes, waiting)
    answer_nodes, changes = _node_entries(pool, nodes, plan.choices, requesters, running_pods)
    unserved = [
        dict(
            pool=pool,
            resource=resource,
            count=count - plan.served.get(resource, 0),
            reason=(
                unserved_reason(pool, resource, nodes, settings, mig_blocked)
                if nodes
                else "pool %s has no node yet, and the nodes it may add serve no more of it (see capacity)" % pool
            ),
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
    if offers:
        entry.update(
            new_nodes=sum(new.count for new in plan.new_nodes),
            new_node_cost=sum(offer.cost * new.count for offer, new in zip(offers, plan.new_nodes)),
        )
    return PoolAnswer(answer_nodes, entry, unserved, changes, plan.new_nodes, plan.limit_use)


def planned_new_nodes(growth, parts):
    """{grower name: the capacity report's ``planned`` entry} of the nodes the plan adds, with the gpu_machineset
    ``sharing`` they boot into (apply.new_node_sharing)."""
    planned = {}
    for pool, part in parts.items():
        for offer, new in zip(growth.offers.get(pool, []), part.added):
            states = (new.state,) * len(offer.node.current) if new.count else None
            mode = node_mode(states) if states else None
            planned[offer.name] = dict(
                new_nodes=new.count,
                mode=mode.mode if mode else None,
                layout=mode.layout if mode else None,
                replicas=mode.replicas if mode else None,
                sharing=new_node_sharing(states) if states else None,
            )
    return planned


def _capacity(settings, sources, mig_allowed):
    """The Capacity of a plan: the growers and limits of the capacity report, and the nodes the plan may add within
    ``max_new_nodes`` and what ``max_new_nodes_per_hour`` leaves of the hour."""
    if not settings.capacity:
        return NO_CAPACITY
    growers = every_grower(sources, settings.pool_label)
    limits = shared_limits(sources.cluster_autoscalers, sources.nodes)
    cap = new_node_cap(
        settings.max_new_nodes,
        settings.max_new_nodes_per_hour,
        nodes_added_within_the_hour(sources.machinesets, settings.now),
    )
    if not cap.allowed:
        return Capacity(growers, limits, NO_GROWTH, cap)
    offers = node_offers(growers, sources.nodes, mig_allowed, cap.allowed, settings.node_costs)
    return Capacity(growers, limits, Growth(offers, new_node_limits(limits, cap.allowed)), cap)


def _plan_every_pool(pools, demand, running, settings, blocked, growth, gpu_types):
    """Each pool's PoolAnswer ({pool: part}) and a finding when the pools' new nodes together exceed a shared limit:
    they are then planned again one after the other, each within what the ones before left, and not proven
    (capacity.py says why the first pass is the joint best otherwise)."""
    # The time limit is the whole plan's: each pool may take an equal share of what the pools before it left.
    deadline = time.monotonic() + settings.time_limit

    def plan_pools(sequential):
        parts, shared = {}, growth.limits
        for number, (pool, nodes) in enumerate(pools):
            share = max(0.0, deadline - time.monotonic()) / (len(pools) - number)
            offers = growth.offers.get(pool, [])
            parts[pool] = answer_pool(
                pool,
                nodes,
                (demand.waiting[pool], demand.requesters[pool], running.pods),
                settings,
                blocked.reason,
                share,
                Growth({pool: offers}, shared),
                gpu_types,
            )
            if sequential:
                shared = left_after(shared, parts[pool].limit_use)
        return parts

    parts = plan_pools(False)
    over = exceeded(growth.limits, [part.limit_use for part in parts.values()])
    if not over:
        return parts, None
    parts = plan_pools(True)
    for pool in growth.offers:
        if pool in parts:
            parts[pool].entry["exact"] = False
    return parts, (
        "the pools' new nodes together would exceed %s: the pools were planned one after the other, each within what "
        "the ones before left, so the plan is not proven the best" % ", ".join(over)
    )


def sharing_plan_answer(observed_nodes, pods, configs, settings, capacity_sources=None):
    """The whole answer. ``observed_nodes``: NodeGpuState of the selected GPU nodes; ``pods``: every pod that may hold
    or wait for a GPU; ``configs``: the mig-parted configs mig-manager reads; ``settings``: the task's PlanSettings
    (settings.py), with the cluster facts the runner read; ``capacity_sources``: with ``settings.capacity``, what the
    capacity report reads (growth.CapacitySources)."""
    blocked = mig_block(settings)
    running = running_by_node(pods, set(observed.name for observed in observed_nodes))
    mig_allowed = settings.mig_allowed and not blocked.reason
    supply = supply_of(observed_nodes, configs, running.held, settings.pool_label, mig_allowed)
    capacity = _capacity(settings, capacity_sources, mig_allowed)
    growth = capacity.growth
    # Pools no selected node is in, which only new nodes can serve (a MachineSet at zero): planned with no node.
    growing = sorted(pool for pool in growth.offers if pool not in supply.pools)
    demand = read_demand(pods, supply, settings, growing)
    answer = dict(
        nodes={},
        pools={},
        pending_pods=demand.pending_pods,
        unserved=demand.unservable,
        findings=[blocked.finding] if blocked.finding else [],
    )
    gpu_types = dict((observed.name, autoscaler_gpu_type(observed.labels)) for observed in observed_nodes)
    pools = sorted(list(supply.pools.items()) + [(pool, []) for pool in growing])
    parts, finding = _plan_every_pool(pools, demand, running, settings, blocked, growth, gpu_types)
    answer["findings"].extend([finding] if finding else [])
    changes = []
    for pool in sorted(parts):
        part = parts[pool]
        answer["nodes"].update(part.nodes)
        answer["pools"][pool] = part.entry
        answer["unserved"].extend(part.unserved)
        changes.extend(part.changes)
    answer["unserved"].extend(
        dict(
            pool=entry["pool"],
            resource=", ".join(sorted(entry["requests"])),
            count=1,
            reason="no GPU node is selected" + ("" if entry["pool"] is None else " in pool %s" % entry["pool"]),
        )
        for entry in demand.pending_pods
        if entry["pool"] not in parts
    )
    answer["apply"] = apply_arguments(changes, settings.allow_moves)
    answer["nodes_to_change"] = sorted(change.node.name for change in changes)
    if settings.capacity:
        planned_states = dict((node.name, node.current) for nodes in supply.pools.values() for node in nodes)
        planned_states.update((change.node.name, change.choice) for change in changes)
        _answer_capacity(answer, capacity, capacity_sources, (settings, demand, pods, planned_states), parts)
    return answer


def _answer_capacity(answer, capacity, sources, asked, parts):
    """The answer's ``capacity`` (the report, the nodes added and taken back, the decisions and their reasons) and
    the ``apply`` entries of the MachineSets and node pools (``asked``: the settings, the demand read, the pods, and
    every selected node's planned GPU states)."""
    settings, demand, pods, planned_states = asked
    planned = planned_new_nodes(capacity.growth, parts)
    busy = set(gpu_pods_by_node(pods))
    scale_ins = scale_in(sources, capacity.growers, settings, demand.waiting, busy, set(answer["nodes_to_change"]))
    following = templates_following_nodes(capacity.growers, sources.machinesets, planned_states)
    report = capacity_answer(
        sources, capacity.growers, capacity.limits, demand.waiting, demand.pending_pods, planned, scale_ins
    )
    report["limits"].update(capacity.cap._asdict())
    report["decisions"] = capacity_decisions(
        capacity.growers, planned, scale_ins, following, answer["unserved"], capacity.cap
    )
    answer["capacity"] = report
    answer["apply"]["gpu_machineset"], answer["apply"]["node_pools"] = capacity_apply(
        capacity.growers, planned, scale_ins, following
    )
