"""gpu_timeslicing against the local cluster, on every platform profile (issue 3, "Done when").

Each test starts from the freshly seeded profile. The simulator plays the GPU operator, the device
plugin and GPU Feature Discovery, so "the node shows N replicas" is what the cluster really reports.
"""

import pytest
import yaml
from integration_helpers import ONE_PROFILE, allocatable, labels

from testbed.simulator.names import MIG_STUCK_ANNOTATION

pytestmark = pytest.mark.profiles("openshift", "scaleway", "vks")

MODULE = "gpu_timeslicing"
CONFIG_MAP = "time-slicing-config"  # the platform default when the policy names none
KEY = "time-slicing"  # the default config_key
CONFIG_LABEL = "nvidia.com/device-plugin.config"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
# A label of each profile that selects GPU nodes and that sharing does not change.
POOL_SELECTORS = {
    "openshift": "cluster-api/accelerator=tesla-t4",
    "scaleway": "k8s.scaleway.com/pool-name=gpu-h100",
    "vks": "nvidia.com/gpu.machine=OpenStack-Nova",
}
MPS_CONFIG = yaml.safe_dump(
    {"version": "v1", "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}
)


def time_slicing_text(replicas, resource="nvidia.com/gpu"):
    return yaml.safe_dump(
        {"version": "v1", "sharing": {"timeSlicing": {"resources": [{"name": resource, "replicas": replicas}]}}}
    )


def gpu_count(node):
    return int(labels(node)["nvidia.com/gpu.count"])


def shares(replicas, renamed=False):
    """Predicate: a node advertises ``replicas`` time-sliced replicas of each of its GPUs."""

    def check(node):
        node_labels = labels(node)
        resource = "nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu"
        if replicas == 1:
            return node_labels.get("nvidia.com/gpu.replicas") == "1" and allocatable(node) == gpu_count(node)
        return (
            node_labels.get("nvidia.com/gpu.replicas") == str(replicas)
            and node_labels.get("nvidia.com/gpu.sharing-strategy") == "time-slicing"
            and allocatable(node, resource) == gpu_count(node) * replicas
        )

    return check


def assert_ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])


def restarted_at(kube):
    return ((kube.device_plugin()["spec"]["template"]["metadata"]).get("annotations") or {}).get(RESTARTED_AT)


def mig_layout_for(kube, node):
    """A shipped mig-parted config that puts every GPU of ``node`` into MIG mode (1g profiles)."""
    from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import find_gpu_model

    node_labels = labels(kube.node(node))
    model = find_gpu_model(node_labels["nvidia.com/gpu.product"], int(node_labels["nvidia.com/gpu.memory"]))
    profile = next(name for name in sorted(model.profiles) if name.startswith("1g.") and "+" not in name)
    return "all-" + profile, profile


def mig_capable_node_or_skip(kube):
    nodes = kube.mig_capable_nodes()
    if not nodes:
        pytest.skip(
            "the %s fleet has no MIG-capable GPU (%s)"
            % (kube.profile.name, ", ".join(sorted({p.product for p in kube.profile.gpu_pools})))
        )
    return nodes[0]


# --- idempotence, check mode, diff -----------------------------------------------------------


