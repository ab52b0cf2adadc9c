#!/usr/bin/env python3
"""Benchmark the sharing planner (gpu_sharing_plan's search) at scale, with no cluster:

    benchmarks/bench_planner.py [--nodes 1000] [--seed 28] [--baseline 4e48f42] [--out benchmarks/results] [--doc]

A fleet of ``--nodes`` GPU nodes of 8 GPUs in three pools by model (A100 80GB, H100 80GB HBM3, H200 141GB), each node
whole, time-sliced by 4 or partitioned (NVIDIA's balanced layout, or seven 1g instances per GPU), about half of them
running pods. The pending demand (MIG profiles of each pool's model and whole GPUs) is 0.5, 1, 2 and 5 times what the
fleet can hold (its GPUs' compute slices, 7 per GPU, over the demand's mean slices per request, a whole GPU counting
7), planned with and without moves.

For each scenario: what the plan serves, moves and changes, whether the solver proved it, the solver's bounds, the
CPU seconds (HiGHS on one thread) and the process's peak memory; beside it, what the planner before issue 28 (a DP
up to 6 million steps, a greedy above) gave, loaded from git at ``--baseline`` (the greedy is no longer in the tree).

Then the same fleets may grow (issue 40): each pool may add up to half as many nodes again, of 8 whole GPUs of its
model, a node costing its 8 GPUs; what the plan serves and adds, proven or not, CPU seconds, peak memory.

Writes ``planner.json`` and ``planner.md``; with ``--doc`` the tables also replace those in docs/BENCHMARKS.md
(between the planner-bench and planner-growth-bench markers). A measuring script, not a test: it asserts nothing.
"""

