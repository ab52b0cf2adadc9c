"""Per-node reconcile: the operands of one node (mig-manager, then the device plugin and GPU Feature
Discovery), and the writing of what they changed.

Level-triggered and stateless: everything is derived from the Node (its labels, its
``sim.gpushare.k8s/hardware`` truth and ``sim.gpushare.k8s/applied`` record), the ClusterPolicy, the
device plugin DaemonSet and ConfigMaps, and written back with the resourceVersion it was read at, so
a concurrent change makes the write fail and the node is simply reconciled again.
"""

import json
import logging
import time

from testbed.simulator import device_plugin, gpu_feature_discovery, gpu_operator
from testbed.simulator.kube import merge_patch
from testbed.simulator.mig_manager import MigManager
from testbed.simulator.names import APPLIED_ANNOTATION, HARDWARE_ANNOTATION, MIG_STATE_LABEL, NVIDIA, is_gfd_label

log = logging.getLogger(__name__)


def fresh_applied(hardware, daemonset, mig_label):
    """The record of a node whose operands just started on the seeded state: unshared, MIG disabled."""
    return {
        "configLabel": None,
        "daemonSet": gpu_operator.daemonset_revision(daemonset),
        "migStrategy": gpu_operator.plugin_env(daemonset)[gpu_operator.MIG_STRATEGY_ENV],
        "sharing": None,
        "waitingForConfigMap": None,
        "migLabel": mig_label,
        "migLayout": [None] * hardware["count"],
    }


class NodeChange(object):
    """What one reconcile writes: label and annotation edits, node status resources, and Events."""

    def __init__(self, node):
        self.node = node
        self.labels = dict(node["metadata"].get("labels") or {})
        self.annotations = dict(node["metadata"].get("annotations") or {})
        self.applied = json.loads(self.annotations.get(APPLIED_ANNOTATION) or "{}")
        self.events = []  # (reason, message, component)
        self.requeue_after = None
        self.resources = None  # NodeView to advertise and label

    def event(self, reason, message, component):
        log.info("%s: %s: %s", self.node["metadata"]["name"], reason, message)
        self.events.append((reason, message, component))


class NodeView(object):
    """What the device plugin advertises (capacity, allocatable) and GFD labels, for one node."""

    def __init__(self, labels, capacity, allocatable):
        self.labels = labels
        self.capacity = capacity
        self.allocatable = allocatable


def render(hardware, layout, mig_strategy, sharing):
    """The node's ``nvidia.com/*`` resources and GFD labels (without ``gfd.timestamp``); pure."""
    advertised = device_plugin.advertised_resources(hardware, layout, mig_strategy)
    capacity, allocatable = device_plugin.resources(advertised, sharing)
    return NodeView(gpu_feature_discovery.labels(hardware, advertised, mig_strategy, sharing), capacity, allocatable)


class NodeReconciler(object):
    def __init__(self, kube, cluster, step_delay):
        """``cluster`` gives the cached objects: ``.policy()``, ``.device_plugin()``, ``.node(name)``..."""
        self.kube = kube
        self.cluster = cluster
        self.mig_manager = MigManager(kube, cluster, step_delay)

    def reconcile(self, name):
        """Bring one node in line; returns seconds after which to look again, or None."""
        node = self.cluster.node(name)
        policy, daemonset = self.cluster.policy(), self.cluster.device_plugin()
        if (
            node is None
            or HARDWARE_ANNOTATION not in (node["metadata"].get("annotations") or {})
            or not policy
            or not daemonset
        ):
            return None
        hardware = json.loads(node["metadata"]["annotations"][HARDWARE_ANNOTATION])
        change = NodeChange(node)
        if not change.applied:
            change.applied = fresh_applied(hardware, daemonset, None)
        plugin_restarts = self.mig_manager.step(change, hardware, policy)
        if change.labels.get(MIG_STATE_LABEL) != "pending":  # paused while mig-manager works
            device_plugin.run(self.cluster, self.kube, change, daemonset, plugin_restarts)
            applied = change.applied
            change.resources = render(
                hardware,
                applied["migLayout"],
                applied["migStrategy"],
                device_plugin.Sharing.from_dict(applied["sharing"]),
            )
        self._write(change)
        return change.requeue_after

    # writing -------------------------------------------------------------------------------------

    def _write(self, change):
        """Write status resources, then labels and annotations; both only when they differ."""
        node = change.node
        metadata = node["metadata"]
        resource_version = metadata["resourceVersion"]
        if change.resources is not None:
            resource_version = self._write_resources(node, change.resources, resource_version)
            self._render_labels(change, change.resources.labels)
        change.annotations[APPLIED_ANNOTATION] = json.dumps(change.applied, sort_keys=True)
        label_patch = _dict_patch(metadata.get("labels") or {}, change.labels)
        annotation_patch = _dict_patch(metadata.get("annotations") or {}, change.annotations)
        if label_patch or annotation_patch:
            merge_patch(
                self.kube.core.patch_node,
                metadata["name"],
                body={
                    "metadata": {
                        "resourceVersion": resource_version,
                        "labels": label_patch,
                        "annotations": annotation_patch,
                    }
                },
            )
        for reason, message, component in change.events:
            self.kube.node_event(node, reason, message, component)

    def _render_labels(self, change, gfd_labels):
        """Replace the GFD labels; stamp gfd.timestamp only when they changed, as GFD's rewrite does."""
        current = {
            key: value
            for key, value in change.labels.items()
            if is_gfd_label(key) and key != "nvidia.com/gfd.timestamp"
        }
        if current == gfd_labels:
            return
        for key in current:
            del change.labels[key]
        change.labels.update(gfd_labels)
        change.labels["nvidia.com/gfd.timestamp"] = str(int(time.time()))

    def _write_resources(self, node, view, resource_version):
        status = node.get("status") or {}
        patch = {}
        for field, wanted in (("capacity", view.capacity), ("allocatable", view.allocatable)):
            current = {key: value for key, value in (status.get(field) or {}).items() if key.startswith(NVIDIA)}
            if current != wanted:
                patch[field] = dict({key: None for key in current}, **wanted)
        if not patch:
            return resource_version
        updated = merge_patch(
            self.kube.core.patch_node_status,
            node["metadata"]["name"],
            body={"metadata": {"resourceVersion": resource_version}, "status": patch},
        )
        return updated["metadata"]["resourceVersion"]


def _dict_patch(current, wanted):
    """A merge patch turning the ``current`` map into ``wanted`` (None deletes a key)."""
    patch = {key: value for key, value in wanted.items() if current.get(key) != value}
    patch.update({key: None for key in current if key not in wanted})
    return patch
