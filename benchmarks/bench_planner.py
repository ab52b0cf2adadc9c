#!/usr/bin/env python3
"""Benchmark the layout planner (gpu_sharing_plan's search) at scale, with no cluster:

    benchmarks/bench_planner.py [--nodes 1000] [--requests 10000] [--seed 22] [--out benchmarks/results]

A fleet of ``--nodes`` GPU nodes of 8 GPUs, in three pools by model (A100 80GB, H100 80GB HBM3, H200 141GB), each node
whole, time-sliced by 4 or partitioned (NVIDIA's balanced layout, or seven 1g instances per GPU), about half of them
running pods; then pending requests (MIG profiles of each pool's model and nvidia.com/gpu) up to ``--requests`` in
all, running pods included. Every pool is planned as gpu_sharing_plan plans it, and the answer is compared with the
bound ``plan/layout.pool_bound`` computes: served <= every request; GPUs changed >= what the MIG instances the nodes
lack need in compute slices, 7 per changed GPU (and 1 when nvidia.com/gpu is short); pods moved >= 0.

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


def build_fleet(nodes_count, requests, seed):
    """(pools: name -> nodes, pending: name -> {resource: count})."""
    rng = random.Random(seed)
    pools = dict((name, []) for name, _model in POOLS)
    running_total = 0
    for index in range(nodes_count):
        pool, model_name = POOLS[index % len(POOLS)]
        model = MODELS[model_name]
        current = current_state(rng, model)
        supply = node_supply(current)
        running = {}
        if rng.random() < 0.5:
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
        # Small slices are asked most: 1g 40 %, 2g 20 %, 3g 15 %, 7g 5 %, a whole or shared GPU 20 %.
        roll = rng.random()
        if roll < 0.2:
            resource_name = RESOURCE_GPU
        else:
            choices = (
                [by_size[0]] * 8
                + [p for p in by_size if p.startswith("2g")] * 4
                + [p for p in by_size if p.startswith("3g")] * 3
                + [p for p in by_size if p.startswith("7g")]
            )
            resource_name = mig_resource_name(rng.choice(choices))
        pending[pool][resource_name] = pending[pool].get(resource_name, 0) + 1
    return pools, pending, running_total


def measure(nodes_count, requests, seed):
    pools, pending, running = build_fleet(nodes_count, requests, seed)
    rows = []
    started = time.process_time()
    totals = dict(served=0, demand=0, moved=0, changed=0, changed_bound=0, gpus=0)
    for name, nodes in sorted(pools.items()):
        pool_started = time.process_time()
        plan = plan_pool(nodes, pending[name])
        seconds = time.process_time() - pool_started
        bound = pool_bound(nodes, pending[name])
        rows.append(
            dict(
                pool=name,
                nodes=len(nodes),
                gpus=len(nodes) * GPUS_PER_NODE,
                requests=bound.served,
                served=plan.score.served,
                moved=plan.score.moved,
                changed=plan.score.changed,
                changed_bound=bound.changed,
                exact=plan.exact,
                seconds=round(seconds, 2),
            )
        )
        totals["served"] += plan.score.served
        totals["demand"] += bound.served
        totals["moved"] += plan.score.moved
        totals["changed"] += plan.score.changed
        totals["changed_bound"] += bound.changed
        totals["gpus"] += len(nodes) * GPUS_PER_NODE
    totals["seconds"] = round(time.process_time() - started, 2)
    totals["running"] = running
    totals["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return rows, totals


def table(rows, totals, nodes_count, requests):
    lines = [
        "Planner at %d GPU nodes x %d GPUs, %d requests (%d of them running pods); %s, Python %s, %s"
        % (
            nodes_count,
            GPUS_PER_NODE,
            totals["demand"],
            totals["running"],
            time.strftime("%Y-%m-%d"),
            platform.python_version(),
            platform.machine(),
        ),
        "",
        "| pool | GPUs | requests | served | pods moved | GPUs changed | bound on GPUs changed | CPU s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            "| %(pool)s | %(gpus)d | %(requests)d | %(served)d | %(moved)d | %(changed)d | %(changed_bound)d "
            "| %(seconds).2f |" % row
        )
    lines.append(
        "| all | %(gpus)d | %(demand)d | %(served)d | %(moved)d | %(changed)d | %(changed_bound)d "
        "| %(seconds).2f |" % totals
    )
    gap = totals["changed"] - totals["changed_bound"]
    lines += [
        "",
        "Served: %d of %d requests (the bound: every request). GPUs changed: %d, %d above the bound (%.1f %%). Peak "
        "memory %d MiB."
        % (
            totals["served"],
            totals["demand"],
            totals["changed"],
            gap,
            100.0 * gap / max(1, totals["changed_bound"]),
            totals["peak_rss_mib"],
        ),
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
    rows, totals = measure(args.nodes, args.requests, args.seed)
    text = table(rows, totals, args.nodes, args.requests)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "planner.json"), "w") as handle:
        json.dump(dict(pools=rows, totals=totals), handle, indent=2)
    with open(os.path.join(args.out, "planner.md"), "w") as handle:
        handle.write(text)
    if args.readme:
        replace_in_readme(text)
    print(text)


if __name__ == "__main__":
    main()
