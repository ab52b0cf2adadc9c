"""Least privilege (issue 12): every module family runs as a ServiceAccount bound to exactly the roles the
collection ships (roles/rbac/files/, applied by the gpushare.k8s.rbac role), check mode needs only the viewer
roles, and a role missing one verb makes the module fail naming that verb, its resource and the role granting it.

The ServiceAccounts live in ``default`` (the reset between tests deletes other namespaces) and authenticate with a
token from the TokenRequest API, passed as AWX passes it (K8S_AUTH_HOST, K8S_AUTH_API_KEY, K8S_AUTH_SSL_CA_CERT).
The rbac role runs through ``ansible-playbook``; the modules run through Ansible's module entry point, a family's
one after the other as the tasks of one play, with the account's credential in their environment."""

import copy
import os
import time
import uuid

import pytest
import yaml
from integration_helpers import (
    REPO,
    WRITE_VERBS,
    describe,
    is_write,
    run_module_in_process,
    run_plays,
    wait_for_object,
)
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from workloads import fresh_namespace, gpu_pod

from testbed import seed

pytestmark = pytest.mark.profiles("openshift")  # RBAC does not depend on the platform: one profile runs it

RBAC_FILES = os.path.join(REPO, "roles", "rbac", "files")
SA_NAMESPACE = "default"
# One ServiceAccount per family, bound to exactly that family's roles (and gpushare-viewer's, as the rbac role does).
ACCOUNTS = {
    "gpushare-lp-viewer": ["viewer"],
    "gpushare-lp-sharing": ["sharing"],
    "gpushare-lp-readiness": ["readiness"],
    "gpushare-lp-diagnostics": ["diagnostics"],
}
# Bound by the test itself to copies of the viewer and sharing roles, one verb removed per case.
MINUS = "gpushare-lp-minus"
T4 = {"selector": "cluster-api/accelerator=tesla-t4"}
DEDICATED = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}

# The rbac role binds the sharing account (and applies every shipped role); the test binds the others the same way
# through the admin client (an ansible-playbook run of the role costs ~10 s).
RBAC_PLAYBOOK = [
    {
        "name": "Bind the sharing account with the rbac role",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
        "roles": [
            {
                "role": "gpushare.k8s.rbac",
                "vars": {
                    "rbac_families": ["sharing"],
                    "rbac_subject_name": "gpushare-lp-sharing",
                    "rbac_subject_namespace": SA_NAMESPACE,
                },
            }
        ],
    }
]


def shipped(name):
    """The objects of roles/rbac/files/<name> (a v1 List)."""
    with open(os.path.join(RBAC_FILES, name)) as stream:
        return yaml.safe_load(stream)["items"]


def user(account):
    return "system:serviceaccount:%s:%s" % (SA_NAMESPACE, account)


def play(cluster, tasks, env=None, check=False):
    """Run ``tasks`` (``module`` dicts) one after the other through Ansible's module entry point with ``env`` (the
    account's AWX-style credential), as a job template's play runs them: a task's ``check_mode`` wins over
    ``check``, and a failure ends the play unless the task has ``ignore_errors``. [(task name, result)]."""
    results = []
    for task in tasks:
        [fqcn] = [key for key in task if key.startswith(COLLECTION)]
        result = run_module_in_process(
            cluster, fqcn[len(COLLECTION) :], task[fqcn], check=task.get("check_mode", check), env=env
        )
        results.append((task["name"], result))
        if result["failed"] and not task.get("ignore_errors"):
            break
    return results


COLLECTION = "gpushare.k8s."


def module(name, args):
    return {"name": name, COLLECTION + name: args}


def token_env(cluster, api_client, account):
    """What AWX's bearer-token credential injects, with a TokenRequest token of ``account``."""
    request = {"spec": {"expirationSeconds": 3600}}
    answer = client.CoreV1Api(api_client).create_namespaced_service_account_token(account, SA_NAMESPACE, request)
    return {
        "K8S_AUTH_HOST": cluster.server(),
        "K8S_AUTH_API_KEY": answer.status.token,
        "K8S_AUTH_VERIFY_SSL": "True",
        "K8S_AUTH_SSL_CA_CERT": cluster.ca_cert,
        "KUBECONFIG": os.path.join(cluster.dir, "no-such-kubeconfig"),
    }


def requests_of(audit, account):
    """The audit events of ``account``'s requests in the window."""
    return [event for event in audit.everyone if event["user"]["username"] == user(account)]


