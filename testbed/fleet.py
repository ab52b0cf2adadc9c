"""A fleet of local clusters, one per platform profile, each in its own folder on its own ports, and an
Ansible inventory where each host is one of them (playbooks/site.yml's fleet form). Used by the fleet test
(tests/fleet) and by ``make demo``.

    python -m testbed.fleet up|down
    python -m testbed.fleet inventory PATH [--broken-host NAME]

GPUSHARE_FLEET_DIR chooses the folder (default .cluster-fleet); the clusters are <folder>/<profile>.
"""

import argparse
import os
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# profile -> (inventory host, etcd client port, apiserver port): blocks no test job and no default cluster use
# (the apiserver's block is +0 to +3: controller-manager, scheduler, kubelet endpoint).
CLUSTERS = {
    "openshift": ("ocp-lab", 25090, 18743),
    "scaleway": ("kapsule-par", 25190, 18843),
    "vks": ("vks-hcm", 25290, 18943),
}
# Each cluster's role variables: the GPU pool the fleet run changes.
HOST_VARS = {
    "openshift": {"openshift_machinesets": ["gpushare-ocp-gpu-t4-us-east-1a"]},
    "scaleway": {"scaleway_pool": "gpu-h100"},
    "vks": {},
}


def fleet_dir():
    return os.environ.get("GPUSHARE_FLEET_DIR") or os.path.join(REPO, ".cluster-fleet")


def kubeconfig(profile):
    return os.path.join(fleet_dir(), profile, "kubeconfig")


def _cluster_command(profile, args):
    _host, etcd_port, apiserver_port = CLUSTERS[profile]
    env = dict(
        os.environ,
        GPUSHARE_CLUSTER_DIR=os.path.join(fleet_dir(), profile),
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
    """``cluster.py up`` (each with its profile) or ``down`` for every cluster at once; the profiles that failed,
    with their output."""
    commands = dict(
        (profile, _cluster_command(profile, ("up", "--profile", profile) if action == "up" else (action,)))
        for profile in CLUSTERS
    )
    outputs = dict((profile, command.communicate()[0]) for profile, command in commands.items())
    return dict((profile, outputs[profile]) for profile, command in commands.items() if command.returncode)


def write_inventory(path, broken_host=None):
    """The fleet's inventory at ``path``: a group per platform, each host one cluster with its kubeconfig and
    role variables; ``broken_host`` adds a VKS host whose API server does not answer."""
    groups = {}
    for profile, (host, _etcd, _apiserver) in CLUSTERS.items():
        host_vars = dict(HOST_VARS[profile], gpushare_kubeconfig=kubeconfig(profile))
        groups.setdefault(profile, {"hosts": {}})["hosts"][host] = host_vars
    if broken_host:
        broken_kubeconfig = os.path.join(os.path.dirname(os.path.abspath(path)), broken_host + "-kubeconfig")
        with open(broken_kubeconfig, "w") as stream:
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "gone", "cluster": {"server": "https://127.0.0.1:1"}}],
                    "users": [{"name": "nobody", "user": {"token": "none"}}],
                    "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "nobody"}}],
                    "current-context": "gone",
                },
                stream,
            )
        groups["vks"]["hosts"][broken_host] = {"gpushare_kubeconfig": broken_kubeconfig}
    inventory = {
        "all": {
            "children": groups,
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        }
    }
    with open(path, "w") as stream:
        yaml.safe_dump(inventory, stream)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "down", "inventory"])
    parser.add_argument("path", nargs="?", help="where to write the inventory")
    parser.add_argument("--broken-host", help="add a VKS host whose API server does not answer")
    args = parser.parse_args(argv)
    if args.action == "inventory":
        print(write_inventory(args.path or os.path.join(fleet_dir(), "fleet.yml"), args.broken_host))
        return 0
    failed = on_every_cluster(args.action)
    for profile, output in sorted(failed.items()):
        sys.stderr.write("fleet: %s cluster: %s failed:\n%s\n" % (profile, args.action, output))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
