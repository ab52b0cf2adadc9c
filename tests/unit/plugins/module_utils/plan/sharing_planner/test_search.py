# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sharing planner's search (plan/sharing_planner: program.py's mixed-integer program, solved by HiGHS) scores the
same as a search over every option of every node, every valid MIG layout of every GPU included (issue 28: "proven, not
claimed"). The references here share no code with the program: they enumerate options and score them with their own
functions; only the layout space (nvidia/mig_layouts, tested on its own) is common. The issue's three scarce fleets are
checked against a counting bound written here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import random

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_layouts import gpu_layouts
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import validate_mig_layout
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.apply import mig_parted_layout
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import (
    UNKNOWN,
    WHOLE,
    GpuKind,
    mig_gpu,
    shared_gpu,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import PoolNode
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.new_nodes import NewNodeLimit, NodeOffer
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.search import plan_pool

MODELS = dict((model.name, model) for model in MIG_GPU_MODELS)
A30 = MODELS["A30 24GB"]
A100 = MODELS["A100 80GB"]
H100 = MODELS["H100 80GB HBM3"]
TIME_SLICING, MPS = GpuKind.TIME_SLICING, GpuKind.MPS
# The replicas the references try (and the planner may give) per GPU: small, so that every option can be enumerated.
MAX_REPLICAS = 6


def key(score):
    return (score.served, -score.moved, -score.changed, score.free)


def advertises(states):
    """What GPUs in these states advertise, written here apart from the planner's own."""
    supply = {}
    for state in states:
        if state.kind == "whole":
            gives = {RESOURCE_GPU: 1}
        elif state.kind == "mig":
            gives = dict((mig_resource_name(p), n) for p, n in state.layout)
        elif state.kind in ("time-slicing", "mps"):
            gives = {RESOURCE_GPU_SHARED if state.renamed else RESOURCE_GPU: state.replicas}
        else:
            gives = {}
        for resource, count in gives.items():
            supply[resource] = supply.get(resource, 0) + count
    return supply


def total_demand(nodes, pending):
    demand = dict((r, n) for r, n in pending.items() if n)
    for node in nodes:
        for resource, count in node.running.items():
            demand[resource] = demand.get(resource, 0) + count
    return demand


def score(nodes, choices, pending):
    """(served, -moved, -changed, free) of one choice per node, computed here."""
    demand = total_demand(nodes, pending)
    supply, moved, changed, free = {}, 0, 0, 0
    for node, choice in zip(nodes, choices):
        gives, node_moved, node_changed, node_free = option_value(node, choice)
        moved, changed, free = moved + node_moved, changed + node_changed, free + node_free
        for resource, count in gives.items():
            supply[resource] = supply.get(resource, 0) + count
    served = sum(min(count, supply.get(resource, 0)) for resource, count in demand.items())
    return (served, -moved, -changed, free)


def make_node(name, model, current, running=None, mig_allowed=True, mps_max=48):
    current = tuple(current)
    return PoolNode(
        name=name,
        pool="pool",
        model=model,
        current=current,
        supply=advertises(current),
        running=dict(running or {}),
        mig_allowed=mig_allowed and bool(model),
        mps_max=mps_max,
    )


def slices_free(model, state):
    if state.kind != "mig":
        return 0
    return model.compute_slices - sum(n * model.facts[p]["slices"] for p, n in state.layout)


def stops_pods(old, new):
    kinds = ("mig", "mps", "unknown")
    return old != new and (old.kind in kinds or new.kind in kinds)


def every_option(node, demand, with_mig=True, method=TIME_SLICING, top=MAX_REPLICAS):
    """Every state the node may take, as (states or None to keep it): kept; every GPU whole; time-sliced or MPS
    (as asked, or as now) by 2 up to ``top`` (MPS: and its client limit), renamed or not; and with MIG, every valid
    layout of every GPU (MIG off and the current state too), GPU by GPU."""
    gpus = len(node.current)
    options = [None, (WHOLE,) * gpus]
    methods = set([method]) | set(s.kind for s in node.current if s.kind in (TIME_SLICING, MPS))
    for sharing in sorted(methods):
        for replicas in range(2, (min(top, node.mps_max) if sharing == MPS else top) + 1):
            for rename in (False, True):
                options.append((shared_gpu(sharing, replicas, rename),) * gpus)
    if with_mig and node.mig_allowed:
        per_gpu = []
        for current in node.current:
            states = [WHOLE] + [mig_gpu(layout) for layout in gpu_layouts(node.model)]
            if current != UNKNOWN and current not in states:
                states.append(current)
            per_gpu.append(states)
        options.extend(itertools.product(*per_gpu))
    return options


def option_value(node, states):
    if states is None:
        return node.supply, 0, 0, sum(slices_free(node.model, d) for d in node.current)
    changed = sum(1 for old, new in zip(node.current, states) if old != new)
    moved = sum(node.running.values()) if any(stops_pods(o, n) for o, n in zip(node.current, states)) else 0
    return advertises(states), moved, changed, sum(slices_free(node.model, d) for d in states)


def node_table(node, demand, resources, allow_moves, method=TIME_SLICING):
    """Every state the node may take, as capped supply -> the best (-moved, -changed, free) reaching it. The uniform
    options one by one; MIG GPU by GPU over every valid layout (the supply of a node is the sum of its GPUs', so the
    best per capped supply and "does a change stop the pods" is all a GPU needs to know of the ones before it)."""
    table = {}

    def offer(supply, value):
        capped = tuple(min(demand[r], supply.get(r, 0)) for r in resources)
        if capped not in table or value > table[capped]:
            table[capped] = value

    for states in every_option(node, demand, False, method):
        supply, moved, changed, free = option_value(node, states)
        if not (moved and not allow_moves):
            offer(supply, (-moved, -changed, free))
    if node.mig_allowed:
        partial = {(tuple(0 for _r in resources), False): (0, 0)}
        for current in node.current:
            states = [WHOLE] + [mig_gpu(layout) for layout in gpu_layouts(node.model)]
            if current != UNKNOWN and current not in states:
                states.append(current)
            following = {}
            for (supply, stopping), (changed, free) in partial.items():
                for state in states:
                    gives = advertises([state])
                    capped = tuple(min(demand[r], have + gives.get(r, 0)) for r, have in zip(resources, supply))
                    target = (capped, stopping or stops_pods(current, state))
                    value = (changed - int(state != current), free + slices_free(node.model, state))
                    if target not in following or value > following[target]:
                        following[target] = value
            partial = following
        pods = sum(node.running.values())
        for (supply, stopping), (changed, free) in partial.items():
            if stopping and pods and not allow_moves:
                continue
            offer(dict(zip(resources, supply)), (-(pods if stopping else 0), changed, free))
    return table


def exhaustive(nodes, pending, allow_moves, method=TIME_SLICING):
    """Every option of every node, node by node: for each supply reached (capped at the demand, all that counts for
    what is served) the best moves, changes and free slices of any way to reach it."""
    table = existing_table(nodes, pending, allow_moves, method)
    return max((sum(supply),) + value for supply, value in table.items())


def existing_table(nodes, pending, allow_moves, method=TIME_SLICING):
    """``exhaustive``'s table: capped supply (in sorted resource order) -> the best (-moved, -changed, free)."""
    demand = dict(pending)
    for node in nodes:
        for resource, count in node.running.items():
            demand[resource] = demand.get(resource, 0) + count
    resources = sorted(demand)
    table = {tuple(0 for _r in resources): (0, 0, 0)}
    for node in nodes:
        options = node_table(node, demand, resources, allow_moves, method)
        reached = {}
        for supply, value in table.items():
            for adds, gain in options.items():
                capped = tuple(min(demand[r], a + b) for r, a, b in zip(resources, supply, adds))
                total = tuple(x + y for x, y in zip(value, gain))
                if capped not in reached or total > reached[capped]:
                    reached[capped] = total
        table = reached
    return table


def new_node_states(model, method, top=MAX_REPLICAS):
    """Every state a new node's GPUs may all take, written here: whole; every valid MIG layout (not only useful ones);
    ``method`` by 2 up to ``top`` replicas, renamed or not."""
    states = [WHOLE] + [mig_gpu(layout) for layout in gpu_layouts(model)]
    states += [shared_gpu(method, r, rename) for r in range(2, top + 1) for rename in (False, True)]
    return states


def counted_gpus(state, gpus):
    """What the autoscaler counts a new node as (its allocatable nvidia.com/gpu, else its physical GPUs)."""
    if state.kind in (TIME_SLICING, MPS) and not state.renamed:
        return gpus * state.replicas
    return gpus


def counted_after(node, states):
    """What the autoscaler counts an existing node as once given ``states`` (None: kept), by the planner's rule written
    here: its allocatable nvidia.com/gpu, else its GPUs; a node with any GPU in MIG, or not all alike, at most its GPUs
    or what it counts now."""
    gpus = len(node.current)
    now = node.supply.get(RESOURCE_GPU, 0) or gpus
    if states is None:
        return now
    if len(set(states)) == 1 and states[0].kind in ("whole", TIME_SLICING, MPS):
        return counted_gpus(states[0], gpus)
    return max(gpus, now)


def typed_table(nodes, pending, allow_moves, method, typed):
    """Every option of every node (``every_option``, MIG GPU by GPU), node by node: (capped supply, the change of what
    the ``typed`` nodes count) -> the best (-moved, -changed, free)."""
    demand = total_demand(nodes, pending)
    for resource in pending:
        demand.setdefault(resource, 0)
    resources = sorted(demand)
    table = {(tuple(0 for _r in resources), 0): (0, 0, 0)}
    for node in nodes:
        options = {}
        now = counted_after(node, None)
        for states in every_option(node, demand, True, method):
            supply, moved, changed, free = option_value(node, states)
            if moved and not allow_moves:
                continue
            change = counted_after(node, states) - now if node.name in typed else 0
            key_ = (tuple(min(demand[r], supply.get(r, 0)) for r in resources), change)
            value = (-moved, -changed, free)
            if key_ not in options or value > options[key_]:
                options[key_] = value
        reached = {}
        for (supply, change), value in table.items():
            for (adds, more), gain in options.items():
                capped = tuple(min(demand[r], a + b) for r, a, b in zip(resources, supply, adds))
                target = (capped, change + more)
                total = tuple(x + y for x, y in zip(value, gain))
                if target not in reached or total > reached[target]:
                    reached[target] = total
        table = reached
    return resources, demand, table


def exhaustive_with_new_nodes(nodes, pending, allow_moves, method, offers, limits, typed=()):
    """Every option of every existing node (the ``typed`` ones' changes counted against a GPU limit), then every way
    the offers add nodes: per offer a state every new node takes and a count up to its most, the limits checked here;
    scored (served, -cost, -moved, -changed, free)."""
    resources, demand, typed_options = typed_table(nodes, pending, allow_moves, method, set(typed))
    ways = [
        [(None, 0)]
        + [(state, c) for state in new_node_states(offer.node.model, method) for c in range(1, offer.most + 1)]
        for offer in offers
    ]
    best = None
    for chosen in itertools.product(*ways):
        used = {"nodes": 0, "cores": 0, "memory": 0}
        adds = dict((r, 0) for r in resources)
        cost = free = 0
        for offer, (state, count) in zip(offers, chosen):
            if not count:
                continue
            gpus = len(offer.node.current)
            used["nodes"] += count
            used["cores"] += count * (offer.cores or 0)
            used["memory"] += count * (offer.memory_gib or 0)
            key_ = "gpus:%s" % offer.gpu_type
            used[key_] = used.get(key_, 0) + count * counted_gpus(state, gpus)
            for resource, n in advertises([state] * gpus).items():
                if resource in adds:
                    adds[resource] += n * count
            cost += offer.cost * count
            free += slices_free(offer.node.model, state) * gpus * count
        for (supply, change), (moved, changed, kept_free) in typed_options.items():
            counted = dict(used)
            for limit in limits:
                if limit.unit.startswith("gpus:"):
                    counted[limit.unit] = counted.get(limit.unit, 0) + change
            if any(counted.get(limit.unit, 0) > limit.headroom for limit in limits):
                continue
            served = sum(min(demand[r], have + adds[r]) for r, have in zip(resources, supply))
            value = (served, -cost, moved, changed, kept_free + free)
            best = value if best is None or value > best else best
    return best


def brute_force(nodes, pending, allow_moves):
    """The plain product of every node's every option, scored whole."""
    demand = total_demand(nodes, pending)
    best = None
    for choices in itertools.product(*[every_option(node, demand) for node in nodes]):
        if not allow_moves and any(option_value(node, c)[1] for node, c in zip(nodes, choices)):
            continue
        value = score(nodes, choices, pending)
        best = value if best is None or value > best else best
    return best


def random_gpu(rng, model, profiles):
    roll = rng.random()
    if roll < 0.3 and model.mig_capable:
        layout = rng.choice([layout for layout in gpu_layouts(model) if all(p in profiles for p, _n in layout)])
        return mig_gpu(layout)
    if roll < 0.5:
        return shared_gpu(TIME_SLICING, rng.randint(2, 4))
    return WHOLE


def random_running(rng, states):
    running = {}
    for resource, count in advertises(states).items():
        used = rng.randint(0, count) if rng.random() < 0.5 else 0
        if used:
            running[resource] = used
    return running


def random_pool(rng, gpu_count, gpus_per_node, scarce=False):
    """Nodes of A100s then H100s (the same profile names), some partitioned, shared (time-slicing or MPS, renamed or
    not), unknown or whole, some running pods; a demand of two MIG profiles, nvidia.com/gpu and sometimes
    nvidia.com/gpu.shared, ``scarce``: several times what the GPUs hold."""
    profiles = rng.sample(sorted(set(A100.profiles) & set(H100.profiles)), 2)
    nodes = []
    for index in range(0, gpu_count, gpus_per_node):
        model = A100 if index < gpu_count // 2 else H100
        node_profiles = profiles if rng.random() < 0.7 else [rng.choice(sorted(model.profiles))]
        node_kind = rng.random()
        if node_kind < 0.35:
            current = [random_gpu(rng, model, node_profiles) for _gpu in range(gpus_per_node)]
            current = [s if s.kind == "mig" else WHOLE for s in current]
        elif node_kind < 0.5:
            current = [shared_gpu(TIME_SLICING, rng.randint(2, 3), rng.random() < 0.3)] * gpus_per_node
        elif node_kind < 0.6:
            current = [shared_gpu(MPS, rng.randint(2, 3))] * gpus_per_node
        elif node_kind < 0.65:
            current = [UNKNOWN] * gpus_per_node
        else:
            current = [WHOLE] * gpus_per_node
        running = random_running(rng, current)
        nodes.append(make_node("node-%d" % index, model, current, running, mps_max=rng.choice([0, 3, 48])))
    most = 12 if scarce else 3
    pending = dict((mig_resource_name(profile), rng.randint(0, most)) for profile in profiles)
    pending[RESOURCE_GPU] = rng.randint(0, most * 3 if scarce else most)
    if rng.random() < 0.3:
        pending[RESOURCE_GPU_SHARED] = rng.randint(1, most)
    return nodes, pending


def assert_planned_as_the_reference(nodes, pending, allow_moves, method=TIME_SLICING):
    plan = plan_pool(nodes, pending, allow_moves, method, max_replicas=MAX_REPLICAS)
    assert plan.exact
    assert key(plan.score) == score(nodes, plan.choices, pending)
    assert score(nodes, plan.choices, pending) == exhaustive(nodes, pending, allow_moves, method)
    # What the solver proved is what the plan reaches.
    assert [plan.bound[name] for name in ("served", "pods_moved", "gpus_changed", "free_slices")] == list(plan.score)
    if not allow_moves:
        assert all(option_value(node, choice)[1] == 0 for node, choice in zip(nodes, plan.choices))
    # Every layout planned is one the collection's NVIDIA-exact validation (gpu_mig_config's) accepts for the model.
    for node, choice in zip(nodes, plan.choices):
        if choice and any(state.kind == "mig" for state in choice):
            validate_mig_layout(mig_parted_layout(choice), node.model, len(choice), node.name)
    return plan


@pytest.mark.parametrize(
    "gpu_count, gpus_per_node, seed",
    [
        (count, per_node, seed)
        for count, per_node in ((4, 1), (4, 2), (8, 2), (8, 4), (12, 2), (16, 2))
        for seed in range(3)
    ],
)
@pytest.mark.parametrize("allow_moves", [False, True])
@pytest.mark.parametrize("scarce", [False, True])
def test_up_to_16_gpus_the_planner_scores_as_the_search_over_every_option(
    gpu_count, gpus_per_node, seed, allow_moves, scarce
):
    rng = random.Random("pool-%d-%d-%d-%s" % (gpu_count, gpus_per_node, seed, scarce))
    nodes, pending = random_pool(rng, gpu_count, gpus_per_node, scarce)
    assert_planned_as_the_reference(nodes, pending, allow_moves, rng.choice([TIME_SLICING, MPS]))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("allow_moves", [False, True])
def test_on_small_pools_the_planner_scores_as_the_plain_product_of_every_option(seed, allow_moves):
    rng = random.Random("small-%d" % seed)
    a30 = make_node("a30", A30, [random_gpu(rng, A30, sorted(A30.profiles))])
    a30 = a30._replace(running=random_running(rng, a30.current))
    t4 = make_node("t4", None, [rng.choice([WHOLE, shared_gpu(TIME_SLICING, 2)])], mig_allowed=False)
    pending = {mig_resource_name(rng.choice(sorted(A30.profiles))): rng.randint(1, 3), RESOURCE_GPU: rng.randint(0, 9)}
    nodes = [a30, t4]
    plan = plan_pool(nodes, pending, allow_moves, max_replicas=MAX_REPLICAS)
    assert plan.exact and key(plan.score) == brute_force(nodes, pending, allow_moves)


def slices_bound(gpus, model, demand):
    """The most MIG instances of ``demand`` ({profile: count}) that ``gpus`` GPUs of ``model`` hold, counted in compute
    slices and in memory slices apart, smallest first: no plan serves more (each instance takes its slices)."""
    most = []
    for field, total in (("slices", model.compute_slices), ("memory_slices", model.memory_slices)):
        room, served = gpus * total, 0
        for size, count in sorted((model.facts[p][field], n) for p, n in demand.items()):
            taken = min(count, room // size)
            served, room = served + taken, room - taken * size
        most.append(served)
    return min(most)


SCARCE_FLEETS = [
    (1, dict((p, 6) for p in ("4g.40gb", "3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb")), 26),
    (2, dict((p, 10**6) for p in ("1g.10gb", "2g.20gb", "3g.40gb")), 112),
    (125, {"1g.10gb": 3000, "2g.20gb": 2000, "3g.40gb": 1500, "4g.40gb": 500, "7g.80gb": 200}, 5000),
]


@pytest.mark.parametrize("nodes_count, demand, served", SCARCE_FLEETS)
def test_when_gpus_are_scarce_the_plan_serves_what_the_slices_allow(nodes_count, demand, served):
    """Issue 28's fleets of H100 80GB HBM3 nodes, all whole, moves allowed (the greedy served 20, 48 and 2,100)."""
    nodes = [make_node("h100-%d" % index, H100, [WHOLE] * 8) for index in range(nodes_count)]
    pending = dict((mig_resource_name(profile), count) for profile, count in demand.items())
    plan = plan_pool(nodes, pending, allow_moves=True)
    assert slices_bound(8 * nodes_count, H100, demand) == served
    assert plan.exact and plan.score.served == served == plan.bound["served"]
    assert score(nodes, plan.choices, pending)[0] == served
    for node, choice in zip(nodes, plan.choices):
        validate_mig_layout(mig_parted_layout(choice), H100, 8, node.name)


def test_a_fresh_a100_node_takes_the_layout_its_demand_needs_and_nothing_more():
    node = make_node("a100", A100, [WHOLE, WHOLE])
    plan = plan_pool([node], {mig_resource_name("3g.40gb"): 2, mig_resource_name("1g.10gb"): 3})
    assert plan.score.served == 5 and plan.score.moved == 0
    assert advertises(plan.choices[0]) == {mig_resource_name("3g.40gb"): 2, mig_resource_name("1g.10gb"): 3}


def test_running_pods_stay_where_they_are_unless_moves_are_allowed():
    busy = make_node("a30", A30, [mig_gpu((("4g.24gb", 1),))], {mig_resource_name("4g.24gb"): 1})
    plan = plan_pool([busy], {mig_resource_name("1g.6gb"): 4})
    assert plan.choices == [None] and plan.score.served == 1
    moved = plan_pool([busy], {mig_resource_name("1g.6gb"): 4}, allow_moves=True)
    assert moved.score.served == 4 and moved.score.moved == 1  # the 4g pod has nowhere left to go


def test_time_slicing_grows_its_replicas_without_moving_the_pods_it_runs():
    node = make_node("t4", None, [shared_gpu(TIME_SLICING, 2)], {RESOURCE_GPU: 2}, mig_allowed=False)
    plan = plan_pool([node], {RESOURCE_GPU: 2})
    assert plan.choices == [(shared_gpu(TIME_SLICING, 4),)] and plan.score.moved == 0


def test_replicas_are_as_few_as_the_demand_needs_and_stop_at_max_replicas():
    nodes = [make_node("t4-%d" % index, None, [WHOLE] * 2, mig_allowed=False) for index in range(3)]
    plan = plan_pool(nodes, {RESOURCE_GPU: 9})
    assert (
        plan.score.served == 9
        and sum(advertises(c or n.current)[RESOURCE_GPU] for n, c in zip(nodes, plan.choices)) < 12
    )
    capped = plan_pool(nodes, {RESOURCE_GPU: 10**6}, max_replicas=10)
    assert capped.exact and capped.score.served == 60 == capped.bound["served"]
    assert capped.choices == [(shared_gpu(TIME_SLICING, 10),) * 2] * 3


def test_replicas_stop_at_what_the_kubelet_accepts_in_one_device_list():
    # 8 GPUs: 8,761 replicas each is the largest list within the kubelet's 4 MiB (device_plugin_config).
    node = make_node("h100", H100, [WHOLE] * 8, mig_allowed=False)
    plan = plan_pool([node], {RESOURCE_GPU: 10**6}, max_replicas=70090)
    assert plan.choices == [(shared_gpu(TIME_SLICING, 8761),) * 8]


def test_mps_replicas_stop_at_the_control_daemons_limit():
    node = make_node("t4", None, [WHOLE], mig_allowed=False, mps_max=16)
    plan = plan_pool([node], {RESOURCE_GPU: 40}, method=MPS)
    assert plan.choices == [(shared_gpu(MPS, 16),)] and plan.score.served == 16


def test_renamed_shared_requests_get_a_renaming_profile():
    node = make_node("l4", None, [WHOLE], mig_allowed=False)
    plan = plan_pool([node], {RESOURCE_GPU_SHARED: 3})
    assert plan.choices == [(shared_gpu(TIME_SLICING, 3, renamed=True),)]


def test_a_second_plan_after_applying_the_first_changes_nothing():
    nodes, pending = random_pool(random.Random("again"), 8, 2)
    plan = plan_pool(nodes, pending)
    applied = []
    for node, choice in zip(nodes, plan.choices):
        current = node.current if choice is None else choice
        applied.append(node._replace(current=current, supply=advertises(current)))
    again = plan_pool(applied, pending)
    assert again.choices == [None] * len(nodes) and again.score.served == plan.score.served


def test_when_the_time_limit_stops_the_solver_the_plan_is_valid_and_says_it_is_not_proven():
    nodes = [make_node("h100-%d" % index, H100, [WHOLE] * 8) for index in range(4)]
    pending = {mig_resource_name("1g.10gb"): 20, mig_resource_name("3g.40gb"): 5}
    plan = plan_pool(nodes, pending, allow_moves=True, time_limit=1e-9)
    assert not plan.exact and plan.choices == [None] * 4  # nothing solved in time: the plan that changes nothing
    assert plan.bound == dict(served=None, pods_moved=None, gpus_changed=None, free_slices=None)


def new_offer(name, model, gpus, most, cost=1, gpu_type=None):
    return NodeOffer(name, make_node(name, model, (WHOLE,) * gpus), most, cost, gpu_type, None, None)


def planned_value(plan, nodes, pending, offers):
    """(served, -cost, -moved, -changed, free) of a plan with new nodes, computed here."""
    demand = total_demand(nodes, pending)
    supply, moved, changed, free = {}, 0, 0, 0
    for node, choice in zip(nodes, plan.choices):
        gives, node_moved, node_changed, node_free = option_value(node, choice)
        moved, changed, free = moved + node_moved, changed + node_changed, free + node_free
        for resource, count in gives.items():
            supply[resource] = supply.get(resource, 0) + count
    cost = 0
    for offer, new in zip(offers, plan.new_nodes):
        if new.count:
            gpus = len(offer.node.current)
            for resource, count in advertises([new.state] * gpus).items():
                supply[resource] = supply.get(resource, 0) + count * new.count
            cost += offer.cost * new.count
            free += slices_free(offer.node.model, new.state) * gpus * new.count
    served = sum(min(count, supply.get(resource, 0)) for resource, count in demand.items())
    return (served, -cost, -moved, -changed, free)


def assert_grown_as_the_reference(nodes, pending, allow_moves, method, offers, limits=(), typed=()):
    """``typed``: the existing nodes of the GPU limits' type (the limits here are of one type)."""
    gpu_types = dict((name, limit.unit[len("gpus:") :]) for name in typed for limit in limits if limit.unit != "nodes")
    plan = plan_pool(
        nodes,
        pending,
        allow_moves,
        method,
        max_replicas=MAX_REPLICAS,
        offers=offers,
        limits=limits,
        gpu_types=gpu_types,
    )
    assert plan.exact
    value = planned_value(plan, nodes, pending, offers)
    assert value == exhaustive_with_new_nodes(nodes, pending, allow_moves, method, offers, limits, typed)
    # What the plan counts against each limit, the existing nodes' changes included, is within it: as the program
    # counted it, and as the autoscaler will count the nodes the plan leaves (computed here).
    for limit in limits:
        assert plan.limit_use[limit.name] <= limit.headroom
        if limit.unit.startswith("gpus:"):
            counted = sum(
                counted_after(node, choice) - counted_after(node, None)
                for node, choice in zip(nodes, plan.choices)
                if node.name in typed
            )
            counted += sum(
                counted_gpus(new.state, len(offer.node.current)) * new.count
                for offer, new in zip(offers, plan.new_nodes)
                if new.count
            )
            assert counted <= limit.headroom
    assert [plan.bound[name] for name in ("served", "new_node_cost")] == [value[0], -value[1]]
    for offer, new in zip(offers, plan.new_nodes):
        if new.count and new.state.kind == "mig":
            validate_mig_layout(mig_parted_layout((new.state,) * len(offer.node.current)), offer.node.model, 1, "new")
    return plan


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("allow_moves", [False, True])
def test_new_nodes_are_added_as_the_search_over_every_count_and_state_adds_them(seed, allow_moves):
    """Scarce pools of 4 GPUs that may grow by up to 2 nodes of one or two A100s or H100s, at a random cost, sometimes
    under a GPU limit counted as the autoscaler counts, existing nodes' changes included (issue 40's "scarce pools with
    a cap"): as many requests served as any plan serves, then the cheapest new nodes, then as before."""
    rng = random.Random("grow-%d" % seed)
    # Nodes of one GPU: the reference tries every MIG layout of every GPU of a node together.
    nodes, pending = random_pool(rng, 4, 1, scarce=True)
    offers = [
        new_offer("grow", rng.choice([A100, H100]), rng.choice([1, 2]), rng.randint(1, 2), rng.randint(1, 4), "t")
    ]
    limits = [NewNodeLimit("gpus[t]", rng.randint(1, 8), "gpus:t")] if rng.random() < 0.5 else []
    typed = [node.name for node in nodes if rng.random() < 0.5]
    assert_grown_as_the_reference(nodes, pending, allow_moves, rng.choice([TIME_SLICING, MPS]), offers, limits, typed)


def test_re_partitioning_is_chosen_over_a_new_node_that_serves_the_same():
    nodes = [make_node("a100-0", A100, (WHOLE,))]
    pending = {mig_resource_name("1g.10gb"): 7}
    plan = assert_grown_as_the_reference(nodes, pending, False, TIME_SLICING, [new_offer("more", A100, 1, 3)])
    assert plan.new_nodes[0].count == 0 and plan.choices[0] is not None


def test_of_two_ways_to_grow_the_cheaper_is_taken_first_then_the_other_up_to_a_shared_cap():
    """Two growers of different cost, and a cap on the nodes both may add (a ClusterAutoscaler's maxNodesTotal). The
    A30 running a pod cannot take MIG without moves, so only new A30s (4 x 1g.6gb each) serve the six waiting."""
    nodes = [make_node("a30-0", A30, (WHOLE,), running={RESOURCE_GPU: 1})]
    pending = {mig_resource_name("1g.6gb"): 6}
    offers = [new_offer("dear", A30, 1, 2, cost=3), new_offer("cheap", A30, 1, 1, cost=1)]
    plan = assert_grown_as_the_reference(nodes, pending, False, TIME_SLICING, offers, [NewNodeLimit("n", 2, "nodes")])
    assert [new.count for new in plan.new_nodes] == [1, 1] and plan.score.served == 7
    # The cap reached half way: the cheap node alone, four of the six served.
    plan = assert_grown_as_the_reference(nodes, pending, False, TIME_SLICING, offers, [NewNodeLimit("n", 1, "nodes")])
    assert [new.count for new in plan.new_nodes] == [0, 1] and plan.score.served == 5


def test_a_gpu_limit_counts_time_sliced_replicas_as_the_autoscaler_does():
    """cluster-autoscaler counts a node as its allocatable nvidia.com/gpu (GetNodeGpuTarget): a limit of 4 lets one
    new A30 time-sliced by 4, or four whole ones, but not two time-sliced by 4."""
    nodes = []
    pending = {RESOURCE_GPU: 8}
    offers = [new_offer("a30", A30, 1, 3, gpu_type="a30")]
    limits = [NewNodeLimit("gpus[a30]", 4, "gpus:a30")]
    plan = assert_grown_as_the_reference(nodes, pending, False, TIME_SLICING, offers, limits)
    assert plan.score.served == 4


def test_demand_no_new_node_can_hold_adds_none():
    nodes = [make_node("h100-0", H100, (WHOLE,), running={RESOURCE_GPU: 1})]
    pending = {mig_resource_name("1g.6gb"): 2}  # an A30 profile: no H100 has it
    plan = assert_grown_as_the_reference(nodes, pending, False, TIME_SLICING, [new_offer("h100", H100, 1, 2)])
    assert plan.new_nodes[0].count == 0 and plan.score.served == 1
