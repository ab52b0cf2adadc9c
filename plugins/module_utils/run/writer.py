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
import random
import time
from collections import namedtuple
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import CONFLICT, FORBIDDEN, GpuShareError, access_hint
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.api import CLUSTER_POLICY_GROUP, CLUSTER_POLICY_PLURAL
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import DEVICE_PLUGIN_DAEMONSET
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import OPENSHIFT_KINDS
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record

# The annotation `kubectl rollout restart` sets; any change to the pod template restarts the pods.
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
# Node labels are written this many at a time, so 1,000 label writes take about as long as a handful; it
# stays within the kubernetes client's connection pool (5 x CPUs connections) on a 2-CPU controller.
NODE_WRITE_CONCURRENCY = 8
# (verb, API group, resource, namespace): labelling, cordoning and uncordoning nodes.
NODE_PATCH_ACCESS = ("patch", "", "nodes", None)
# A plan whose write met a 409 Conflict is read and planned again this many times in all before giving up, with
# a short random pause in between (up to REPLAN_PAUSE_SECONDS x the attempt), so runs that collided spread out.
REPLAN_ATTEMPTS = 8
REPLAN_PAUSE_SECONDS = 0.25

# What a runner's ``read_and_plan()`` returns and ``write_replanning`` takes: the plan (``ObjectWrites``), the
# operator install it was planned against (``run/operator.OperatorInstall``; None when the plan writes no object of
# the operator's: gpu_quota, gpu_autoscaling), for gpu_autoscaling the platform the read recognised, and for the
# runners that wait for nodes the node LIST it was planned from (``kube/api.Listed``), to start the wait's watch from.
Planned = namedtuple("Planned", ["operator", "plan", "platform", "listed"], defaults=(None, None))


class Written(namedtuple("Written", ["planned", "writes", "expectations", "node_versions", "conflicts"])):
    """What the writer wrote (``write_plan``, ``write_replanning``); the plan itself is never written on.

    ``planned``: the ``Planned`` last written (after a 409, the re-plan's); ``writes``: what was written, each step's
    description, in order (earlier attempts' first); ``expectations``: node name -> what it must show afterwards, of
    every attempt (a node written before a conflict still has to show the change); ``node_versions``: node name ->
    the resourceVersion its label patch left it at; ``conflicts``: the 409 Conflicts met, each followed by a fresh
    read and plan."""

    __slots__ = ()

    @property
    def plan(self):
        """The plan last written."""
        return self.planned.plan


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
# DaemonSets, a Machine marked for deletion before the MachineSet whose replicas drop, a MachineSet before the
# autoscalers that act on it. Deletes come last, when nothing names them.
OBJECTS_BEFORE_POLICY = ("Secret",)
OBJECTS_AFTER_POLICY = ("ResourceQuota", "Machine", "MachineSet", "MachineAutoscaler", "ClusterAutoscaler")


# What each kind of ``ObjectWrites.object_writes`` is to RBAC: (API group, resource).
OBJECT_RESOURCES = dict(
    dict((kind, (group, plural)) for kind, (group, _version, plural) in OPENSHIFT_KINDS.items()),
    Secret=("", "secrets"),
    ResourceQuota=("", "resourcequotas"),
)


class Step(object):
    """One write of a plan: ``what`` it is (for messages), the ``access`` it needs as (verb, API group, resource,
    namespace or None), and the ``call`` that makes it."""

    def __init__(self, what, access, call):
        self.what = what
        self.access = access
        self.call = call


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
            Step(
                "%s %s %s" % (action, kind, "/".join(part for part in (namespace, name) if part)),
                (action,) + OBJECT_RESOURCES[kind] + (namespace,),
                lambda call=call, namespace=namespace, name=name, body=body: call(namespace, name, body),
            )
        )
    return steps


