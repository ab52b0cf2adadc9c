"""KubeApi's own promises against the real API server, through the fault-injecting proxy where the path must fail
(fault_proxy.py): what a watch asks for, how each way a watch start or stream fails comes out, which calls are
retried, and what reads and writes send. test_api_resilience.py holds the cases the waits build on (a list retried
after throttling and resets, a watch cut mid-stream, an expired watch, writes with an unknown outcome); the pure
retry rules are unit-tested in tests/unit/plugins/module_utils/kube/test_retry.py.

Nothing here asserts on wall-clock time: the proxy records what it saw and did, ``Sleeps`` the waits asked for, and
the audit log what reached the API server.
"""

import time
import uuid

import pytest
from fault_proxy import Fault, kube_api, node_list, node_patch, node_watch
from integration_helpers import ONE_PROFILE, labels
from kubernetes import client
from workloads import guarded_gpu_pod

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError, OutcomeUnknown, WatchDropped
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import OperatorInstall
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import write_plan

pytestmark = ONE_PROFILE  # the client against the API server: no platform difference

LABEL = "kube-api.gpushare.k8s/mark"
NOBODY = "gpushare-nobody"  # testbed/cluster.py's identity with no rights


def path_is(path):
    return lambda request: request.path == path


def pods_watch(request):
    return request.path == "/api/v1/pods" and request.watch


def listed_version(api):
    return api.list_nodes().resource_version


def marked_since(kube, api):
    """A resourceVersion from before a change to a node: a watch from it starts with that change."""
    resource_version = listed_version(api)
    kube.label_node(kube.gpu_nodes()[0], {LABEL: uuid.uuid4().hex[:12]})
    return resource_version


# --- watches ---------------------------------------------------------------------------------


def test_a_watch_asks_for_a_bounded_stream_never_longer_than_max_watch_seconds(cluster, kube, proxy):
    api = kube_api(cluster, proxy.url, max_watch_seconds=2)
    resource_version = marked_since(kube, api)

    events = list(api.watch_nodes(resource_version, 900))

    assert ("MODIFIED", kube.gpu_nodes()[0]) in [(kind, obj["metadata"].get("name")) for kind, obj in events]
    [request] = proxy.requests(node_watch)
    assert request.query == {
        "watch": "true",
        "resourceVersion": resource_version,
        "timeoutSeconds": "2",
        "allowWatchBookmarks": "true",
    }


def test_a_watch_start_answered_410_is_not_retried(cluster, proxy):
    proxy.add(Fault(node_watch, "status", status=410, message="too old resource version: 100 (5000)"))
    api = kube_api(cluster, proxy.url)

    with pytest.raises(GpuShareError) as error:
        list(api.watch_nodes("100", 60))

    assert len(proxy.requests(node_watch)) == 1 and api.retry_policy.sleep.asked == []
    assert error.value.status == 410 and not isinstance(error.value, WatchDropped)
    assert error.value.msg == "Failed to watch nodes: too old resource version: 100 (5000) (HTTP 410)"


def test_a_watch_start_is_retried_like_a_read(cluster, kube, proxy):
    proxy.add(Fault(node_watch, "status", status=503, message="unavailable"), Fault(node_watch, "reset-before"))
    # The starts' retries must end within the watch's length (its deadline): a length of 30 s keeps the backoff's
    # second sleep whole however slowly the failed starts are answered (with 1 s, a loaded machine's 0.65 s for the
    # two of them left 0.35 s, and the sleep was cut to that). The test stops reading at the first event.
    api = kube_api(cluster, proxy.url, max_watch_seconds=30, random=lambda: 0.0)
    resource_version = marked_since(kube, api)

    watch = api.watch_nodes(resource_version, 60)
    assert next(watch)  # the change, after the two failed starts
    watch.close()

    watches = proxy.requests(node_watch)
    assert [request.action for request in watches] == ["status", "reset-before", "forward"]
    assert [request.query["resourceVersion"] for request in watches] == [resource_version] * 3
    assert api.retry_policy.sleep.asked == [0.25, 0.5]


