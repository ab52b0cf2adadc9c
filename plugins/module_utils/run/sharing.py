# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner behind gpu_timeslicing and gpu_mps: read, plan, write in a safe order, restart, wait."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube.wait import (
    daemon_set_rollout_problem,
    wait_for_daemon_sets,
    wait_for_nodes,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.cluster_policy import (
    DEFAULT_DEVICE_PLUGIN_CONFIG_MAP,
    MPS_CONTROL_DAEMONSET,
    device_plugin_config_of,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_MPS,
    METHOD_TIME_SLICING,
    build_sharing_config,
    mps_client_limits,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_DEVICE_PLUGIN_CONFIG,
    NodeGpuState,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import SharingRequest, plan_profile
from ansible_collections.gpushare.k8s.plugins.module_utils.run.drain import GpuPodGuard
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import find_operator
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import new_result, record_after
from ansible_collections.gpushare.k8s.plugins.module_utils.run.targets import resolve_node_names
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import (
    Planned,
    after_writes,
    plan_access,
    write_replanning,
)


def run_gpu_timeslicing(module):
    """gpu_timeslicing."""
    return _make_profile(module, METHOD_TIME_SLICING, "time-slicing", resources=module.params["resources"])


def run_gpu_mps(module):
    """gpu_mps."""
    return _make_profile(module, METHOD_MPS, "mps")


def _make_profile(module, method, default_key, resources=None):
    """Make profile ``config_key`` of ``method`` ('time-slicing' or 'mps') present or absent."""
    params = module.params
    change = _ProfileChange(module, method, params["config_key"] or default_key, resources)
    planned = change.read_and_plan()
    operator, plan = planned.operator, planned.plan
    fleet = Fleet(planned.listed.items)
    for warning in plan.warnings:
        module.ansible.warn(warning)
    guard = GpuPodGuard(
        module.kube, fleet, plan.changing_nodes(fleet), params["drain"], params["force"], change="profile change"
    )
    result = new_result(
        operator,
        plan,
        fleet,
        plan.expectations,
        config_map=plan.config_map,
        config_key=change.key,
        config=change.config,
        restarted=plan.restart,
        **guard.fields(),
    )
    if module.check_mode:
        return result
    final = guard.run(
        module,
        lambda: change.write_and_wait(planned),
        params["wait_timeout"],
        "the profile change",
        params["wait"],
        plan_access(module.kube, operator, plan),
    )
    result.update(guard.fields())
    if not final:
        return result
    record_after(result, fleet, final)
    if method == METHOD_MPS and change.config is not None:
        change.wait_for_mps(operator, final, result)
    return result


class _ProfileChange(object):
    """One gpu_timeslicing or gpu_mps task: its request, read and planned afresh on every attempt, written, waited for.

    Each plan's nodes keep the device-plugin label it leaves them with (``labels``) and the resourceVersion they were
    read at (``versions``), over every attempt: the wait tells this task's change from a later writer's by them."""

    def __init__(self, module, method, key, resources):
        self.module = module
        self.params = params = module.params
        self.kube = module.kube
        self.method = method
        self.key = key
        self.node_names = resolve_node_names(self.kube, params["nodes"])
        self.config = None
        if params["state"] == "present":
            if self.node_names is None and not params["make_default"]:
                raise GpuShareError(
                    "Say which nodes get the profile: nodes.names, nodes.selector, or make_default=true for every GPU "
                    "node."
                )
            self.config = build_sharing_config(
                method,
                params["replicas"],
                resources=resources,
                rename_by_default=params["rename_by_default"],
                fail_requests_greater_than_one=params["fail_requests_greater_than_one"],
            )
        self.labels = {}
        self.versions = {}

    def read_and_plan(self):
        params, kube = self.params, self.kube
        operator = find_operator(kube, params["cluster_policy"], params["namespace"])
        config_map_name = params["config_map"] or device_plugin_config_of(operator.policy)[0]
        config_map_name = config_map_name or DEFAULT_DEVICE_PLUGIN_CONFIG_MAP
        listed = kube.list_nodes()
        config_map = kube.get_config_map(namespace=operator.namespace, name=config_map_name)
        request = SharingRequest(
            params["state"],
            self.key,
            config_map_name,
            config=self.config,
            node_names=self.node_names,
            make_default=params["make_default"],
            restart=params["restart_device_plugin"],
        )
        plan = plan_profile(request, operator.namespace, operator.policy, config_map, listed.items)
        fleet = Fleet(listed.items)
        self.labels.update(_labels_left(plan, fleet))
        self.versions.update((name, fleet.nodes[name]["metadata"].get("resourceVersion")) for name in plan.expectations)
        return Planned(operator, plan, listed=listed)

    def write_and_wait(self, planned):
        """Write (re-planned on a conflict) and wait for the nodes, unless asked not to; the final nodes."""
        written = write_replanning(self.kube, planned, self.read_and_plan)
        if not (self.params["wait"] and written.expectations):
            return {}
        superseded = set()
        what = "profile %r (%s) on %d node(s)" % (self.key, self.method, len(written.expectations))
        checks = dict(
            (
                name,
                _unless_relabelled(
                    expectation.problem,
                    self.labels[name],
                    written.node_versions.get(name) or self.versions[name],
                    superseded,
                    name,
                ),
            )
            for name, expectation in written.expectations.items()
        )
        try:
            final = wait_for_nodes(self.kube, checks, self.params["wait_timeout"], what, listed=written.planned.listed)
        except GpuShareError as exc:
            raise after_writes(exc, written, what)
        if superseded:
            self.module.ansible.warn(
                "Node(s) %s were given another device-plugin profile by another writer while this task waited; "
                "their last writer's profile stands, and this task did not wait for its own there."
                % ", ".join(sorted(superseded))
            )
        return dict((name, node) for name, node in final.items() if name not in superseded)

    def wait_for_mps(self, operator, final, result):
        """mps.capable=true on the nodes is what schedules the control daemon: wait for it too; each node's limits."""
        wait_for_daemon_sets(
            self.kube,
            operator.namespace,
            {MPS_CONTROL_DAEMONSET: daemon_set_rollout_problem},
            self.params["wait_timeout"],
            "the MPS control daemon to run on the MPS nodes",
        )
        for name, node in final.items():
            result["nodes"][name]["mps_limits"] = mps_client_limits(
                NodeGpuState.from_node(node).memory_mib, self.params["replicas"]
            )


def _labels_left(plan, fleet):
    """For each node the plan waits for, the device-plugin label the plan leaves it with."""
    labels = {}
    for name in plan.expectations:
        before = (fleet.nodes[name]["metadata"].get("labels") or {}).get(LABEL_DEVICE_PLUGIN_CONFIG)
        labels[name] = ((plan.after.get("nodes") or {}).get(name) or {}).get(LABEL_DEVICE_PLUGIN_CONFIG, before)
    return labels


def _version(obj):
    try:
        return int(obj["metadata"].get("resourceVersion"))
    except (TypeError, ValueError):
        return None


def _unless_relabelled(problem, label, since, superseded, name):
    """``problem``, unless the node shows another device-plugin label than ``label`` (the one this task left it
    with) in a version later than ``since`` (this task's label patch, or its read when it did not relabel the
    node): a later writer gave it another profile, whose intent stands (``superseded``). The watch replays
    what happened since the planning read, other runs' earlier labels included: those are not later.
    resourceVersions are compared as etcd's revisions; one that is not a number never counts as later."""
    since = _version({"metadata": {"resourceVersion": since}})

    def check(node):
        version = _version(node)
        found = (node["metadata"].get("labels") or {}).get(LABEL_DEVICE_PLUGIN_CONFIG)
        if found != label and None not in (version, since) and version > since:
            superseded.add(name)
            return None
        superseded.discard(name)
        return problem(node)

    return check