def writes_of(audit, account):
    """``account``'s write requests, as "verb resource/name (user, HTTP code)", refused ones included."""
    return [describe(event) for event in requests_of(audit, account) if is_write(event)]


def refusals(audit, account):
    """``account``'s requests the API server refused (403)."""
    return [describe(event) for event in requests_of(audit, account) if event["responseStatus"]["code"] == 403]


def ok(results):
    for name, result in results:
        assert not result.get("failed"), "%s failed as the ServiceAccount: %s" % (name, result.get("msg"))
    return dict(results)


@pytest.fixture(scope="module")
def accounts(cluster, api_client):
    """The ServiceAccounts, bound by the rbac role; {account: AWX-style environment with its token}."""
    results, report, stderr = run_plays(cluster, RBAC_PLAYBOOK)
    assert not any(result.get("failed") for _name, result in results), (report["stats"], stderr)
    for account, families in ACCOUNTS.items():
        if account != "gpushare-lp-sharing":
            bind(api_client, seed.PROFILES["openshift"].operator_namespace, account, families)
    yield dict((account, token_env(cluster, api_client, account)) for account in ACCOUNTS)
    remove_minus_grants(api_client, seed.PROFILES["openshift"].operator_namespace)


def put(replace, create, body, *scope):
    """Create or replace an object."""
    try:
        replace(body["metadata"]["name"], *scope, body)
    except ApiException as exc:
        if exc.status != 404:
            raise
        create(*scope, body)


def bind(api_client, operator_namespace, account, families, roles=None):
    """ServiceAccount ``account`` bound, as the rbac role binds it, to the viewer roles and those of ``families``;
    ``roles`` maps a shipped (kind, name) to the name of a copy to bind instead."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    try:
        client.CoreV1Api(api_client).create_namespaced_service_account(SA_NAMESPACE, {"metadata": {"name": account}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    for manifest in shipped("clusterroles.yml") + shipped("roles.yml"):
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        if name.split("-", 1)[1] not in ["viewer"] + families:
            continue
        binding = {
            "metadata": {"name": "%s:%s:%s" % (name, SA_NAMESPACE, account)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": kind,
                "name": (roles or {}).get((kind, name), name),
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": SA_NAMESPACE}],
        }
        if kind == "ClusterRole":
            put(rbac.replace_cluster_role_binding, rbac.create_cluster_role_binding, binding)
        else:
            put(rbac.replace_namespaced_role_binding, rbac.create_namespaced_role_binding, binding, operator_namespace)


def remove_minus_grants(api_client, operator_namespace):
    """The copies of the roles the one-verb-removed cases made, and their bindings."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    for suffix in ("viewer", "sharing"):
        binding, role = "gpushare-%s:%s:%s" % (suffix, SA_NAMESPACE, MINUS), "%s-%s" % (MINUS, suffix)
        for call, name, scope in (
            (rbac.delete_cluster_role_binding, binding, ()),
            (rbac.delete_cluster_role, role, ()),
            (rbac.delete_namespaced_role_binding, binding, (operator_namespace,)),
            (rbac.delete_namespaced_role, role, (operator_namespace,)),
        ):
            try:
                call(name, *scope)
            except ApiException as exc:
                if exc.status != 404:
                    raise


def test_applying_the_rbac_role_again_changes_nothing(cluster, accounts):
    results, report, _stderr = run_plays(cluster, RBAC_PLAYBOOK)
    assert not any(result.get("failed") for _name, result in results)
    assert report["stats"]["localhost"]["changed"] == 0, [name for name, result in results if result.get("changed")]
    # Exactly the shipped rules, bound to each account.
    rbac = client.RbacAuthorizationV1Api(cluster.api_client())
    for manifest in shipped("clusterroles.yml"):
        applied = rbac.read_cluster_role(manifest["metadata"]["name"])
        assert [(rule.api_groups, rule.resources, rule.verbs) for rule in applied.rules] == [
            (rule["apiGroups"], rule["resources"], rule["verbs"]) for rule in manifest["rules"]
        ]
    binding = rbac.read_cluster_role_binding("gpushare-sharing:%s:gpushare-lp-sharing" % SA_NAMESPACE)
    assert [(s.kind, s.namespace, s.name) for s in binding.subjects] == [
        ("ServiceAccount", SA_NAMESPACE, "gpushare-lp-sharing")
    ]