def test_a_watch_start_gives_up_within_the_watch_length(cluster, proxy):
    proxy.add(Fault(node_watch, "status", times=None, status=503, message="unavailable"))
    api = kube_api(cluster, proxy.url)

    with pytest.raises(GpuShareError) as error:
        list(api.watch_nodes("100", 2))

    assert error.value.status == 503 and "Gave up after" in error.value.msg
    assert sum(api.retry_policy.sleep.asked) <= 2


def test_a_stream_that_ends_before_its_time_is_a_watch_dropped(cluster, proxy):
    proxy.add(Fault(node_watch, "end-after-head"))
    api = kube_api(cluster, proxy.url)

    with pytest.raises(WatchDropped) as error:
        list(api.watch_nodes(listed_version(api), 60))

    assert error.value.msg.startswith("Failed to watch nodes: the watch stream ended after ")
    assert error.value.msg.endswith("s of the 60s asked")


@pytest.mark.parametrize("code", [429, 500, 503, 504])
def test_an_error_event_with_a_transient_code_is_a_watch_dropped(cluster, proxy, code):
    proxy.add(Fault(node_watch, "error-event", status=code, message="etcd leader changed"))
    api = kube_api(cluster, proxy.url)

    with pytest.raises(WatchDropped) as error:
        list(api.watch_nodes(listed_version(api), 60))

    assert error.value.status == code
    assert error.value.msg == "Failed to watch nodes: etcd leader changed (HTTP %d)" % code


def test_other_error_events_are_plain_errors(cluster, proxy):
    proxy.add(Fault(node_watch, "error-event", status=403, message="no longer allowed"))
    api = kube_api(cluster, proxy.url)

    with pytest.raises(GpuShareError) as error:
        list(api.watch_nodes(listed_version(api), 60))

    assert not isinstance(error.value, WatchDropped) and error.value.status == 403


def test_a_watch_left_early_is_closed_and_the_client_stays_usable(cluster, kube, proxy):
    """The consumer stops after one event: the stream's connection ends then (the proxy's relay of it), not when the
    server ends the watch a minute later, and the next call on the same client reads its own answer. (KubeApi closes
    the stream before releasing it; with urllib3 2.8 the connection also ends without that close, so this cannot
    tell the two apart.)"""
    api = kube_api(cluster, proxy.url)
    events = api.watch_nodes(marked_since(kube, api), 60)
    assert next(events)[0] == "MODIFIED"
    [relay] = proxy.relays(node_watch)

    events.close()

    assert relay.ended.wait(10), "the watch's connection stayed open"
    items, _version = api.list_nodes()
    assert sorted(item["metadata"]["name"] for item in items) == sorted(kube.gpu_nodes() + kube.cpu_nodes())


def test_other_watches_name_their_objects(cluster, kube, proxy, namespace):
    proxy.add(Fault(pods_watch, "cut-after-head"))
    api = kube_api(cluster, proxy.url)
    _pods, resource_version = api.list_pods_on_node("gpu-a100-0")

    with pytest.raises(WatchDropped) as error:
        list(api.watch_pods_on_node("gpu-a100-0", resource_version, 60))

    assert error.value.msg.startswith("Failed to watch pods on node gpu-a100-0: the watch stream broke off: ")
    assert proxy.requests(pods_watch)[0].query["fieldSelector"] == "spec.nodeName=gpu-a100-0"

    nobody = kube_api(cluster, cluster.server(), who="nobody")
    with pytest.raises(GpuShareError) as error:
        list(nobody.watch_daemon_sets(namespace, "0", 60))
    assert error.value.status == 403
    assert error.value.msg.startswith("Failed to watch DaemonSets in %s: daemonsets.apps is forbidden" % namespace)


# --- reads and writes ------------------------------------------------------------------------


def test_a_patch_is_a_merge_patch_whose_null_deletes_a_label(cluster, kube, proxy):
    # Sent as JSON, not as the client's models, which would drop the None. (A write refused at connect is retried:
    # test_api_resilience.py.)
    name = kube.gpu_nodes()[0]
    kube.label_node(name, {LABEL: "set"})
    api = kube_api(cluster, proxy.url)

    patched = api.patch_node(name, {"metadata": {"labels": {LABEL: None}}})

    assert LABEL not in labels(patched) and LABEL not in labels(kube.node(name))
    assert [request.method for request in proxy.requests(node_patch)] == ["PATCH"]


