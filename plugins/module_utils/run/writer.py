# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer: applies a plan's writes (``plan/objects.py``) in a safe order, and restarts the device
plugin when the plan says so.

The order keeps a half-applied plan harmless and repairable by the next run: ConfigMaps and Secrets first
(unused until referenced), then the ClusterPolicy, then DaemonSets other than the operator's (NFD's worker),
ResourceQuotas and OpenShift's MachineSets and autoscalers (a MachineSet before the autoscalers that act on
it), then the node labels the operator's components act on, deletes last (nothing names those objects any
more), and the restart that makes the plugin read it all. A failure names what was written
and what was not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import DEVICE_PLUGIN_DAEMONSET
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.cloud import OPENSHIFT_KINDS
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record

# The annotation `kubectl rollout restart` sets; any change to the pod template restarts the pods.
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
# Node labels are written this many at a time, so 1,000 label writes take about as long as a handful; it
# stays within the kubernetes client's connection pool (5 x CPUs connections) on a 2-CPU controller.
NODE_WRITE_CONCURRENCY = 8


def restart_daemon_set(kube, namespace, name):
    # Microseconds: two restarts within one second must still differ, or the second restarts nothing.
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kube.patch_daemon_set(
        namespace=namespace,
        name=name,
        patch={"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT_ANNOTATION: now}}}}},
    )


def _custom_object_calls(kube, kind):
    group, version, plural = OPENSHIFT_KINDS[kind]
    return dict(
        create=lambda namespace, name, body: kube.create_custom_object(group, version, plural, namespace, name, body),
        patch=lambda namespace, name, body: kube.patch_custom_object(group, version, plural, namespace, name, body),
    )


def object_calls(kube):
    """For each kind of ``ObjectWrites.object_writes``, its API calls by action: f(namespace, name, body)."""
    calls = dict(
        Secret=dict(
            create=lambda namespace, name, body: kube.create_secret(namespace=namespace, name=name, body=body),
            patch=lambda namespace, name, body: kube.patch_secret(namespace=namespace, name=name, patch=body),
            delete=lambda namespace, name, body: kube.delete_secret(namespace=namespace, name=name),
        ),
        ResourceQuota=dict(
            create=lambda namespace, name, body: kube.create_resource_quota(namespace=namespace, name=name, body=body),
            patch=lambda namespace, name, body: kube.patch_resource_quota(namespace=namespace, name=name, patch=body),
            delete=lambda namespace, name, body: kube.delete_resource_quota(namespace=namespace, name=name),
        ),
    )
    calls.update((kind, _custom_object_calls(kube, kind)) for kind in OPENSHIFT_KINDS)
    return calls


# Secrets are written with the ConfigMaps, before the policy that names them; the others after the policy and
# DaemonSets, a MachineSet before the autoscalers that act on it. Deletes come last, when nothing names them.
OBJECTS_BEFORE_POLICY = ("Secret",)
OBJECTS_AFTER_POLICY = ("ResourceQuota", "MachineSet", "MachineAutoscaler", "ClusterAutoscaler")


def _object_steps(kube, plan, kinds, deletes):
    calls = object_calls(kube)
    keys = sorted(
        (
            key
            for key, (action, _body) in plan.object_writes.items()
            if key[0] in kinds and (action == "delete") == deletes
        ),
        key=lambda key: (kinds.index(key[0]), key[1] or "", key[2]),
    )
    steps = []
    for kind, namespace, name in keys:
        action, body = plan.object_writes[(kind, namespace, name)]
        call = calls[kind][action]
        steps.append(
            (
                "%s %s %s" % (action, kind, "/".join(part for part in (namespace, name) if part)),
                lambda call=call, namespace=namespace, name=name, body=body: call(namespace, name, body),
            )
        )
    return steps


def plan_steps(kube, operator, plan):
    """The plan's writes in their safe order, as (what, call) pairs."""
    namespace = operator.namespace if operator is not None else None  # None: a plan of no operator object
    steps = []
    for name, data in sorted(plan.config_map_creates.items()):
        steps.append(
            (
                "create ConfigMap %s/%s" % (namespace, name),
                lambda name=name, data=data: kube.create_config_map(
                    namespace=namespace, name=name, data=data, annotations=created_record()
                ),
            )
        )
    for name, patch in sorted(plan.config_map_patches.items()):
        steps.append(
            (
                "patch ConfigMap %s/%s" % (namespace, name),
                lambda name=name, patch=patch: kube.patch_config_map(namespace=namespace, name=name, patch=patch),
            )
        )
    steps += _object_steps(kube, plan, OBJECTS_BEFORE_POLICY, deletes=False)
    if plan.policy_patch:
        steps.append(
            (
                "patch ClusterPolicy %s" % operator.policy_name,
                lambda: kube.patch_cluster_policy(name=operator.policy_name, patch=plan.policy_patch),
            )
        )
    for (ds_namespace, name), patch in sorted(plan.daemon_set_patches.items()):
        steps.append(
            (
                "patch DaemonSet %s/%s" % (ds_namespace, name),
                lambda ds_namespace=ds_namespace, name=name, patch=patch: kube.patch_daemon_set(
                    namespace=ds_namespace, name=name, patch=patch
                ),
            )
        )
    steps += _object_steps(kube, plan, OBJECTS_AFTER_POLICY, deletes=False)
    if plan.node_patches:
        steps.append(("label %d node(s)" % len(plan.node_patches), lambda: label_nodes(kube, plan.node_patches)))
    for name in sorted(plan.config_map_deletes):
        steps.append(
            (
                "delete ConfigMap %s/%s" % (namespace, name),
                lambda name=name: kube.delete_config_map(namespace=namespace, name=name),
            )
        )
    steps += _object_steps(kube, plan, OBJECTS_BEFORE_POLICY + OBJECTS_AFTER_POLICY, deletes=True)
    if plan.restart:
        steps.append(
            ("restart the device plugin", lambda: restart_daemon_set(kube, namespace, DEVICE_PLUGIN_DAEMONSET))
        )
    return steps


def label_nodes(kube, node_patches):
    """Patch every node of ``node_patches`` (name -> merge patch), NODE_WRITE_CONCURRENCY at a time.

    Every patch is tried; when some fail, the error names them and counts the others (the same task, run
    again, labels the rest: each patch sets only the labels it owns).
    """

    def label(name):
        try:
            kube.patch_node(name=name, patch=node_patches[name])
        except GpuShareError as exc:
            return exc
        return None

    names = sorted(node_patches)
    with ThreadPoolExecutor(max_workers=max(1, min(NODE_WRITE_CONCURRENCY, len(names)))) as pool:
        outcomes = dict(zip(names, pool.map(label, names)))
    failed = dict((name, exc) for name, exc in outcomes.items() if exc is not None)
    if failed:
        first = failed[sorted(failed)[0]]
        raise GpuShareError(
            "Labelling node(s) %s failed: %s. The other %d of %d node(s) were labelled."
            % (
                ", ".join(sorted(failed)),
                "; ".join(failed[name].msg for name in sorted(failed)),
                len(names) - len(failed),
                len(names),
            ),
            status=first.status,
            reason=first.reason,
        )


def write_plan(kube, operator, plan):
    """Make the plan's writes; on failure, say what was written and what was left undone."""
    steps = plan_steps(kube, operator, plan)
    for index, (what, call) in enumerate(steps):
        try:
            call()
        except GpuShareError as exc:
            done = ", ".join(step[0] for step in steps[:index]) or "nothing"
            left = ", ".join(step[0] for step in steps[index + 1 :]) or "nothing else"
            raise GpuShareError(
                "%s Written before the failure: %s. Not written: %s. The cluster is left in a state the same task, "
                "run again, completes." % (exc.msg, done, left),
                status=exc.status,
                reason=exc.reason,
                details=exc.details,
            )
