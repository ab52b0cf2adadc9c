# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a gpu_sharing_plan task asks of the planner (``PlanSettings``), read once from the module's parameters, with
their defaults (args.py's, kept equal by a unit test) and the refusals of what cannot be planned, and the cluster facts
the runner adds. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_TIME_SLICING,
    MIN_REPLICAS,
    MPS_MAX_CLIENTS,
    mig_profile_of_resource,
    mig_resource_name,
    most_replicas_advertised,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import is_planned_resource

# Replicas per GPU the planner gives a shared GPU unless told otherwise (max_replicas): NVIDIA's own limit on the
# processes that share one GPU through MPS (48 clients per GPU from compute capability 7.5, k8s-device-plugin
# cmd/mps-control-daemon/mps/device.go:34-55); time-slicing has no limit of its own but the kubelet's on a device list.
DEFAULT_MAX_REPLICAS = MPS_MAX_CLIENTS
# The solver's time for all the pools of one plan, in seconds (time_limit).
DEFAULT_TIME_LIMIT = 10.0
DEFAULT_METHOD = METHOD_TIME_SLICING
# No node advertises more replicas of one GPU than this: the kubelet's limit on one device list, for a node of one GPU
# (nvidia/device_plugin_config.most_replicas_advertised); a node of more GPUs stops lower.
REPLICAS_CEILING = most_replicas_advertised(1)

# One entry of the module's ``requests``: a demand given rather than read from pods. Exactly one of ``resource``,
# ``profile`` (a MIG profile), or ``memory_gib`` and/or ``compute_share`` (the smallest MIG profile that holds them);
# ``count`` of them, in ``pool`` (None: the only pool).
GivenRequest = namedtuple("GivenRequest", "resource profile memory_gib compute_share count pool")

# The task's settings: the node label naming pools (None: one pool), the given requests (GivenRequest), whether the
# pending pods are read, whether running pods may move, how GPUs newly shared are shared, the most replicas per GPU,
# the solver's seconds for the whole plan, whether to report what pools may add and the node pools given for it (dicts
# of args.SHARING_PLAN_NODE_POOL_SPEC), the most nodes the plan may add and the cost of a node per way to grow ({name:
# cost}), the most it may add within an hour (None: no hourly cap), and how long a node it added must have been in
# the cluster before a scale-in may take it (seconds); and what the runner read of the cluster and its clock: whether
# its platform offers MIG, its MIG strategy, the nodes running MIG anywhere in it, and the time (seconds since the
# epoch).
PlanSettings = namedtuple(
    "PlanSettings",
    "pool_label requests read_pods allow_moves method max_replicas time_limit capacity node_pools max_new_nodes "
    "node_costs max_new_nodes_per_hour scale_in_after mig_allowed mig_strategy single_mig_nodes now",
)
# A node the plan added is taken back only once it has been in the cluster this long (scale_in_after), so that a node
# that just joined is not removed before the pods it was added for land on it.
DEFAULT_SCALE_IN_AFTER = 1800


def given_request(entry):
    return GivenRequest(*(entry.get(field) for field in GivenRequest._fields))


def plan_settings(params):
    """The settings of gpu_sharing_plan's parameters (a missing one takes its default), refused before anything is read
    when they cannot be planned; the cluster facts stay at "MIG allowed, strategy unknown, no MIG node" until the
    runner sets them (``_replace``)."""

    def given(name, default):
        value = params.get(name)
        return default if value is None else value

    settings = PlanSettings(
        pool_label=params.get("pool_label") or None,
        requests=tuple(given_request(entry) for entry in params.get("requests") or ()),
        read_pods=bool(given("read_pods", True)),
        allow_moves=bool(given("allow_moves", False)),
        method=given("sharing_method", DEFAULT_METHOD),
        max_replicas=given("max_replicas", DEFAULT_MAX_REPLICAS),
        time_limit=given("time_limit", DEFAULT_TIME_LIMIT),
        capacity=bool(given("capacity", False)),
        node_pools=tuple(params.get("node_pools") or ()),
        max_new_nodes=given("max_new_nodes", 0),
        node_costs=dict(params.get("node_costs") or {}),
        max_new_nodes_per_hour=params.get("max_new_nodes_per_hour"),
        scale_in_after=given("scale_in_after", DEFAULT_SCALE_IN_AFTER),
        mig_allowed=True,
        mig_strategy=None,
        single_mig_nodes=(),
        now=0,
    )
    problems = _problems(settings)
    if problems:
        raise GpuShareError("Fix the options: " + "; ".join(problems))
    return settings


def _problems(settings):
    """Why the settings cannot be planned (requests, max_replicas, time_limit)."""
    problems = []
    replicas = settings.max_replicas
    if not MIN_REPLICAS <= replicas <= REPLICAS_CEILING:
        problems.append(
            "max_replicas is %d; give %d (the device plugin's least) to %d (above it one GPU's device list exceeds "
            "the kubelet's 4 MiB limit, kubernetes/kubernetes#109304)" % (replicas, MIN_REPLICAS, REPLICAS_CEILING)
        )
    if settings.time_limit <= 0:
        problems.append("time_limit is %s; give the seconds the solver may take, above 0" % settings.time_limit)
    problems.extend(_node_pool_problems(settings))
    for number, request in enumerate(settings.requests, 1):
        kinds = [kind for kind in (request.resource, request.profile) if kind]
        sized = request.memory_gib is not None or request.compute_share is not None
        if len(kinds) + int(sized) != 1:
            problems.append("requests[%d]: give exactly one of resource, profile, or memory_gib/compute_share" % number)
        elif request.resource and not is_planned_resource(request.resource):
            problems.append(
                "requests[%d]: resource %s is not one the planner places; use nvidia.com/gpu, nvidia.com/gpu.shared "
                "or nvidia.com/mig-<profile>" % (number, request.resource)
            )
        elif request.profile and not mig_profile_of_resource(mig_resource_name(request.profile)):
            problems.append("requests[%d]: %s is not a MIG profile name (like 1g.10gb)" % (number, request.profile))
        if request.count is None or request.count < 1:
            problems.append("requests[%d]: count must be 1 or more" % number)
        share = request.compute_share
        if share is not None and not 0 < share <= 1:
            problems.append("requests[%d]: compute_share is a fraction of one GPU, above 0 and at most 1" % number)
    return problems


def _node_pool_problems(settings):
    """Why the node pools given cannot be reported on."""
    problems = []
    if settings.node_pools and not settings.capacity:
        problems.append("node_pools are reported on only with capacity: true; set it, or leave node_pools out")
    if settings.max_new_nodes < 0:
        problems.append("max_new_nodes is %d; give 0 (add no node) or more" % settings.max_new_nodes)
    if (settings.max_new_nodes_per_hour or 0) < 0:
        problems.append("max_new_nodes_per_hour is %d; give 0 or more" % settings.max_new_nodes_per_hour)
    if settings.scale_in_after < 0:
        problems.append(
            "scale_in_after is %d; give the seconds a node must have been in the cluster, 0 or more"
            % settings.scale_in_after
        )
    if (settings.max_new_nodes or settings.node_costs) and not settings.capacity:
        problems.append("max_new_nodes and node_costs need capacity: true (what pools may add is read then)")
    for name, cost in sorted(settings.node_costs.items()):
        if not isinstance(cost, int) or isinstance(cost, bool) or cost < 0:
            problems.append("node_costs: %s's cost is %r; give a whole number, 0 or more" % (name, cost))
    seen = set()
    for number, pool in enumerate(settings.node_pools, 1):
        name = pool.get("name") or pool.get("pool")
        if name in seen:
            problems.append("node_pools[%d]: %s is given twice; give each node pool once" % (number, name))
        seen.add(name)
        if (pool.get("size") or 0) < 0 or (pool.get("min_size") or 0) < 0:
            problems.append("node_pools[%d]: size and min_size are numbers of nodes, 0 or more" % number)
        if (pool.get("gpus") or 0) < 1:
            problems.append("node_pools[%d]: gpus is the GPUs one node of the pool has, 1 or more" % number)
        if pool.get("max_size") is not None and pool["max_size"] < (pool.get("min_size") or 0):
            problems.append("node_pools[%d]: max_size is below min_size" % number)
    return problems
