"""Fixtures for the integration tests: modules run against the local test cluster (``testbed/cluster.py``),
with nothing mocked: in the test's own process through Ansible's module entry point, or through
``ansible-playbook`` where the controller is part of what is tested.

Profiles
    The cluster runs one platform profile at a time. ``GPUSHARE_PROFILE`` names the one under test
    (``tests/run-cluster-tests.sh`` sets it); without it, the profile the cluster was brought up with
    is used. A test module declares where it applies with ``pytestmark =
    pytest.mark.profiles("openshift", "scaleway", "vks")`` (a test may narrow it with the same mark);
    unmarked tests run on every profile. Tests for other profiles are deselected, so a profile with
    nothing to run makes pytest exit 5.

Fixtures
    ``cluster``       where the cluster keeps its state (kubeconfig, tokens, CA, audit log)
    ``profile``       the running profile, ``testbed.seed.PROFILES[name]`` (namespace, policy, pools)
    ``api_client``    an admin ``kubernetes.client.ApiClient`` (its requests are not audit-counted)
    ``reset``         autouse: puts the profile back to its freshly seeded state before each test
    ``kube``          the profile's objects, read and edited as a kubectl user would (``KubeObjects``)
    ``run_module``    ``run_module(name, args, check=False, diff=False, env=None) -> result dict``: the module
                      in this process, as a fresh module process runs it (``run_module_in_process``)
    ``run_module_via_playbook``  the same through a one-task ``ansible-playbook`` run: for what needs the
                      controller (``no_log`` in its output, the installed collection, concurrent runs)
    ``audit_writes``  ``with audit_writes() as audit: ...`` then ``audit.writes`` (create, update,
                      patch, delete), ``audit.requests`` and ``audit.count(verb=, resource=)``
    ``awx_env``       ``awx_env(who="admin"|"nobody")``: the variables AWX's bearer-token credential injects
    ``namespace``     a fresh namespace for the test's workloads (``workloads.gpu_pod``)
    ``proxy``         a ``fault_proxy.FaultProxy`` in front of the cluster's API server, stopped after the test

If the cluster is not up, every test here is skipped with the command that starts it.
"""

import os

import pytest
from fault_proxy import proxy  # noqa: F401 (a fixture: the fault-injecting proxy, fault_proxy.py)
from integration_helpers import PROFILES, AuditWindow, Cluster, KubeObjects
from integration_helpers import run_module as _run_module
from integration_helpers import run_module_in_process
from workloads import namespace  # noqa: F401 (a fixture: a fresh namespace per test)

from testbed import seed
from testbed.cluster import ClusterError, connect

PROFILE_ENV = "GPUSHARE_PROFILE"
_CLUSTER = Cluster()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "profiles(*names): the cluster profiles (%s) a test runs on" % ", ".join(PROFILES)
    )


def selected_profile():
    """The profile under test: GPUSHARE_PROFILE, else the one the cluster runs (None if it is down)."""
    wanted = os.environ.get(PROFILE_ENV)
    if wanted and wanted not in PROFILES:
        raise pytest.UsageError("%s=%s is not one of %s" % (PROFILE_ENV, wanted, ", ".join(PROFILES)))
    return wanted or _CLUSTER.running_profile()


def pytest_collection_modifyitems(config, items):
    """Deselect integration tests marked for other profiles than the one under test."""
    current = selected_profile()
    if current is None:
        return  # the cluster is down: the api_client fixture skips with a hint
    here = os.path.dirname(os.path.abspath(__file__))
    kept, deselected = [], []
    for item in items:
        marks = [mark for mark in item.iter_markers("profiles")] if str(item.fspath).startswith(here) else []
        # The closest mark (the test's own) wins over the module's.
        if marks and current not in marks[0].args:
            deselected.append(item)
        else:
            kept.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def cluster():
    return _CLUSTER


@pytest.fixture(scope="session")
def api_client(cluster):
    try:
        return connect(cluster.kubeconfig, cluster.api_client, os.environ.get(PROFILE_ENV) or "openshift")
    except ClusterError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def profile(api_client, cluster):
    """The running profile; refuses to test one profile on a cluster seeded with another."""
    name = selected_profile()
    running = cluster.running_profile()
    if running != name:
        pytest.fail(
            "%s=%s but the cluster in %s runs the %s profile: bring it up with that profile"
            % (PROFILE_ENV, name, cluster.dir, running)
        )
    return seed.PROFILES[name]


@pytest.fixture(autouse=True)
def reset(api_client, profile):
    """Every test starts on the freshly seeded profile (policy, operator ConfigMaps, DaemonSets, nodes)."""
    seed.reset(api_client, profile.name)


@pytest.fixture
def kube(api_client, profile):
    """``KubeObjects`` of the profile: its fleet (``gpu_nodes()``...), objects (``node(name)``,
    ``config_map(name)``, ``policy()``, ``device_plugin()``) and user edits (``label_node``...)."""
    return KubeObjects(api_client, profile)


@pytest.fixture
def run_module(cluster):
    """``run_module(name, args, check=False, diff=False, env=None)``: run one module (a short name of this
    collection) in this process through Ansible's module entry point and return its result as ``register``
    would hold it (``env`` adds variables; a None value removes one)."""

    def run(name, args=None, check=False, diff=False, env=None):
        return run_module_in_process(cluster, name, args, check=check, diff=diff, env=env)

    return run


@pytest.fixture
def run_module_via_playbook(cluster):
    """``run_module_via_playbook(name, args, check=False, diff=False, env=None)``: run one module in a one-task
    ``ansible-playbook`` run and return its registered result, ``_stdout`` being the controller's output."""

    def run(name, args=None, check=False, diff=False, env=None):
        return _run_module(cluster, name, args, check=check, diff=diff, env=env)

    return run


@pytest.fixture
def audit_writes(cluster, api_client):
    """``with audit_writes() as audit:`` records what the API server audited during the block,
    leaving out the harness's own requests; read ``audit.writes`` (list of "verb resource/name"),
    ``audit.requests`` (every event) or ``audit.count(verb="list", resource="nodes")`` afterwards."""
    return lambda: AuditWindow(cluster, api_client)


@pytest.fixture
def awx_env(cluster):
    """``awx_env(who="admin")``: K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_VERIFY_SSL='True',
    K8S_AUTH_SSL_CA_CERT and a KUBECONFIG that does not exist, as AWX injects them."""
    return cluster.awx_env
