# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout planner behind gpu_sharing_plan: which mode and layout each GPU node of a pool should take so that the
pool serves its demand. Pure: no I/O (docs/PLANNER.md has the design and the findings behind it).

Demand is counted in the resources pods request (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``,
``nvidia.com/mig-<profile>``); supply is what each GPU advertises in the state planned for it:

- a whole GPU: one ``nvidia.com/gpu``;
- a GPU time-sliced or shared through MPS by ``r`` replicas: ``r`` of ``nvidia.com/gpu`` (``.shared`` when the
  profile renames);
- a MIG GPU: its instances, one ``nvidia.com/mig-<profile>`` each (the mixed strategy; a MIG-disabled GPU of a MIG
  node is whole).

The objective, compared lexicographically: serve the most requests, move the fewest running pods, change the fewest
GPUs, leave the most compute slices free. Within a pool every GPU can serve every request of its resource, so what a
choice serves is the sum over resources of min(demand, supply): a DP over the nodes whose state is the supply reached
so far, capped at the demand, finds the best choice exactly. When that search would take more than ``EXACT_WORK_LIMIT``
steps (about two seconds), a greedy takes over, with a bound (``pool_bound``) that says how far from the best it can
be.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import operator
from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import METHOD_MPS as MPS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_TIME_SLICING as TIME_SLICING,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_RESOURCE_PREFIX,
    RESOURCE_GPU,
    SHARED_RESOURCE_SUFFIX,
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_layouts import gpu_layouts

RESOURCE_GPU_SHARED = RESOURCE_GPU + SHARED_RESOURCE_SUFFIX

# What one GPU is, or is planned to be: whole; ("mig", layout) with a mig_layouts layout; (method, replicas, rename)
# for time-slicing and MPS. UNKNOWN is a GPU whose state cannot be read back (a MIG config the planner cannot resolve):
# it can be kept only with its whole node.
WHOLE = ("whole",)
UNKNOWN = ("unknown",)
# Above this many steps (supply states times node and GPU options, search_work) the exact DP of one pool would take
# more than about two seconds on one core (measured: 2.8 to 7.3 million steps a second, docs/PLANNER.md): the greedy
# plans the pool instead.
EXACT_WORK_LIMIT = 6000000


def mig_gpu(layout):
    return ("mig", tuple(layout))


def shared_gpu(method, replicas, rename=False):
    return (method, replicas, bool(rename))


# One GPU node of a pool.
# - model: the catalog's GpuModel, or None (a GPU without MIG the catalog does not hold);
# - current: the per-GPU descriptors (a tuple, one per GPU);
# - supply: what it advertises now, {resource: count} (what keeping it serves);
# - running: {resource: count} of the GPU pods running on it (demand too: a node that changes moves them);
# - mig_allowed: MIG can be configured there (the model has MIG and the platform allows it);
# - mps_max: the most MPS replicas per GPU its control daemon accepts.
Node = namedtuple("Node", "name pool model current supply running mig_allowed mps_max")
Score = namedtuple("Score", "served moved changed free")
# The planner's answer for one pool: per node (in the order given) its descriptors, or None to keep it as it is;
# its score; whether the search was exact; and what it serves per resource.
PoolPlan = namedtuple("PoolPlan", "choices score exact served")
Bound = namedtuple("Bound", "served changed")


def gpu_supply(descriptor):
    """{resource: count} one GPU in this state advertises."""
    kind = descriptor[0]
    if kind == "whole":
        return {RESOURCE_GPU: 1}
    if kind == "mig":
        return dict((mig_resource_name(profile), count) for profile, count in descriptor[1])
    if kind in (TIME_SLICING, MPS):
        return {RESOURCE_GPU_SHARED if descriptor[2] else RESOURCE_GPU: descriptor[1]}
    return {}


def free_slices(model, descriptor):
    """Compute slices a MIG GPU leaves unpartitioned (0 for any other state)."""
    if descriptor[0] != "mig":
        return 0
    return model.compute_slices - sum(count * model.facts[profile]["slices"] for profile, count in descriptor[1])


