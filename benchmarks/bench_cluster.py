#!/usr/bin/env python3
"""Benchmark the local test cluster: cold and warm start, memory of each process, seeding a large fleet.

    benchmarks/bench_cluster.py [--profile openshift] [--nodes 1000] [--out benchmarks/results]

- cold start: ``cluster.py up`` from nothing (certificates, etcd data, seeding, simulator);
- warm start: the processes stopped, the state kept, ``cluster.py up`` again (no seeding);
- RSS of etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the simulator, on the
  profile's small fleet and again once the large fleet is seeded;
- ``cluster.py up --nodes N`` on the running cluster: the time to seed N GPU nodes.

It stops any cluster already in the state folder first and leaves the large fleet running, for
``bench_modules.py``. The cluster is the one ``testbed/cluster.py`` manages (GPUSHARE_CLUSTER_DIR,
GPUSHARE_ETCD_PORT, GPUSHARE_APISERVER_PORT move it). Writes ``cluster.json`` and ``cluster.md``.
A measuring script, not a test: it asserts nothing.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, ".build")]

from testbed import cluster  # noqa: E402  (after the path set-up)

COMPONENTS = cluster.COMPONENTS


def run_cluster(*args):
    """Run testbed/cluster.py; returns (seconds, stderr). Raises on failure."""
    started = time.monotonic()
    completed = subprocess.run(
        [sys.executable, os.path.join(REPO, "testbed", "cluster.py")] + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.monotonic() - started
    if completed.returncode != 0:
        raise SystemExit("cluster.py %s failed:\n%s" % (" ".join(args), completed.stderr))
    return seconds, completed.stderr


def seconds_in(text, pattern):
    match = re.search(pattern, text)
    return float(match.group(1)) if match else None


def rss_mib():
    """Resident memory (MiB) of each running component, from /proc/<pid>/status."""
    result = {}
    for name in COMPONENTS:
        pid = cluster.pid_of(name)
        if not pid:
            result[name] = None
            continue
        with open("/proc/%d/status" % pid) as status:
            kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        result[name] = round(kib / 1024.0, 1)
    return result


def stop_keeping_state():
    """Stop every component like ``cluster.py down`` does, but keep the state folder (etcd data)."""
    for name in reversed(COMPONENTS):
        cluster.stop_process(name)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="openshift", choices=sorted(("openshift", "scaleway", "vks")))
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    results = {
        "profile": args.profile,
        "nodes": args.nodes,
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
    }

    print("bench_cluster: stopping any running cluster", file=sys.stderr)
    run_cluster("down")

    seconds, log = run_cluster("up", "--profile", args.profile)
    results["cold_start"] = {
        "seconds": round(seconds, 2),
        "control_plane_seconds": seconds_in(log, r"control plane ready in ([\d.]+)s"),
        "seed_seconds": seconds_in(log, r"nodes in ([\d.]+)s"),
    }
    print("bench_cluster: cold start %.1fs" % seconds, file=sys.stderr)
    results["rss_mib_small_fleet"] = rss_mib()

    stop_keeping_state()
    seconds, log = run_cluster("up", "--profile", args.profile)
    results["warm_start"] = {
        "seconds": round(seconds, 2),
        "control_plane_seconds": seconds_in(log, r"control plane ready in ([\d.]+)s"),
    }
    print("bench_cluster: warm start %.1fs" % seconds, file=sys.stderr)

    seconds, log = run_cluster("up", "--profile", args.profile, "--nodes", str(args.nodes))
    results["seed_large_fleet"] = {
        "seconds": round(seconds, 2),
        "seed_seconds": seconds_in(log, r"nodes in ([\d.]+)s"),
        "nodes": int(seconds_in(log, r": (\d+) nodes in") or 0),
    }
    print("bench_cluster: seeded %d GPU nodes in %.1fs" % (args.nodes, seconds), file=sys.stderr)
    results["rss_mib_large_fleet"] = rss_mib()

    with open(os.path.join(args.out, "cluster.json"), "w") as out:
        json.dump(results, out, indent=2, sort_keys=True)
    markdown = render(results)
    with open(os.path.join(args.out, "cluster.md"), "w") as out:
        out.write(markdown)
    print(markdown)


def render(results):
    lines = [
        "### Local cluster (%s profile, %d CPUs)" % (results["profile"], results["cpus"]),
        "",
        "| measure | seconds |",
        "|---|---:|",
        "| cold start (certificates, etcd, control plane, seed, simulator) | %.1f |" % results["cold_start"]["seconds"],
        "| - of which control plane ready | %s |" % _num(results["cold_start"]["control_plane_seconds"]),
        "| warm start (state kept, no seeding) | %.1f |" % results["warm_start"]["seconds"],
        "| - of which control plane ready | %s |" % _num(results["warm_start"]["control_plane_seconds"]),
        "| seed %d GPU nodes on the running cluster (`up --nodes %d`) | %.1f |"
        % (results["nodes"], results["nodes"], results["seed_large_fleet"]["seconds"]),
        "",
        "| process | RSS MiB, seeded fleet | RSS MiB, %d-node fleet |" % results["nodes"],
        "|---|---:|---:|",
    ]
    for name in COMPONENTS:
        lines.append(
            "| %s | %s | %s |"
            % (name, _num(results["rss_mib_small_fleet"].get(name)), _num(results["rss_mib_large_fleet"].get(name)))
        )
    small = sum(v for v in results["rss_mib_small_fleet"].values() if v)
    large = sum(v for v in results["rss_mib_large_fleet"].values() if v)
    lines.append("| **total** | %.0f | %.0f |" % (small, large))
    return "\n".join(lines) + "\n"


def _num(value):
    return "-" if value is None else ("%.1f" % value if isinstance(value, float) else str(value))


if __name__ == "__main__":
    main()
