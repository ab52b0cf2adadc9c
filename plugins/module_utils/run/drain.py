# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU-pod safety, one rule for every module: refuse while GPU pods run on a node the change touches,
unless ``drain`` (cordon, evict through the Eviction API so PodDisruptionBudgets are respected, wait until
the pods are gone, change, uncordon after success) or, where a module offers it, ``force``.

mig-manager never evicts workloads and fails a MIG change under a running GPU pod ("In use by another
client", gpu-operator #1845); a device-plugin change under a running pod breaks its CUDA contexts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import NOT_FOUND, TOO_MANY_REQUESTS, GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import wait_for_pods_gone
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import (
    describe_pods_by_node,
    gpu_pods_on,
    pod_names,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import NODE_PATCH_ACCESS, require_access

# Kubernetes serves policy/v1 Evictions from 1.22 on; older servers (1.20, 1.21) only policy/v1beta1.
EVICTION_API_VERSIONS = ("policy/v1", "policy/v1beta1")
NOT_SERVED = (400, 404, 415)


def gpu_pods_in_the_way(kube, node_names):
    """The active GPU pods bound to the nodes a change touches, by node (one pod LIST, none without nodes)."""
    return gpu_pods_on(kube.list_pods(), node_names) if node_names else {}


def refuse_while_gpu_pods_run(blocking, drain, force=None, change="change"):
    """Refuse while GPU pods run (``blocking``, by node) unless ``drain`` or ``force`` (None: the module has no
    ``force``). Runs in check mode too, so check mode refuses what the real run refuses."""
    if not blocking or drain or force:
        return
    options = (
        "set drain=true to cordon the nodes, evict them (PodDisruptionBudgets respected) and uncordon the nodes after"
    )
    if force is not None:
        options += (
            ", or force=true to go ahead under them (their CUDA contexts break, and a MIG change fails under them)"
        )
    raise GpuShareError(
        "GPU pods run on the node(s) to %s: %s. Stop them, or %s." % (change, describe_pods_by_node(blocking), options)
    )


def drain_report(blocking, drain):
    """The ``evicted`` result field: by node, the pods drain evicts (in check mode, would evict)."""
    return dict((name, pod_names(pods)) for name, pods in blocking.items()) if drain else {}


def evict(kube, namespace, name):
    """Evict one pod through the Eviction API (policy/v1, else the policy/v1beta1 older servers serve)."""
    for version in EVICTION_API_VERSIONS:
        try:
            kube.evict_pod(namespace=namespace, name=name, policy_api_version=version)
            return
        except GpuShareError as exc:
            if exc.status == TOO_MANY_REQUESTS:
                raise GpuShareError(
                    "Pod %s/%s cannot be evicted: a PodDisruptionBudget allows no disruption now (%s). Scale its "
                    "workload up, relax the budget or stop the pod yourself, then run again."
                    % (namespace, name, exc.msg),
                    status=exc.status,
                    reason=exc.reason,
                )
            if exc.status not in NOT_SERVED:
                raise
            if exc.status == NOT_FOUND and version == EVICTION_API_VERSIONS[-1]:
                return  # the pod is already gone


def set_unschedulable(kube, names, unschedulable):
    for name in names:
        kube.patch_node(name=name, patch={"spec": {"unschedulable": True if unschedulable else None}})


def drain_nodes(kube, fleet, names, timeout, purpose):
    """Cordon the schedulable nodes of ``names`` (of ``fleet``, the LIST the change was planned from), evict
    their GPU pods, wait until they are gone.

    Returns (cordoned node names, evicted pods by node). On failure the nodes cordoned here are
    uncordoned again (nothing else was changed yet) and the error says which pods were evicted.
    """
    cordoned = sorted(name for name in names if not fleet.states[name].unschedulable)
    set_unschedulable(kube, cordoned, True)
    evicted = {}
    try:
        # Listed after cordoning, so no GPU pod scheduled in between is missed.
        for name, pods in sorted(gpu_pods_in_the_way(kube, names).items()):
            for pod in pods:
                evict(kube, pod["namespace"], pod["name"])
                evicted.setdefault(name, []).append(pod)
        for name, pods in sorted(evicted.items()):
            wait_for_pods_gone(
                kube, name, pod_names(pods), timeout, "the evicted GPU pods of node %s to be gone" % name
            )
    except GpuShareError as exc:
        set_unschedulable(kube, cordoned, False)
        done = " Already evicted: %s." % describe_pods_by_node(evicted) if evicted else ""
        raise GpuShareError(
            "Draining for %s failed, nothing was changed and node(s) %s are schedulable again: %s%s"
            % (purpose, ", ".join(sorted(names)), exc.msg, done),
            status=exc.status,
            reason=exc.reason,
        )
    return cordoned, dict((name, pod_names(pods)) for name, pods in evicted.items())


def drained_change(kube, fleet, names, timeout, purpose, change, uncordon=True):
    """Drain ``names``, call ``change()``, and uncordon the nodes cordoned here once it succeeded.

    Returns (what ``change`` returned, cordoned nodes, evicted pods by node). When ``change`` fails, nodes
    its error names as unfinished (``details`` ``failed``/``unmet``) stay cordoned, and the error says so;
    the others are uncordoned. ``uncordon=False`` leaves every cordoned node cordoned (no wait: the module
    cannot tell when the change is done).
    """
    cordoned, evicted = drain_nodes(kube, fleet, names, timeout, purpose) if names else ([], {})
    try:
        outcome = change()
    except GpuShareError as exc:
        unfinished = set((exc.details or {}).get("failed") or {}) | set((exc.details or {}).get("unmet") or {})
        set_unschedulable(kube, [name for name in cordoned if name not in unfinished], False)
        kept = sorted(name for name in cordoned if name in unfinished)
        note = (
            (
                " Node(s) %s stay cordoned (spec.unschedulable=true) because their change did not complete; uncordon "
                "them (kubectl uncordon) once it did." % ", ".join(kept)
            )
            if kept
            else ""
        )
        raise GpuShareError(exc.msg + note, status=exc.status, reason=exc.reason, details=exc.details)
    if uncordon:
        set_unschedulable(kube, cordoned, False)
    return outcome, cordoned, evicted


class GpuPodGuard(object):
    """The GPU-pod rule for one change to the nodes ``names`` of ``fleet``, from the refusal to the uncordon.

    Made before check mode returns, so check mode refuses what the real run refuses: it lists the GPU pods in
    the way (one pod LIST) and refuses unless ``drain`` or ``force`` (None: the module has no ``force``).
    ``fields()`` are the result's ``evicted`` and ``cordoned`` (in check mode, what drain would do);
    ``run(...)`` drains when asked, makes the change and uncordons.
    """

    def __init__(self, kube, fleet, names, drain, force=None, change="change"):
        self.kube = kube
        self.fleet = fleet
        self.names = names
        self.drain = drain
        # With force and no drain the pods change nothing: no need to list them.
        blocking = {} if force and not drain else gpu_pods_in_the_way(kube, names)
        refuse_while_gpu_pods_run(blocking, drain, force, change)
        self.blocking = blocking
        self.evicted = drain_report(blocking, drain)
        self.cordoned = []

    def fields(self):
        return dict(evicted=self.evicted, cordoned=self.cordoned)

    def run(self, module, change, timeout, purpose, wait, access=()):
        """``change()`` under the rule; returns what it returned. Without ``wait`` drained nodes stay cordoned
        (the module cannot tell when the change is done), and a warning says so. Before a drain, the identity must
        be allowed the drain's writes and the change's (``access``, from ``writer.plan_access``): a pod is never
        evicted for a change the API server would then refuse."""
        if self.drain and self.blocking:
            evictions = set(
                ("create", "", "pods/eviction", pod["namespace"]) for pods in self.blocking.values() for pod in pods
            )
            require_access(self.kube, [NODE_PATCH_ACCESS] + sorted(evictions) + list(access))
        outcome, self.cordoned, self.evicted = drained_change(
            self.kube, self.fleet, self.names if self.drain else [], timeout, purpose, change, uncordon=wait
        )
        if self.cordoned and not wait:
            module.ansible.warn(
                "Node(s) %s stay cordoned: without wait the module cannot tell when %s is done; uncordon them "
                "(kubectl uncordon) once it is." % (", ".join(self.cordoned), purpose)
            )
        return outcome