def test_check_mode_of_every_module_needs_only_the_viewer_roles(cluster, accounts, audit_writes, namespace):
    env = accounts["gpushare-lp-viewer"]
    checks = [
        module("gpu_timeslicing", {"replicas": 4, "nodes": T4}),
        module("gpu_mps", {"replicas": 4, "nodes": {"names": ["gpu-a100-0"]}}),
        module("gpu_mig_config", {"strategy": "mixed", "config": "all-1g.5gb", "nodes": {"names": ["gpu-a100-1"]}}),
        module("gpu_reset", {"nodes": {"names": ["gpu-h100-0"]}}),
        module("gpu_reset", {"restore": True}),
        module("gpu_tolerations", {"tolerations": [DEDICATED]}),
        module("gpu_quota", {"quota_namespace": namespace, "limits": {"nvidia.com/gpu": 2}}),
        module("gpu_smoke_test", {"kind": "pod", "replicas": 2, "workload_namespace": namespace}),
        module("gpu_monitoring", {"service_monitor": True}),
        module("gpu_autoscaling", {"min_replicas": 0, "max_replicas": 3, "delay_after_add": "15m"}),
        module("gpu_vgpu_licensing", {"client_configuration_token": "token", "gridd_conf": "FeatureType=4\n"}),
        # The read-only modules, for real.
        dict(module("gpu_info", {}), check_mode=False),
        dict(module("gpu_preflight", {}), check_mode=False),
        dict(module("gpu_sharing_plan", {"requests": [{"profile": "1g.5gb", "count": 3}]}), check_mode=False),
    ]
    with audit_writes() as audit:
        results = ok(play(cluster, checks, env=env, check=True))
    assert len(results) == 13  # gpu_reset twice under one name
    for name in ("gpu_timeslicing", "gpu_mps", "gpu_mig_config", "gpu_tolerations", "gpu_quota", "gpu_monitoring"):
        assert results[name]["changed"], name
    assert results["gpu_info"]["nodes"] and results["gpu_preflight"]["platform"] == "OpenShift"
    assert results["gpu_sharing_plan"]["nodes_to_change"]
    assert requests_of(audit, "gpushare-lp-viewer"), "the modules did not run as the ServiceAccount"
    assert refusals(audit, "gpushare-lp-viewer") == [] and writes_of(audit, "gpushare-lp-viewer") == []


def test_the_sharing_modules_run_with_the_sharing_roles(cluster, accounts, audit_writes):
    env = accounts["gpushare-lp-sharing"]
    changes = [
        module("gpu_timeslicing", {"replicas": 4, "nodes": T4}),
        module("gpu_mig_config", {"strategy": "mixed", "config": "all-1g.5gb", "nodes": {"names": ["gpu-a100-1"]}}),
        module("gpu_reset", {"restore": True}),
        module("gpu_mps", {"replicas": 2, "nodes": {"names": ["gpu-a100-0"]}}),
    ]
    with audit_writes() as audit:
        results = ok(play(cluster, changes, env=env))
    assert all(result["changed"] for result in results.values())
    assert refusals(audit, "gpushare-lp-sharing") == []
    writes = writes_of(audit, "gpushare-lp-sharing")
    resources = set(write.split(" ")[1].split("/")[0] for write in writes)
    assert resources == {"configmaps", "clusterpolicies", "nodes", "daemonsets"}


def test_a_failed_mig_change_is_explained_with_the_sharing_roles(cluster, kube, accounts, audit_writes):
    """mig-manager's reason for a failed change is in its MigConfigFailed Event, which the viewer role lets the
    module LIST, and watch when the Event comes just after the node's failed label (as the simulator writes them)."""
    kube.annotate_node("gpu-a100-1", {"sim.gpushare.k8s/mig-fail": "nvidia-smi: insufficient resources"})
    change = module(
        "gpu_mig_config",
        {"strategy": "mixed", "config": "all-1g.5gb", "nodes": {"names": ["gpu-a100-1"]}, "wait_timeout": 120},
    )
    with audit_writes() as audit:
        [(_name, result)] = play(cluster, [change], env=accounts["gpushare-lp-sharing"])
    assert result["failed"] and result["details"]["failed"].keys() == {"gpu-a100-1"}, result
    assert "Failed to apply MIG configuration 'all-1g.5gb': nvidia-smi: insufficient resources" in result["msg"]
    assert refusals(audit, "gpushare-lp-sharing") == []


