# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restore record under concurrent runs: a patch changing it carries the resourceVersion it was planned
from, and ``write_replanning`` reads and plans again on a 409 Conflict (bounded). The ApiClient's
``call_api`` is replaced by a one-ConfigMap store that answers as the API server does: a merge patch whose
``metadata.resourceVersion`` differs from the stored one gets 409. (tests/integration/test_concurrency.py
runs ten modules at once against the real API server.)"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest

kubernetes = pytest.importorskip("kubernetes")

from k8s_objects import merge_patch  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import KubeApi  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import (  # noqa: E402
    ObjectWrites,
    device_plugin_config_patch,
    recorded,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import (  # noqa: E402
    RESTORE_ANNOTATION,
    read_record,
    restore_patch,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import OperatorInstall  # noqa: E402
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned, write_replanning  # noqa: E402

NAMESPACE = "gpu-operator"
PATH = "/api/v1/namespaces/%s/configmaps/profiles" % NAMESPACE


def conflict():
    exc = ApiException(status=409, reason="Conflict")
    exc.body = json.dumps(
        {"kind": "Status", "code": 409, "reason": "Conflict", "message": "the object has been modified"}
    )
    exc.headers = {}
    return exc


class Reply(object):
    status = 200

    def __init__(self, body):
        self.response = Data(body)


class Data(object):
    def __init__(self, body):
        self.data = json.dumps(body).encode()


class Store(object):
    """Stands in for ``ApiClient.call_api`` with one ConfigMap; ``meddle(config_map)`` runs before each PATCH
    is applied (another writer getting in between), bumping the resourceVersion when it changes something."""

    def __init__(self, config_map, meddle=None):
        self.config_map = config_map
        self.meddle = meddle
        self.patches = []
        self.conflicts = 0

    def write(self, data=None, annotations=None):
        obj = merge_patch(self.config_map, {"data": data or {}, "metadata": {"annotations": annotations or {}}})
        obj["metadata"]["resourceVersion"] = str(int(self.config_map["metadata"]["resourceVersion"]) + 1)
        self.config_map = obj

    def __call__(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        if url.endswith("/selfsubjectaccessreviews"):
            return Reply({"status": {"allowed": True}})  # the writer asks before writing; this identity may
        assert url.split("?")[0].endswith(PATH), url
        if method == "GET":
            return Reply(self.config_map)
        assert method == "PATCH"
        patch = json.loads(body) if isinstance(body, (str, bytes)) else body
        self.patches.append(patch)
        if self.meddle:
            self.meddle(self)
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != self.config_map["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise conflict()
        self.write(patch.get("data"), (patch.get("metadata") or {}).get("annotations"))
        return Reply(self.config_map)


def kube_on(store):
    api_client = kubernetes.client.ApiClient(kubernetes.client.Configuration())
    api_client.call_api = store
    return KubeApi(api_client)


def config_map(data, record=None):
    annotations = {"owner": "team-a"}
    if record is not None:
        annotations[RESTORE_ANNOTATION] = json.dumps(record)
    return {
        "metadata": {"name": "profiles", "namespace": NAMESPACE, "resourceVersion": "10", "annotations": annotations},
        "data": data,
    }


OPERATOR = OperatorInstall({"metadata": {"name": "cluster-policy"}}, NAMESPACE, None)


def set_key(kube, key, text):
    """Read the ConfigMap and plan setting ``key`` (what a sharing plan does), recording its value before."""
    current = kube.get_config_map(namespace=NAMESPACE, name="profiles")
    plan = ObjectWrites("profiles")
    plan.config_map_patch = recorded(
        current, {"data": {key: text}}, "data", {key: (current.get("data") or {}).get(key)}
    )
    return Planned(OPERATOR, plan)


def test_a_record_change_is_made_on_the_version_read_and_a_kept_record_is_not():
    first = recorded(config_map({}), {"data": {"a": "1"}}, "data", {"a": None})
    assert first["metadata"]["resourceVersion"] == "10"
    # Already recorded: no annotation, and no precondition (other writers' changes cannot be lost by it).
    again = recorded(config_map({"a": "1"}, {"data": {"a": None}}), {"data": {"a": "2"}}, "data", {"a": "1"})
    assert again == {"data": {"a": "2"}}
    assert restore_patch(config_map({"a": "1"}, {"data": {"a": None}}))["metadata"]["resourceVersion"] == "10"


def test_the_device_plugin_pair_is_always_made_on_the_version_read():
    policy = {
        "metadata": {
            "name": "p",
            "resourceVersion": "7",
            "annotations": {RESTORE_ANNOTATION: json.dumps({"spec": {"devicePlugin.config": None}})},
        },
        "spec": {},
    }
    patch = device_plugin_config_patch(policy, "profiles", "ts-4")
    assert patch["metadata"] == {"resourceVersion": "7"}  # record kept, but the pair is written whole


def test_a_conflict_is_read_and_planned_again_and_keeps_the_other_writers_record():
    # Run "a" planned from version 10 (no record); meanwhile run "b" wrote its key and its record.
    store = Store(config_map({"user": "kept"}))
    kube = kube_on(store)
    planned = set_key(kube, "a", "A")

    def other_run(store):
        if len(store.patches) == 1:
            store.write({"b": "B"}, {RESTORE_ANNOTATION: json.dumps({"data": {"b": None}})})

    store.meddle = other_run
    written = write_replanning(kube, planned, lambda: set_key(kube, "a", "A"), pause=0).plan

    assert store.conflicts == 1 and written.conflicts == 1
    assert store.config_map["data"] == {"user": "kept", "a": "A", "b": "B"}
    assert read_record(store.config_map) == {"data": {"a": None, "b": None}}  # neither run's record lost
    assert store.config_map["metadata"]["annotations"]["owner"] == "team-a"


def test_a_record_already_written_by_the_other_run_is_kept_as_the_value_before():
    # Both runs set the same key; "b" got there first, so "a"'s re-plan keeps b's record (the seeded value).
    store = Store(config_map({"k": "seed"}))
    kube = kube_on(store)
    planned = set_key(kube, "k", "A")

    def other_run(store):
        if len(store.patches) == 1:
            store.write({"k": "B"}, {RESTORE_ANNOTATION: json.dumps({"data": {"k": "seed"}})})

    store.meddle = other_run
    write_replanning(kube, planned, lambda: set_key(kube, "k", "A"), pause=0)
    assert store.config_map["data"]["k"] == "A"  # the last writer's intent
    assert read_record(store.config_map) == {"data": {"k": "seed"}}  # not "B": the value before any run
    assert "metadata" not in store.patches[-1] or "annotations" not in store.patches[-1]["metadata"]


def test_conflicts_that_never_settle_give_up_with_a_message():
    store = Store(config_map({}))

    def always(store):
        store.write({"other": str(len(store.patches))})

    store.meddle = always
    kube = kube_on(store)
    planned = set_key(kube, "a", "A")
    with pytest.raises(GpuShareError) as caught:
        write_replanning(kube, planned, lambda: set_key(kube, "a", "A"), attempts=3, pause=0)
    assert caught.value.status == 409
    assert "each of 3 attempts, read and planned afresh, met a conflict (409)" in caught.value.msg
    assert "patch ConfigMap gpu-operator/profiles" in caught.value.msg
    assert len(store.patches) == 3


def test_other_failures_are_not_replanned():
    store = Store(config_map({}))
    kube = kube_on(store)
    planned = set_key(kube, "a", "A")

    def refuse(store):
        exc = ApiException(status=422, reason="Invalid")
        exc.body = json.dumps({"kind": "Status", "code": 422, "message": "invalid"})
        exc.headers = {}
        raise exc

    store.meddle = refuse
    replans = []
    with pytest.raises(GpuShareError) as caught:
        write_replanning(kube, planned, lambda: replans.append(1) or set_key(kube, "a", "A"), pause=0)
    assert caught.value.status == 422 and replans == [] and len(store.patches) == 1
    assert copy.deepcopy(store.config_map)["data"] == {}


def test_a_node_relabelled_after_this_tasks_write_is_not_waited_for():
    from ansible_collections.gpushare.k8s.plugins.module_utils.run.sharing import _unless_relabelled

    label = "nvidia.com/device-plugin.config"

    def node(version, value):
        return {"metadata": {"name": "n", "resourceVersion": str(version), "labels": {label: value}}}

    superseded = set()
    check = _unless_relabelled(lambda node: "not yet", "mine", "20", superseded, "n")
    # The watch replays what happened since the planning read: another run's label before this task's write
    # (version 15 < 20) is not a later writer's, so the task still waits.
    assert check(node(15, "theirs")) == "not yet" and superseded == set()
    assert check(node(20, "mine")) == "not yet"
    # Relabelled after this task's write: the later writer's profile stands, the node is no longer waited for.
    assert check(node(31, "theirs")) is None and superseded == {"n"}
    # A version that is not a number never counts as later.
    assert _unless_relabelled(lambda node: "not yet", "mine", "x", set(), "n")(node(31, "theirs")) == "not yet"
