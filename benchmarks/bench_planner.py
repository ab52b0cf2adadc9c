#!/usr/bin/env python3
"""Benchmark the layout planner (gpu_sharing_plan's search) at scale, with no cluster:

    benchmarks/bench_planner.py [--nodes 1000] [--requests 10000] [--seed 22] [--out benchmarks/results]

A fleet of ``--nodes`` GPU nodes of 8 GPUs, in three pools by model (A100 80GB, H100 80GB HBM3, H200 141GB), each node
whole, time-sliced by 4 or partitioned (NVIDIA's balanced layout, or seven 1g instances per GPU), about half of them
running pods; then pending requests (MIG profiles of each pool's model and nvidia.com/gpu) up to ``--requests`` in
all, running pods included. Every pool is planned as gpu_sharing_plan plans it, and the answer is compared with the
bound ``plan/layout.pool_bound`` computes (a relaxation: served <= what the GPUs that may change could add; GPUs
changed >= what the MIG instances the nodes lack need in compute and memory slices, 7 and 8 per GPU, plus 1 when
nvidia.com/gpu is short); pods moved >= 0.

Writes ``planner.json`` and ``planner.md``; with ``--readme`` the table also replaces the one in README.md (between
the planner-bench markers). A measuring script, not a test: it asserts nothing.
"""

