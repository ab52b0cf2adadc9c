"""Faults in the middle of a change, on the real API server: gpu_timeslicing run through the fault-injecting
proxy of fault_proxy.py (``FaultProxy``), pointed at it by ``K8S_AUTH_HOST`` with the cluster's CA
(the proxy serves the API server's own certificate for 127.0.0.1).

The API server stops (the proxy resets every connection from a given request on, which is what a stopped API
server looks like to a client) between the ConfigMap write and the policy patch, between node labels, and
during the wait; node label patches fail; an update is answered 409; the watch drops. Each time the module
either recovers or fails with a message naming what it wrote and what not; then the same task, run again
without the fault, converges, and everything the user had set beforehand (other ConfigMap keys and
annotations, other ClusterPolicy fields, node labels and annotations) is byte for byte as it was, besides what
the module owns and what the cluster's own controllers and the simulated operator derive from it.
"""

import threading

import pytest
import yaml
from fault_proxy import Fault, FaultProxy, node_list, node_patch, node_watch
from integration_helpers import MERGE_PATCH, POLICY, allocatable, labels
from kubernetes import client

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION, read_record
from testbed.simulator.kube import discard

pytestmark = pytest.mark.profiles("openshift")

MODULE = "gpu_timeslicing"
KEY = "faulty"
EARLIER_KEY = "earlier"  # the profile some tests put the nodes on first (earlier_profile)
MODULE_KEYS = (KEY, EARLIER_KEY)
REPLICAS = 4
CONFIG_MAP = "time-slicing-config"
LABEL = "nvidia.com/device-plugin.config"

# What the module owns (its ConfigMap key, the policy's devicePlugin.config, the device-plugin label, the restore
# record) and what others derive from its change: the GFD and device plugin labels of the simulated operator,
# its bookkeeping annotations, and annotations Kubernetes' controllers rewrite on their own.
DERIVED_NODE_LABELS = (
    "nvidia.com/gpu.replicas",
    "nvidia.com/gpu.sharing-strategy",
    "nvidia.com/gpu.product",
    "nvidia.com/gfd.timestamp",
)
VOLATILE_METADATA = ("resourceVersion", "managedFields", "generation")
CONTROLLER_ANNOTATION_PREFIXES = ("sim.gpushare.k8s/", "node.alpha.kubernetes.io/")


# --- the user's own state, and what must survive ------------------------------------------------


def set_up_users_state(kube, nodes):
    """What a user had before the task: other profiles and an annotation on the ConfigMap, other fields and an
    annotation on the policy, labels and annotations on the nodes."""
    kube.put_config_map(
        CONFIG_MAP, {"users-own-key": "version: v1\n# kept by hand\n", "a100-x2": "version: v1\nsharing: {}\n"}
    )
    core = client.CoreV1Api(kube.api_client)
    discard(
        core.patch_namespaced_config_map,
        CONFIG_MAP,
        kube.namespace,
        {"metadata": {"annotations": {"example.com/owner": "team-a"}, "labels": {"team": "a"}}},
        _content_type=MERGE_PATCH,
    )
    kube.patch_policy({"devicePlugin": {"env": [{"name": "USERS_SETTING", "value": "kept"}]}})
    policy = kube.policy()
    kube.custom.patch_cluster_custom_object(
        POLICY["group"],
        POLICY["version"],
        POLICY["plural"],
        policy["metadata"]["name"],
        {"metadata": {"annotations": {"example.com/change-ticket": "CHG-1234"}}},
        _content_type=MERGE_PATCH,
    )
    for name in nodes:
        kube.label_node(name, {"example.com/rack": "r7"})
        kube.annotate_node(name, {"example.com/owner": "team-a"})


