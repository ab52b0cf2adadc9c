# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of one pool: its program (program.py) solved (solver.py), read back (read_back.py), the replicas that serve
nothing given back, and what the plan serves and scores. Pure: no I/O (docs/PLANNER.md, "The search")."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIN_REPLICAS,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import GpuKind, shared_gpu
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import (
    pool_demand,
    pool_supply,
    score_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.new_nodes import (
    fewest_new_replicas,
    new_nodes_from,
    new_nodes_supply,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.program import PoolProgram
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.read_back import choices_from
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.settings import (
    DEFAULT_MAX_REPLICAS,
    DEFAULT_TIME_LIMIT,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.solver import solve_lexicographic

# The plan of one pool: per node (in the order given) its choice, or None to keep it as it is; its Score; whether the
# solver proved it the best; what it serves per resource; per objective the best any plan could reach (the solver's
# bound, given the objectives before it; None past a level the time limit stopped); per offer the nodes it adds
# (new_nodes.NewNodes, none without offers); and per limit given what the plan counts against it.
PoolPlan = namedtuple("PoolPlan", "choices score exact served bound new_nodes limit_use")


def _fewest_replicas(nodes, choices, demand):
    """The nodes newly shared lose the replicas that serve nothing (beyond the demand), down to ``MIN_REPLICAS``, node
    by node: the same requests served, the same GPUs changed, no more sharing than needed."""
    surplus = dict((r, n - demand.get(r, 0)) for r, n in pool_supply(nodes, choices).items())
    trimmed = []
    for node, choice in zip(nodes, choices):
        shared = choice is not None and len(set(choice)) == 1 and choice[0].is_shared
        if shared and choice != node.current:
            first = choice[0]
            resource = RESOURCE_GPU_SHARED if first.renamed else RESOURCE_GPU
            fewer = min(first.replicas - MIN_REPLICAS, max(0, surplus.get(resource, 0)) // len(choice))
            if fewer and shared_gpu(first.kind, first.replicas - fewer, first.renamed) == node.current[0]:
                fewer -= 1  # the node's own replicas would make it unchanged: one more keeps it a change
            surplus[resource] = surplus.get(resource, 0) - fewer * len(choice)
            choice = (shared_gpu(first.kind, first.replicas - fewer, first.renamed),) * len(choice)
        trimmed.append(choice)
    return trimmed


def plan_pool(
    nodes,
    pending,
    allow_moves=False,
    method=GpuKind.TIME_SLICING,
    max_replicas=DEFAULT_MAX_REPLICAS,
    time_limit=DEFAULT_TIME_LIMIT,
    offers=(),
    limits=(),
    gpu_types=None,
):
    """The best GPU states per node of one pool (``nodes``, ``PoolNode``s) for the requests waiting there (``pending``,
    {resource: count}); pods running on the nodes are demand too. ``method``: how GPUs newly shared are shared
    (time-slicing or mps). ``offers`` (new_nodes.NodeOffer), within ``limits`` (new_nodes.NewNodeLimit): the nodes the
    pool may add, for what its nodes cannot serve; ``gpu_types``: {node name: its autoscaler GPU type}, for the GPU
    limits. Exact when the solver proves it within ``time_limit`` seconds; else the best plan found."""
    demand = pool_demand(nodes, pending)
    program = PoolProgram(nodes, demand, allow_moves, method, max_replicas, offers, limits, gpu_types)
    solution = solve_lexicographic(program.program, program.objectives(), program.start, time_limit)
    added = new_nodes_from(program.offers, program.new_options, solution.values)
    choices = _fewest_replicas(nodes, choices_from(program, solution.values), demand)
    choices = [None if choice == node.current else choice for node, choice in zip(nodes, choices)]
    supply = pool_supply(nodes, choices)
    surplus = dict(
        (r, n - demand.get(r, 0)) for r, n in _added(supply, new_nodes_supply(program.offers, added)).items()
    )
    added = fewest_new_replicas(program.offers, added, surplus)
    supply = _added(supply, new_nodes_supply(program.offers, added))
    served = dict((resource, min(count, supply.get(resource, 0))) for resource, count in demand.items())
    bound = dict((level.name, None if level.bound is None else int(level.bound)) for level in solution.levels)
    score = score_of(nodes, choices, pending)._replace(served=sum(served.values()))
    # Per limit what the solution counts against it (the trimmed replicas count no more than the solution's).
    limit_use = dict(
        (name, int(round(program.program.value_of(terms, solution.values))))
        for name, terms in program.limit_terms.items()
    )
    return PoolPlan(choices, score, solution.exact, served, bound, added, limit_use)


def _added(supply, more):
    total = dict(supply)
    for resource, count in more.items():
        total[resource] = total.get(resource, 0) + count
    return total
