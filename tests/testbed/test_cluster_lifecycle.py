"""The cluster script's promises: starting twice or stopping twice is harmless, a failed start says why.

Runs a second, throwaway cluster (its own state folder and ports) so the shared one is untouched.
"""

import os
import socket
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(REPO, "testbed", "cluster.py")


def free_port_block(size):
    """The first of ``size`` consecutive free loopback ports."""
    for base in range(26000, 30000, 10):
        sockets = []
        try:
            for port in range(base, base + size):
                sock = socket.socket()
                sock.bind(("127.0.0.1", port))
                sockets.append(sock)
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError("no free port block")


@pytest.fixture
def throwaway_cluster(tmp_path):
    etcd_port = free_port_block(24)
    # The block holds etcd (+0, +10), the control plane (+20..+22) and the simulated kubelets (+23).
    apiserver_port = etcd_port + 20
    env = dict(
        os.environ,
        GPUSHARE_CLUSTER_DIR=str(tmp_path / "cluster"),
        GPUSHARE_ETCD_PORT=str(etcd_port),
        GPUSHARE_APISERVER_PORT=str(apiserver_port),
    )

    def run(*args):
        return subprocess.run(
            [sys.executable, CLUSTER] + list(args), env=env, capture_output=True, text=True, timeout=300
        )

    run.state = tmp_path / "cluster"
    run.etcd_port = etcd_port
    run.apiserver_port = apiserver_port
    yield run
    run("down")


def pids(state):
    if not (state / "pids").is_dir():
        return {}
    return dict((name, (state / "pids" / name).read_text()) for name in sorted(os.listdir(state / "pids")))


def test_up_twice_keeps_the_running_cluster_and_down_twice_is_harmless(throwaway_cluster):
    first = throwaway_cluster("up", "--profile", "vks")
    assert first.returncode == 0, first.stderr
    assert "export KUBECONFIG=%s" % (throwaway_cluster.state / "kubeconfig") in first.stdout
    running = pids(throwaway_cluster.state)
    assert set(running) == {
        "etcd.pid",
        "kube-apiserver.pid",
        "kube-controller-manager.pid",
        "kube-scheduler.pid",
        "simulator.pid",
    }

    second = throwaway_cluster("up", "--profile", "vks")
    assert second.returncode == 0, second.stderr
    assert pids(throwaway_cluster.state) == running
    assert throwaway_cluster("status").returncode == 0

    other_profile = throwaway_cluster("up", "--profile", "openshift")
    assert other_profile.returncode == 1
    assert "cluster is up with the vks profile" in other_profile.stderr

    assert throwaway_cluster("down").returncode == 0
    assert throwaway_cluster("down").returncode == 0
    assert throwaway_cluster("status").returncode == 3


@pytest.mark.parametrize("component", ["etcd", "kube-apiserver"])
def test_a_start_on_a_taken_port_says_why_and_starts_nothing_there(throwaway_cluster, component):
    """Another process listening on a component's port (another cluster's etcd, say) is refused before the component
    starts: its readiness probe would otherwise be answered by the other process."""
    port = throwaway_cluster.etcd_port if component == "etcd" else throwaway_cluster.apiserver_port
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", port))
    blocker.listen(1)
    try:
        result = throwaway_cluster("up", "--profile", "vks")
    finally:
        blocker.close()
    assert result.returncode == 1
    assert "%s cannot start: port %d is taken" % (component, port) in result.stderr
    assert "Address already in use" in result.stderr
    assert "%s.pid" % component not in pids(throwaway_cluster.state)