def users_view(kube, nodes):
    """Everything of the ConfigMap, the policy and the nodes but what the module owns or others derive."""
    config_map = kube.config_map(CONFIG_MAP)
    data = dict((key, value) for key, value in (config_map.get("data") or {}).items() if key not in MODULE_KEYS)
    policy = kube.policy()
    spec = yaml.safe_load(yaml.safe_dump(policy["spec"]))
    spec["devicePlugin"].pop("config", None)
    view = dict(
        config_map=(data, metadata_of(config_map)),
        policy=(spec, metadata_of(policy)),
    )
    for name in nodes:
        node = kube.node(name)
        node_labels = dict(
            (key, value) for key, value in labels(node).items() if key != LABEL and key not in DERIVED_NODE_LABELS
        )
        view[name] = (node_labels, metadata_of(node, labelled=False), node["spec"])
    return view


def metadata_of(obj, labelled=True):
    metadata = dict(
        (key, value) for key, value in obj["metadata"].items() if key not in VOLATILE_METADATA + ("annotations",)
    )
    if not labelled:
        metadata.pop("labels", None)
    metadata["annotations"] = dict(
        (key, value)
        for key, value in (obj["metadata"].get("annotations") or {}).items()
        if key != RESTORE_ANNOTATION and not key.startswith(CONTROLLER_ANNOTATION_PREFIXES)
    )
    return metadata


def assert_converged(kube, nodes, before, seeded_labels, seeded_policy_config):
    """The task's intent holds in full, nothing of the user's changed, and the records hold the seeded values."""
    config_map = kube.config_map(CONFIG_MAP)
    assert yaml.safe_load(config_map["data"][KEY])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == REPLICAS
    assert read_record(config_map) == {"data": dict((key, None) for key in MODULE_KEYS if key in config_map["data"])}
    policy = kube.policy()
    assert policy["spec"]["devicePlugin"]["config"]["name"] == CONFIG_MAP
    assert read_record(policy) == {"spec": {"devicePlugin.config": seeded_policy_config}}
    for name in nodes:
        node = kube.node(name)
        assert labels(node)[LABEL] == KEY, name
        assert allocatable(node) == int(labels(node)["nvidia.com/gpu.count"]) * REPLICAS, name
        assert read_record(node) == {"labels": {LABEL: seeded_labels[name]}}, name
    assert differences(before, users_view(kube, nodes)) == []


def differences(before, after, path=""):
    """The paths where ``after`` differs from ``before``, with both values."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after), key=str):
            found += differences(before.get(key), after.get(key), "%s/%s" % (path, key))
        return found
    if isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)) and len(before) == len(after):
        found = []
        for index, (one, other) in enumerate(zip(before, after)):
            found += differences(one, other, "%s[%d]" % (path, index))
        return found
    return [] if before == after else [(path, before, after)]


# --- the proxy's faults -------------------------------------------------------------------------


def policy_patch(request):
    return request.method == "PATCH" and request.path.startswith("/apis/nvidia.com/v1/clusterpolicies/")


def config_map_patch(request):
    return request.method == "PATCH" and request.path.endswith("/configmaps/" + CONFIG_MAP)


class StopsAt(object):
    """The API server stops at the first request ``match`` accepts after ``forward`` of them went through:
    that request and every later one (whatever it is) is reset, as a stopped server's would be."""

    def __init__(self, match, forward=0):
        self.match = match
        self.forward = forward
        self.stopped = False
        self.lock = threading.Lock()

    def __call__(self, request):
        with self.lock:
            if not self.stopped and self.match(request):
                if self.forward:
                    self.forward -= 1
                else:
                    self.stopped = True
            return self.stopped


@pytest.fixture
def proxy(cluster):
    proxy = FaultProxy(cluster, lifetime=600).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def setup(kube):
    nodes = kube.gpu_nodes()[:3]
    set_up_users_state(kube, nodes)
    seeded = dict(
        before=users_view(kube, nodes),
        seeded_labels=dict((name, labels(kube.node(name)).get(LABEL)) for name in nodes),
        seeded_policy_config=kube.policy()["spec"]["devicePlugin"].get("config"),
    )
    return nodes, seeded