def moves_pods(old, new):
    """Whether changing one GPU from ``old`` to ``new`` stops the node's GPU pods: mig-manager reconfigures only
    GPUs nothing runs on and the modules drain the node for it; the MPS control daemon restarts with its clients.
    Time-slicing replicas and whole GPUs change through a device-plugin restart, which running pods survive."""
    return old != new and (old[0] in ("mig", MPS, "unknown") or new[0] in ("mig", MPS))


def node_supply(descriptors):
    supply = {}
    for descriptor in descriptors:
        for resource, count in gpu_supply(descriptor).items():
            supply[resource] = supply.get(resource, 0) + count
    return supply


def pods_on(node):
    return sum(node.running.values())


def evaluate(node, descriptors):
    """(supply, moved, changed, free) of giving ``node`` the per-GPU ``descriptors`` (None: keep it)."""
    if descriptors is None:
        return dict(node.supply), 0, 0, sum(free_slices(node.model, d) for d in node.current if d[0] == "mig")
    changed = sum(1 for old, new in zip(node.current, descriptors) if old != new)
    moved = pods_on(node) if any(moves_pods(old, new) for old, new in zip(node.current, descriptors)) else 0
    free = sum(free_slices(node.model, d) for d in descriptors)
    return node_supply(descriptors), moved, changed, free


def pool_supply(nodes, choices):
    """{resource: count} the nodes advertise once given ``choices`` (one per node, None: kept as it is)."""
    supply = {}
    for node, descriptors in zip(nodes, choices):
        for resource, count in evaluate(node, descriptors)[0].items():
            supply[resource] = supply.get(resource, 0) + count
    return supply


def pool_demand(nodes, pending):
    """The pool's demand: the requests waiting (``pending``) and the pods running on its nodes."""
    demand = dict((resource, count) for resource, count in pending.items() if count)
    for node in nodes:
        for resource, count in node.running.items():
            demand[resource] = demand.get(resource, 0) + count
    return demand


def score_of(nodes, choices, pending):
    """The score of one choice per node (the planner's answer, or any other, for the tests to compare)."""
    demand = pool_demand(nodes, pending)
    supply = pool_supply(nodes, choices)
    moved = changed = free = 0
    for node, descriptors in zip(nodes, choices):
        _gives, node_moved, node_changed, node_free = evaluate(node, descriptors)
        moved, changed, free = moved + node_moved, changed + node_changed, free + node_free
    served = sum(min(count, supply.get(resource, 0)) for resource, count in demand.items())
    return Score(served, moved, changed, free)


# --- the options of one node -----------------------------------------------------------------------------------


def sharing_methods(node, method):
    """The sharing methods a node may take: the one asked for new sharing, and the one it already uses."""
    methods = [method]
    for descriptor in node.current:
        if descriptor[0] in (TIME_SLICING, MPS) and descriptor[0] not in methods:
            methods.append(descriptor[0])
    return methods