import argparse
import importlib.util
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, ".build")]

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import RESOURCE_GPU  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (  # noqa: E402
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import (  # noqa: E402
    WHOLE,
    GpuKind,
    mig_gpu,
    shared_gpu,
    states_supply,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.model import PoolNode  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.new_nodes import (  # noqa: E402
    NewNodeLimit,
    NodeOffer,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.search import plan_pool  # noqa: E402

MODELS = dict((model.name, model) for model in MIG_GPU_MODELS)
POOLS = (("a100", "A100 80GB"), ("h100", "H100 80GB HBM3"), ("h200", "H200 141GB"))
GPUS_PER_NODE = 8
DOC = "docs/BENCHMARKS.md"  # as benchmarks/readme_table.py's DOC
MARKERS = ("<!-- planner-bench:start -->", "<!-- planner-bench:end -->")
GROWTH_MARKERS = ("<!-- planner-growth-bench:start -->", "<!-- planner-growth-bench:end -->")
# Each pool may grow by up to this share of its nodes.
GROWTH = 0.5
# The demand's mix in percent: 1g, 2g, 3g, 4g, 7g instances of the pool's model, and whole GPUs (nvidia.com/gpu).
MIX = (35, 20, 20, 10, 5, 10)
LOADS = (0.5, 1, 2, 5)
BASELINE = "4e48f42"


def current_state(rng, model):
    roll = rng.random()
    if roll < 0.4:
        return (WHOLE,) * GPUS_PER_NODE
    if roll < 0.6:
        return (shared_gpu(GpuKind.TIME_SLICING, 4),) * GPUS_PER_NODE
    smallest = min(model.profiles, key=lambda p: (model.facts[p]["slices"], model.facts[p]["memory_slices"], p))
    layout = sorted(model.balanced.items()) if roll < 0.8 else [(smallest, model.profiles[smallest])]
    return (mig_gpu(layout),) * GPUS_PER_NODE


def profiles_by_size(model):
    """Per kind of the mix (1g, 2g, 3g, 4g, 7g) the model's profiles of that many compute slices (no attribute)."""
    kinds = {}
    for profile in model.profiles:
        if "+" not in profile:
            kinds.setdefault(model.facts[profile]["slices"], []).append(profile)
    return [sorted(kinds.get(slices, [])) for slices in (1, 2, 3, 4, 7)]


def build_fleet(nodes_count, load, seed):
    """(pools: name -> nodes, pending: name -> {resource: count}): the nodes (half of them running pods), and a
    pending demand of ``load`` times what each pool can hold."""
    rng = random.Random(seed)
    pools = dict((name, []) for name, _model in POOLS)
    for index in range(nodes_count):
        pool, model_name = POOLS[index % len(POOLS)]
        model = MODELS[model_name]
        current = current_state(rng, model)
        supply = states_supply(current)
        running = {}
        if rng.random() < 0.5:
            for resource_name, count in supply.items():
                used = rng.randint(0, count // 2)
                if used:
                    running[resource_name] = used
        pools[pool].append(
            PoolNode(
                name="%s-%04d" % (pool, index),
                pool=pool,
                model=model,
                current=current,
                supply=supply,
                running=running,
                mig_allowed=True,
                mps_max=48,
            )
        )
    pending = {}
    mean_slices = sum(share * slices for share, slices in zip(MIX, (1, 2, 3, 4, 7, 7))) / 100.0
    for pool, model_name in POOLS:
        model = MODELS[model_name]
        kinds = profiles_by_size(model) + [[None]]
        holds = 7 * GPUS_PER_NODE * len(pools[pool]) / mean_slices
        wanted = int(round(load * holds)) - sum(sum(node.running.values()) for node in pools[pool])
        pending[pool] = {}
        for _number in range(max(0, wanted)):
            roll = rng.random() * 100
            for share, profiles in zip(MIX, kinds):
                if roll < share and profiles:
                    break
                roll -= share
            profile = rng.choice(profiles)
            resource_name = RESOURCE_GPU if profile is None else mig_resource_name(profile)
            pending[pool][resource_name] = pending[pool].get(resource_name, 0) + 1
    return pools, pending


def load_baseline(commit):
    """plan/layout.py as it was at ``commit`` (the DP and the greedy), as a module of its own. It plans nodes of its
    own ``Node`` whose GPU states are tuples (``as_baseline_nodes``)."""
    source = subprocess.check_output(["git", "-C", REPO, "show", "%s:plugins/module_utils/plan/layout.py" % commit])
    spec = importlib.util.spec_from_loader("baseline_layout", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, "baseline_layout.py", "exec"), module.__dict__)
    return module


def _baseline_state(state):
    """A GpuState as the baseline's tuples: ("whole",), ("mig", layout), (method, replicas, renamed), ("unknown",)."""
    if state.is_mig:
        return (state.kind, state.layout)
    if state.is_shared:
        return (state.kind, state.replicas, state.renamed)
    return (state.kind,)


def as_baseline_nodes(baseline, pools):
    return dict(
        (name, [baseline.Node(*node._replace(current=tuple(map(_baseline_state, node.current)))) for node in nodes])
        for name, nodes in pools.items()
    )


def run_planner(planner, pools, pending, allow_moves, **options):
    totals = dict(served=0, demand=0, moved=0, changed=0, seconds=0.0, wall=0.0, exact=True, bound=None)
    bounds = []
    for name, nodes in sorted(pools.items()):
        started, wall = time.process_time(), time.monotonic()
        plan = planner(nodes, pending[name], allow_moves, **options)
        totals["seconds"] += time.process_time() - started
        totals["wall"] += time.monotonic() - wall
        totals["served"] += plan.score.served
        totals["moved"] += plan.score.moved
        totals["changed"] += plan.score.changed
        totals["demand"] += sum(sum(n.running.values()) for n in nodes) + sum(pending[name].values())
        totals["exact"] = totals["exact"] and plan.exact
        bounds.append(getattr(plan, "bound", None))
    if all(bounds):
        totals["bound"] = dict(
            (field, None if any(b[field] is None for b in bounds) else int(sum(b[field] for b in bounds)))
            for field in ("served", "pods_moved", "gpus_changed")
        )
    return totals


def growth_offers(pools):
    """{pool: [NodeOffer]}: per pool, nodes of 8 whole GPUs of its model, up to GROWTH of its size, costing 8 each."""
    offers = {}
    for name, nodes in pools.items():
        node = nodes[0]._replace(
            name="new-" + name, current=(WHOLE,) * GPUS_PER_NODE, supply={}, running={}, mps_max=48
        )
        offers[name] = [NodeOffer("new-" + name, node, int(len(nodes) * GROWTH), GPUS_PER_NODE, None, None, None)]
    return offers


def run_growth(pools, pending, allow_moves, time_limit):
    """The fleet planned pool by pool with its offer; totals of what is served and added, proof, CPU seconds."""
    offers = growth_offers(pools)
    totals = dict(served=0, demand=0, added=0, seconds=0.0, exact=True)
    for name, nodes in sorted(pools.items()):
        started = time.process_time()
        plan = plan_pool(
            nodes,
            pending[name],
            allow_moves,
            time_limit=time_limit,
            offers=offers[name],
            limits=[NewNodeLimit("max_new_nodes", len(nodes), "nodes")],
        )
        totals["seconds"] += time.process_time() - started
        totals["served"] += plan.score.served
        totals["added"] += sum(new.count for new in plan.new_nodes)
        totals["demand"] += sum(sum(n.running.values()) for n in nodes) + sum(pending[name].values())
        totals["exact"] = totals["exact"] and plan.exact
    return totals


def growth_table(rows, nodes_count, peak_mib):
    lines = [
        "The same fleets, each pool free to add up to %d%% more nodes of 8 whole GPUs of its model (a node costing its"
        " 8 GPUs); %s, Python %s, one core of %s"
        % (GROWTH * 100, time.strftime("%Y-%m-%d"), platform.python_version(), platform.machine()),
        "",
        "| demand | moves | requests | served | nodes added (of %d at most) | proven | CPU s |"
        % (nodes_count * GROWTH),
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        grown = row["grown"]
        lines.append(
            "| %sx | %s | %d | %d | %d | %s | %.2f |"
            % (
                row["load"],
                "yes" if row["allow_moves"] else "no",
                grown["demand"],
                grown["served"],
                grown["added"],
                "yes" if grown["exact"] else "no",
                grown["seconds"],
            )
        )
    lines += ["", "Peak memory of the process after these runs: %d MiB." % peak_mib]
    return "\n".join(lines) + "\n"


def scenarios():
    for load in LOADS:
        for allow_moves in (False, True):
            yield load, allow_moves


def table(rows, nodes_count, peak_mib):
    lines = [
        "%d GPU nodes x %d GPUs in three pools (A100 80GB, H100 80GB HBM3, H200 141GB), half running pods; demand 0.5 "
        "to 5 times what the fleet holds; %s, Python %s, one core of %s"
        % (nodes_count, GPUS_PER_NODE, time.strftime("%Y-%m-%d"), platform.python_version(), platform.machine()),
        "",
        "| demand | moves | requests | served (bound) | pods moved | GPUs changed (bound) | proven | CPU s "
        "| before: served, moved, changed, CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        new, old = row["new"], row["old"]
        bound = new["bound"] or {}
        lines.append(
            "| %sx | %s | %d | %d (%s) | %d | %d (%s) | %s | %.2f | %s |"
            % (
                row["load"],
                "yes" if row["allow_moves"] else "no",
                new["demand"],
                new["served"],
                bound.get("served"),
                new["moved"],
                new["changed"],
                bound.get("gpus_changed"),
                "yes" if new["exact"] else "no",
                new["seconds"],
                "%d, %d, %d, %.2f" % (old["served"], old["moved"], old["changed"], old["seconds"]) if old else "-",
            )
        )
    lines += [
        "",
        "Bounds are HiGHS's: the most any plan serves, and the fewest GPUs any plan serving as much with as few moves "
        'changes (equal to the plan\'s when proven). "Before": the planner of %s (exact DP up to 6 million steps, a '
        "greedy above). Peak memory of the solver's process: %d MiB. CPU s: the planner's own, all three pools (the "
        "solver's wall-time limit was raised for the run, so that other work on the machine cannot cut a proof short)."
        % (BASELINE, peak_mib),
    ]
    return "\n".join(lines) + "\n"


def replace_in_doc(text, markers=MARKERS):
    path = os.path.join(REPO, DOC)
    with open(path) as handle:
        doc = handle.read()
    start, end = doc.index(markers[0]) + len(markers[0]), doc.index(markers[1])
    with open(path, "w") as handle:
        handle.write(doc[:start] + "\n" + text + doc[end:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--baseline", default=BASELINE, help="the commit whose planner is measured beside ('' none)")
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"))
    parser.add_argument("--doc", action="store_true", help="rewrite the table in %s" % DOC)
    # The module's default is 10 s of wall time for a whole plan: on a machine busy with other work that cuts proofs
    # that take a fraction of it in CPU time, which is what this measures.
    parser.add_argument("--time-limit", type=float, default=120.0, help="the solver's wall time per pool, seconds")
    args = parser.parse_args()
    rows = []
    for load, allow_moves in scenarios():
        pools, pending = build_fleet(args.nodes, load, args.seed)
        new = run_planner(plan_pool, pools, pending, allow_moves, time_limit=args.time_limit)
        rows.append(dict(load=load, allow_moves=allow_moves, new=new))
        print("%sx moves=%s: %s" % (load, allow_moves, rows[-1]["new"]), file=sys.stderr)
    # Measured before the baseline is loaded: the peak is the new planner's (Python, numpy, HiGHS, the programs).
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    baseline = load_baseline(args.baseline) if args.baseline else None
    for row in rows:
        row["old"] = None
        if baseline is not None:
            pools, pending = build_fleet(args.nodes, row["load"], args.seed)
            row["old"] = run_planner(
                baseline.plan_pool, as_baseline_nodes(baseline, pools), pending, row["allow_moves"]
            )
    for row in rows:
        pools, pending = build_fleet(args.nodes, row["load"], args.seed)
        row["grown"] = run_growth(pools, pending, row["allow_moves"], args.time_limit)
        print("%sx moves=%s grown: %s" % (row["load"], row["allow_moves"], row["grown"]), file=sys.stderr)
    growth_text = growth_table(rows, args.nodes, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    text = table(rows, args.nodes, peak_mib)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "planner.json"), "w") as handle:
        json.dump(dict(rows=rows, peak_mib=peak_mib, nodes=args.nodes, seed=args.seed), handle, indent=2)
    with open(os.path.join(args.out, "planner.md"), "w") as handle:
        handle.write(text + "\n" + growth_text)
    if args.doc:
        replace_in_doc(text)
        replace_in_doc(growth_text, GROWTH_MARKERS)
    print(text + "\n" + growth_text)


if __name__ == "__main__":
    main()
