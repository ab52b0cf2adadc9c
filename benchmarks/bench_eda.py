#!/usr/bin/env python3
"""Benchmark the autopilot of issue 30 (docs/EDA.md) on the running local Kapsule cluster (scaleway profile, seeded
with enough H100 nodes for the burst: ``cluster.py up --profile scaleway --nodes 8``).

    benchmarks/bench_eda.py [--pods 50] [--idle-seconds 60] [--out benchmarks/results]

- idle: ansible-rulebook running gpushare.k8s.gpu_autoplan and, beside it, the gpu_demand source alone (its
  ``main`` in a Python process of its own, as ansible-rulebook runs it, with nothing to hand the events to) follow
  the cluster while nothing changes; each one's CPU seconds over ``--idle-seconds`` (from /proc, children included);
- burst: ``--pods`` pods asking for a MIG instance (1g.10gb) no node has, created at once (eight requests in
  flight); the seconds from the last one created to all of them Running, through the rulebook with its defaults
  (10 s settle, 60 s cool-down) but for the pool label: its source's event, one sharing plan, its MIG changes,
  the scheduler; and how many plans ran.

The cluster is the one ``testbed/cluster.py`` manages (GPUSHARE_CLUSTER_DIR, GPUSHARE_ETCD_PORT,
GPUSHARE_APISERVER_PORT move it). Writes ``eda.json`` and ``eda.md``. A measuring script, not a test: it asserts
nothing.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, ".build"), os.path.join(REPO, "tests", "integration")]

from integration_helpers import Cluster, module_env  # noqa: E402  (after the path set-up)
from rulebook import Rulebook, install_java  # noqa: E402
from workloads import KAPSULE_POOL_LABEL, create_pods, fresh_namespace, mig_pod, wait_for_pods  # noqa: E402

BURST_TIMEOUT = 900
SOURCE_ALONE = """
import asyncio
import logging
from ansible_collections.gpushare.k8s.extensions.eda.plugins.event_source.gpu_demand import main
logging.basicConfig(level=logging.INFO, format="%%(asctime)s %%(message)s")
asyncio.run(main(asyncio.Queue(), {"pool_label": %r}))
""" % (KAPSULE_POOL_LABEL,)


def cpu_seconds(pid):
    """User and system CPU seconds of process ``pid`` and of its waited-for children, from /proc."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def descendants(pid):
    """``pid`` and every process under it (ansible-rulebook's JVM runs in its own process; a playbook would not)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        try:
            with open("/proc/%d/task/%d/children" % (current, current)) as children:
                queue.extend(int(child) for child in children.read().split())
        except OSError:
            continue
    return found


def tree_cpu_seconds(pid):
    return sum(cpu_seconds(each) for each in descendants(pid) if os.path.exists("/proc/%d" % each))


def measure_idle(rulebook_pid, source_pid, seconds):
    """CPU seconds of each process tree over ``seconds`` of a cluster where nothing changes."""
    before = tree_cpu_seconds(rulebook_pid), tree_cpu_seconds(source_pid)
    time.sleep(seconds)  # the measuring window itself, not a wait for state
    after = tree_cpu_seconds(rulebook_pid), tree_cpu_seconds(source_pid)
    return {
        "seconds": seconds,
        "rulebook_cpu_s": round(after[0] - before[0], 3),
        "source_cpu_s": round(after[1] - before[1], 3),
    }


def start_source_alone(cluster, log_path):
    with open(log_path, "w") as log:
        return subprocess.Popen(
            [sys.executable, "-c", SOURCE_ALONE],
            env=module_env(cluster, {"PYTHONPATH": os.path.join(REPO, ".build")}),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def measure_burst(cluster, rulebook, pods):
    api_client = cluster.api_client()
    namespace = fresh_namespace(api_client, prefix="bench-eda-")
    create_pods(api_client, namespace, [mig_pod("burst-%02d" % n, "1g.10gb") for n in range(pods)])
    created = time.monotonic()
    wait_for_pods(api_client, namespace, running=pods, waiting=0, timeout=BURST_TIMEOUT)
    return {
        "pods": pods,
        "last_created_to_all_running_s": round(time.monotonic() - created, 1),
        "plans": rulebook.plans(),
    }


def table(result):
    idle, burst = result["idle"], result["burst"]
    return (
        "### The autopilot (gpu_autoplan rulebook, ansible-rulebook %s)\n\n"
        "| what | value |\n|---|---|\n"
        "| %d pods asking for a MIG instance no node has: last created to all Running | %.1f s (%d plan) |\n"
        "| CPU while idle, over %d s: the gpu_demand source alone | %.2f CPU-s |\n"
        "| CPU while idle, over %d s: ansible-rulebook with the rulebook (source, rule engine, JVM) | %.2f CPU-s |\n"
        % (
            result["ansible_rulebook"],
            burst["pods"],
            burst["last_created_to_all_running_s"],
            burst["plans"],
            idle["seconds"],
            idle["source_cpu_s"],
            idle["seconds"],
            idle["rulebook_cpu_s"],
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=50)
    parser.add_argument("--idle-seconds", type=int, default=60)
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"))
    args = parser.parse_args()

    install_java()
    cluster = Cluster()
    folder = Path(tempfile.mkdtemp(prefix="bench-eda-"))
    rulebook = Rulebook(cluster, folder, {"gpu_autoplan_pool_label": KAPSULE_POOL_LABEL})
    source = start_source_alone(cluster, str(folder / "source.log"))
    try:
        rulebook.started()
        idle = measure_idle(rulebook.process.pid, source.pid, args.idle_seconds)
        burst = measure_burst(cluster, rulebook, args.pods)
    finally:
        rulebook.stop()
        source.terminate()
        source.wait()
    version = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-rulebook"), "--version"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    # "ansible-rulebook [1.3.2]"
    result = {"idle": idle, "burst": burst, "ansible_rulebook": version[1].strip("[]") if len(version) > 1 else "?"}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "eda.json"), "w") as out:
        json.dump(result, out, indent=2)
    with open(os.path.join(args.out, "eda.md"), "w") as out:
        out.write(table(result))
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