def run_through(run_module, cluster, proxy, nodes, **extra):
    env = cluster.awx_env()
    env["K8S_AUTH_HOST"] = proxy.url
    args = dict(config_key=KEY, replicas=REPLICAS, nodes={"names": nodes}, wait_timeout=120)
    args.update(extra)
    return run_module(MODULE, args, env=env)


def earlier_profile(run_module, nodes):
    """The nodes on another profile of the collection already (the record made, the policy pointed at the
    ConfigMap): the change under test then patches each node without a precondition, so the simulated
    operator's own node updates cannot answer 409 to it (first-time record patches are the concurrency
    test's), and a fault is the only failure."""
    result = run_module(MODULE, dict(config_key=EARLIER_KEY, replicas=2, nodes={"names": nodes}, wait_timeout=120))
    assert result["changed"] and not result["failed"], result.get("msg")


def run_until_the_server_stops(run_module, cluster, proxy, nodes, match, forward=0):
    """Run the module while the API server stops at the first request ``match`` accepts (after ``forward`` of
    them); return the failure message."""
    stop = StopsAt(match, forward=forward)
    proxy.add(Fault(stop, "reset-before", times=None))
    failed = run_through(run_module, cluster, proxy, nodes)
    assert failed["failed"] and stop.stopped, failed.get("msg")
    return failed["msg"]


def run_again(run_module, nodes):
    result = run_module(MODULE, dict(config_key=KEY, replicas=REPLICAS, nodes={"names": nodes}, wait_timeout=120))
    assert not result["failed"], result["msg"]
    return result


# --- the faults ---------------------------------------------------------------------------------


def test_api_server_stops_between_the_config_map_write_and_the_policy_patch(cluster, kube, run_module, proxy, setup):
    nodes, seeded = setup
    msg = run_until_the_server_stops(run_module, cluster, proxy, nodes, policy_patch)
    assert "Failed to patch ClusterPolicy" in msg or "patch ClusterPolicy" in msg, msg
    assert "Written before the failure: patch ConfigMap %s/%s." % (kube.namespace, CONFIG_MAP) in msg, msg
    assert "Not written: label 3 node(s)" in msg, msg
    assert "run again" in msg
    # Half done, as the message says: the key is there, the policy and the nodes untouched.
    assert KEY in kube.config_map(CONFIG_MAP)["data"]
    assert (kube.policy()["spec"]["devicePlugin"].get("config") or {}).get("name") != CONFIG_MAP
    assert all(labels(kube.node(name)).get(LABEL) != KEY for name in nodes)

    assert run_again(run_module, nodes)["changed"]
    assert_converged(kube, nodes, **seeded)


def test_api_server_stops_between_node_labels(cluster, kube, run_module, proxy, setup):
    nodes, seeded = setup
    earlier_profile(run_module, nodes)
    msg = run_until_the_server_stops(run_module, cluster, proxy, nodes, node_patch, forward=1)
    labelled = [name for name in nodes if labels(kube.node(name)).get(LABEL) == KEY]
    unlabelled = [name for name in nodes if name not in labelled]
    assert len(labelled) == 1, labelled
    assert "Labelling node(s) %s failed" % ", ".join(unlabelled) in msg, msg
    assert "The other 1 of 3 node(s) were labelled." in msg, msg
    assert "Written before the failure: patch ConfigMap %s/%s." % (kube.namespace, CONFIG_MAP) in msg, msg

    assert run_again(run_module, nodes)["changed"]
    assert_converged(kube, nodes, **seeded)


