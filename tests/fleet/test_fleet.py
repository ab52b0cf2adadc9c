"""A fleet of clusters in one playbook run (issue 11): three local clusters, one per platform profile, each
with its own folder and ports, plus a fourth inventory host whose API server does not answer. One
``ansible-playbook playbooks/timeslicing.yml`` over that inventory changes the three clusters in parallel
(forks), fails the broken one alone with a clear message, and ends with a line per cluster; run again it
changes nothing; ``reset.yml --check`` changes nothing; ``reset.yml`` brings every cluster back to unshared.

The clusters are started here (module fixture) and stopped at the end, whatever happened.
"""

import integration_helpers
import pytest
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
        None, playbook, "-e", "gpushare_clusters=all", "--forks", "4", *args, inventory=inventory
    )
    return code, report


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


def gpu_nodes(profile):
    api = config.new_client_from_config(config_file=local_fleet.kubeconfig(profile))
    try:
        return client.CoreV1Api(api).list_node(label_selector=CHANGED_SELECTOR[profile]).items
    finally:
        api.close()


def test_one_run_shares_three_clusters_fails_the_broken_one_alone_and_converges(fleet):
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

    # The same run again changes nothing on the clusters that answer; reset.yml --check changes nothing either,
    # and reset.yml brings every cluster back to unshared.
    healthy = "all:!" + BROKEN_HOST
    code, report = run_playbook(fleet, "timeslicing.yml", "--limit", healthy)
    assert code == 0
    assert integration_helpers.changed_hosts(report) == {}
    code, report = run_playbook(fleet, "reset.yml", "--limit", healthy, "--check")
    assert code == 0 and all(stats["changed"] > 0 for host, stats in report["stats"].items() if host != "localhost")
    for profile in CLUSTERS:
        assert all(node.metadata.labels.get("nvidia.com/gpu.replicas") == "4" for node in gpu_nodes(profile))
    code, report = run_playbook(fleet, "reset.yml", "--limit", healthy)
    assert code == 0
    for profile in CLUSTERS:
        for node in gpu_nodes(profile):
            assert node.metadata.labels.get("nvidia.com/gpu.sharing-strategy") == "none", (profile, node.metadata.name)