def plan_steps(kube, operator, plan, node_versions=None):
    """The plan's writes in their safe order, as ``Step``s; the label step puts each node's resourceVersion after
    its patch into ``node_versions`` (a dict, when given)."""
    receipts = {} if node_versions is None else node_versions
    namespace = operator.namespace if operator is not None else None  # None: a plan of no operator object
    steps = []
    for name, data in sorted(plan.config_map_creates.items()):
        steps.append(
            Step(
                "create ConfigMap %s/%s" % (namespace, name),
                ("create", "", "configmaps", namespace),
                lambda name=name, data=data: kube.create_config_map(
                    namespace=namespace, name=name, data=data, annotations=created_record()
                ),
            )
        )
    for name, patch in sorted(plan.config_map_patches.items()):
        steps.append(
            Step(
                "patch ConfigMap %s/%s" % (namespace, name),
                ("patch", "", "configmaps", namespace),
                lambda name=name, patch=patch: kube.patch_config_map(namespace=namespace, name=name, patch=patch),
            )
        )
    steps += _object_steps(kube, plan, OBJECTS_BEFORE_POLICY, deletes=False)
    if plan.policy_patch:
        steps.append(
            Step(
                "patch ClusterPolicy %s" % operator.policy_name,
                ("patch", CLUSTER_POLICY_GROUP, CLUSTER_POLICY_PLURAL, None),
                lambda: kube.patch_cluster_policy(name=operator.policy_name, patch=plan.policy_patch),
            )
        )
    for (ds_namespace, name), patch in sorted(plan.daemon_set_patches.items()):
        steps.append(
            Step(
                "patch DaemonSet %s/%s" % (ds_namespace, name),
                ("patch", "apps", "daemonsets", ds_namespace),
                lambda ds_namespace=ds_namespace, name=name, patch=patch: kube.patch_daemon_set(
                    namespace=ds_namespace, name=name, patch=patch
                ),
            )
        )
    steps += _object_steps(kube, plan, OBJECTS_AFTER_POLICY, deletes=False)
    if plan.node_patches:
        steps.append(
            Step(
                "label %d node(s)" % len(plan.node_patches),
                NODE_PATCH_ACCESS,
                lambda: receipts.update(label_nodes(kube, plan.node_patches)),
            )
        )
    for name in sorted(plan.config_map_deletes):
        steps.append(
            Step(
                "delete ConfigMap %s/%s" % (namespace, name),
                ("delete", "", "configmaps", namespace),
                lambda name=name: kube.delete_config_map(namespace=namespace, name=name),
            )
        )
    steps += _object_steps(kube, plan, OBJECTS_BEFORE_POLICY + OBJECTS_AFTER_POLICY, deletes=True)
    if plan.restart:
        steps.append(
            Step(
                "restart the device plugin",
                ("patch", "apps", "daemonsets", namespace),
                lambda: restart_daemon_set(kube, namespace, DEVICE_PLUGIN_DAEMONSET),
            )
        )
    return steps


def plan_access(kube, operator, plan):
    """The (verb, API group, resource, namespace) accesses the plan's writes need."""
    return [step.access for step in plan_steps(kube, operator, plan)]


def require_access(kube, accesses):
    """Refuse, before any write, when the identity may not make some of ``accesses`` (asked once each through
    SelfSubjectAccessReviews): a change the API server would refuse half way is not started."""
    missing = [access for access in sorted(set(accesses), key=str) if not kube.may(*access)]
    if missing:
        raise GpuShareError(
            "Nothing was written: the API server would refuse part of this change. %s."
            % " ".join(access_hint(*access) + "." for access in missing),
            status=FORBIDDEN,
            reason="Forbidden",
        )