def test_an_eviction_refused_by_a_budget_is_not_retried(cluster, api_client, proxy, namespace):
    guarded_gpu_pod(api_client, "gpu-a100-0", namespace)
    api = kube_api(cluster, proxy.url)

    with pytest.raises(GpuShareError) as error:
        api.evict_pod(namespace, "trainer", policy_api_version="policy/v1beta1")

    assert error.value.status == 429 and not isinstance(error.value, OutcomeUnknown)
    assert error.value.msg.startswith("Failed to evict pod %s/trainer: Cannot evict pod" % namespace)
    assert len(proxy.requests(lambda request: request.path.endswith("/eviction"))) == 1
    assert api.retry_policy.sleep.asked == []


def test_a_missing_object_reads_as_none_without_retries(cluster, kube, proxy):
    api = kube_api(cluster, proxy.url)
    path = "/api/v1/namespaces/%s/configmaps/no-such-config-map" % kube.namespace

    assert api.get_config_map(kube.namespace, "no-such-config-map") is None
    assert len(proxy.requests(path_is(path))) == 1


def test_a_name_is_one_escaped_path_segment(cluster, kube, proxy):
    # A name the API would refuse never reaches another object's path.
    api = kube_api(cluster, proxy.url)

    assert api.get_config_map(kube.namespace, "a/../b c") is None

    [request] = proxy.seen
    assert request.path == "/api/v1/namespaces/%s/configmaps/a%%2F..%%2Fb%%20c" % kube.namespace


def test_a_custom_resource_the_server_does_not_serve_lists_as_empty(cluster, proxy):
    policies = path_is("/apis/nvidia.com/v1/clusterpolicies")
    proxy.add(Fault(policies, "status", status=404, message="the server could not find the requested resource"))
    api = kube_api(cluster, proxy.url)

    assert api.list_cluster_policies() == []
    assert len(proxy.requests(policies)) == 1


def test_may_asks_a_self_subject_access_review(cluster, kube, proxy):
    reviews = path_is("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    admin, nobody = kube_api(cluster, proxy.url), kube_api(cluster, proxy.url, who="nobody")

    assert admin.may("patch", "", "nodes") is True
    assert admin.may("create", "", "pods/eviction", kube.namespace) is True
    assert nobody.may("patch", "", "nodes") is False
    assert [request.method for request in proxy.requests(reviews)] == ["POST"] * 3
    assert proxy.requests(node_list) == [] and proxy.requests(node_patch) == []


def test_the_writer_refuses_before_any_write_what_the_identity_may_not_do(cluster, api_client, namespace, audit_writes):
    # The identity may create ConfigMaps in the namespace, and nothing else the plan needs.
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "config-maps"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "config-maps"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "config-maps"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": NOBODY}],
        },
    )
    plan = ObjectWrites()
    plan.config_map_create = {"time-slicing": "version: v1\n"}
    plan.policy_patch = {"spec": {"devicePlugin": {"config": {"name": "time-slicing-config"}}}}
    plan.node_patches = {"gpu-a100-0": {"metadata": {"labels": {"nvidia.com/device-plugin.config": "time-slicing"}}}}
    operator = OperatorInstall({"metadata": {"name": "cluster-policy"}}, namespace, None)
    api = kube_api(cluster, cluster.server(), who="nobody")
    # The authorizer reads RBAC objects from its informers, which nothing can be watched for: ask it until it answers
    # as the binding says (test_least_privilege.py does the same).
    deadline = time.monotonic() + 30
    while not api.may("create", "", "configmaps", namespace):
        assert time.monotonic() < deadline, "RBAC never granted the binding's right"
        time.sleep(0.1)  # polling the authorizer, bounded by the deadline

    with audit_writes() as audit:
        with pytest.raises(GpuShareError) as error:
            write_plan(api, operator, plan)

    assert error.value.status == 403
    assert error.value.msg.startswith("Nothing was written: the API server would refuse part of this change.")
    assert "lacks 'patch' on 'nodes'; bind the gpushare-sharing ClusterRole" in error.value.msg
    assert "lacks 'patch' on 'clusterpolicies.nvidia.com'" in error.value.msg
    assert "configmaps" not in error.value.msg
    assert audit.writes == []