def test_first_run_changes_and_second_run_changes_nothing(kube, run_module, audit_writes):
    targets = kube.first_of_each_pool()
    others = [name for name in kube.gpu_nodes() if name not in targets]
    args = dict(replicas=4, nodes=dict(names=targets))
    policy_spec = kube.policy()["spec"]

    first = run_module(MODULE, args)

    assert_ok(first)
    assert first["changed"] is True
    assert (first["cluster_policy"], first["namespace"], first["config_map"], first["config_key"]) == (
        kube.profile.policy_name,
        kube.namespace,
        CONFIG_MAP,
        KEY,
    )
    assert first["restarted"] is False, "labelling a node makes the plugin read its config: no restart needed"
    for name in targets:
        node = kube.node(name)
        count = gpu_count(node)
        assert first["nodes"][name]["before"]["replicas"] == 1
        assert first["nodes"][name]["after"] == dict(
            first["nodes"][name]["after"],
            replicas=4,
            sharing_strategy="time-slicing",
            device_plugin_config=KEY,
            allocatable={"nvidia.com/gpu": count * 4},
        )
        assert first["nodes"][name]["after"]["product"].endswith("-SHARED")
        assert labels(node)[CONFIG_LABEL] == KEY and shares(4)(node)
    for name in others:
        assert CONFIG_LABEL not in labels(kube.node(name))
    assert (
        yaml.safe_load(kube.config_map(CONFIG_MAP)["data"][KEY])
        == first["config"]
        == {
            "version": "v1",
            "sharing": {
                "timeSlicing": {"renameByDefault": False, "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
            },
        }
    )
    policy_spec["devicePlugin"]["config"] = {"name": CONFIG_MAP}
    assert kube.policy()["spec"] == policy_spec, "only spec.devicePlugin.config changes"

    with audit_writes() as audit:
        second = run_module(MODULE, args)

    assert_ok(second)
    assert second["changed"] is False and second["restarted"] is False
    assert audit.writes == []
    assert audit.requests, "the second run must still have read the cluster"


@pytest.mark.parametrize("diff", [False, True], ids=["check", "check-diff"])
def test_check_mode_makes_no_write(kube, run_module, audit_writes, diff):
    target = kube.gpu_nodes()[0]

    with audit_writes() as audit:
        result = run_module(MODULE, dict(replicas=4, nodes=dict(names=[target])), check=True, diff=diff)

    assert_ok(result)
    assert result["changed"] is True
    assert audit.writes == []
    assert kube.config_map(CONFIG_MAP) is None
    assert CONFIG_LABEL not in labels(kube.node(target))
    assert "after" not in result["nodes"][target], "nothing was applied, so nothing was waited for"
    if diff:
        assert result["diff"]["before"]["config_map"] == {KEY: None}
        assert yaml.safe_load(result["diff"]["after"]["config_map"][KEY])["sharing"]["timeSlicing"]["resources"] == [
            {"name": "nvidia.com/gpu", "replicas": 4}
        ]
        assert result["diff"]["before"]["nodes"] == {target: {CONFIG_LABEL: None}}
        assert result["diff"]["after"]["nodes"] == {target: {CONFIG_LABEL: KEY}}
        assert result["diff"]["after"]["cluster_policy"] == {
            "devicePlugin.config": {"name": CONFIG_MAP, "default": None}
        }
    else:
        assert "diff" not in result


@ONE_PROFILE
def test_check_diff_of_a_change_to_an_applied_profile_makes_no_write(kube, run_module, audit_writes):
    target = kube.gpu_nodes()[0]
    assert_ok(run_module(MODULE, dict(replicas=4, nodes=dict(names=[target]))))
    stored = kube.config_map(CONFIG_MAP)["data"][KEY]

    with audit_writes() as audit:
        result = run_module(MODULE, dict(replicas=8, nodes=dict(names=[target])), check=True, diff=True)

    assert_ok(result)
    assert result["changed"] is True and result["restarted"] is True
    assert audit.writes == []
    assert result["diff"]["before"]["config_map"] == {KEY: stored}
    assert "replicas: 8" in result["diff"]["after"]["config_map"][KEY]
    assert kube.config_map(CONFIG_MAP)["data"][KEY] == stored
    assert restarted_at(kube) is None
    assert shares(4)(kube.node(target))


# --- what the module must leave alone --------------------------------------------------------


def test_user_configmap_keys_and_policy_fields_survive(kube, run_module):
    user_data = {"user-profile": time_slicing_text(2), "unshared": "version: v1\n# kept byte for byte\n"}
    kube.put_config_map(CONFIG_MAP, user_data)
    kube.patch_policy(
        {
            "devicePlugin": {
                "config": {"name": CONFIG_MAP, "default": "user-profile"},
                "version": "v0.17.0",
                "env": [{"name": "PASS_DEVICE_SPECS", "value": "true"}],
            },
            "dcgmExporter": {"config": {"name": "custom-dcgm-metrics"}},
        }
    )
    policy_before = kube.policy()["spec"]
    target, bystander = kube.gpu_nodes()[0], kube.gpu_nodes()[-1]

    present = run_module(MODULE, dict(replicas=4, nodes=dict(names=[target])))

    assert_ok(present)
    data = kube.config_map(CONFIG_MAP)["data"]
    assert dict((key, data[key]) for key in user_data) == user_data
    assert set(data) == set(user_data) | {KEY}
    assert kube.policy()["spec"] == policy_before, "the policy already pointed at the ConfigMap: nothing to patch"
    assert shares(4)(kube.node(target))
    kube.wait_for_node(bystander, shares(2))  # still on the user's default profile

    absent = run_module(MODULE, dict(state="absent"))

    assert_ok(absent)
    assert absent["changed"] is True
    assert kube.config_map(CONFIG_MAP)["data"] == user_data
    assert kube.policy()["spec"] == policy_before
    assert CONFIG_LABEL not in labels(kube.node(target))
    assert absent["nodes"][target]["after"]["replicas"] == 2, "the node falls back to the policy's default profile"


@ONE_PROFILE
def test_a_policy_naming_another_configmap_gets_the_key_there(kube, run_module):
    kube.put_config_map("device-plugin-config", {"existing": time_slicing_text(2)})
    kube.patch_policy({"devicePlugin": {"config": {"name": "device-plugin-config"}}})
    target = kube.gpu_nodes()[0]

    result = run_module(MODULE, dict(replicas=3, config_key="three", nodes=dict(names=[target])))

    assert_ok(result)
    assert result["config_map"] == "device-plugin-config"
    assert set(kube.config_map("device-plugin-config")["data"]) == {"existing", "three"}
    assert kube.config_map(CONFIG_MAP) is None
    assert shares(3)(kube.node(target))


# --- connecting ------------------------------------------------------------------------------


@ONE_PROFILE
def test_awx_bearer_token_credential_without_kubeconfig(kube, run_module, awx_env):
    target = kube.gpu_nodes()[0]

    result = run_module(MODULE, dict(replicas=2, nodes=dict(names=[target])), env=awx_env())

    assert_ok(result)
    assert result["changed"] is True
    assert shares(2)(kube.node(target))


@ONE_PROFILE
def test_a_user_without_rights_gets_the_api_status(kube, run_module, awx_env, audit_writes):
    with audit_writes() as audit:
        result = run_module(MODULE, dict(replicas=2, nodes=dict(names=[kube.gpu_nodes()[0]])), env=awx_env("nobody"))

    assert result["failed"] is True
    assert result["status"] == 403 and result["reason"] == "Forbidden"
    assert "forbidden" in result["msg"] and "gpushare-nobody" in result["msg"] and "HTTP 403" in result["msg"]
    assert audit.writes == []


# --- refused input: a clear message and not one write ----------------------------------------


def _mps_key(kube):
    kube.put_config_map(CONFIG_MAP, {"shared": MPS_CONFIG})
    kube.patch_policy({"devicePlugin": {"config": {"name": CONFIG_MAP}}})
    return dict(replicas=4, config_key="shared", nodes=dict(names=[kube.gpu_nodes()[0]])), [
        "already holds a mps profile",
        "shared",
    ]


BAD_INPUT = {
    "replicas-below-2": lambda kube: (dict(replicas=1, nodes=dict(names=[kube.gpu_nodes()[0]])), ["replicas", ">= 2"]),
    # The device plugin refuses a '+' in a resource name (a well-formed unknown name it would ignore: a warning).
    "bad-resource-name": lambda kube: (
        dict(replicas=4, resources=["nvidia.com/mig-1g.10gb+me"], nodes=dict(names=[kube.gpu_nodes()[0]])),
        ["nvidia.com/mig-1g.10gb+me", "incorrect format for resource name", "nvidia.com/mig-1g.10gb.me"],
    ),
    "key-holding-mps": _mps_key,
    "selector-matching-nothing": lambda kube: (
        dict(replicas=4, nodes=dict(selector="gpushare.example/pool=missing")),
        ["gpushare.example/pool=missing", "matches no node"],
    ),
    "names-matching-nothing": lambda kube: (
        dict(replicas=4, nodes=dict(names=["gpu-missing-0"])),
        ["gpu-missing-0", "not found"],
    ),
    "cpu-only-node": lambda kube: (
        dict(replicas=4, nodes=dict(names=[kube.cpu_nodes()[0]])),
        [kube.cpu_nodes()[0], "no NVIDIA GPU"],
    ),
    "no-node-chosen": lambda kube: (dict(replicas=4), ["nodes.names", "make_default"]),
}


@ONE_PROFILE
@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_refused_before_any_write(kube, run_module, audit_writes, case):
    args, words = BAD_INPUT[case](kube)
    config_map = kube.config_map(CONFIG_MAP)

    with audit_writes() as audit:
        result = run_module(MODULE, args)

    assert result["failed"] is True
    for word in words:
        assert word in result["msg"]
    assert audit.writes == []
    assert kube.config_map(CONFIG_MAP) == config_map


def test_a_node_in_mig_mode_is_refused_for_nvidia_com_gpu(kube, run_module, audit_writes):
    node = mig_capable_node_or_skip(kube)
    layout, _profile = mig_layout_for(kube, node)
    kube.label_node(node, {"nvidia.com/mig.config": layout})
    kube.wait_for_node(
        node,
        lambda n: labels(n).get("nvidia.com/mig.config.state") == "success"
        and "-MIG-" in labels(n)["nvidia.com/gpu.product"],
    )

    with audit_writes() as audit:
        result = run_module(MODULE, dict(replicas=2, nodes=dict(names=[node, kube.gpu_nodes()[-1]])))

    assert result["failed"] is True
    assert "node %s has its GPUs in MIG mode" % node in result["msg"]
    assert "nvidia.com/mig-<profile>" in result["msg"]
    assert audit.writes == []


@pytest.mark.profiles("openshift")
def test_counts_in_the_thousands_are_waited_for(kube, run_module):
    """The API server writes 1,000 x N advertised devices as "Nk"; the wait must read it, not time out."""
    node = kube.gpu_nodes()[0]
    result = run_module(MODULE, dict(replicas=1000, nodes=dict(names=[node]), wait_timeout=120))
    assert not result["failed"], result["msg"]
    gpus = int(labels(kube.node(node))["nvidia.com/gpu.count"])
    assert kube.node(node)["status"]["allocatable"]["nvidia.com/gpu"] == "%dk" % gpus
    assert result["nodes"][node]["after"]["allocatable"]["nvidia.com/gpu"] == 1000 * gpus


# --- options ---------------------------------------------------------------------------------


def test_nodes_by_selector(kube, run_module):
    selector = POOL_SELECTORS[kube.profile.name]
    key, value = selector.split("=")
    chosen = [name for name in kube.gpu_nodes() if labels(kube.node(name)).get(key) == value]

    first = run_module(MODULE, dict(replicas=2, nodes=dict(selector=selector)))
    second = run_module(MODULE, dict(replicas=2, nodes=dict(selector=selector)))

    assert_ok(first)
    assert sorted(first["nodes"]) == sorted(chosen)
    for name in chosen:
        assert shares(2)(kube.node(name))
    assert_ok(second)
    assert second["changed"] is False


@ONE_PROFILE
def test_rename_by_default_advertises_nvidia_com_gpu_shared(kube, run_module):
    target = kube.gpu_nodes()[0]

    result = run_module(
        MODULE, dict(replicas=3, rename_by_default=True, config_key="renamed", nodes=dict(names=[target]))
    )

    assert_ok(result)
    node = kube.node(target)
    count = gpu_count(node)
    assert shares(3, renamed=True)(node)
    assert result["nodes"][target]["after"]["allocatable"]["nvidia.com/gpu.shared"] == count * 3
    assert not labels(node)["nvidia.com/gpu.product"].endswith("-SHARED"), "renamed resources keep the product name"
    assert allocatable(node) == 0


def test_make_default_shares_every_gpu_node_and_absent_undoes_it(kube, run_module, audit_writes):
    args = dict(replicas=2, config_key="shared-by-2", make_default=True)

    first = run_module(MODULE, args)

    assert_ok(first)
    assert first["changed"] is True and first["restarted"] is False
    assert sorted(first["nodes"]) == sorted(kube.gpu_nodes())
    for name in kube.gpu_nodes():
        node = kube.node(name)
        assert shares(2)(node) and CONFIG_LABEL not in labels(node), "make_default labels no node"
    for name in kube.cpu_nodes():
        assert "nvidia.com/gpu" not in kube.node(name)["status"]["allocatable"]
    assert kube.policy()["spec"]["devicePlugin"]["config"] == {"name": CONFIG_MAP, "default": "shared-by-2"}

    with audit_writes() as audit:
        second = run_module(MODULE, args)
    assert_ok(second)
    assert second["changed"] is False and audit.writes == []

    absent = run_module(MODULE, dict(state="absent", config_key="shared-by-2"))

    assert_ok(absent)
    assert absent["changed"] is True
    assert kube.policy()["spec"]["devicePlugin"]["config"] == {"name": CONFIG_MAP}
    assert "shared-by-2" not in (kube.config_map(CONFIG_MAP).get("data") or {})
    for name in kube.gpu_nodes():
        assert shares(1)(kube.node(name)), name
        assert absent["nodes"][name]["after"]["sharing_strategy"] == "none"


@ONE_PROFILE
def test_absent_for_some_nodes_keeps_the_profile_for_the_others(kube, run_module, audit_writes):
    first, second = kube.gpu_nodes()[:2]
    assert_ok(run_module(MODULE, dict(replicas=4, nodes=dict(names=[first, second]))))

    some = run_module(MODULE, dict(state="absent", nodes=dict(names=[first])))

    assert_ok(some)
    assert some["changed"] is True
    assert CONFIG_LABEL not in labels(kube.node(first)) and shares(1)(kube.node(first))
    assert labels(kube.node(second))[CONFIG_LABEL] == KEY and shares(4)(kube.node(second))
    assert KEY in kube.config_map(CONFIG_MAP)["data"]

    with audit_writes() as audit:
        preview = run_module(MODULE, dict(state="absent"), check=True, diff=True)
    assert_ok(preview)
    assert preview["changed"] is True and audit.writes == []
    assert preview["diff"]["after"]["config_map"] == {KEY: None} and preview["diff"]["after"]["nodes"] == {
        second: {CONFIG_LABEL: None}
    }

    everywhere = run_module(MODULE, dict(state="absent"))
    assert_ok(everywhere)
    assert shares(1)(kube.node(second)) and KEY not in (kube.config_map(CONFIG_MAP).get("data") or {})

    with audit_writes() as audit:
        again = run_module(MODULE, dict(state="absent"))
    assert_ok(again)
    assert again["changed"] is False and audit.writes == []


@ONE_PROFILE
def test_restart_only_when_a_node_already_on_the_key_needs_new_content(kube, run_module):
    first, second = kube.gpu_nodes()[:2]

    one = run_module(MODULE, dict(replicas=4, nodes=dict(names=[first])))
    assert_ok(one)
    assert one["restarted"] is False and restarted_at(kube) is None

    two = run_module(MODULE, dict(replicas=4, nodes=dict(names=[first, second])))
    assert_ok(two)
    assert two["changed"] is True and two["restarted"] is False and restarted_at(kube) is None
    assert shares(4)(kube.node(second))

    three = run_module(MODULE, dict(replicas=8, nodes=dict(names=[first, second])))
    assert_ok(three)
    assert three["restarted"] is True
    stamp = restarted_at(kube)
    assert stamp is not None
    assert shares(8)(kube.node(first)) and shares(8)(kube.node(second))

    four = run_module(MODULE, dict(replicas=8, nodes=dict(names=[first, second])))
    assert_ok(four)
    assert four["changed"] is False and four["restarted"] is False and restarted_at(kube) == stamp


@ONE_PROFILE
def test_new_content_reaches_nodes_already_on_the_key_outside_the_target_list(kube, run_module):
    """Pool A shares by 4 under a key; a later run gives the key 8 replicas for pool B. The
    ConfigMap key is shared, so pool A must be restarted onto the new content too, not left
    advertising 4 while its profile says 8."""
    pool_a, pool_b = kube.first_of_each_pool()[:2] if len(kube.first_of_each_pool()) > 1 else kube.gpu_nodes()[:2]
    assert_ok(run_module(MODULE, dict(replicas=4, nodes=dict(names=[pool_a]))))

    result = run_module(MODULE, dict(replicas=8, nodes=dict(names=[pool_b])))

    assert_ok(result)
    assert result["restarted"] is True, "pool A uses the key whose content changed"
    assert shares(8)(kube.node(pool_b))
    kube.wait_for_node(pool_a, shares(8), timeout=30)


@pytest.mark.profiles("openshift")  # planner behaviour, the same on every platform
def test_content_staged_without_restart_is_applied_by_the_next_run(kube, run_module):
    target = kube.gpu_nodes()[0]
    assert_ok(run_module(MODULE, dict(replicas=2, nodes=dict(names=[target]))))

    staged = run_module(
        MODULE, dict(replicas=3, nodes=dict(names=[target]), restart_device_plugin=False, wait_timeout=8)
    )

    assert_ok(staged)
    assert staged["changed"] is True and staged["restarted"] is False
    assert shares(2)(kube.node(target)), "no restart: the plugin keeps the content it read"
    assert any(target in warning for warning in staged.get("warnings", [])), "say which nodes keep the old content"

    applied = run_module(MODULE, dict(replicas=3, nodes=dict(names=[target]), wait_timeout=8))

    assert_ok(applied)
    assert applied["restarted"] is True, "the node on the key still shows the old content"
    assert shares(3)(kube.node(target))


@ONE_PROFILE
def test_new_content_for_the_default_profile_restarts_the_plugin(kube, run_module):
    assert_ok(run_module(MODULE, dict(replicas=2, config_key="default-profile", make_default=True)))

    changed = run_module(MODULE, dict(replicas=3, config_key="default-profile", make_default=True))

    assert_ok(changed)
    assert changed["restarted"] is True and restarted_at(kube) is not None
    for name in kube.gpu_nodes():
        assert shares(3)(kube.node(name)), name


def test_mixed_mig_resources_can_be_time_sliced(kube, run_module):
    node = mig_capable_node_or_skip(kube)
    layout, profile = mig_layout_for(kube, node)
    resource = "nvidia.com/mig-" + profile
    kube.patch_policy({"mig": {"strategy": "mixed"}})
    kube.label_node(node, {"nvidia.com/mig.config": layout})
    mig_node = kube.wait_for_node(
        node, lambda n: labels(n).get("nvidia.com/mig.config.state") == "success" and allocatable(n, resource) > 0
    )
    instances = allocatable(mig_node, resource)

    result = run_module(MODULE, dict(replicas=2, resources=[resource], config_key="mig-x2", nodes=dict(names=[node])))

    assert_ok(result)
    after = kube.node(node)
    assert allocatable(after, resource) == instances * 2
    assert labels(after)["%s.replicas" % resource] == "2"


# --- waiting ---------------------------------------------------------------------------------


@ONE_PROFILE
def test_wait_timeout_says_what_each_node_still_shows(kube, run_module):
    """A MIG change stuck in ``pending`` keeps the device plugin paused on the node (gpu-operator
    #2833), so it never applies the profile; the other node does."""
    stuck = mig_capable_node_or_skip(kube)
    healthy = next(name for name in kube.gpu_nodes() if name != stuck)
    kube.annotate_node(stuck, {MIG_STUCK_ANNOTATION: "true"})
    kube.label_node(stuck, {"nvidia.com/mig.config": mig_layout_for(kube, stuck)[0]})
    kube.wait_for_node(stuck, lambda n: labels(n).get("nvidia.com/mig.config.state") == "pending")

    result = run_module(MODULE, dict(replicas=4, nodes=dict(names=[stuck, healthy]), wait_timeout=5))

    assert result["failed"] is True
    assert result["msg"].startswith("Timed out after 5s")
    assert "1 node(s) not there yet" in result["msg"]
    assert "%s: nvidia.com/gpu.replicas=1 (want 4)" % stuck in result["msg"]
    assert healthy not in result["msg"]
    assert sorted(result["details"]["unmet"]) == [stuck]
    assert shares(4)(kube.node(healthy))


@pytest.mark.profiles("scaleway")
def test_force_false_refuses_while_a_gpu_pod_runs_and_drain_makes_way(
    kube, run_module, api_client, namespace, audit_writes
):
    """Scaleway asks for no reconfiguration while GPU jobs run: force=false refuses (check mode too, no
    write), drain evicts the pod, changes the node and uncordons it."""
    from kubernetes import client
    from workloads import gpu_pod

    node = kube.gpu_nodes()[0]
    gpu_pod(api_client, node, namespace)
    args = {"replicas": 2, "nodes": {"names": [node]}, "force": False}
    with audit_writes() as audit:
        checked = run_module(MODULE, args, check=True)
        refused = run_module(MODULE, args)
    for result in (checked, refused):
        assert result["failed"] and namespace + "/trainer" in result["msg"] and "drain=true" in result["msg"]
    assert audit.writes == []
    drained = run_module(MODULE, dict(args, drain=True))
    assert drained["changed"] and drained["evicted"] == {node: [namespace + "/trainer"]}, drained["_stdout"]
    assert drained["cordoned"] == [node] and not kube.node(node)["spec"].get("unschedulable")
    assert client.CoreV1Api(api_client).list_namespaced_pod(namespace).items == []
    assert labels(kube.node(node))["nvidia.com/gpu.replicas"] == "2"
