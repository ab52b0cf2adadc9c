"""The rbac role's ``rbac_state: absent`` removes exactly what the role created: a subject's bindings, the
ServiceAccount and namespace only if the role created them, the shipped roles once nobody is bound to them."""

import uuid

import pytest
from integration_helpers import run_plays
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from testbed import seed

pytestmark = pytest.mark.profiles("openshift")  # RBAC does not depend on the platform: one profile runs it

PART_OF = "app.kubernetes.io/part-of=gpushare.k8s"
# Fresh names each run: the reset deletes namespaces in the background, and one still terminating cannot be reused.
RUN = uuid.uuid4().hex[:6]
KEPT_NAMESPACE = "gpushare-rbac-kept-" + RUN  # there before the role: it must stay
CREATED_NAMESPACE = "gpushare-rbac-created-" + RUN  # created by the role: it goes
ACCOUNT = {"rbac_subject_name": "gpushare-rbac-a", "rbac_subject_namespace": KEPT_NAMESPACE}
CREATED = {"rbac_subject_name": "gpushare-rbac-b", "rbac_subject_namespace": CREATED_NAMESPACE}
USER = {"rbac_subject_kind": "User", "rbac_subject_name": "alice", "rbac_families": ["sharing"]}


def play(cluster, *role_vars):
    """One play applying the rbac role once per ``role_vars``; (results by task name and subject, stats)."""
    playbook = [
        {
            "name": "rbac",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"},
            "tasks": [
                {"name": "rbac", "ansible.builtin.include_role": {"name": "gpushare.k8s.rbac"}, "vars": dict(v)}
                for v in role_vars
            ],
        }
    ]
    results, report, stderr = run_plays(cluster, playbook)
    assert not any(result.get("failed") for _name, result in results), (results, stderr)
    return results, report["stats"]["localhost"]


def bindings(rbac):
    """(kind, name) of every binding of the collection's roles."""
    return sorted(
        [("ClusterRoleBinding", b.metadata.name) for b in rbac.list_cluster_role_binding(label_selector=PART_OF).items]
        + [
            ("RoleBinding", b.metadata.name)
            for b in rbac.list_role_binding_for_all_namespaces(label_selector=PART_OF).items
        ]
    )


def shipped_roles(rbac, operator_namespace):
    return sorted(
        [r.metadata.name for r in rbac.list_cluster_role(label_selector=PART_OF).items]
        + [r.metadata.name for r in rbac.list_namespaced_role(operator_namespace, label_selector=PART_OF).items]
    )


def exists(read, *args):
    try:
        read(*args)
        return True
    except ApiException as exc:
        if exc.status != 404:
            raise
        return False


def test_absent_removes_exactly_what_the_role_created(cluster, api_client):
    rbac, core = client.RbacAuthorizationV1Api(api_client), client.CoreV1Api(api_client)
    operator_namespace = seed.PROFILES["openshift"].operator_namespace
    # A cluster where no one is bound to the collection's roles yet (another file's accounts may have been).
    for kind, name in bindings(rbac):
        if kind == "ClusterRoleBinding":
            rbac.delete_cluster_role_binding(name)
    for binding in rbac.list_role_binding_for_all_namespaces(label_selector=PART_OF).items:
        rbac.delete_namespaced_role_binding(binding.metadata.name, binding.metadata.namespace)
    core.create_namespace({"metadata": {"name": KEPT_NAMESPACE}})

    play(cluster, ACCOUNT, CREATED, USER)
    granted = bindings(rbac)
    assert len(granted) == 7 + 7 + 4  # every family for each account (diagnostics: a Role only), alice: viewer, sharing
    assert core.read_namespace(CREATED_NAMESPACE).metadata.labels["app.kubernetes.io/managed-by"] == (
        "gpushare.k8s.rbac"
    )
    assert "app.kubernetes.io/managed-by" not in (core.read_namespace(KEPT_NAMESPACE).metadata.labels or {})

    # The first account goes: its bindings and the ServiceAccount the role made; its namespace was there before.
    results, _stats = play(cluster, dict(ACCOUNT, rbac_state="absent"), dict(CREATED, rbac_state="absent"))
    assert [binding for binding in bindings(rbac) if "gpushare-rbac" in binding[1]] == []
    assert not exists(core.read_namespaced_service_account, ACCOUNT["rbac_subject_name"], KEPT_NAMESPACE)
    assert exists(core.read_namespace, KEPT_NAMESPACE)
    assert not exists(core.read_namespace, CREATED_NAMESPACE)
    # alice is still bound: the roles stay, and the role says why.
    assert len(shipped_roles(rbac, operator_namespace)) == 7
    kept = [r for name, r in results if name.endswith("Say which bindings keep the collection's roles") and "msg" in r]
    assert kept and "gpushare-sharing:user:alice" in kept[0]["msg"]

    # The last subject goes: nothing of the collection is left; a second run changes nothing.
    play(cluster, dict(USER, rbac_state="absent"))
    assert bindings(rbac) == [] and shipped_roles(rbac, operator_namespace) == []
    _results, stats = play(cluster, dict(ACCOUNT, rbac_state="absent"), dict(USER, rbac_state="absent"))
    assert stats["changed"] == 0