import argparse
import json
import os
import platform
import random
import resource
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, ".build")]

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (  # noqa: E402
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import MIG_GPU_MODELS  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.layout import (  # noqa: E402
    RESOURCE_GPU,
    TIME_SLICING,
    WHOLE,
    Node,
    mig_gpu,
    node_supply,
    plan_pool,
    pool_bound,
    shared_gpu,
)

MODELS = dict((model.name, model) for model in MIG_GPU_MODELS)
POOLS = (("a100", "A100 80GB"), ("h100", "H100 80GB HBM3"), ("h200", "H200 141GB"))
GPUS_PER_NODE = 8
MARKERS = ("<!-- planner-bench:start -->", "<!-- planner-bench:end -->")


def current_state(rng, model):
    roll = rng.random()
    if roll < 0.4:
        return (WHOLE,) * GPUS_PER_NODE
    if roll < 0.6:
        return (shared_gpu(TIME_SLICING, 4),) * GPUS_PER_NODE
    smallest = min(model.profiles, key=lambda p: (model.facts[p]["slices"], model.facts[p]["memory_slices"], p))
    layout = sorted(model.balanced.items()) if roll < 0.8 else [(smallest, model.profiles[smallest])]
    return (mig_gpu(layout),) * GPUS_PER_NODE


def build_fleet(nodes_count, requests, seed, busy, mix):
    """(pools: name -> nodes, pending: name -> {resource: count}, running pods); ``busy``: the share of nodes running
    pods; ``mix``: the pending requests' shares in percent of 1g, 2g, 3g, 7g instances and nvidia.com/gpu."""
    rng = random.Random(seed)
    pools = dict((name, []) for name, _model in POOLS)
    running_total = 0
    for index in range(nodes_count):
        pool, model_name = POOLS[index % len(POOLS)]
        model = MODELS[model_name]
        current = current_state(rng, model)
        supply = node_supply(current)
        running = {}
        if rng.random() < busy:
            for resource_name, count in supply.items():
                used = rng.randint(0, count // 2)
                if used:
                    running[resource_name] = used
        running_total += sum(running.values())
        pools[pool].append(Node("%s-%04d" % (pool, index), pool, model, current, supply, running, True, 48))
    pending = dict((name, {}) for name, _model in POOLS)
    wanted = max(0, requests - running_total)
    for number in range(wanted):
        pool, model_name = POOLS[number % len(POOLS)]
        model = MODELS[model_name]
        by_size = sorted(
            (p for p in model.profiles if "+" not in p),
            key=lambda p: (model.facts[p]["slices"], model.facts[p]["memory_slices"]),
        )
        # The mix, in percent: (1g, 2g, 3g, 7g, a whole or shared GPU).
        weights = dict(zip((by_size[0], "2g", "3g", "7g", RESOURCE_GPU), mix))
        roll = rng.random() * 100
        for kind, weight in weights.items():
            if roll < weight:
                break
            roll -= weight
        if kind == RESOURCE_GPU:
            resource_name = RESOURCE_GPU
        else:
            choices = [p for p in by_size if p == kind or p.startswith(kind + ".")]
            resource_name = mig_resource_name(rng.choice(choices))
        pending[pool][resource_name] = pending[pool].get(resource_name, 0) + 1
    return pools, pending, running_total


SMALL_SLICES = (40, 20, 15, 5, 20)
LARGE_SLICES = (5, 10, 40, 30, 15)
# (what the fleet and demand look like, the share of nodes running pods, the demand's mix, whether pods may move)
SCENARIOS = (
    ("half the nodes busy, small slices", 0.5, SMALL_SLICES, False),
    ("nine in ten busy, small slices", 0.9, SMALL_SLICES, False),
    ("half busy, large slices", 0.5, LARGE_SLICES, False),
    ("nine in ten busy, large slices", 0.9, LARGE_SLICES, False),
    ("nine in ten busy, large slices, moves allowed", 0.9, LARGE_SLICES, True),
)


def measure(nodes_count, requests, seed, busy, mix, allow_moves):
    """One scenario: per pool and in all, what the plan serves, moves and changes, the bound, and the CPU time."""
    pools, pending, running = build_fleet(nodes_count, requests, seed, busy, mix)
    rows = []
    totals = dict(
        served=0, served_bound=0, demand=0, moved=0, changed=0, changed_bound=0, gpus=0, seconds=0.0, exact=True
    )
    for name, nodes in sorted(pools.items()):
        started = time.process_time()
        plan = plan_pool(nodes, pending[name], allow_moves)
        seconds = time.process_time() - started
        bound = pool_bound(nodes, pending[name], allow_moves, plan.served)
        row = dict(
            pool=name,
            gpus=len(nodes) * GPUS_PER_NODE,
            demand=sum(sum(n.running.values()) for n in nodes) + sum(pending[name].values()),
            served=plan.score.served,
            served_bound=bound.served,
            moved=plan.score.moved,
            changed=plan.score.changed,
            changed_bound=bound.changed,
            exact=plan.exact,
            seconds=seconds,
        )
        rows.append(row)
        for field in ("served", "served_bound", "demand", "moved", "changed", "changed_bound", "gpus", "seconds"):
            totals[field] += row[field]
        totals["exact"] = totals["exact"] and plan.exact
    totals["running"] = running
    return rows, totals


def table(results, nodes_count, requests):
    lines = [
        "%d GPU nodes x %d GPUs (A100 80GB, H100 80GB HBM3, H200 141GB: three pools), %d requests, running pods "
        "included; %s, Python %s, one core of %s"
        % (
            nodes_count,
            GPUS_PER_NODE,
            requests,
            time.strftime("%Y-%m-%d"),
            platform.python_version(),
            platform.machine(),
        ),
        "",
        "| fleet | served | bound on served | pods moved | GPUs changed | bound on GPUs changed | CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, totals in results:
        lines.append(
            "| %s | %d | %d | %d | %d | %d | %.2f |"
            % (
                name,
                totals["served"],
                totals["served_bound"],
                totals["moved"],
                totals["changed"],
                totals["changed_bound"],
                totals["seconds"],
            )
        )
    lines += [
        "",
        "Bounds (plan/layout.pool_bound, a relaxation no plan beats): served, at most each resource's demand, with the "
        "MIG instances the changeable GPUs could add, smallest first, in their compute and in their memory slices; "
        "GPUs changed, at least the slices the served MIG instances missing before the plan need, 7 compute and 8 "
        "memory per GPU, plus 1 for each of nvidia.com/gpu and .shared when short. Peak memory %d MiB."
        % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024),
    ]
    return "\n".join(lines) + "\n"


def replace_in_readme(text):
    path = os.path.join(REPO, "README.md")
    with open(path) as handle:
        readme = handle.read()
    start, end = readme.index(MARKERS[0]) + len(MARKERS[0]), readme.index(MARKERS[1])
    with open(path, "w") as handle:
        handle.write(readme[:start] + "\n" + text + readme[end:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"))
    parser.add_argument("--readme", action="store_true")
    args = parser.parse_args()
    results, details = [], []
    for name, busy, mix, allow_moves in SCENARIOS:
        rows, totals = measure(args.nodes, args.requests, args.seed, busy, mix, allow_moves)
        results.append((name, totals))
        details.append(dict(scenario=name, busy=busy, mix=mix, allow_moves=allow_moves, pools=rows, totals=totals))
    text = table(results, args.nodes, args.requests)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "planner.json"), "w") as handle:
        json.dump(details, handle, indent=2)
    with open(os.path.join(args.out, "planner.md"), "w") as handle:
        handle.write(text)
    if args.readme:
        replace_in_readme(text)
    print(text)


if __name__ == "__main__":
    main()