def test_the_readiness_modules_run_with_the_readiness_roles(cluster, api_client, accounts, audit_writes, namespace):
    env = accounts["gpushare-lp-readiness"]
    # Kubernetes 1.20 admits pods in a namespace once its default ServiceAccount has its token.
    wait_for_object(
        client.CoreV1Api(api_client).list_namespaced_service_account,
        lambda account: bool(account.get("secrets")),
        "the default ServiceAccount of %s to get its token" % namespace,
        namespace,
        field_selector="metadata.name=default",
    )
    changes = [
        module("gpu_tolerations", {"tolerations": [DEDICATED]}),
        module("gpu_quota", {"quota_namespace": namespace, "limits": {"nvidia.com/gpu": 2}}),
        module("gpu_smoke_test", {"kind": "pod", "replicas": 1, "workload_namespace": namespace}),
        module("gpu_monitoring", {"service_monitor": True}),
        module("gpu_autoscaling", {"min_replicas": 0, "max_replicas": 3, "delay_after_add": "15m"}),
        module("gpu_vgpu_licensing", {"client_configuration_token": uuid.uuid4().hex, "gridd_conf": "FeatureType=4\n"}),
    ]
    with audit_writes() as audit:
        results = ok(play(cluster, changes, env=env))
    for name in ("gpu_tolerations", "gpu_quota", "gpu_monitoring", "gpu_autoscaling", "gpu_vgpu_licensing"):
        assert results[name]["changed"], name
    assert results["gpu_smoke_test"]["running"] == 1
    assert refusals(audit, "gpushare-lp-readiness") == []
    writes = writes_of(audit, "gpushare-lp-readiness")
    resources = set(write.split(" ")[1].split("/")[0] for write in writes)
    assert {"clusterpolicies", "resourcequotas", "pods", "machinesets", "secrets"} <= resources, "\n".join(writes)


def test_gpu_nvidia_smi_runs_with_the_diagnostics_role(cluster, accounts, audit_writes):
    with audit_writes() as audit:
        results = ok(
            play(
                cluster,
                [module("gpu_nvidia_smi", {"nodes": {"names": ["gpu-t4-0"]}})],
                env=accounts["gpushare-lp-diagnostics"],
            )
        )
    assert results["gpu_nvidia_smi"]["nodes"]["gpu-t4-0"]["gpus"]
    assert writes_of(audit, "gpushare-lp-diagnostics") == []
    assert any(
        (event["objectRef"] or {}).get("subresource") == "exec"
        for event in requests_of(audit, "gpushare-lp-diagnostics")
    )


# --- one verb removed ---------------------------------------------------------------------------------------


