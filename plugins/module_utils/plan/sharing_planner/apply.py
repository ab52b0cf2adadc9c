# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a planned node is described (its mode, MIG layout, replicas), and the apply arguments: the gpu_reset,
gpu_mig_config, gpu_timeslicing and gpu_mps calls that get every changed node to its plan. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import MIG_STRATEGY_MIXED
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import layout_entries
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.gpu_state import GpuKind

CONFIG_NAME_PREFIX = "gpushare-plan-"
# What a node's GPU states come to: its ``mode`` (a GpuKind: mig where any GPU is, a sharing method where all share
# alike, whole where all are whole, else unknown), its MIG ``layout`` (mig-parted's entries) and its ``replicas``.
NodeMode = namedtuple("NodeMode", "mode layout replicas")
# A node the plan changes: its PoolNode, its choice (the planned GPU states) and the pods it runs.
Change = namedtuple("Change", "node choice pods")


def node_mode(states):
    """The NodeMode of a node whose GPUs are in ``states``."""
    kinds = set(state.kind for state in states)
    if GpuKind.MIG in kinds:
        return NodeMode(GpuKind.MIG, mig_parted_layout(states), None)
    if len(kinds) == 1 and states[0].is_shared:
        return NodeMode(states[0].kind, None, states[0].replicas)
    if kinds == set([GpuKind.WHOLE]):
        return NodeMode(GpuKind.WHOLE, None, None)
    return NodeMode(GpuKind.UNKNOWN, None, None)


def mig_parted_layout(states):
    """mig-parted entries for per-GPU states: one per distinct state, ``devices: all`` when all GPUs agree."""
    per_gpu = dict((index, state.layout if state.is_mig else None) for index, state in enumerate(states))
    return layout_entries(per_gpu, len(states))


def config_name_of(layout):
    """A name for a planned layout: the same layout always gets the same name, another layout another one (mig-manager
    does not reload a config edited under a name in use)."""
    digest = hashlib.sha256(json.dumps(layout, sort_keys=True).encode("utf-8")).hexdigest()[:10]
    return CONFIG_NAME_PREFIX + digest


def _sharing_kinds(states):
    return set(state.kind for state in states if state.is_shared)


def _has_mig(states):
    return any(state.kind in (GpuKind.MIG, GpuKind.UNKNOWN) for state in states)


def apply_arguments(changes, allow_moves):
    """The calls that get every changed node (``changes``: Change) to its planned states, by module, in the order to
    run them: gpu_reset for nodes leaving time-slicing, MPS or MIG; gpu_mig_config per distinct layout (the mixed
    strategy, one resource per profile); gpu_timeslicing and gpu_mps per replica count."""
    calls = dict(gpu_reset=[], gpu_mig_config=[], gpu_timeslicing=[], gpu_mps=[])
    groups = {}

    def add(module, key, arguments, name, drain):
        entry = groups.get((module, key))
        if entry is None:
            entry = groups[(module, key)] = dict(arguments, nodes=dict(names=[]))
            if drain is not None:
                entry["drain"] = False
            calls[module].append(entry)
        entry["nodes"]["names"].append(name)
        if drain:
            entry["drain"] = True

    for change in changes:
        node, choice = change.node, change.choice
        drain = bool(change.pods) and allow_moves
        old_sharing, new_sharing = _sharing_kinds(node.current), _sharing_kinds(choice)
        if (old_sharing and old_sharing != new_sharing) or (_has_mig(node.current) and not _has_mig(choice)):
            add("gpu_reset", None, {}, node.name, drain)
        mode = node_mode(choice)
        if mode.mode == GpuKind.MIG:
            name = config_name_of(mode.layout)
            add(
                "gpu_mig_config",
                name,
                dict(strategy=MIG_STRATEGY_MIXED, config_name=name, layout=mode.layout),
                node.name,
                drain,
            )
        elif mode.mode in GpuKind.SHARED:
            renamed = choice[0].renamed
            module = "gpu_timeslicing" if mode.mode == GpuKind.TIME_SLICING else "gpu_mps"
            key = shared_config_key(mode, renamed)
            add(module, key, dict(config_key=key, replicas=mode.replicas, rename_by_default=renamed), node.name, None)
    return calls


def shared_config_key(mode, renamed):
    """The device-plugin profile key of a shared NodeMode: one per method, replica count and renaming."""
    return "%s%s-%d%s" % (
        CONFIG_NAME_PREFIX,
        "ts" if mode.mode == GpuKind.TIME_SLICING else "mps",
        mode.replicas,
        "-shared" if renamed else "",
    )


def new_node_sharing(states):
    """gpu_machineset's ``sharing`` for new nodes whose GPUs take ``states``: the same config names the sharing modules
    get for nodes in that state, so new and re-partitioned nodes share one configuration."""
    mode = node_mode(states)
    if mode.mode == GpuKind.MIG:
        return dict(mode=GpuKind.MIG, config_name=config_name_of(mode.layout), layout=mode.layout)
    if mode.mode in GpuKind.SHARED:
        renamed = states[0].renamed
        return dict(
            mode=mode.mode,
            config_key=shared_config_key(mode, renamed),
            replicas=mode.replicas,
            rename_by_default=renamed,
        )
    return dict(mode=GpuKind.WHOLE)
