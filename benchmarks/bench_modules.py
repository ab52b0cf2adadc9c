#!/usr/bin/env python3
"""Benchmark the modules on the running local cluster (a large fleet: run bench_cluster.py first).

    benchmarks/bench_modules.py [--replicas 4] [--wait-timeout 1800] [--out benchmarks/results]

Each step runs one module through ``ansible-playbook`` exactly as the integration tests do and
reports its wall time and the API requests it made (from the API server's audit log):

1. ``ansible.builtin.ping``: what ansible-playbook itself costs, to subtract from the rest;
2. ``kubernetes.core.k8s_info`` listing the nodes: the task users compare a module's cost with;
3. ``gpu_info`` on the unshared fleet;
4. ``gpu_timeslicing`` with ``make_default: true``: the rollout to every GPU node, waiting until each
   advertises count x replicas;
5. the same task again: the no-op second run;
6. ``gpu_info`` on the shared fleet.

Each step also reports the peak resident memory of its largest process and its time as a ratio of the
k8s_info step's. Writes ``modules.json`` and ``modules.md``. A measuring script, not a test: it asserts nothing,
but records when a step failed.
"""

import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, ".build"), os.path.join(REPO, "tests", "integration")]

from integration_helpers import AuditWindow, Cluster, run_module  # noqa: E402  (after the path set-up)
from settle import wait_until_settled  # noqa: E402


def measure(cluster, api_client, label, module, args):
    print("bench_modules: %s ..." % label, file=sys.stderr, flush=True)
    with AuditWindow(cluster, api_client) as audit:
        result = run_module(cluster, module, args)
    step = {
        "step": label,
        "module": module,
        "args": args,
        "seconds": round(result["_seconds"], 2),
        "failed": bool(result.get("failed")),
        "changed": bool(result.get("changed")),
        "requests": len(audit.requests),
        "writes": len(audit.writes),
        "requests_by_verb": audit.summary(),
        "peak_rss_mib": result["_peak_rss_mib"],
    }
    if step["failed"]:
        step["msg"] = result.get("msg")
    if module.endswith("gpu_info"):
        step["gpu_nodes"] = len(result.get("nodes") or {})
        step["findings"] = len(result.get("findings") or [])
    if module.endswith("gpu_timeslicing"):
        step["nodes"] = len(result.get("nodes") or {})
        step["restarted"] = result.get("restarted")
    print(
        "bench_modules: %s: %.1fs, %d requests (%d writes)%s"
        % (
            label,
            step["seconds"],
            step["requests"],
            step["writes"],
            ", FAILED: %s" % step.get("msg") if step["failed"] else "",
        ),
        file=sys.stderr,
        flush=True,
    )
    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--wait-timeout", type=int, default=1800)
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    cluster = Cluster()
    api_client = cluster.api_client()
    wait_until_settled(api_client)  # the fleet bench_cluster.py just seeded
    rollout = dict(replicas=args.replicas, config_key="bench-shared", make_default=True, wait_timeout=args.wait_timeout)
    steps = [
        measure(cluster, api_client, "ansible-playbook overhead (ping)", "ansible.builtin.ping", {}),
        measure(
            cluster, api_client, "kubernetes.core.k8s_info of the nodes", "kubernetes.core.k8s_info", {"kind": "Node"}
        ),
        measure(cluster, api_client, "gpu_info, unshared fleet", "gpu_info", {}),
        measure(
            cluster, api_client, "time-slicing rollout to every GPU node, with the wait", "gpu_timeslicing", rollout
        ),
        measure(cluster, api_client, "time-slicing again (no-op second run)", "gpu_timeslicing", rollout),
        measure(cluster, api_client, "gpu_info, shared fleet", "gpu_info", {}),
    ]
    results = {
        "profile": cluster.running_profile(),
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "steps": steps,
    }
    with open(os.path.join(args.out, "modules.json"), "w") as out:
        json.dump(results, out, indent=2, sort_keys=True)
    markdown = render(results)
    with open(os.path.join(args.out, "modules.md"), "w") as out:
        out.write(markdown)
    print(markdown)
    return 1 if any(step["failed"] for step in steps) else 0


def render(results):
    gpu_nodes = next((step.get("gpu_nodes") for step in results["steps"] if step.get("gpu_nodes")), 0)
    lines = [
        "### Modules on a %d-GPU-node fleet (%s profile)" % (gpu_nodes, results["profile"]),
        "",
        "Wall time of `ansible-playbook` running the one task (ping: ansible's own share). "
        "Requests: every API request the module made, from the audit log.",
        "",
        "| step | seconds | x k8s_info | changed | requests | writes | peak MiB | requests by verb |",
        "|---|---:|---:|:-:|---:|---:|---:|---|",
    ]
    reference = next(step["seconds"] for step in results["steps"] if step["module"] == "kubernetes.core.k8s_info")
    for step in results["steps"]:
        verbs = ", ".join("%s %d" % item for item in step["requests_by_verb"].items()) or "-"
        lines.append(
            "| %s%s | %.1f | %.2f | %s | %d | %d | %s | %s |"
            % (
                step["step"],
                " **(failed)**" if step["failed"] else "",
                step["seconds"],
                step["seconds"] / reference if reference else 0,
                "yes" if step["changed"] else "no",
                step["requests"],
                step["writes"],
                "%.0f" % step["peak_rss_mib"],
                verbs,
            )
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
