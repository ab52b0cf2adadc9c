#!/usr/bin/env python3
"""Head to head: the seeds' time-slicing change with kubernetes.core only, and with gpushare.k8s.

    benchmarks/bench_ab.py [--scales 1,10,100,1000] [--selector-scales 1,10,100] [--rounds 3] [--out DIR]

On the running local cluster (openshift profile; ``testbed/cluster.py up``), for each scale N the fleet is
reseeded with N GPU nodes and the two playbooks run alternately, ``--rounds`` times each, every run from the
freshly reseeded fleet (the scales in increasing order):

- A: ``benchmarks/playbooks/kubernetes_core_timeslicing.yml`` (kubernetes.core's k8s and k8s_info, the way
  the guides do it, polling every 2 s);
- B: ``benchmarks/playbooks/gpushare_timeslicing.yml`` (one gpu_timeslicing task).

Two scenarios: ``every`` (the key becomes the policy's default: every GPU node, no label write) at
``--scales``, and ``selector`` (``nvidia.com/gpu.present=true``: one label write per node) at
``--selector-scales`` (kubernetes.core labels nodes one task iteration at a time, about 0.5 s each).

Each run reports its wall time; the API requests and writes it made (audit log); the peak resident memory
of its largest process (ansible-playbook or a module); the simulator's time (from the run's last write to
the simulator's last node update, which plays the operator's device plugin and GFD); and the run's own lag
after that last update (until its last request ended). One unmeasured run of each comes first (caches,
discovery). Writes ``ab.json`` and ``ab.md`` and leaves the largest fleet seeded. A measuring script, not a
test: it asserts nothing.
"""

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, ".build"), os.path.join(REPO, "tests", "integration")]

from integration_helpers import ANSIBLE_PLAYBOOK, AuditWindow, Cluster, is_write, module_env, run_measured  # noqa: E402
from settle import wait_until_settled  # noqa: E402

from testbed import seed  # noqa: E402
from testbed.cluster import SIMULATOR_USER  # noqa: E402

PLAYBOOKS = {
    "kubernetes.core": os.path.join(REPO, "benchmarks", "playbooks", "kubernetes_core_timeslicing.yml"),
    "gpushare.k8s": os.path.join(REPO, "benchmarks", "playbooks", "gpushare_timeslicing.yml"),
}
SELECTOR = "nvidia.com/gpu.present=true"


def reseed(api_client, nodes):
    """The openshift fleet with ``nodes`` GPU nodes, as seeded, once the cluster has nothing left to do: every
    DaemonSet rolled out to every node, then no node change for a while (settle.py)."""
    seed.reset(api_client, "openshift", nodes=nodes)
    wait_until_settled(api_client)


