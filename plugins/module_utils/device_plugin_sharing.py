# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_timeslicing and gpu_mps: read, plan, write in a safe order, restart, wait."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.gpushare.k8s.plugins.module_utils.device_plugin_config import METHOD_MPS, build_sharing_config
from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.module import OPERATOR_ARG_SPEC, wait_arg_spec
from ansible_collections.gpushare.k8s.plugins.module_utils.node_state import LABEL_PRODUCT, NodeGpuState
from ansible_collections.gpushare.k8s.plugins.module_utils.planning import SharingRequest, plan_profile
from ansible_collections.gpushare.k8s.plugins.module_utils.platform import (
    DEFAULT_DEVICE_PLUGIN_CONFIG_MAP,
    DEVICE_PLUGIN_DAEMONSET,
    MPS_CONTROL_DAEMONSET,
    detect_platform,
    device_plugin_config_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.restore_record import created_record
from ansible_collections.gpushare.k8s.plugins.module_utils.wait import wait_for_daemon_sets, wait_for_nodes

# The annotation `kubectl rollout restart` sets; any change to the pod template restarts the pods.
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"

NODES_SPEC = dict(
    type="dict",
    options=dict(
        names=dict(type="list", elements="str"),
        selector=dict(type="str"),
    ),
)

# Options every device-plugin profile module shares (documented in the device_plugin_profile fragment).
PROFILE_ARG_SPEC = dict(
    state=dict(type="str", default="present", choices=["present", "absent"]),
    replicas=dict(type="int"),
    rename_by_default=dict(type="bool", default=False),
    fail_requests_greater_than_one=dict(type="bool"),
    config_map=dict(type="str"),
    config_key=dict(type="str", no_log=False),
    nodes=NODES_SPEC,
    make_default=dict(type="bool", default=False),
    restart_device_plugin=dict(type="bool"),
    **dict(OPERATOR_ARG_SPEC, **wait_arg_spec(300))
)
PROFILE_REQUIRED_IF = [("state", "present", ["replicas"])]


def resolve_node_names(kube, nodes_option):
    """The node names the ``nodes`` option designates, or None when it designates none."""
    if not nodes_option or (not nodes_option.get("names") and not nodes_option.get("selector")):
        return None
    names = list(nodes_option.get("names") or [])
    selector = nodes_option.get("selector")
    if selector:
        matched = kube.list_nodes(label_selector=selector)[0]
        if not matched:
            hint = ""
            if LABEL_PRODUCT in selector:
                hint = " %s gains a -SHARED suffix once GPUs are shared: select by a label that does not change (gpu.machine, a pool label)." % LABEL_PRODUCT
            raise GpuShareError("The node selector %r matches no node; check the label (kubectl get nodes -l '%s').%s" % (selector, selector, hint))
        names += [node["metadata"]["name"] for node in matched if node["metadata"]["name"] not in names]
    return names


def node_summary(node):
    state = NodeGpuState.from_node(node)
    return dict(
        product=state.product,
        count=state.count,
        replicas=state.replicas,
        sharing_strategy=state.sharing_strategy,
        mps_capable=state.mps_capable,
        device_plugin_config=state.device_plugin_config,
        allocatable=state.allocatable,
    )


def restart_daemonset(kube, namespace, name):
    # Microseconds: two restarts within one second must still differ, or the second restarts nothing.
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    kube.patch_daemon_set(namespace=namespace, name=name,
                          patch={"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT_ANNOTATION: now}}}}})


def write_plan_objects(kube, platform, plan):
    """Write a plan's ConfigMap, policy and node changes in the order that keeps a half-applied plan
    harmless and repairable by the next run: the ConfigMap first (unused until referenced), then the
    policy, then the node labels the operator's components act on."""
    if plan.create_config_map is not None:
        kube.create_config_map(namespace=platform.namespace, name=plan.config_map, data=plan.create_config_map, annotations=created_record())
    elif plan.config_map_patch:
        kube.patch_config_map(namespace=platform.namespace, name=plan.config_map, patch=plan.config_map_patch)
    if plan.policy_patch:
        kube.patch_cluster_policy(name=platform.policy_name, patch=plan.policy_patch)
    for name in sorted(plan.node_patches):
        kube.patch_node(name=name, patch=plan.node_patches[name])


def apply_plan(kube, platform, plan):
    """Write the plan, then restart the device plugin if the plan says so, which makes it read it all."""
    write_plan_objects(kube, platform, plan)
    if plan.restart:
        restart_daemonset(kube, platform.namespace, DEVICE_PLUGIN_DAEMONSET)


def wait_for_plan(kube, plan, timeout, what, listed=None):
    """Wait until every node the plan affects shows its expectation; returns the final node dicts.

    ``listed`` is the node LIST (items, resourceVersion) the plan was made from, to start the watch from.
    """
    return wait_for_nodes(kube, dict((name, expectation.problem) for name, expectation in plan.expectations.items()), timeout, what,
                          listed=listed)


def mps_client_limits(node, replicas):
    """The limits NVIDIA's MPS control daemon gives each client sharing one GPU of ``node``."""
    memory_mib = NodeGpuState.from_node(node).memory_mib
    return dict(active_thread_percentage=100 // replicas,
                pinned_device_memory_limit_mib=memory_mib // replicas if memory_mib else None)


def daemon_set_rollout_problem(daemon_set):
    """None once a DaemonSet runs a ready, up-to-date pod on every node it targets."""
    status = daemon_set.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    if status.get("observedGeneration", 0) < daemon_set["metadata"].get("generation", 0):
        return "its controller has not seen the latest spec yet"
    if not desired:
        return "no node is scheduled to run it"
    if status.get("numberReady", 0) < desired or status.get("updatedNumberScheduled", 0) < desired:
        return "%s of %s pods ready, %s up to date" % (status.get("numberReady", 0), desired, status.get("updatedNumberScheduled", 0))
    return None


def run_profile(module, method, default_key, resources=None):
    """Make profile ``config_key`` of ``method`` ('time-slicing' or 'mps') present or absent."""
    params = module.params
    kube = module.kube
    platform = detect_platform(kube, params["cluster_policy"], params["namespace"])
    policy_config_map = device_plugin_config_of(platform.policy)[0]
    config_map_name = params["config_map"] or policy_config_map or DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
    key = params["config_key"] or default_key
    node_names = resolve_node_names(kube, params["nodes"])

    config = None
    if params["state"] == "present":
        if node_names is None and not params["make_default"]:
            raise GpuShareError("Say which nodes get the profile: nodes.names, nodes.selector, or make_default=true for every GPU node.")
        config = build_sharing_config(method, params["replicas"], resources=resources, rename_by_default=params["rename_by_default"],
                                      fail_requests_greater_than_one=params["fail_requests_greater_than_one"])

    nodes, nodes_version = kube.list_nodes()
    config_map = kube.get_config_map(namespace=platform.namespace, name=config_map_name)
    request = SharingRequest(params["state"], key, config_map_name, config=config, node_names=node_names,
                             make_default=params["make_default"], restart=params["restart_device_plugin"])
    plan = plan_profile(request, platform.namespace, platform.policy, config_map, nodes)

    before_nodes = dict((node["metadata"]["name"], node) for node in nodes if node["metadata"]["name"] in plan.expectations)
    result = dict(
        changed=plan.changed,
        cluster_policy=platform.policy_name,
        namespace=platform.namespace,
        config_map=config_map_name,
        config_key=key,
        config=config,
        restarted=plan.restart,
        diff=dict(before=plan.before, after=plan.after),
        nodes=dict((name, dict(before=node_summary(node))) for name, node in before_nodes.items()),
    )
    for warning in plan.warnings:
        module.ansible.warn(warning)
    if module.check_mode:
        return result

    apply_plan(kube, platform, plan)
    if params["wait"] and plan.expectations:
        final = wait_for_plan(kube, plan, params["wait_timeout"], "profile %r (%s) on %d node(s)" % (key, method, len(plan.expectations)),
                              listed=(nodes, nodes_version))
        for name, node in final.items():
            result["nodes"][name]["after"] = node_summary(node)
        if method == METHOD_MPS and config is not None:
            # mps.capable=true on the nodes is what schedules the control daemon; wait for it too.
            wait_for_daemon_sets(kube, platform.namespace, {MPS_CONTROL_DAEMONSET: daemon_set_rollout_problem},
                                 params["wait_timeout"], "the MPS control daemon to run on the MPS nodes")
            for name, node in final.items():
                result["nodes"][name]["mps_limits"] = mps_client_limits(node, params["replicas"])
    return result
