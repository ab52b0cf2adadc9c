"""The restore record under a concurrent writer, against the real API server: a patch that changes the record
carries the resourceVersion it was planned from, so another run's write between this run's read and its write makes
the API server answer 409, and ``write_replanning`` reads and plans again (bounded) without losing the other run's
key or record. The other run is the test writing to the ConfigMap between the plan and the write, as a concurrent
module would (tests/integration/test_concurrency.py runs ten modules at once; tests/unit/.../plan/test_objects.py holds
what needs no API server: which patches carry a resourceVersion)."""

import json

import pytest
from fault_proxy import kube_api
from integration_helpers import ONE_PROFILE
from kubernetes import client

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites, recorded
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION, read_record
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import OperatorInstall
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned, write_replanning

pytestmark = ONE_PROFILE  # the API server's optimistic concurrency: no platform difference

NAME = "profiles"


@pytest.fixture
def kube(cluster):
    """The KubeApi a module would have, on the test cluster."""
    return kube_api(cluster, cluster.server())


@pytest.fixture
def config_maps(api_client, namespace):
    """The ConfigMap API, with a ConfigMap ``profiles`` in the test's namespace: ``data``, a user's annotation."""
    core = client.CoreV1Api(api_client)

    def create(data):
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": NAME, "annotations": {"owner": "team-a"}}, "data": data}
        )

    core.create = create
    core.read = lambda: core.read_namespaced_config_map(NAME, namespace).to_dict()
    return core


def other_run_writes(config_maps, namespace, key, value, record):
    """Another run's write: its key and its restore record, through a merge patch of its own."""
    config_maps.patch_namespaced_config_map(
        NAME,
        namespace,
        {"data": {key: value}, "metadata": {"annotations": {RESTORE_ANNOTATION: json.dumps(record)}}},
    )


def set_key(kube, namespace, key, text):
    """Read the ConfigMap and plan setting ``key`` (what a sharing plan does), recording its value before."""
    current = kube.get_config_map(namespace=namespace, name=NAME)
    plan = ObjectWrites(NAME)
    plan.config_map_patch = recorded(
        current, {"data": {key: text}}, "data", {key: (current.get("data") or {}).get(key)}
    )
    return Planned(OperatorInstall({"metadata": {"name": "cluster-policy"}}, namespace, None), plan)


def test_a_conflict_is_read_and_planned_again_and_keeps_the_other_writers_record(kube, config_maps, namespace):
    config_maps.create({"user": "kept"})
    planned = set_key(kube, namespace, "a", "A")
    other_run_writes(config_maps, namespace, "b", "B", {"data": {"b": None}})

    written = write_replanning(kube, planned, lambda: set_key(kube, namespace, "a", "A"), pause=0)

    assert written.conflicts == 1
    stored = config_maps.read()
    assert stored["data"] == {"user": "kept", "a": "A", "b": "B"}
    assert read_record(stored) == {"data": {"a": None, "b": None}}  # neither run's record lost
    assert stored["metadata"]["annotations"]["owner"] == "team-a"


def test_a_record_already_written_by_the_other_run_is_kept_as_the_value_before(kube, config_maps, namespace):
    # Both runs set the same key; the other got there first, so this run's re-plan keeps its record (the seeded
    # value), not the other run's value.
    config_maps.create({"k": "seed"})
    planned = set_key(kube, namespace, "k", "A")
    other_run_writes(config_maps, namespace, "k", "B", {"data": {"k": "seed"}})

    written = write_replanning(kube, planned, lambda: set_key(kube, namespace, "k", "A"), pause=0)

    assert written.conflicts == 1
    stored = config_maps.read()
    assert stored["data"]["k"] == "A"  # the last writer's intent
    assert read_record(stored) == {"data": {"k": "seed"}}  # not "B": the value before any run


def test_conflicts_that_never_settle_give_up_with_a_message(kube, config_maps, namespace, audit_writes):
    config_maps.create({})
    writes = []

    def planned_then_overtaken():
        planned = set_key(kube, namespace, "a", "A")
        writes.append(len(writes))
        config_maps.patch_namespaced_config_map(NAME, namespace, {"data": {"other": str(len(writes))}})
        return planned

    with audit_writes() as audit:
        with pytest.raises(GpuShareError) as caught:
            write_replanning(kube, planned_then_overtaken(), planned_then_overtaken, attempts=3, pause=0)
    assert caught.value.status == 409
    assert "each of 3 attempts, read and planned afresh, met a conflict (409)" in caught.value.msg
    assert "patch ConfigMap %s/%s" % (namespace, NAME) in caught.value.msg
    refused = [event for event in audit.requests if (event.get("responseStatus") or {}).get("code") == 409]
    assert len(refused) == 3 and "a" not in config_maps.read()["data"]


def test_other_failures_are_not_replanned(kube, config_maps, namespace):
    config_maps.create({})
    planned = set_key(kube, namespace, "a/b", "A")  # a key the API server refuses (422 Invalid)
    replans = []

    with pytest.raises(GpuShareError) as caught:
        write_replanning(kube, planned, lambda: replans.append(1) or set_key(kube, namespace, "a/b", "A"), pause=0)
    assert caught.value.status == 422 and replans == []
    assert config_maps.read()["data"] is None
