"""A fleet of clusters in one playbook run (issue 11): three local clusters, one per platform profile, each
with its own folder and ports, plus a fourth inventory host whose API server does not answer. One
``ansible-playbook playbooks/timeslicing.yml`` over that inventory changes the three clusters in parallel
(forks), fails the broken one alone with a clear message, and ends with a line per cluster; run again it
changes nothing; ``reset.yml --check`` changes nothing; ``reset.yml`` brings every cluster back to unshared.

The clusters are started here (module fixture) and stopped at the end, whatever happened.
"""

import json
import os
import subprocess
import sys

import pytest
import yaml
from kubernetes import client, config

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLEET_DIR = os.environ.get("GPUSHARE_FLEET_DIR") or os.path.join(REPO, ".cluster-tests", "fleet")
# profile -> (inventory host, etcd client port, apiserver port): a block of ports no other test job uses.
CLUSTERS = {
    "openshift": ("ocp-lab", 25090, 18743),
    "scaleway": ("kapsule-par", 25190, 18843),
    "vks": ("vks-hcm", 25290, 18943),
}
BROKEN_HOST = "vks-broken"
# What each cluster's playbook variables select: the nodes the run time-slices.
HOST_VARS = {
    "openshift": {"openshift_machinesets": ["gpushare-ocp-gpu-t4-us-east-1a"]},
    "scaleway": {"scaleway_pool": "gpu-h100"},
    "vks": {},
}
CHANGED_SELECTOR = {
    "openshift": "machine.openshift.io/cluster-api-machineset=gpushare-ocp-gpu-t4-us-east-1a",
    "scaleway": "k8s.scaleway.com/pool-name=gpu-h100",
    "vks": "nvidia.com/gpu.present=true",
}


def cluster_command(profile, *args):
    """``testbed/cluster.py <args>`` for the profile's cluster of the fleet, started (a Popen)."""
    _host, etcd_port, apiserver_port = CLUSTERS[profile]
    env = dict(
        os.environ,
        GPUSHARE_CLUSTER_DIR=os.path.join(FLEET_DIR, profile),
        GPUSHARE_ETCD_PORT=str(etcd_port),
        GPUSHARE_APISERVER_PORT=str(apiserver_port),
    )
    return subprocess.Popen(
        [sys.executable, os.path.join(REPO, "testbed", "cluster.py")] + list(args),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def on_every_cluster(action):
    """``cluster.py up`` (each with its profile) or ``down`` for the three clusters at once; failures raised."""
    commands = dict(
        (profile, cluster_command(profile, *(("up", "--profile", profile) if action == "up" else (action,))))
        for profile in CLUSTERS
    )
    outputs = dict((profile, command.communicate()[0]) for profile, command in commands.items())
    failed = dict((profile, outputs[profile]) for profile, command in commands.items() if command.returncode)
    assert not failed, failed


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The inventory file of the three clusters and the broken host; the clusters run until the module ends."""
    try:
        on_every_cluster("up")
        folder = tmp_path_factory.mktemp("fleet")
        broken_kubeconfig = folder / "broken-kubeconfig"
        broken_kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "gone", "cluster": {"server": "https://127.0.0.1:1"}}],
                    "users": [{"name": "nobody", "user": {"token": "none"}}],
                    "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "nobody"}}],
                    "current-context": "gone",
                }
            )
        )
        groups = {}
        for profile, (host, _etcd, _apiserver) in CLUSTERS.items():
            host_vars = dict(HOST_VARS[profile], gpushare_kubeconfig=kubeconfig(profile))
            groups.setdefault(profile, {"hosts": {}})["hosts"][host] = host_vars
        groups["vks"]["hosts"][BROKEN_HOST] = {"gpushare_kubeconfig": str(broken_kubeconfig)}
        inventory = folder / "fleet.yml"
        inventory.write_text(
            yaml.safe_dump(
                {
                    "all": {
                        "children": groups,
                        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                    }
                }
            )
        )
        yield str(inventory)
    finally:
        on_every_cluster("down")


def kubeconfig(profile):
    return os.path.join(FLEET_DIR, profile, "kubeconfig")


def run_playbook(inventory, playbook, *args):
    """ansible-playbook with the JSON callback: (exit code, its JSON report)."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".build"),
        ANSIBLE_CONFIG=os.path.join(REPO, "tests", "ansible.cfg"),
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
    )
    env.pop("KUBECONFIG", None)  # each cluster is named by its inventory host, never by the caller
    done = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "-i",
            inventory,
            os.path.join(REPO, "playbooks", playbook),
            "-e",
            "gpushare_clusters=all",
            "--forks",
            "4",
        ]
        + list(args),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=1800,
    )
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise AssertionError("no JSON report (exit %d):\n%s\n%s" % (done.returncode, done.stdout, done.stderr))
    return done.returncode, report


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
    api = config.new_client_from_config(config_file=kubeconfig(profile))
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
    assert [(host, stats["changed"]) for host, stats in sorted(report["stats"].items()) if stats["changed"]] == []
    code, report = run_playbook(fleet, "reset.yml", "--limit", healthy, "--check")
    assert code == 0 and all(stats["changed"] > 0 for host, stats in report["stats"].items() if host != "localhost")
    for profile in CLUSTERS:
        assert all(node.metadata.labels.get("nvidia.com/gpu.replicas") == "4" for node in gpu_nodes(profile))
    code, report = run_playbook(fleet, "reset.yml", "--limit", healthy)
    assert code == 0
    for profile in CLUSTERS:
        for node in gpu_nodes(profile):
            assert node.metadata.labels.get("nvidia.com/gpu.sharing-strategy") == "none", (profile, node.metadata.name)
