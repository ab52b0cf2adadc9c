"""Ten gpu_timeslicing runs at once on overlapping nodes and one ConfigMap, against the real API server.

Every patch that changes a restore record (and the policy's device-plugin pair) carries the resourceVersion it
was planned from, and the runner reads and plans again on a 409 Conflict (run/writer.py, write_replanning).
So no run loses another's ConfigMap key or record, each node ends on one of its writers' profiles, fully
applied, and ``gpu_reset restore: true`` afterwards brings back exactly the seeded cluster: the records hold
the values from before any of the runs, never one run's value recorded by another.
"""

import threading

import pytest
import yaml
from integration_helpers import allocatable, labels
from test_gpu_reset import snapshot

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import read_record

pytestmark = pytest.mark.profiles("openshift")

RUNS = 10
NODES_PER_RUN = 3
LABEL = "nvidia.com/device-plugin.config"
CONFIG_MAP = "time-slicing-config"
USER_KEY = "users-own-key"
USER_TEXT = "version: v1\n# kept by hand, never touched by the collection\n"


def replicas_of(text):
    return yaml.safe_load(text)["sharing"]["timeSlicing"]["resources"][0]["replicas"]


def test_ten_concurrent_runs_lose_no_update_and_restore_exactly(
    kube, run_module, run_module_via_playbook, audit_writes
):
    gpu_nodes = kube.gpu_nodes()
    kube.put_config_map(CONFIG_MAP, {USER_KEY: USER_TEXT})
    kube.annotate_node(gpu_nodes[0], {"example.com/owner": "team-a"})
    seeded = snapshot(kube)
    seeded_labels = dict((name, labels(kube.node(name)).get(LABEL)) for name in gpu_nodes)
    seeded_policy_config = kube.policy()["spec"]["devicePlugin"].get("config")

    runs = [
        dict(
            config_key="run-%d" % index,
            replicas=2 + index,
            nodes={"names": [gpu_nodes[(index + offset) % len(gpu_nodes)] for offset in range(NODES_PER_RUN)]},
            wait_timeout=240,
        )
        for index in range(RUNS)
    ]
    results = [None] * RUNS
    start = threading.Barrier(RUNS)

    def run(index):
        start.wait()
        # Ten module processes at once, as ten AWX jobs or ansible-playbook runs would be.
        results[index] = run_module_via_playbook("gpu_timeslicing", runs[index])

    threads = [threading.Thread(target=run, args=(index,)) for index in range(RUNS)]
    with audit_writes() as audit:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    for args, result in zip(runs, results):
        assert result is not None and not result["failed"], (args["config_key"], result and result.get("msg"))
        assert result["changed"], args["config_key"]
    conflicts = [event for event in audit.requests if (event.get("responseStatus") or {}).get("code") == 409]
    superseded = [w for result in results for w in result.get("warnings") or () if "another writer" in w]
    print(
        "%d concurrent runs, %d writes, %d conflicts (409) re-planned, %d warnings of nodes relabelled by a later run"
        % (RUNS, len(audit.writes), len(conflicts), len(superseded))
    )

    # No lost update in the ConfigMap: every run's key with its own config, the user's key untouched, and a
    # record naming every key as absent before (the value before any run), the user's key not recorded.
    config_map = kube.config_map(CONFIG_MAP)
    assert config_map["data"][USER_KEY] == USER_TEXT
    for args in runs:
        assert replicas_of(config_map["data"][args["config_key"]]) == args["replicas"], args["config_key"]
    assert read_record(config_map) == {"data": dict((args["config_key"], None) for args in runs)}

    # Each node ends on the profile of one of the runs that targeted it, fully applied (label, and the
    # device plugin advertising that run's replicas), and its record holds the seeded label.
    by_key = dict((args["config_key"], args) for args in runs)
    for name in gpu_nodes:
        writers = [args["config_key"] for args in runs if name in args["nodes"]["names"]]
        node = kube.node(name)
        key = labels(node).get(LABEL)
        assert key in writers, (name, key, writers)
        count = int(labels(node)["nvidia.com/gpu.count"])
        want = count * by_key[key]["replicas"]
        node = kube.wait_for_node(name, lambda node: allocatable(node) == want and labels(node).get(LABEL) == key)
        assert read_record(node) == {"labels": {LABEL: seeded_labels[name]}}, name
        # The run whose profile stands is the last writer there: nobody relabelled the node after it, so it
        # waited for the node and reports what the node showed then.
        winner = results[[args["config_key"] for args in runs].index(key)]
        assert "after" in winner["nodes"][name], (name, key, winner.get("warnings"))
    assert read_record(kube.policy()) == {"spec": {"devicePlugin.config": seeded_policy_config}}

    restored = run_module("gpu_reset", {"restore": True})
    assert restored["changed"], restored.get("msg")
    assert snapshot(kube) == seeded
