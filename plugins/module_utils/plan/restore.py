# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning ``gpu_reset restore: true``: from the restore records (``restore_record.py``) on the policy,
the ConfigMaps and the nodes, the patches that put back exactly what was there before the collection's first
change, and what each node must show once they are applied. Pure; ``run/reset.py`` applies it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import device_plugin_config_of
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    BUSY_MIG_STATES,
    LABEL_MIG_CONFIG,
    LABEL_MIG_CONFIG_STATE,
    NodeGpuState,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import restore_patch, was_created
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import NodeExpectation, existing_profile


def apply_merge_patch(target, patch):
    """RFC 7386: what ``target`` becomes once the API server applies merge ``patch`` to it."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


class RestorePlan(ObjectWrites):
    """Writes that put every recorded object back as it was before this collection changed it."""

    def __init__(self):
        super(RestorePlan, self).__init__()
        self.mig_changes = {}  # node name -> restored nvidia.com/mig.config value


def plan_restore(policy, config_maps, nodes, daemon_sets=()):
    """Plan putting back the ClusterPolicy, the ConfigMaps of the operator's namespace (all of them: the
    restored policy may name one the collection never changed) and the nodes, from their restore records.

    ``daemon_sets`` are DaemonSets outside the operator's own (NFD's worker, changed by gpu_tolerations).
    Refuses a node whose MIG configuration would change while its previous MIG change is still pending.
    """
    plan = RestorePlan()
    for daemon_set in daemon_sets:
        _restore_daemon_set(plan, daemon_set)
    restored_policy = policy
    patch = restore_patch(policy)
    if patch:
        plan.policy_patch = patch
        restored_policy = apply_merge_patch(policy, patch)
        plan.before["cluster_policy"] = policy.get("spec")
        plan.after["cluster_policy"] = restored_policy.get("spec")
    restored_maps = _restore_config_maps(plan, config_maps)

    config_map_name, default = device_plugin_config_of(restored_policy)
    restored_config_map = restored_maps.get(config_map_name)
    for node in nodes:
        restored = _restore_node(plan, node)
        state = NodeGpuState.from_node(restored)
        if state.is_gpu_node:
            key = state.device_plugin_config or default
            config = existing_profile(restored_config_map, key, key)[1] if key else None
            plan.expectations[node["metadata"]["name"]] = NodeExpectation(config)
    _refuse_busy_mig_changes(plan, nodes)
    plan.restart = plan.changed
    return plan


def _restore_daemon_set(plan, daemon_set):
    """Put back a DaemonSet's recorded fields, its tolerations shown before and after."""
    patch = restore_patch(daemon_set)
    if patch:
        key = (daemon_set["metadata"]["namespace"], daemon_set["metadata"]["name"])
        plan.daemon_set_patches[key] = patch
        restored = apply_merge_patch(daemon_set, patch)
        for side, obj in ((plan.before, daemon_set), (plan.after, restored)):
            template = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
            side.setdefault("daemon_sets", {})["%s/%s" % key] = {"tolerations": template.get("tolerations")}


def _restore_config_maps(plan, config_maps):
    """Delete the ConfigMaps the collection created, put back the recorded keys of the others; returns every
    ConfigMap kept, as restored, by name."""
    restored_maps = {}
    for config_map in config_maps:
        name = config_map["metadata"]["name"]
        if was_created(config_map):
            plan.config_map_deletes.append(name)
            plan.before.setdefault("config_maps", {})[name] = config_map.get("data")
            plan.after.setdefault("config_maps", {})[name] = None
            continue
        patch = restore_patch(config_map)
        restored_maps[name] = apply_merge_patch(config_map, patch) if patch else config_map
        if patch:
            plan.config_map_patches[name] = patch
            plan.before.setdefault("config_maps", {})[name] = config_map.get("data")
            plan.after.setdefault("config_maps", {})[name] = restored_maps[name].get("data")
    return restored_maps


def _restore_node(plan, node):
    """Put back a node's recorded labels (a restored MIG config into ``plan.mig_changes``, its state label cleared);
    returns the node as restored."""
    patch = restore_patch(node)
    if not patch:
        return node
    name = node["metadata"]["name"]
    restored = apply_merge_patch(node, patch)
    plan.node_patches[name] = patch
    before_labels, after_labels = node["metadata"].get("labels") or {}, restored["metadata"].get("labels") or {}
    changed_labels = sorted(set(patch["metadata"].get("labels") or {}))
    plan.before.setdefault("nodes", {})[name] = dict((label, before_labels.get(label)) for label in changed_labels)
    plan.after.setdefault("nodes", {})[name] = dict((label, after_labels.get(label)) for label in changed_labels)
    if before_labels.get(LABEL_MIG_CONFIG) != after_labels.get(LABEL_MIG_CONFIG) and after_labels.get(LABEL_MIG_CONFIG):
        plan.mig_changes[name] = after_labels[LABEL_MIG_CONFIG]
        # The previous change's success or failure must not pass for this one's result.
        patch["metadata"]["labels"][LABEL_MIG_CONFIG_STATE] = None
    return restored


def _refuse_busy_mig_changes(plan, nodes):
    """Refuse restoring the MIG config of a node whose previous MIG change is still in progress."""
    nodes_by_name = dict((node["metadata"]["name"], node) for node in nodes)
    busy = sorted(
        name
        for name in plan.mig_changes
        if NodeGpuState.from_node(nodes_by_name[name]).mig_config_state in BUSY_MIG_STATES
    )
    if busy:
        raise GpuShareError(
            "Cannot restore the MIG configuration of node(s) %s: their previous MIG change is still in progress "
            "(nvidia.com/mig.config.state pending or rebooting); wait for it to finish, then run again."
            % ", ".join(busy)
        )