def test_some_node_label_patches_fail(cluster, kube, run_module, proxy, setup):
    nodes, seeded = setup
    earlier_profile(run_module, nodes)
    broken = nodes[1]
    proxy.add(
        Fault(
            lambda request: node_patch(request) and request.path.endswith("/" + broken),
            "status",
            times=None,
            status=503,
            message="etcdserver: request timed out",
        )
    )

    failed = run_through(run_module, cluster, proxy, nodes)

    assert failed["failed"]
    msg = failed["msg"]
    assert "Labelling node(s) %s failed" % broken in msg and "etcdserver: request timed out" in msg, msg
    assert "The other 2 of 3 node(s) were labelled." in msg, msg
    assert [labels(kube.node(name)).get(LABEL) == KEY for name in nodes] == [True, False, True]

    assert run_again(run_module, nodes)["changed"]
    assert_converged(kube, nodes, **seeded)


def test_api_server_stops_during_the_wait(cluster, kube, run_module, proxy, setup):
    nodes, seeded = setup
    msg = run_until_the_server_stops(run_module, cluster, proxy, nodes, node_watch)
    assert "cannot reach the Kubernetes API" in msg or "Gave up" in msg, msg
    assert "Every write was made before waiting for profile 'faulty' (time-slicing) on 3 node(s)" in msg, msg
    # "label 3 node(s)", or "label 2 of 3 node(s), label 1 node(s)" when a node changed under a first-time record
    # patch (409) and the rest was planned again.
    written = "(patch ConfigMap %s/%s, patch ClusterPolicy %s, label " % (
        kube.namespace,
        CONFIG_MAP,
        kube.profile.policy_name,
    )
    assert written in msg, msg
    assert "running the task again waits again" in msg

    run_again(run_module, nodes)
    assert_converged(kube, nodes, **seeded)


@pytest.mark.parametrize("action", ["cut-after-head", "reset-after-head"])
def test_a_dropped_watch_is_resumed_and_the_run_succeeds(cluster, kube, run_module, proxy, setup, action):
    nodes, seeded = setup
    proxy.add(Fault(node_watch, action, times=2))

    result = run_through(run_module, cluster, proxy, nodes)

    assert not result["failed"], result["msg"]
    assert result["changed"]
    # The first watch dropped and the wait went on: it LISTed again, or (when the reset reached the client while the
    # watch was still starting) the start was retried from the same resourceVersion; either way nothing is missed.
    watches = proxy.requests(node_watch)
    assert watches[0].action == action
    after = proxy.seen[proxy.seen.index(watches[0]) + 1 :]
    assert any(node_list(request) or node_watch(request) for request in after), proxy.seen
    assert not run_again(run_module, nodes)["changed"]
    assert_converged(kube, nodes, **seeded)


def test_a_conflict_on_an_update_is_read_and_planned_again(cluster, kube, run_module, proxy, setup):
    nodes, seeded = setup
    proxy.add(Fault(config_map_patch, "status", times=1, status=409, message="the object has been modified"))

    result = run_through(run_module, cluster, proxy, nodes)

    assert not result["failed"], result["msg"]
    assert [request.action for request in proxy.requests(config_map_patch)] == ["status", "forward"]
    assert not run_again(run_module, nodes)["changed"]
    assert_converged(kube, nodes, **seeded)


def test_conflicts_that_never_settle_fail_naming_what_was_written(cluster, kube, run_module, proxy, setup):
    nodes, seeded = setup
    proxy.add(Fault(policy_patch, "status", times=None, status=409, message="the object has been modified"))

    failed = run_through(run_module, cluster, proxy, nodes)

    assert failed["failed"]
    msg = failed["msg"]
    attempts = len(proxy.requests(policy_patch))
    assert "each of %d attempts, read and planned afresh, met a conflict (409)" % attempts in msg, msg
    assert "Written by the attempts: patch ConfigMap %s/%s." % (kube.namespace, CONFIG_MAP) in msg, msg
    assert "Not written: label 3 node(s)" in msg, msg

    assert run_again(run_module, nodes)["changed"]
    assert_converged(kube, nodes, **seeded)