def uniform_options(node, demand, method):
    """Whole-node options other than MIG: every GPU whole, or shared by r replicas (r from 2 to what the demand
    could use, and at most the MPS limit), renamed to ``.shared`` when that is demanded."""
    gpus = len(node.current)
    options = [tuple(WHOLE for _gpu in node.current)]
    for sharing in sharing_methods(node, method):
        for rename in (False, True) if demand.get(RESOURCE_GPU_SHARED) else (False,):
            resource = RESOURCE_GPU_SHARED if rename else RESOURCE_GPU
            top = max(2, -(-demand.get(resource, 0) // gpus))
            if sharing == MPS:
                top = min(top, node.mps_max)
            for replicas in range(2, top + 1):
                options.append(tuple(shared_gpu(sharing, replicas, rename) for _gpu in node.current))
    return options


def useful_mig_layouts(model, demand):
    """The layouts worth planning for a GPU: those made only of demanded profiles. A layout with another profile serves
    no more than the same layout without it (which NVIDIA's rules accept too: removing an instance never breaks a
    placement) and leaves fewer slices free."""
    layouts = []
    for layout in gpu_layouts(model):
        if layout and all(demand.get(mig_resource_name(profile)) for profile, _count in layout):
            layouts.append(mig_gpu(layout))
    return layouts


def mig_gpu_options(node, index, demand):
    """A GPU's options inside a MIG node: as it is (when known), whole (MIG off), or a useful layout."""
    options = []
    current = node.current[index]
    if current != UNKNOWN:
        options.append(current)
    if WHOLE not in options:
        options.append(WHOLE)
    options.extend(layout for layout in useful_mig_layouts(node.model, demand) if layout not in options)
    return options


def may_move(node, allow_moves):
    return allow_moves or not pods_on(node)


# --- the exact DP ----------------------------------------------------------------------------------------------


class _Supply(object):
    """The DP's states: the supply reached per resource (a tuple in ``resources`` order), capped at the demand. The
    same state meets the same GPU option on every GPU and node, so each move is computed once and remembered."""

    def __init__(self, demand):
        self.resources = sorted(demand)
        self.caps = tuple(demand[resource] for resource in self.resources)
        self.start = tuple(0 for _resource in self.resources)
        self.known = {}  # (state, adds) -> state after

    def adds(self, gives):
        return tuple(gives.get(resource, 0) for resource in self.resources)

    def after(self, state, adds):
        target = self.known.get((state, adds))
        if target is None:
            target = self.known[(state, adds)] = tuple(map(min, self.caps, map(operator.add, state, adds)))
        return target


def _step_uniform(layer, node, options, supply, allow_moves, reached):
    """Every whole-node option (keep included) from every state of ``layer``, into ``reached``."""
    for descriptors in options:
        gives, moved, changed, free = evaluate(node, descriptors)
        if moved and not allow_moves:
            continue
        adds = supply.adds(gives)
        for state, (value, _back) in layer.items():
            target = supply.after(state, adds)
            total = (value[0] - moved, value[1] - changed, value[2] + free)
            if target not in reached or total > reached[target][0]:
                reached[target] = (total, (state, descriptors))


def _step_mig(layer, node, demand, supply, reached):
    """The node as MIG, GPU by GPU (each GPU's layout may differ): the inner states carry whether a change stops the
    node's pods, charged once at the end."""
    inner = dict(((state, False), (value, None)) for state, (value, _back) in layer.items())
    steps = []
    for index in range(len(node.current)):
        current = node.current[index]
        options = [
            (
                descriptor,
                supply.adds(gpu_supply(descriptor)),
                int(descriptor != current),
                free_slices(node.model, descriptor),
                moves_pods(current, descriptor),
            )
            for descriptor in mig_gpu_options(node, index, demand)
        ]
        following = {}
        known, after = supply.known, supply.after
        for (state, moving), (value, _back) in inner.items():
            for descriptor, adds, changed, free, stops in options:
                key = (known.get((state, adds)) or after(state, adds), moving or stops)
                total = (value[0], value[1] - changed, value[2] + free)
                if key not in following or total > following[key][0]:
                    following[key] = (total, ((state, moving), descriptor))
        steps.append(following)
        inner = following
    pods = pods_on(node)
    for (state, moving), (value, _back) in inner.items():
        key = (state, moving)
        descriptors = []
        for following in reversed(steps):
            key, descriptor = following[key][1]
            descriptors.append(descriptor)
        start = key[0]
        total = (value[0] - (pods if moving else 0), value[1], value[2])
        if state not in reached or total > reached[state][0]:
            reached[state] = (total, (start, tuple(reversed(descriptors))))


def search_work(nodes, demand, method, limit=None):
    """The steps of the exact DP: its supply states (the product of demand + 1 over the resources) times the options
    it tries per state, node by node (whole-node options, then each GPU's MIG options twice: with and without a
    change that stops the node's pods). Counting stops once it passes ``limit``."""
    states = 1
    for cap in demand.values():
        states *= cap + 1
    work = 0
    for node in nodes:
        options = 1 + len(uniform_options(node, demand, method))
        if node.mig_allowed:
            options += 2 * sum(len(mig_gpu_options(node, index, demand)) for index in range(len(node.current)))
        work += states * options
        if limit is not None and work > limit:
            break
    return work


def _exact(nodes, demand, allow_moves, method):
    supply = _Supply(demand)
    layers = [{supply.start: ((0, 0, 0), None)}]
    for node in nodes:
        reached = {}
        options = [None] + uniform_options(node, demand, method)
        _step_uniform(layers[-1], node, options, supply, allow_moves, reached)
        if node.mig_allowed and may_move(node, allow_moves):
            _step_mig(layers[-1], node, demand, supply, reached)
        layers.append(reached)
    final = layers[-1]
    state = max(final, key=lambda supply: (sum(supply),) + final[supply][0])
    choices = []
    for layer in reversed(layers[1:]):
        state, descriptors = layer[state][1]
        choices.append(descriptors)
    return list(reversed(choices))


# --- the greedy, for pools too large for the DP ----------------------------------------------------------------


def _node_class(node):
    return (
        node.model.name if node.model else None,
        node.current,
        tuple(sorted(node.supply.items())),
        tuple(sorted(node.running.items())),
        node.mig_allowed,
        node.mps_max,
    )


def _fill_mig(node, deficit):
    """Per GPU, the useful layout serving the most of ``deficit`` (then the fewest slices): a node's MIG candidate."""
    residual = dict(deficit)
    descriptors = []
    layouts = useful_mig_layouts(node.model, residual)
    for current in node.current:
        best, best_key = None, None
        for descriptor in layouts:
            # The slices of what is short it fills: a count of instances would prefer seven small ones to two large.
            serves = sum(
                min(count, residual.get(mig_resource_name(profile), 0)) * node.model.facts[profile]["slices"]
                for profile, count in descriptor[1]
            )
            key = (serves, free_slices(node.model, descriptor))
            if serves and (best_key is None or key > best_key):
                best, best_key = descriptor, key
        if best is None:
            best = WHOLE if current == UNKNOWN else current  # nothing left to serve here: the GPU stays as it is
        for resource, count in gpu_supply(best).items():
            residual[resource] = max(0, residual.get(resource, 0) - count)
        descriptors.append(best)
    return tuple(descriptors)


def _greedy_candidates(node, deficit, method):
    gpus = len(node.current)
    candidates = []
    if node.mig_allowed and any(resource.startswith(MIG_RESOURCE_PREFIX) for resource in deficit):
        candidates.append(_fill_mig(node, deficit))
    for resource, rename in ((RESOURCE_GPU, False), (RESOURCE_GPU_SHARED, True)):
        need = deficit.get(resource, 0)
        if not need:
            continue
        if need <= gpus and not rename:
            candidates.append(tuple(WHOLE for _gpu in node.current))
        for sharing in sharing_methods(node, method):
            replicas = max(2, -(-need // gpus))
            if sharing == MPS:
                replicas = min(replicas, node.mps_max)
            candidates.append(tuple(shared_gpu(sharing, replicas, rename) for _gpu in node.current))
    return candidates


def _served_change(supply, demand, old, new):
    """What serving changes when one node stops giving ``old`` and gives ``new``."""
    change = 0
    for resource in set(old) | set(new):
        want, have = demand.get(resource, 0), supply.get(resource, 0)
        change += min(want, have - old.get(resource, 0) + new.get(resource, 0)) - min(want, have)
    return change


def _batch(supply, demand, old, new, members):
    """How many identical nodes making the same change each serve as much as the first: while every resource they add
    is still short, and every resource they take away is still in surplus."""
    batch = members
    for resource in set(old) | set(new):
        delta = new.get(resource, 0) - old.get(resource, 0)
        short = demand.get(resource, 0) - supply.get(resource, 0)
        if delta > 0 and short > 0:
            batch = min(batch, short // delta)
        elif delta < 0:
            batch = min(batch, max(0, -short) // -delta)
    return max(1, batch)


def _greedy(nodes, demand, allow_moves, method):
    """Start from every node as it is; while some demand is unserved, change the nodes whose change serves the most
    of it per GPU changed (those that move no pod first), a whole class of identical nodes at a time when they all
    serve as much."""
    choices = [None] * len(nodes)
    supply = pool_supply(nodes, choices)
    classes = {}
    for position, node in enumerate(nodes):
        classes.setdefault(_node_class(node), []).append(position)
    while True:
        deficit = dict((r, c - supply.get(r, 0)) for r, c in demand.items() if c > supply.get(r, 0))
        if not deficit:
            break
        best = None
        for members in classes.values():
            node = nodes[members[0]]
            for descriptors in _greedy_candidates(node, deficit, method):
                gives, moved, changed, _free = evaluate(node, descriptors)
                if not changed or (moved and not allow_moves):
                    continue
                gain = _served_change(supply, demand, node.supply, gives)
                if gain <= 0:
                    continue
                key = (not moved, float(gain) / changed, -moved)
                if best is None or key > best[0]:
                    best = (key, members, descriptors, gives)
        if best is None:
            break
        _key, members, descriptors, gives = best
        node = nodes[members[0]]
        batch = _batch(supply, demand, node.supply, gives, len(members))
        for position in members[:batch]:
            choices[position] = descriptors
        for resource, count in node.supply.items():
            supply[resource] -= count * batch
        for resource, count in gives.items():
            supply[resource] = supply.get(resource, 0) + count * batch
        del members[:batch]
        classes = dict((key, value) for key, value in classes.items() if value)
    return choices


def _keep_unneeded_gpus(nodes, demand, choices):
    """The greedy's clean-up: a changed GPU whose change serves nothing the pool needs goes back to its current state
    (the node's other changes, and so its moves, stay)."""
    supply = pool_supply(nodes, choices)
    result = []
    for node, descriptors in zip(nodes, choices):
        if descriptors is None or UNKNOWN in node.current or descriptors[0][0] in (TIME_SLICING, MPS):
            result.append(descriptors)
            continue
        descriptors = list(descriptors)
        for index, current in enumerate(node.current):
            if descriptors[index] == current:
                continue
            old, new = gpu_supply(descriptors[index]), gpu_supply(current)
            if _served_change(supply, demand, old, new) >= 0:
                for resource, count in old.items():
                    supply[resource] -= count
                for resource, count in new.items():
                    supply[resource] = supply.get(resource, 0) + count
                descriptors[index] = current
        result.append(tuple(descriptors))
    return result


def plan_pool(nodes, pending, allow_moves=False, method=TIME_SLICING, work_limit=EXACT_WORK_LIMIT):
    """The best mode and layout per node of one pool (``nodes``) for the requests waiting there (``pending``,
    {resource: count}); pods running on the nodes are demand too. Exact up to ``work_limit`` steps (search_work), greedy
    above. ``method``: how GPUs newly shared are shared (time-slicing or mps)."""
    demand = pool_demand(nodes, pending)
    exact = search_work(nodes, demand, method, work_limit) <= work_limit
    if exact:
        choices = _exact(nodes, demand, allow_moves, method)
    else:
        choices = _keep_unneeded_gpus(nodes, demand, _greedy(nodes, demand, allow_moves, method))
    choices = [None if descriptors == node.current else descriptors for node, descriptors in zip(nodes, choices)]
    supply = pool_supply(nodes, choices)
    served = dict((resource, min(count, supply.get(resource, 0))) for resource, count in demand.items())
    return PoolPlan(choices, score_of(nodes, choices, pending), exact, served)


def _pinned(node, allow_moves):
    """A node whose MIG layout or MPS replicas may not change: it runs pods that may not move."""
    return not may_move(node, allow_moves) and any(d[0] in ("mig", MPS, "unknown") for d in node.current)


# A GPU's two kinds of slices: an instance takes some of each (facts field, GpuModel attribute with the GPU's total).
SLICE_KINDS = (("slices", "compute_slices"), ("memory_slices", "memory_slices"))


def _instance_size(nodes, resource, field):
    """The fewest slices (``field``) an instance of ``resource`` takes on the pool's models (None: no model has it)."""
    sizes = [
        node.model.facts[profile][field]
        for node in nodes
        if node.mig_allowed
        for profile in node.model.profiles
        if mig_resource_name(profile) == resource
    ]
    return min(sizes) if sizes else None


def _most_instances(wanted, room):
    """The most of ``wanted`` ([(size, count)]) whose sizes add up to at most ``room``: smallest first."""
    total = 0
    for size, count in sorted(wanted):
        added = min(count, room // size)
        total += added
        room -= added * size
    return total


def pool_bound(nodes, pending, allow_moves=False, served=None):
    """What no plan of the pool can beat, from a relaxation, as ``Bound(served, changed)``.

    - served: at most the demand of each resource. The MIG instances a plan can add fit, in compute slices and in
      memory slices, in those of the GPUs that may change (MIG-capable, not pinned by pods that may not move), each
      instance taking at least its profile's smallest size: the most that fit, smallest first, in each kind of slice.
      A pinned node serves what it serves now. ``nvidia.com/gpu`` (and ``.shared``) is unbounded wherever a node may
      time-slice.
    - changed: to serve, resource by resource, ``served`` (a plan's, default every request) beyond what the nodes
      serve as they are, a plan changes at least as many GPUs as the missing MIG instances need slices of either kind
      (a changed GPU gives at most its 7 compute and 8 memory slices), plus one for ``nvidia.com/gpu`` and one for
      ``.shared`` when they are short (a GPU in MIG gives neither, and a shared GPU only one of them)."""
    demand = pool_demand(nodes, pending)
    keep, pinned_supply = {}, {}
    room = dict((field, 0) for field, _total in SLICE_KINDS)
    largest = dict((field, 1) for field, _total in SLICE_KINDS)
    can_share = False
    for node in nodes:
        pinned = _pinned(node, allow_moves)
        for resource, count in node.supply.items():
            keep[resource] = keep.get(resource, 0) + count
            if pinned:
                pinned_supply[resource] = pinned_supply.get(resource, 0) + count
        if node.mig_allowed and not pinned:
            for field, total in SLICE_KINDS:
                room[field] += getattr(node.model, total) * len(node.current)
                largest[field] = max(largest[field], getattr(node.model, total))
        can_share = can_share or not pinned
    upper = 0
    wanted = dict((field, []) for field, _total in SLICE_KINDS)
    for resource, count in demand.items():
        sizes = dict((field, _instance_size(nodes, resource, field)) for field, _total in SLICE_KINDS)
        if resource.startswith(MIG_RESOURCE_PREFIX) and sizes["slices"]:
            held = min(count, pinned_supply.get(resource, 0))
            upper += held
            for field, _total in SLICE_KINDS:
                wanted[field].append((sizes[field], count - held))
        elif resource in (RESOURCE_GPU, RESOURCE_GPU_SHARED) and can_share:
            upper += count
        else:
            upper += min(count, keep.get(resource, 0))
    upper += min(_most_instances(wanted[field], room[field]) for field, _total in SLICE_KINDS)
    target = served if served is not None else demand
    needed = dict((field, 0) for field, _total in SLICE_KINDS)
    short = set()
    for resource, count in target.items():
        missing = min(count, demand.get(resource, 0)) - min(demand.get(resource, 0), keep.get(resource, 0))
        if missing <= 0:
            continue
        if resource.startswith(MIG_RESOURCE_PREFIX) and _instance_size(nodes, resource, "slices"):
            for field, _total in SLICE_KINDS:
                needed[field] += missing * _instance_size(nodes, resource, field)
        else:
            short.add(resource)
    # A changed GPU gives new MIG instances, or nvidia.com/gpu, or nvidia.com/gpu.shared: never two of them.
    gpus = max(-(-needed[field] // largest[field]) for field, _total in SLICE_KINDS)
    return Bound(upper, gpus + len(short))
