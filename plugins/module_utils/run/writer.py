# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one writer: applies a plan's objects in a safe order and restarts the device plugin when the plan says so."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import DEVICE_PLUGIN_DAEMONSET
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record

# The annotation `kubectl rollout restart` sets; any change to the pod template restarts the pods.
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"


def restart_daemon_set(kube, namespace, name):
    # Microseconds: two restarts within one second must still differ, or the second restarts nothing.
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kube.patch_daemon_set(
        namespace=namespace,
        name=name,
        patch={"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT_ANNOTATION: now}}}}},
    )


def write_plan_objects(kube, platform, plan):
    """Write a plan's ConfigMap, policy and node changes in the order that keeps a half-applied plan
    harmless and repairable by the next run: the ConfigMap first (unused until referenced), then the
    policy, then the node labels the operator's components act on."""
    if plan.create_config_map is not None:
        kube.create_config_map(
            namespace=platform.namespace,
            name=plan.config_map,
            data=plan.create_config_map,
            annotations=created_record(),
        )
    elif plan.config_map_patch:
        kube.patch_config_map(namespace=platform.namespace, name=plan.config_map, patch=plan.config_map_patch)
    if plan.policy_patch:
        kube.patch_cluster_policy(name=platform.policy_name, patch=plan.policy_patch)
    for name in sorted(plan.node_patches):
        kube.patch_node(name=name, patch=plan.node_patches[name])


def write_plan(kube, platform, plan):
    """Write the plan, then restart the device plugin if the plan says so, which makes it read it all."""
    write_plan_objects(kube, platform, plan)
    if plan.restart:
        restart_daemon_set(kube, platform.namespace, DEVICE_PLUGIN_DAEMONSET)