def without(manifest, resource, verb):
    """A copy of ``manifest`` named after MINUS, ``verb`` removed from the rules on ``resource``."""
    copied = copy.deepcopy(manifest)
    copied["metadata"] = {"name": MINUS + "-" + manifest["metadata"]["name"].split("-", 1)[1]}
    for rule in copied["rules"]:
        if resource in rule["resources"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    copied["rules"] = [rule for rule in copied["rules"] if rule["verbs"]]
    return copied


def grant_all_but(api_client, operator_namespace, kind, role, resource, verb):
    """Bind MINUS to copies of the viewer and sharing ClusterRoles and Roles, ``verb`` on ``resource`` missing from
    ``kind`` ``role``; returns once the API server's authorizer refuses exactly that."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    copies, checks = {}, []
    for manifest in shipped("clusterroles.yml") + shipped("roles.yml"):
        if manifest["metadata"]["name"] not in ("gpushare-viewer", "gpushare-sharing"):
            continue
        removed = (manifest["kind"], manifest["metadata"]["name"]) == (kind, role)
        body = without(manifest, resource, verb) if removed else without(manifest, None, None)
        copies[(manifest["kind"], manifest["metadata"]["name"])] = body["metadata"]["name"]
        if manifest["kind"] == "ClusterRole":
            put(rbac.replace_cluster_role, rbac.create_cluster_role, body)
        else:
            put(rbac.replace_namespaced_role, rbac.create_namespaced_role, body, operator_namespace)
        for rule in manifest["rules"]:
            for group in rule["apiGroups"]:
                for res in rule["resources"]:
                    for rule_verb in rule["verbs"]:
                        allowed = not (removed and (res, rule_verb) == (resource, verb))
                        namespace = operator_namespace if manifest["kind"] == "Role" else None
                        checks.append((rule_verb, group, res, namespace, allowed))
    bind(api_client, operator_namespace, MINUS, ["sharing"], roles=copies)
    # The authorizer reads RBAC objects from its informers: wait until it answers as the roles now say.
    deadline = time.monotonic() + 30
    while True:
        wrong = [check for check in checks if allowed_to(api_client, *check[:4]) != check[4]]
        if not wrong:
            return
        assert time.monotonic() < deadline, "RBAC never answered as the roles say: %s" % wrong
        time.sleep(0.1)  # polling the authorizer (SubjectAccessReview), bounded by the deadline


def allowed_to(api_client, verb, group, resource, namespace):
    plural, _, subresource = resource.partition("/")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user(MINUS),
            "groups": ["system:serviceaccounts", "system:serviceaccounts:" + SA_NAMESPACE, "system:authenticated"],
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": plural,
                "subresource": subresource,
                "namespace": namespace or "",
            },
        },
    }
    answer = client.AuthorizationV1Api(api_client).create_subject_access_review(review)
    return answer.status.allowed


TIMESLICING = {"replicas": 4, "nodes": T4}
SHARED_TWICE = (
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 2\n"
)


def existing_config_map(api_client, kube, profile):
    """The time-slicing ConfigMap already there (another profile in it): the module patches it."""
    kube.put_config_map("time-slicing-config", {"other": SHARED_TWICE})


def created_config_map(api_client, kube, profile):
    """A ConfigMap the collection created (its restore record says so): gpu_reset restore: true deletes it."""
    core = client.CoreV1Api(api_client)
    body = {
        "metadata": {"name": "gpushare-lp-created", "annotations": {"gpushare.k8s/restore": '{"created": true}'}},
        "data": {"other": SHARED_TWICE},
    }
    core.create_namespaced_config_map(profile.operator_namespace, body)


def gpu_pod_on_t4(api_client, kube, profile):
    """A GPU pod on gpu-t4-0: with drain: true the module cordons, then evicts it."""
    gpu_pod(api_client, "gpu-t4-0", fresh_namespace(api_client, "lp-"))


# (kind, role, resource, verb, setup, module, args). A missing write verb is found before any write: the writer (and,
# before a drain, the GPU-pod guard) asks the API server with SelfSubjectAccessReviews first; a missing read fails
# the read, before any write too.
CASES = [
    ("Role", "gpushare-sharing", "configmaps", "create", None, "gpu_timeslicing", TIMESLICING),
    ("Role", "gpushare-sharing", "configmaps", "patch", existing_config_map, "gpu_timeslicing", TIMESLICING),
    ("Role", "gpushare-sharing", "configmaps", "delete", created_config_map, "gpu_reset", {"restore": True}),
    ("ClusterRole", "gpushare-sharing", "clusterpolicies", "patch", None, "gpu_timeslicing", TIMESLICING),
    ("ClusterRole", "gpushare-sharing", "nodes", "patch", None, "gpu_timeslicing", TIMESLICING),
    (
        "Role",
        "gpushare-sharing",
        "daemonsets",
        "patch",
        None,
        "gpu_timeslicing",
        dict(TIMESLICING, restart_device_plugin=True),
    ),
    (
        "ClusterRole",
        "gpushare-sharing",
        "pods/eviction",
        "create",
        gpu_pod_on_t4,
        "gpu_timeslicing",
        dict(TIMESLICING, drain=True),
    ),
    ("ClusterRole", "gpushare-viewer", "nodes", "list", None, "gpu_timeslicing", TIMESLICING),
    ("Role", "gpushare-viewer", "configmaps", "get", None, "gpu_timeslicing", TIMESLICING),
]


@pytest.mark.parametrize(
    "kind, role, resource, verb, setup, name, args",
    CASES,
    ids=["%s %s %s %s" % (case[0], case[1], case[3], case[2]) for case in CASES],
)
def test_a_missing_verb_is_named_with_its_resource_and_role_before_any_write(
    cluster, api_client, accounts, audit_writes, profile, kube, kind, role, resource, verb, setup, name, args
):
    if setup:
        setup(api_client, kube, profile)
    grant_all_but(api_client, profile.operator_namespace, kind, role, resource, verb)
    env = token_env(cluster, api_client, MINUS)
    with audit_writes() as audit:
        results = play(cluster, [dict(module(name, args), ignore_errors=True)], env=env)
    result = dict(results)[name]
    assert result.get("failed"), "%s succeeded without %s on %s" % (name, verb, resource)
    named = {"clusterpolicies": "clusterpolicies.nvidia.com", "daemonsets": "daemonsets.apps"}.get(resource, resource)
    assert "The identity lacks '%s' on '%s'; bind the %s %s" % (verb, named, role, kind) in result["msg"]
    assert "Traceback" not in result["msg"]
    if verb in WRITE_VERBS:
        assert result["msg"].startswith("Nothing was written"), result["msg"]
    assert writes_of(audit, MINUS) == [], "\n".join(writes_of(audit, MINUS) + [result["msg"]])
