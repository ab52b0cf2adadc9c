# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout planner scores the same as a search over every option of every node, every valid MIG layout of every
GPU included (issue 22, "Optimal where it can be checked"). The references here share no code with the planner's
search: only the layout space (nvidia/mig_layouts, tested on its own) and what one GPU state advertises."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import random

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import mig_resource_name
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_layouts import gpu_layouts
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import validate_mig_layout
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.layout import (
    MPS,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
    TIME_SLICING,
    UNKNOWN,
    WHOLE,
    Node,
    mig_gpu,
    node_supply,
    plan_pool,
    pool_bound,
    score_of,
    shared_gpu,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_plan import mig_parted_layout

MODELS = dict((model.name, model) for model in MIG_GPU_MODELS)
A30 = MODELS["A30 24GB"]
A100 = MODELS["A100 80GB"]
H100 = MODELS["H100 80GB HBM3"]


def key(score):
    return (score.served, -score.moved, -score.changed, score.free)


def make_node(name, model, current, running=None, mig_allowed=True, mps_max=48):
    current = tuple(current)
    return Node(
        name, "pool", model, current, node_supply(current), dict(running or {}), mig_allowed and bool(model), mps_max
    )


def slices_free(model, descriptor):
    if descriptor[0] != "mig":
        return 0
    return model.compute_slices - sum(n * model.facts[p]["slices"] for p, n in descriptor[1])


def stops_pods(old, new):
    kinds = ("mig", "mps", "unknown")
    return old != new and (old[0] in kinds or new[0] in kinds)


def every_option(node, demand, with_mig=True):
    """Every state the node may take, as (descriptors or None to keep it): kept; every GPU whole; time-sliced or MPS
    (as asked, or as now) by 2 up to the whole demand plus one, renamed or not; and with MIG, every valid layout of
    every GPU (MIG off and the current state too), GPU by GPU."""
    gpus = len(node.current)
    options = [None, (WHOLE,) * gpus]
    top = sum(demand.values()) + 1
    methods = set([TIME_SLICING]) | set(d[0] for d in node.current if d[0] in (TIME_SLICING, MPS))
    for method in sorted(methods):
        for replicas in range(2, (min(top, node.mps_max) if method == MPS else top) + 1):
            for rename in (False, True):
                options.append((shared_gpu(method, replicas, rename),) * gpus)
    if with_mig and node.mig_allowed:
        per_gpu = []
        for current in node.current:
            states = [WHOLE] + [mig_gpu(layout) for layout in gpu_layouts(node.model)]
            if current != UNKNOWN and current not in states:
                states.append(current)
            per_gpu.append(states)
        options.extend(itertools.product(*per_gpu))
    return options


def option_value(node, descriptors):
    if descriptors is None:
        return node.supply, 0, 0, sum(slices_free(node.model, d) for d in node.current)
    changed = sum(1 for old, new in zip(node.current, descriptors) if old != new)
    moved = sum(node.running.values()) if any(stops_pods(o, n) for o, n in zip(node.current, descriptors)) else 0
    return node_supply(descriptors), moved, changed, sum(slices_free(node.model, d) for d in descriptors)


def node_table(node, demand, resources, allow_moves):
    """Every state the node may take, as capped supply -> the best (-moved, -changed, free) reaching it. The uniform
    options one by one; MIG GPU by GPU over every valid layout (the supply of a node is the sum of its GPUs', so the
    best per capped supply and "does a change stop the pods" is all a GPU needs to know of the ones before it)."""
    table = {}

    def offer(supply, value):
        capped = tuple(min(demand[r], supply.get(r, 0)) for r in resources)
        if capped not in table or value > table[capped]:
            table[capped] = value

    for descriptors in every_option(node, demand, with_mig=False):
        supply, moved, changed, free = option_value(node, descriptors)
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
                    gives = node_supply([state])
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


def exhaustive(nodes, pending, allow_moves):
    """Every option of every node, node by node: for each supply reached (capped at the demand, all that counts for
    what is served) the best moves, changes and free slices of any way to reach it."""
    demand = dict(pending)
    for node in nodes:
        for resource, count in node.running.items():
            demand[resource] = demand.get(resource, 0) + count
    resources = sorted(demand)
    table = {tuple(0 for _r in resources): (0, 0, 0)}
    for node in nodes:
        options = node_table(node, demand, resources, allow_moves)
        reached = {}
        for supply, value in table.items():
            for adds, gain in options.items():
                capped = tuple(min(demand[r], a + b) for r, a, b in zip(resources, supply, adds))
                total = tuple(x + y for x, y in zip(value, gain))
                if capped not in reached or total > reached[capped]:
                    reached[capped] = total
        table = reached
    return max((sum(supply),) + value for supply, value in table.items())


def brute_force(nodes, pending, allow_moves):
    """The plain product of every node's every option, scored whole."""
    demand = dict(pending)
    for node in nodes:
        for resource, count in node.running.items():
            demand[resource] = demand.get(resource, 0) + count
    best = None
    for choices in itertools.product(*[every_option(node, demand) for node in nodes]):
        score = score_of(nodes, choices, pending)
        if (
            score.moved
            and not allow_moves
            and any(option_value(node, c)[1] for node, c in zip(nodes, choices) if c is not None)
        ):
            continue
        if best is None or key(score) > key(best):
            best = score
    return key(best)


def random_gpu(rng, model, profiles):
    roll = rng.random()
    if roll < 0.3 and model.mig_capable:
        layout = rng.choice([layout for layout in gpu_layouts(model) if all(p in profiles for p, _n in layout)])
        return mig_gpu(layout)
    if roll < 0.5:
        return shared_gpu(TIME_SLICING, rng.randint(2, 4))
    return WHOLE


def random_running(rng, descriptors):
    running = {}
    for resource, count in node_supply(descriptors).items():
        used = rng.randint(0, count) if rng.random() < 0.5 else 0
        if used:
            running[resource] = used
    return running


def random_pool(rng, gpu_count, gpus_per_node):
    """Nodes of A100s then H100s (the same profile names), some partitioned, shared or whole, some running pods;
    a demand of two MIG profiles and nvidia.com/gpu."""
    profiles = rng.sample(sorted(set(A100.profiles) & set(H100.profiles)), 2)
    nodes = []
    for index in range(0, gpu_count, gpus_per_node):
        model = A100 if index < gpu_count // 2 else H100
        node_profiles = profiles if rng.random() < 0.7 else [rng.choice(sorted(model.profiles))]
        node_kind = rng.random()
        if node_kind < 0.4:
            current = [random_gpu(rng, model, node_profiles) for _gpu in range(gpus_per_node)]
            current = [d if d[0] == "mig" else WHOLE for d in current]
        elif node_kind < 0.6:
            current = [shared_gpu(TIME_SLICING, rng.randint(2, 3))] * gpus_per_node
        else:
            current = [WHOLE] * gpus_per_node
        nodes.append(make_node("node-%d" % index, model, current, random_running(rng, current)))
    pending = dict((mig_resource_name(profile), rng.randint(0, 3)) for profile in profiles)
    pending[RESOURCE_GPU] = rng.randint(0, 3)
    return nodes, pending


@pytest.mark.parametrize(
    "gpu_count, gpus_per_node, seed",
    [
        (count, per_node, seed)
        for count, per_node in ((4, 1), (4, 2), (8, 2), (8, 4), (12, 2), (16, 2))
        for seed in range(3)
    ],
)
@pytest.mark.parametrize("allow_moves", [False, True])
def test_up_to_16_gpus_the_planner_scores_as_the_search_over_every_option(gpu_count, gpus_per_node, seed, allow_moves):
    nodes, pending = random_pool(
        random.Random("pool-%d-%d-%d" % (gpu_count, gpus_per_node, seed)), gpu_count, gpus_per_node
    )
    plan = plan_pool(nodes, pending, allow_moves)
    assert plan.exact
    assert key(plan.score) == exhaustive(nodes, pending, allow_moves)
    assert plan.score == score_of(nodes, plan.choices, pending)
    # Every layout planned is one the collection's NVIDIA-exact validation (gpu_mig_config's) accepts for the model.
    for node, choice in zip(nodes, plan.choices):
        if choice and any(descriptor[0] == "mig" for descriptor in choice):
            validate_mig_layout(mig_parted_layout(choice), node.model, len(choice), node.name)
    # The bound is a relaxation: the best plan never beats it.
    bound = pool_bound(nodes, pending, allow_moves, plan.served)
    assert plan.score.served <= bound.served and plan.score.changed >= bound.changed


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("allow_moves", [False, True])
def test_on_small_pools_the_planner_scores_as_the_plain_product_of_every_option(seed, allow_moves):
    rng = random.Random("small-%d" % seed)
    a30 = make_node("a30", A30, [random_gpu(rng, A30, sorted(A30.profiles))])
    a30 = a30._replace(running=random_running(rng, a30.current))
    t4 = make_node("t4", None, [rng.choice([WHOLE, shared_gpu(TIME_SLICING, 2)])], mig_allowed=False)
    pending = {mig_resource_name(rng.choice(sorted(A30.profiles))): rng.randint(1, 3), RESOURCE_GPU: rng.randint(0, 3)}
    nodes = [a30, t4]
    plan = plan_pool(nodes, pending, allow_moves)
    assert key(plan.score) == brute_force(nodes, pending, allow_moves)


def test_a_fresh_a100_node_takes_the_layout_its_demand_needs_and_nothing_more():
    node = make_node("a100", A100, [WHOLE, WHOLE])
    plan = plan_pool([node], {mig_resource_name("3g.40gb"): 2, mig_resource_name("1g.10gb"): 3})
    assert plan.score.served == 5 and plan.score.moved == 0
    assert node_supply(plan.choices[0]) == {mig_resource_name("3g.40gb"): 2, mig_resource_name("1g.10gb"): 3}


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


def test_mps_replicas_stop_at_the_control_daemons_limit():
    node = make_node("t4", None, [WHOLE], mig_allowed=False, mps_max=16)
    plan = plan_pool([node], {RESOURCE_GPU: 40}, method=MPS)
    assert plan.choices == [(shared_gpu(MPS, 16),)] and plan.score.served == 16


def test_renamed_shared_requests_get_a_renaming_profile():
    node = make_node("l4", None, [WHOLE], mig_allowed=False)
    plan = plan_pool([node], {RESOURCE_GPU_SHARED: 3})
    assert plan.choices == [(shared_gpu(TIME_SLICING, 3, rename=True),)]


def test_a_second_plan_after_applying_the_first_changes_nothing():
    nodes, pending = random_pool(random.Random("again"), 8, 2)
    plan = plan_pool(nodes, pending)
    applied = []
    for node, choice in zip(nodes, plan.choices):
        current = node.current if choice is None else choice
        applied.append(node._replace(current=current, supply=node_supply(current)))
    again = plan_pool(applied, pending)
    assert again.choices == [None] * len(nodes) and again.score.served == plan.score.served


def big_pool(rng, nodes_count):
    """A pool beyond the exact DP: 8-GPU nodes of A100 80GB and H100, a few hundred requests."""
    nodes = []
    for index in range(nodes_count):
        model = A100 if index % 2 else H100
        current = [WHOLE] * 8 if index % 3 else [mig_gpu((("1g.10gb", 7),))] * 8
        running = random_running(rng, current)
        nodes.append(make_node("node-%d" % index, model, current, running))
    pending = {
        mig_resource_name("1g.10gb"): 60,
        mig_resource_name("3g.40gb"): 40,
        mig_resource_name("2g.20gb"): 30,
        RESOURCE_GPU: 50,
    }
    return nodes, pending


def test_above_the_work_limit_the_greedy_serves_what_it_can_within_the_bound():
    nodes, pending = big_pool(random.Random("big"), 24)
    plan = plan_pool(nodes, pending)
    bound = pool_bound(nodes, pending, served=plan.served)
    assert not plan.exact
    assert plan.score == score_of(nodes, plan.choices, pending)
    assert plan.score.served == bound.served and plan.score.moved == 0
    assert plan.score.changed >= bound.changed


def test_the_greedy_and_the_dp_agree_on_what_a_small_pool_serves():
    nodes, pending = random_pool(random.Random("agree"), 16, 4)
    exact = plan_pool(nodes, pending, allow_moves=True)
    greedy = plan_pool(nodes, pending, allow_moves=True, work_limit=0)
    assert not greedy.exact and greedy.score.served <= exact.score.served
    assert greedy.score == score_of(nodes, greedy.choices, pending)
