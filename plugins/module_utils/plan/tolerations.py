# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_tolerations' plan: the ClusterPolicy's ``spec.daemonsets.tolerations`` and Node Feature Discovery's
worker tolerations with the given tolerations added or removed. Pure; refuses bad input before any write.

``spec.daemonsets.tolerations`` replaces the operands' built-in ``nvidia.com/gpu`` Exists NoSchedule
toleration (reference section 3): an unset or empty list means that one only, so the plan starts from it
and keeps it unless told otherwise. NFD's worker needs the same tolerations (reference section 5); it is
changed only where the operator's own Helm release owns it (its value ``node-feature-discovery.worker.
tolerations``), since another owner (OpenShift's NFD operator) would put its own list back."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import OPERATOR_DEFAULT_TOLERATIONS
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.operands import (
    NFD_HELM_TOLERATIONS_VALUE,
    helm_release_of,
    pod_tolerations,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites, recorded

# Kubernetes' Toleration fields and values (core/v1).
TOLERATION_OPERATORS = ("Exists", "Equal")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")
POLICY_TOLERATIONS_FIELD = "daemonsets.tolerations"
DAEMONSET_TOLERATIONS_FIELD = "template.spec.tolerations"
GPU_TOLERATION = OPERATOR_DEFAULT_TOLERATIONS[0]


def canonical(toleration):
    """The toleration as the API server stores it: operator defaults to Equal, empty fields dropped."""
    result = dict((field, toleration[field]) for field in TOLERATION_FIELDS if toleration.get(field) not in (None, ""))
    result.setdefault("operator", "Equal")
    return result


def validate_tolerations(tolerations):
    """Refuse what the API server would refuse, or what cannot match a taint; returns them canonical."""
    problems, result = [], []
    for index, toleration in enumerate(tolerations or []):
        where = "tolerations[%d]" % index
        unknown = sorted(set(toleration) - set(TOLERATION_FIELDS))
        if unknown:
            problems.append("%s: unknown field(s) %s" % (where, ", ".join(unknown)))
            continue
        item = canonical(toleration)
        if item["operator"] not in TOLERATION_OPERATORS:
            problems.append("%s: operator must be Exists or Equal, not %s" % (where, item["operator"]))
        if item["operator"] == "Exists" and "value" in item:
            problems.append("%s: operator Exists takes no value" % where)
        if item["operator"] == "Equal" and "key" not in item:
            problems.append("%s: a key is needed unless operator is Exists" % where)
        if "effect" in item and item["effect"] not in TAINT_EFFECTS:
            problems.append("%s: effect must be one of %s, not %s" % (where, ", ".join(TAINT_EFFECTS), item["effect"]))
        if "tolerationSeconds" in item:
            if item.get("effect") != "NoExecute":
                problems.append("%s: tolerationSeconds applies only to effect NoExecute" % where)
            elif not isinstance(item["tolerationSeconds"], int) or isinstance(item["tolerationSeconds"], bool):
                problems.append("%s: tolerationSeconds must be an integer" % where)
        result.append(item)
    if not result and not problems:
        problems.append("tolerations: give at least one toleration")
    if problems:
        raise GpuShareError("Invalid tolerations: %s. Nothing was changed." % "; ".join(problems))
    return result


def edit_list(current, tolerations, state, keep_gpu):
    """``current`` with ``tolerations`` added (``present``) or removed (``absent``); the GPU toleration kept
    when ``keep_gpu``. Order of the existing entries is kept; additions go last."""
    current_canonical = [canonical(t) for t in current]
    if state == "present":
        result = list(current)
        for toleration in tolerations:
            if toleration not in current_canonical and toleration not in [canonical(t) for t in result]:
                result.append(toleration)
    else:
        result = [t for t in current if canonical(t) not in tolerations]
    if keep_gpu and canonical(GPU_TOLERATION) not in [canonical(t) for t in result]:
        result.insert(0, dict(GPU_TOLERATION))
    return result


def plan_tolerations(policy, nfd_workers, tolerations, state="present", keep_gpu_toleration=True, nfd=True):
    """The writes for gpu_tolerations, with the diff and any warnings."""
    wanted = validate_tolerations(tolerations)
    if state == "absent" and keep_gpu_toleration and canonical(GPU_TOLERATION) in wanted:
        raise GpuShareError(
            "Removing the %s toleration takes the operator off every node tainted %s:NoSchedule; set "
            "keep_gpu_toleration: false to do it anyway. Nothing was changed."
            % (GPU_TOLERATION["key"], GPU_TOLERATION["key"])
        )
    plan = ObjectWrites()
    _plan_policy_tolerations(plan, policy, wanted, state, keep_gpu_toleration)
    if not nfd:
        return plan
    operator_release = helm_release_of(policy)
    for daemonset in nfd_workers:
        _plan_nfd_worker(plan, daemonset, wanted, state, operator_release)
    return plan


def _plan_policy_tolerations(plan, policy, wanted, state, keep_gpu_toleration):
    """The policy's ``spec.daemonsets.tolerations`` with ``wanted`` added or removed."""
    listed = list(((policy.get("spec") or {}).get("daemonsets") or {}).get("tolerations") or [])
    # An unset or empty list means the built-in toleration only (replace semantics).
    effective = listed or [dict(GPU_TOLERATION)]
    new = edit_list(effective, wanted, state, keep_gpu_toleration)
    plan.before["cluster_policy"] = {"daemonsets": {"tolerations": listed}}
    plan.after["cluster_policy"] = {"daemonsets": {"tolerations": new}}
    if [canonical(t) for t in new] != [canonical(t) for t in listed]:
        plan.policy_patch = recorded(
            policy,
            {"spec": {"daemonsets": {"tolerations": new}}},
            "spec",
            {POLICY_TOLERATIONS_FIELD: listed or None},
        )


def _plan_nfd_worker(plan, daemonset, wanted, state, operator_release):
    """An NFD worker's tolerations with ``wanted`` added or removed, when the operator's Helm release deploys it (with
    a warning to set its Helm value too); a warning naming what deploys it otherwise."""
    ref = "%s/%s" % (daemonset["metadata"]["namespace"], daemonset["metadata"]["name"])
    release = helm_release_of(daemonset)
    current = pod_tolerations(daemonset)
    changed = edit_list(current, wanted, state, False)
    if [canonical(t) for t in changed] == [canonical(t) for t in current]:
        return
    if not release or release != operator_release:
        plan.warnings.append(
            "Node Feature Discovery's worker %s is not deployed by the operator's Helm release, so it was left "
            "alone: give it the same tolerations where it is defined (%s)"
            % (
                ref,
                (
                    "release %s" % release
                    if release
                    else "OpenShift's NodeFeatureDiscovery instance, or its own install"
                ),
            )
        )
        return
    plan.before.setdefault("nfd_workers", {})[ref] = current
    plan.after.setdefault("nfd_workers", {})[ref] = changed
    plan.daemon_set_patches[(daemonset["metadata"]["namespace"], daemonset["metadata"]["name"])] = recorded(
        daemonset,
        {"spec": {"template": {"spec": {"tolerations": changed}}}},
        "spec",
        {DAEMONSET_TOLERATIONS_FIELD: current or None},
    )
    plan.warnings.append(
        "Also set the Helm value %s of release %s to the tolerations of %s, or the next helm upgrade puts the "
        "old list back" % (NFD_HELM_TOLERATIONS_VALUE, release, ref)
    )
