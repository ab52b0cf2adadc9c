"""A fleet of clusters in one playbook run (issue 11): three local clusters, one per platform profile, each
with its own folder and ports, plus a fourth inventory host whose API server does not answer. Over that inventory,
``playbooks/timeslicing.yml`` in check mode writes nothing (audit log); for real it changes the three clusters in
parallel (forks), fails the broken one alone with a clear message and ends with a line per cluster; run again it
changes nothing and writes nothing; ``reset.yml`` brings every cluster back to unshared; ``verify.yml`` and
``preflight.yml`` then pass without a write. The role variables come as an AWX survey passes them, booleans as strings
(issue 21). Check mode is run once, on ``timeslicing.yml``: ``reset.yml`` runs the same roles with ``gpushare_mode``
none, and gpu_reset's check mode is tested alone (tests/integration/test_gpu_reset.py); one more run over
three clusters cost about 30 CPU-s.

This is also the test of those playbooks on each platform (issue 19: one run over three clusters instead of one run
per cluster in tests/integration/test_playbooks.py). The clusters are started here (module fixture) and stopped at
the end, whatever happened.
"""

import contextlib
import json
import os

import integration_helpers
import pytest
from integration_helpers import AuditWindow, Cluster
from kubernetes import client, config

from testbed import fleet as local_fleet

CLUSTERS = local_fleet.CLUSTERS
BROKEN_HOST = "vks-broken"
# The nodes each cluster's role variables (testbed/fleet.py's HOST_VARS) select: what the run time-slices.
CHANGED_SELECTOR = {
    "openshift": "machine.openshift.io/cluster-api-machineset=gpushare-ocp-gpu-t4-us-east-1a",
    "scaleway": "k8s.scaleway.com/pool-name=gpu-h100",
    "vks": "nvidia.com/gpu.present=true",
}
# What the roles read, as an AWX survey passes it: strings, booleans too (the roles must read "false" as false).
SURVEY_VARS = {
    "openshift_autoscaling": "false",
    "openshift_smoke_test": "false",
    "openshift_drain": "false",
    "scaleway_smoke_test": "false",
    "scaleway_refuse_under_gpu_jobs": "true",
    "vks_install_operator": "false",
    "vks_smoke_test": "false",
}
HEALTHY = "all:!" + BROKEN_HOST


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The inventory of the three clusters and the broken host; the clusters run until the module ends."""
    try:
        assert local_fleet.on_every_cluster("up") == {}
        yield local_fleet.write_inventory(str(tmp_path_factory.mktemp("fleet") / "fleet.yml"), BROKEN_HOST)
    finally:
        local_fleet.on_every_cluster("down")


def run_playbook(inventory, playbook, *args):
    """The playbook over the fleet inventory, every cluster at once: (exit code, its JSON report)."""
    code, report, _stderr = integration_helpers.run_playbook(
        None,
        playbook,
        "-e",
        "gpushare_clusters=all",
        "-e",
        json.dumps(SURVEY_VARS),
        "--forks",
        "4",
        *args,
        inventory=inventory,
    )
    return code, report


def cluster(profile):
    return Cluster(os.path.join(local_fleet.fleet_dir(), profile))


@contextlib.contextmanager
def audit_every_cluster():
    """``{profile: AuditWindow}`` of every cluster, open during the block."""
    windows = {}
    try:
        for profile in CLUSTERS:
            local = cluster(profile)
            windows[profile] = AuditWindow(local, local.api_client()).start()
        yield windows
    finally:
        for window in windows.values():
            window.stop()
            window.core.api_client.close()


def writes(windows):
    """``{profile: writes}`` of the clusters that were written to."""
    return dict((profile, window.writes) for profile, window in windows.items() if window.writes)


def summary_lines(report):
    """The summary play's messages, one per cluster."""
    lines = []
    for play in report["plays"]:
        for task in play["tasks"]:
            if task["task"]["name"] == "Show each cluster's outcome":
                for result in task["hosts"]["localhost"].get("results", []):
                    if "msg" in result:
                        lines.append(result["msg"])
    return lines


def sharing_labels(profile):
    return dict((node.metadata.name, node.metadata.labels) for node in gpu_nodes(profile))


def gpu_nodes(profile):
    api = config.new_client_from_config(config_file=local_fleet.kubeconfig(profile))
    try:
        return client.CoreV1Api(api).list_node(label_selector=CHANGED_SELECTOR[profile]).items
    finally:
        api.close()


def test_check_then_run_fails_the_broken_one_alone_then_converges_resets_and_verifies(fleet):
    before = dict((profile, sharing_labels(profile)) for profile in CLUSTERS)
    with audit_every_cluster() as audits:
        code, report = run_playbook(fleet, "timeslicing.yml", "--limit", HEALTHY, "--check")
    assert code == 0 and writes(audits) == {}
    assert sorted(integration_helpers.changed_hosts(report)) == sorted(host for host, _e, _a in CLUSTERS.values())
    assert dict((profile, sharing_labels(profile)) for profile in CLUSTERS) == before

    code, report = run_playbook(fleet, "timeslicing.yml")
    stats = report["stats"]
    assert code == 2, stats  # a host failed
    for profile, (host, _etcd, _apiserver) in CLUSTERS.items():
        assert stats[host]["failures"] == 0 and stats[host]["changed"] > 0, (host, stats[host])
        for node in gpu_nodes(profile):
            labels = node.metadata.labels
            assert labels.get("nvidia.com/gpu.sharing-strategy") == "time-slicing", (profile, node.metadata.name)
            assert labels.get("nvidia.com/gpu.replicas") == "4", (profile, node.metadata.name)
    assert stats[BROKEN_HOST]["failures"] == 1
    lines = summary_lines(report)
    assert sorted(line.split(":")[0] for line in lines) == sorted(
        [host for host, _e, _a in CLUSTERS.values()] + [BROKEN_HOST]
    )
    [broken] = [line for line in lines if line.startswith(BROKEN_HOST)]
    assert "FAILED at 'Detect the platform'" in broken and "cannot reach the Kubernetes API" in broken, broken

    # The same run again changes and writes nothing on the clusters that answer; reset.yml brings every cluster back
    # to unshared.
    with audit_every_cluster() as audits:
        code, report = run_playbook(fleet, "timeslicing.yml", "--limit", HEALTHY)
    assert code == 0
    assert integration_helpers.changed_hosts(report) == {} and writes(audits) == {}
    code, report = run_playbook(fleet, "reset.yml", "--limit", HEALTHY)
    assert code == 0
    for profile in CLUSTERS:
        for node in gpu_nodes(profile):
            assert node.metadata.labels.get("nvidia.com/gpu.sharing-strategy") == "none", (profile, node.metadata.name)

    # Unshared again, every cluster passes verify.yml and preflight.yml, which write nothing.
    with audit_every_cluster() as audits:
        verified = run_playbook(fleet, "verify.yml", "--limit", HEALTHY)
        checked = run_playbook(fleet, "preflight.yml", "--limit", HEALTHY, "-e", "gpushare_fail_on=never")
    assert (verified[0], checked[0]) == (0, 0) and writes(audits) == {}