def timestamp(text):
    return datetime.strptime(text.rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f").timestamp()


def run_playbook(cluster, playbook, extra_vars):
    """(seconds, exit code, peak RSS in MiB of the largest process, output) of one ansible-playbook run."""
    command = [ANSIBLE_PLAYBOOK, "-i", "localhost,", playbook, "-e", json.dumps(extra_vars)]
    env = dict(module_env(cluster), ANSIBLE_CONFIG=os.path.join(REPO, "tests", "ansible.cfg"))
    started = time.monotonic()
    code, output, peak_rss = run_measured(command, env, REPO, timeout=3600)
    return time.monotonic() - started, code, peak_rss, output


def measure(cluster, api_client, tool, nodes, scenario, replicas):
    reseed(api_client, nodes)
    extra_vars = dict(bench_config_key="bench-shared", bench_replicas=replicas)
    if scenario == "selector":
        extra_vars["bench_node_selector"] = SELECTOR
    with AuditWindow(cluster, api_client) as audit:
        seconds, code, rss, output = run_playbook(cluster, PLAYBOOKS[tool], extra_vars)
    ours = audit.requests
    writes = [event for event in ours if is_write(event)]
    simulator = [
        event
        for event in audit.everyone
        if event["user"]["username"] == SIMULATOR_USER
        and (event.get("objectRef") or {}).get("resource") == "nodes"
        and event["verb"] == "patch"
    ]
    run = {
        "tool": tool,
        "nodes": nodes,
        "scenario": scenario,
        "seconds": round(seconds, 2),
        "ok": code == 0,
        "requests": len(ours),
        "writes": len(writes),
        "node_label_writes": sum(1 for event in writes if (event.get("objectRef") or {}).get("resource") == "nodes"),
        "peak_rss_mib": round(rss, 1),
    }
    if writes and simulator:
        last_write = max(timestamp(event["stageTimestamp"]) for event in writes)
        last_update = max(timestamp(event["stageTimestamp"]) for event in simulator)
        last_request = max(timestamp(event["stageTimestamp"]) for event in ours)
        run["simulator_seconds"] = round(last_update - last_write, 2)
        run["lag_seconds"] = round(last_request - last_update, 2)
    if code != 0:
        run["output"] = output[-3000:]
    print("bench_ab: %s" % json.dumps({k: v for k, v in run.items() if k != "output"}), file=sys.stderr, flush=True)
    return run


def summarise(runs):
    """One row per (scenario, nodes): the median of each tool's runs and the ratios."""
    rows = []
    keys = sorted({(run["scenario"], run["nodes"]) for run in runs}, key=lambda key: (key[0], key[1]))
    for scenario, nodes in keys:
        row = {"scenario": scenario, "nodes": nodes}
        for tool in PLAYBOOKS:
            mine = [run for run in runs if (run["tool"], run["scenario"], run["nodes"]) == (tool, scenario, nodes)]
            row[tool] = dict(
                (field, statistics.median(run[field] for run in mine if field in run))
                for field in ("seconds", "requests", "writes", "node_label_writes", "peak_rss_mib", "lag_seconds")
                if any(field in run for run in mine)
            )
            row[tool]["ok"] = all(run["ok"] for run in mine)
            row[tool]["simulator_seconds"] = statistics.median(run.get("simulator_seconds", 0) for run in mine)
        reference, ours = row["kubernetes.core"], row["gpushare.k8s"]
        row["speedup"] = round(reference["seconds"] / ours["seconds"], 2) if ours["seconds"] else None
        rows.append(row)
    return rows


def render(results):
    lines = [
        "### gpushare.k8s against kubernetes.core: the seeds' time-slicing change",
        "",
        "Median of %d alternating runs each, from a freshly reseeded fleet (openshift profile). `every`: the key "
        "becomes the policy's default; `selector`: `%s`, one label per node. Seconds: wall time of "
        "`ansible-playbook`. Simulator: from the run's last write to the simulator's last node update (the "
        "operator's share). Lag: from that update to the run's last request. Memory: peak RSS of the run's "
        "largest process." % (results["rounds"], SELECTOR),
        "",
        "| scenario | GPU nodes | kubernetes.core s | gpushare.k8s s | speed-up | requests (k8s.core / ours) "
        "| writes | node label writes | simulator s | lag s (k8s.core / ours) | peak MiB (k8s.core / ours) |",
        "|---|---:|---:|---:|---:|---|---|---|---:|---|---|",
    ]
    for row in results["rows"]:
        a, b = row["kubernetes.core"], row["gpushare.k8s"]
        failed = "" if a["ok"] and b["ok"] else " **(a run failed)**"
        lines.append(
            "| %s%s | %d | %.1f | %.1f | %sx | %d / %d | %d / %d | %d / %d | %.1f | %s / %s | %.0f / %.0f |"
            % (
                row["scenario"],
                failed,
                row["nodes"],
                a["seconds"],
                b["seconds"],
                row["speedup"],
                a["requests"],
                b["requests"],
                a["writes"],
                b["writes"],
                a["node_label_writes"],
                b["node_label_writes"],
                b["simulator_seconds"],
                a.get("lag_seconds", "-"),
                b.get("lag_seconds", "-"),
                a["peak_rss_mib"],
                b["peak_rss_mib"],
            )
        )
    return "\n".join(lines) + "\n"


def scales(text):
    return [int(item) for item in text.split(",") if item]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", type=scales, default=[1, 10, 100, 1000])
    parser.add_argument("--selector-scales", type=scales, default=[1, 10, 100])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    cluster = Cluster()
    api_client = cluster.api_client()
    # Fleets only grow from one step to the next: a shrinking reseed leaves the pods of deleted nodes to the
    # controller manager's pod garbage collector, which would still be busy during the next runs.
    plan = sorted([(nodes, "every") for nodes in args.scales] + [(nodes, "selector") for nodes in args.selector_scales])
    for tool in PLAYBOOKS:  # warm-up: discovery caches, first imports
        measure(cluster, api_client, tool, plan[0][0], plan[0][1], args.replicas)
    runs = []
    for nodes, scenario in plan:
        for _round in range(args.rounds):
            for tool in PLAYBOOKS:
                runs.append(measure(cluster, api_client, tool, nodes, scenario, args.replicas))
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "rounds": args.rounds,
        "replicas": args.replicas,
        "runs": runs,
        "rows": summarise(runs),
    }
    with open(os.path.join(args.out, "ab.json"), "w") as out:
        json.dump(results, out, indent=2, sort_keys=True)
    markdown = render(results)
    with open(os.path.join(args.out, "ab.md"), "w") as out:
        out.write(markdown)
    print(markdown)
    return 0 if all(run["ok"] for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
