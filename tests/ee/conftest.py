"""The EE and DE tests use the integration tests' helpers (tests/integration/integration_helpers.py) and share the
cluster tests/ee/run.sh starts (openshift profile), reset once per test file."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))

from integration_helpers import Cluster  # noqa: E402

from testbed import seed  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "profiles(*names): the cluster profiles a test runs on")


@pytest.fixture(scope="module")
def cluster():
    return Cluster()


@pytest.fixture(scope="module")
def api_client(cluster):
    api = cluster.api_client()
    seed.reset(api, "openshift")
    yield api
    api.close()