def label_nodes(kube, node_patches):
    """Patch every node of ``node_patches`` (name -> merge patch), NODE_WRITE_CONCURRENCY at a time; returns the
    resourceVersion each node had after its patch (name -> resourceVersion).

    Every patch is tried; when some fail, the error names them and counts the others (the same task, run
    again, labels the rest: each patch sets only the labels it owns).
    """

    def label(name):
        try:
            return kube.patch_node(name=name, patch=node_patches[name])
        except GpuShareError as exc:
            return exc

    names = sorted(node_patches)
    with ThreadPoolExecutor(max_workers=max(1, min(NODE_WRITE_CONCURRENCY, len(names)))) as pool:
        outcomes = dict(zip(names, pool.map(label, names)))
    failed = dict((name, exc) for name, exc in outcomes.items() if isinstance(exc, GpuShareError))
    if failed:
        # A 409 only when every failure is one, so that the runner plans again only for conflicts.
        first = failed[sorted(failed, key=lambda name: (failed[name].status == CONFLICT, name))[0]]
        error = GpuShareError(
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
        if len(failed) < len(names):
            error.written = ["label %d of %d node(s)" % (len(names) - len(failed), len(names))]
        raise error
    return dict((name, ((node or {}).get("metadata") or {}).get("resourceVersion")) for name, node in outcomes.items())


def write_plan(kube, operator, plan):
    """Make the plan's writes (once the identity is known to be allowed them all); on failure, say what was
    written and what was left undone (the error's ``written`` and ``node_versions`` hold it too). Returns the
    ``Written`` of ``Planned(operator, plan)``, with no conflict."""
    node_versions = {}
    steps = plan_steps(kube, operator, plan, node_versions)
    require_access(kube, [step.access for step in steps])
    for index, step in enumerate(steps):
        try:
            step.call()
        except GpuShareError as exc:
            done = ", ".join(earlier.what for earlier in steps[:index]) or "nothing"
            left = ", ".join(later.what for later in steps[index + 1 :]) or "nothing else"
            error = GpuShareError(
                "%s Written before the failure: %s. Not written: %s. The cluster is left in a state the same task, "
                "run again, completes." % (exc.msg, done, left),
                status=exc.status,
                reason=exc.reason,
                details=exc.details,
            )
            error.written = [earlier.what for earlier in steps[:index]] + list(getattr(exc, "written", ()))
            error.node_versions = node_versions
            raise error
    return Written(Planned(operator, plan), [step.what for step in steps], dict(plan.expectations), node_versions, 0)


def write_replanning(kube, planned, read_and_plan, attempts=REPLAN_ATTEMPTS, pause=REPLAN_PAUSE_SECONDS):
    """``write_plan`` of ``planned`` (a ``Planned``), and on a 409 Conflict read again, plan again and write what is
    left, up to ``attempts`` writes in all; the one re-plan loop, used by every runner that writes a plan.

    A patch that changes a restore record, or the device plugin's ``{name, default}``, carries the
    resourceVersion of the object it was planned from (``plan/objects.py``), so a concurrent run that changed
    that object in between makes it fail with 409 rather than lose that run's update; a create of an object
    another run created first fails with 409 too. ``read_and_plan()`` reads the cluster afresh and returns a
    ``Planned`` for the same request: writes already made show in what it reads, so the new plan holds only what
    is left. Returns the ``Written`` of the last attempt, whose ``expectations`` and ``node_versions`` also keep
    those of the earlier attempts (a node written before the conflict still has to show the change), and whose
    ``writes`` and ``conflicts`` count every attempt.
    """
    expectations, versions, earlier = {}, {}, []  # nodes to wait for, as written, and what earlier attempts wrote
    for attempt in range(1, attempts + 1):
        try:
            written = write_plan(kube, planned.operator, planned.plan)
        except GpuShareError as exc:
            if exc.status != CONFLICT:
                if earlier:
                    exc.msg += (
                        " Written by earlier attempts, before a conflict (409) made this task read and plan "
                        "again: %s." % ", ".join(earlier)
                    )
                raise
            earlier += [what for what in getattr(exc, "written", ()) if what not in earlier]
            if attempt == attempts:
                raise GpuShareError(
                    "Other writers kept changing the objects this task changes: each of %d attempts, read and "
                    "planned afresh, met a conflict (409). Written by the attempts: %s. Last: %s"
                    % (attempts, ", ".join(earlier) or "nothing", exc.msg),
                    status=exc.status,
                    reason=exc.reason,
                    details=exc.details,
                )
            expectations.update(planned.plan.expectations)
            versions.update(getattr(exc, "node_versions", {}))
            time.sleep(random.uniform(0, pause * attempt))
            planned = read_and_plan()
            continue
        expectations.update(written.expectations)
        versions.update(written.node_versions)
        return Written(
            planned,
            earlier + [what for what in written.writes if what not in earlier],
            expectations,
            versions,
            attempt - 1,
        )


def after_writes(exc, written, waiting_for):
    """The error of a wait that failed after every write (``written``, a ``Written``) was made: it says so (nothing
    is half written) and keeps ``exc``'s status and details (the nodes a drain keeps cordoned)."""
    return GpuShareError(
        "%s Every write was made before waiting for %s (%s): nothing is half written, and running the task "
        "again waits again." % (exc.msg, waiting_for, ", ".join(written.writes) or "nothing was left to write"),
        status=exc.status,
        reason=exc.reason,
        details=exc.details,
    )
