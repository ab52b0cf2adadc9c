# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a reset to unshared GPUs: which node labels go (or point at ``unshared``), whether the policy
default is cleared, which of the collection's ConfigMap keys are removed, and which nodes still run MIG.
Pure; ``run/reset.py`` reads, plans the MIG part with ``plan/mig.py`` and writes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    POLICY_DEVICE_PLUGIN_FIELD,
    device_plugin_config_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import ALL_DISABLED
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.yaml_text import dump_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import (
    Fleet,
    device_plugin_config_patch,
    recorded,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import keys_created_by_collection
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import (
    NodeExpectation,
    SharingPlan,
    existing_profile,
    label_nodes,
)

# A profile without sharing: nodes pointed at it are unshared even when the policy default shares.
UNSHARED_KEY = "unshared"
UNSHARED_CONFIG = {"version": "v1"}


def plan_reset(
    platform_namespace,
    config_map_name,
    policy,
    config_map,
    nodes,
    node_names=None,
    config_key=None,
    remove_profiles=False,
    restart=None,
):
    """Bring nodes back to unshared (or onto ``config_key``): labels, policy default, our keys.

    ``node_names`` None means every GPU node: their labels go and the policy default is cleared.
    For some nodes only, when the policy default is itself a sharing profile, removing the label
    would leave them shared, so they are pointed at the ``unshared`` profile instead.
    """
    fleet = Fleet(nodes)
    fleet.require(node_names)
    states = fleet.states
    every_node = node_names is None
    targets = fleet.gpu_node_names() if every_node else list(node_names)
    plan = SharingPlan(platform_namespace, config_map_name)
    policy_name, policy_default = device_plugin_config_of(policy)
    data = dict((config_map or {}).get("data") or {})

    new_default = None if every_node else policy_default
    if config_key is not None and config_key not in data:
        raise GpuShareError(
            "config_key %r is not a key of ConfigMap %s/%s (keys: %s)."
            % (config_key, platform_namespace, config_map_name, ", ".join(sorted(data)) or "none")
        )
    target_key = _target_key(config_key, every_node, config_map, policy_default)
    data_patch = {}
    if target_key == UNSHARED_KEY and UNSHARED_KEY not in data:
        data_patch[UNSHARED_KEY] = dump_config(UNSHARED_CONFIG)

    label_nodes(plan, fleet, targets, target_key)
    if new_default != policy_default:
        plan.policy_patch = device_plugin_config_patch(policy, policy_name, None)
    plan.before["cluster_policy"] = {POLICY_DEVICE_PLUGIN_FIELD: {"name": policy_name, "default": policy_default}}
    plan.after["cluster_policy"] = {POLICY_DEVICE_PLUGIN_FIELD: {"name": policy_name, "default": new_default}}

    if remove_profiles and config_map is not None:
        still_used = set([new_default, target_key]) | set(
            state.device_plugin_config for name, state in states.items() if name not in targets
        )
        data_patch.update((key, None) for key in _unused_collection_keys(config_map, data, still_used))
    if data_patch:
        _plan_data_patch(plan, config_map, data, data_patch)
    _plan_reset_expectations(plan, fleet, targets, target_key, config_map, restart)
    return plan


def _target_key(config_key, every_node, config_map, policy_default):
    """The profile the target nodes are pointed at: ``config_key``; else, for some nodes only while the policy
    default is a sharing profile, ``unshared``; else None (their label goes)."""
    if (
        config_key is None
        and not every_node
        and policy_default
        and existing_profile(config_map, policy_default, policy_default)[1]
    ):
        return UNSHARED_KEY
    return config_key


def _unused_collection_keys(config_map, data, still_used):
    """The keys the collection added to the ConfigMap that no node or default uses any more, sorted."""
    return [key for key in sorted(keys_created_by_collection(config_map)) if key not in still_used and key in data]


def _plan_data_patch(plan, config_map, data, data_patch):
    """Write ``data_patch`` into the ConfigMap (create it when missing), recording the values it replaces."""
    previous = dict((key, data.get(key)) for key in data_patch)
    if config_map is None:
        plan.config_map_create = data_patch
    else:
        plan.config_map_patch = recorded(config_map, {"data": data_patch}, "data", previous)
    plan.before["config_map"] = previous
    plan.after["config_map"] = data_patch


def _plan_reset_expectations(plan, fleet, targets, target_key, config_map, restart):
    """What every target GPU node must show (``target_key``'s profile, or none), and whether the device plugin
    restarts: asked for, or when anything changes or a node does not show it yet."""
    fallback = (
        existing_profile(config_map, target_key, target_key)[1] if target_key and target_key != UNSHARED_KEY else None
    )
    expectation = NodeExpectation(fallback)
    plan.expectations = dict((name, expectation) for name in targets if fleet.states[name].is_gpu_node)
    plan.restart = (
        (plan.changed or any(expectation.problem(fleet.nodes[name]) for name in plan.expectations))
        if restart is None
        else restart
    )


def mig_enabled_nodes(nodes, node_names):
    """Nodes whose MIG configuration is anything but all-disabled."""
    names = set(node_names)
    return sorted(
        node["metadata"]["name"]
        for node in nodes
        if node["metadata"]["name"] in names and NodeGpuState.from_node(node).mig_config not in (None, ALL_DISABLED)
    )
