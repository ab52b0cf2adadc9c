"""Fixtures for the simulator's tests: they drive the local cluster through the API only, as a user
with kubectl would, and wait with watches (never fixed sleeps).

The cluster must be up (``python testbed/cluster.py up --profile openshift``); otherwise every test
here is skipped with that hint. Each test starts from the freshly seeded profile (``seed.reset``).
"""

import os
import uuid

import pytest
from kubernetes import client, config
from simulator_helpers import wait_for

from testbed import seed
from testbed.cluster import ClusterError, connect
from testbed.simulator.kube import Kube, discard

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_DIR = os.environ.get("GPUSHARE_CLUSTER_DIR", os.path.join(REPO, ".cluster"))


def _kubeconfig():
    # Never $KUBECONFIG: these tests reset the cluster they run against, which must be the local one.
    return os.path.join(CLUSTER_DIR, "kubeconfig")


def _profile():
    try:
        with open(os.path.join(CLUSTER_DIR, "profile")) as profile_file:
            return profile_file.read().strip()
    except OSError:
        return "openshift"


def _admin_api_client():
    configuration = client.Configuration()
    config.load_kube_config(config_file=_kubeconfig(), client_configuration=configuration)
    return client.ApiClient(configuration)


@pytest.fixture(scope="session")
def api_client():
    try:
        return connect(_kubeconfig(), _admin_api_client)
    except ClusterError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def profile():
    name = _profile()
    if name != "openshift":
        pytest.skip("these tests use the openshift fleet; the cluster runs the %s profile" % name)
    return seed.PROFILES[name]


@pytest.fixture
def kube(api_client, profile):
    """A Kube on a cluster reset to the seeded profile."""
    seed.reset(api_client, profile.name)
    return Kube(api_client)


@pytest.fixture
def namespace(kube):
    """A fresh namespace whose default ServiceAccount exists (pods are refused until it does)."""
    name = "t-" + uuid.uuid4().hex[:8]
    discard(kube.core.create_namespace, {"metadata": {"name": name}})
    wait_for(
        kube.core.list_namespaced_service_account,
        lambda account: account["metadata"]["name"] == "default" and account.get("secrets"),
        "default ServiceAccount of " + name,
        name,
    )
    return name
