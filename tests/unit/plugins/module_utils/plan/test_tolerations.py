# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/tolerations (gpu_tolerations) and its restore through plan_restore."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from k8s_objects import GPU_TOLERATION, NAMESPACE, cluster_policy, merge_patch

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore import plan_restore
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import RESTORE_ANNOTATION
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.tolerations import plan_tolerations

DEDICATED = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
HELM = {
    "labels": {"app.kubernetes.io/managed-by": "Helm"},
    "annotations": {"meta.helm.sh/release-name": "gpu-operator"},
}


def helm_policy(tolerations=None):
    policy = cluster_policy(tolerations=tolerations)
    policy["metadata"]["labels"].update(HELM["labels"])
    policy["metadata"]["annotations"] = dict(HELM["annotations"])
    return policy


def nfd_worker(tolerations, helm_release="gpu-operator", name="gpu-operator-node-feature-discovery-worker"):
    metadata = {"name": name, "namespace": NAMESPACE, "labels": {}, "annotations": {}}
    if helm_release:
        metadata["labels"]["app.kubernetes.io/managed-by"] = "Helm"
        metadata["annotations"]["meta.helm.sh/release-name"] = helm_release
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata,
        "spec": {"template": {"spec": {"tolerations": tolerations, "containers": []}}},
    }


def policy_tolerations(policy):
    return policy["spec"]["daemonsets"].get("tolerations")


@pytest.mark.parametrize("listed", [None, [], [GPU_TOLERATION]])
def test_adding_to_an_unset_empty_or_default_list_keeps_the_gpu_toleration(listed):
    policy = cluster_policy(tolerations=listed)
    plan = plan_tolerations(policy, [], [DEDICATED])
    after = merge_patch(policy, plan.policy_patch)
    assert policy_tolerations(after) == [GPU_TOLERATION, DEDICATED]
    record = json.loads(after["metadata"]["annotations"][RESTORE_ANNOTATION])
    assert record == {"spec": {"daemonsets.tolerations": listed or None}}
    again = plan_tolerations(after, [], [DEDICATED])
    assert not again.changed


def test_a_missing_operator_means_equal_and_duplicates_are_not_added():
    policy = cluster_policy(tolerations=[GPU_TOLERATION, DEDICATED])
    same = dict(DEDICATED)
    del same["operator"]
    assert not plan_tolerations(policy, [], [same]).changed


def test_removing_keeps_the_gpu_toleration_and_refuses_to_remove_it_unless_told():
    policy = cluster_policy(tolerations=[GPU_TOLERATION, DEDICATED])
    plan = plan_tolerations(policy, [], [DEDICATED], state="absent")
    assert policy_tolerations(merge_patch(policy, plan.policy_patch)) == [GPU_TOLERATION]
    with pytest.raises(GpuShareError, match="keep_gpu_toleration: false"):
        plan_tolerations(policy, [], [GPU_TOLERATION], state="absent")
    plan = plan_tolerations(policy, [], [GPU_TOLERATION], state="absent", keep_gpu_toleration=False)
    assert policy_tolerations(merge_patch(policy, plan.policy_patch)) == [DEDICATED]


def test_without_keep_a_list_can_lack_the_gpu_toleration():
    plan = plan_tolerations(cluster_policy(tolerations=None), [], [DEDICATED], keep_gpu_toleration=False)
    # The unset list meant the built-in one: it stays unless removed explicitly.
    assert plan.after["cluster_policy"]["daemonsets"]["tolerations"] == [GPU_TOLERATION, DEDICATED]


@pytest.mark.parametrize(
    "toleration, message",
    [
        ({"key": "a", "operator": "Exists", "value": "x"}, "operator Exists takes no value"),
        ({"operator": "Equal", "value": "x"}, "a key is needed"),
        ({"key": "a", "effect": "NoSchedule", "tolerationSeconds": 30}, "only to effect NoExecute"),
        ({"key": "a", "effect": "Sometimes"}, "effect must be one of"),
        ({"key": "a", "operator": "In"}, "operator must be Exists or Equal"),
        ({"key": "a", "colour": "red"}, "unknown field"),
    ],
)
def test_bad_tolerations_are_refused_before_any_write(toleration, message):
    with pytest.raises(GpuShareError, match=message):
        plan_tolerations(cluster_policy(), [], [toleration])


def test_no_toleration_is_refused():
    with pytest.raises(GpuShareError, match="at least one"):
        plan_tolerations(cluster_policy(), [], [])


def test_the_nfd_worker_of_the_operators_helm_release_gets_them_with_a_record():
    worker = nfd_worker([GPU_TOLERATION])
    plan = plan_tolerations(helm_policy(), [worker], [DEDICATED])
    patch = plan.daemon_set_patches[(NAMESPACE, worker["metadata"]["name"])]
    after = merge_patch(worker, patch)
    assert after["spec"]["template"]["spec"]["tolerations"] == [GPU_TOLERATION, DEDICATED]
    assert any("node-feature-discovery.worker.tolerations" in warning for warning in plan.warnings)
    # gpu_reset restore puts it back.
    restore = plan_restore(cluster_policy(), [], [], [after])
    restored = merge_patch(after, restore.daemon_set_patches[(NAMESPACE, worker["metadata"]["name"])])
    assert restored["spec"]["template"]["spec"]["tolerations"] == [GPU_TOLERATION]
    assert RESTORE_ANNOTATION not in restored["metadata"]["annotations"]


def test_an_nfd_worker_owned_by_something_else_is_left_alone_with_a_warning():
    openshift = nfd_worker([{"operator": "Exists", "effect": "NoSchedule"}], helm_release=None, name="nfd-worker")
    plan = plan_tolerations(helm_policy(), [openshift], [{"key": "maintenance", "effect": "NoExecute"}])
    assert plan.daemon_set_patches == {}
    assert "OpenShift's NodeFeatureDiscovery" in plan.warnings[0]
    other_release = nfd_worker([], helm_release="nfd")
    plan = plan_tolerations(helm_policy(), [other_release], [DEDICATED])
    assert plan.daemon_set_patches == {} and "release nfd" in plan.warnings[0]
    assert plan_tolerations(helm_policy(), [nfd_worker([])], [DEDICATED], nfd=False).daemon_set_patches == {}


def test_the_policy_restore_puts_back_the_unset_list():
    policy = cluster_policy(tolerations=None)
    after = merge_patch(policy, plan_tolerations(policy, [], [DEDICATED]).policy_patch)
    restore = plan_restore(after, [], [])
    restored = merge_patch(after, restore.policy_patch)
    assert "tolerations" not in restored["spec"]["daemonsets"]
