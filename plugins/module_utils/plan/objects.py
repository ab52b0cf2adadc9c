# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every planner works on and produces: the ``Fleet`` of nodes it reads, and ``ObjectWrites``,
the ConfigMap, ClusterPolicy and node writes the one writer (``run/writer.py``) applies."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import POLICY_DEVICE_PLUGIN_FIELD
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import record_patch


class Fleet(object):
    """The nodes of one node LIST, as API dicts (``nodes``) and as ``NodeGpuState`` (``states``), by name."""

    def __init__(self, nodes):
        self.nodes = dict((node["metadata"]["name"], node) for node in nodes)
        self.states = dict((name, NodeGpuState.from_node(node)) for name, node in self.nodes.items())

    def require(self, names):
        """Refuse node names the cluster does not have."""
        missing = sorted(set(names or ()) - set(self.nodes))
        if missing:
            raise GpuShareError("Node(s) not found: %s." % ", ".join(missing))

    def gpu_node_names(self):
        return sorted(name for name, state in self.states.items() if state.is_gpu_node)


class ObjectWrites(object):
    """The writes of one plan and what to wait for afterwards.

    ``config_map`` names the ConfigMap a sharing or MIG plan writes (``config_map_create``, the data it is created
    with, and ``config_map_patch`` read and set its write); a restore plan writes several, through
    ``config_map_creates``, ``config_map_patches`` and ``config_map_deletes``. ``expectations`` maps a
    node name to what it must show afterwards (an object with ``problem(node) -> None | str``).
    """

    def __init__(self, config_map=None):
        self.config_map = config_map
        self.config_map_creates = {}  # name -> data
        self.config_map_patches = {}  # name -> merge patch
        self.config_map_deletes = []
        self.policy_patch = None
        self.daemon_set_patches = {}  # (namespace, name) -> merge patch (NFD's worker, in gpu_tolerations)
        # Secrets, ResourceQuotas and OpenShift's MachineSets and autoscalers (run/writer.py's OBJECT_KINDS):
        # (kind, namespace or None, name) -> ("create", body) | ("patch", merge patch) | ("delete", None)
        self.object_writes = {}
        self.node_patches = {}  # name -> merge patch
        self.restart = False  # restart the device plugin after writing
        self.expectations = {}
        self.before = {}
        self.after = {}
        self.warnings = []

    @property
    def config_map_create(self):
        """The data the plan's ConfigMap is created with when it is to be created, else None."""
        return self.config_map_creates.get(self.config_map)

    @config_map_create.setter
    def config_map_create(self, data):
        self.config_map_creates[self.config_map] = data

    @property
    def config_map_patch(self):
        """The merge patch of the plan's ConfigMap, else None."""
        return self.config_map_patches.get(self.config_map)

    @config_map_patch.setter
    def config_map_patch(self, patch):
        self.config_map_patches[self.config_map] = patch

    @property
    def changed(self):
        return bool(
            self.config_map_creates
            or self.config_map_patches
            or self.config_map_deletes
            or self.policy_patch
            or self.daemon_set_patches
            or self.object_writes
            or self.node_patches
            or self.restart
        )

    def relabel(self, fleet, name, label, value, also=None):
        """Set node ``name``'s ``label`` to ``value`` (None removes it), recording the value it had; ``also``
        adds more labels to the same patch. The diff shows the label before and after either way."""
        current = (fleet.nodes[name]["metadata"].get("labels") or {}).get(label)
        self.before.setdefault("nodes", {})[name] = {label: current}
        self.after.setdefault("nodes", {})[name] = {label: value}
        if current != value:
            labels = dict(also or {})
            labels[label] = value
            self.node_patches[name] = recorded(
                fleet.nodes[name], {"metadata": {"labels": labels}}, "labels", {label: current}
            )

    def changing_nodes(self, fleet):
        """Nodes whose GPUs this plan changes: relabelled, or not yet showing what they must show."""
        return sorted(
            set(self.node_patches)
            | set(
                name
                for name, expectation in self.expectations.items()
                if name in fleet.nodes and expectation.problem(fleet.nodes[name])
            )
        )


def on_version_read(obj, patch):
    """``patch`` made conditional on ``obj`` being as read: it carries ``obj``'s ``metadata.resourceVersion``,
    so the API server answers 409 Conflict when someone changed the object in between (a merge patch with a
    resourceVersion is an optimistic-concurrency precondition); the runner then reads again and plans again
    (``run/writer.py``, ``write_replanning``)."""
    version = (obj.get("metadata") or {}).get("resourceVersion")
    if version:
        patch.setdefault("metadata", {})["resourceVersion"] = version
    return patch


def recorded(obj, patch, section, previous_values):
    """``patch`` plus the restore-record annotation keeping ``previous_values`` of ``section`` of ``obj``
    (see restore_record); the annotation is left out when every field is already recorded.

    The annotation is one JSON string written whole, so a patch that changes it is made on the
    resourceVersion it was planned from (``on_version_read``): two runs recording at once would otherwise
    each write a record without the other's fields, or record the other's value as the value before."""
    annotations = record_patch(obj, section, previous_values)
    if annotations:
        patch.setdefault("metadata", {})["annotations"] = annotations
        on_version_read(obj, patch)
    return patch


def device_plugin_config_patch(policy, name, default):
    """The ClusterPolicy patch setting ``spec.devicePlugin.config`` to ``{name, default}``, recorded.

    The pair is written whole from the policy as read (a run that keeps the default writes back the default it
    read), so it is made on the policy's resourceVersion: a concurrent run's new default is never overwritten
    by a stale one."""
    current = ((policy.get("spec") or {}).get("devicePlugin") or {}).get("config")
    return on_version_read(
        policy,
        recorded(
            policy,
            {"spec": {"devicePlugin": {"config": {"name": name, "default": default}}}},
            "spec",
            {POLICY_DEVICE_PLUGIN_FIELD: current},
        ),
    )
