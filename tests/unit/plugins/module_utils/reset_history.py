# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A user's cluster before the collection changed it, and the changes gpu_timeslicing, gpu_mps and gpu_mig_config make
on it: shared by the tests of plan/reset.py and plan/restore.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from k8s_objects import (
    CONFIG_MAP,
    NAMESPACE,
    a100_node,
    cluster_policy,
    config_map,
    cpu_node,
    created_config_map,
    merge_patch,
    t4_node,
)

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import plan_mig
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.reset import plan_reset
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore import plan_restore
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import SharingRequest, plan_profile

LABEL = "nvidia.com/device-plugin.config"
MIG_LABEL = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
TS4 = build_sharing_config("time-slicing", 4)
MPS2 = build_sharing_config("mps", 2)
MIG_CONFIG_MAP = "default-mig-parted-config"
SHIPPED_MIG = config_map(
    {
        "config.yaml": "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
        "  all-1g.5gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        1g.5gb: 7\n"
    },
    name=MIG_CONFIG_MAP,
)


class Cluster(object):
    """The objects the planners read, changed the way the one writer and the API server change them."""

    def __init__(self, policy, config_maps, nodes):
        self.policy = policy
        self.config_maps = dict((cm["metadata"]["name"], cm) for cm in config_maps)
        self.nodes = dict((node["metadata"]["name"], node) for node in nodes)

    def node_list(self):
        return [copy.deepcopy(node) for node in self.nodes.values()]

    def apply(self, plan):
        for name, data in plan.config_map_creates.items():
            assert name not in self.config_maps
            self.config_maps[name] = created_config_map(data, created_record(), name=name)
        for name, patch in plan.config_map_patches.items():
            self.config_maps[name] = merge_patch(self.config_maps[name], patch)
        if plan.policy_patch:
            self.policy = merge_patch(self.policy, plan.policy_patch)
        for name, patch in plan.node_patches.items():
            self.nodes[name] = merge_patch(self.nodes[name], patch)
        for name in plan.config_map_deletes:
            del self.config_maps[name]
        return plan

    def profile(self, state, key, config=None, node_names=None, make_default=False):
        request = SharingRequest(
            state, key, CONFIG_MAP, config=config, node_names=node_names, make_default=make_default
        )
        cm = copy.deepcopy(self.config_maps.get(CONFIG_MAP))
        return self.apply(plan_profile(request, NAMESPACE, copy.deepcopy(self.policy), cm, self.node_list()))

    def reset(self, **kwargs):
        cm = copy.deepcopy(self.config_maps.get(CONFIG_MAP))
        return self.apply(plan_reset(NAMESPACE, CONFIG_MAP, copy.deepcopy(self.policy), cm, self.node_list(), **kwargs))

    def mig(self, request):
        active = copy.deepcopy(self.config_maps.get(MIG_CONFIG_MAP))
        return self.apply(plan_mig(request, copy.deepcopy(self.policy), active, None, self.node_list(), NAMESPACE))

    def restore(self):
        return self.apply(
            plan_restore(copy.deepcopy(self.policy), list(copy.deepcopy(self.config_maps).values()), self.node_list())
        )

    def snapshot(self):
        return copy.deepcopy((self.policy, self.config_maps, self.nodes))


def user_cluster():
    """A cluster a user prepared by hand: their own key in the device-plugin ConfigMap, their own labels and
    annotations on nodes, a policy that already names the ConfigMap."""
    t4 = t4_node("t4-a", annotations={"team": "vision"})
    t4["metadata"]["labels"]["pool"] = "inference"
    return Cluster(
        cluster_policy(config_name=CONFIG_MAP),
        [config_map({"users-own-key": "version: v1\n"}, annotations={"owner": "platform"}), copy.deepcopy(SHIPPED_MIG)],
        [t4, t4_node("t4-b"), a100_node("a100-a"), cpu_node("cpu-1")],
    )
