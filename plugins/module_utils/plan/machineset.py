# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What gpu_machineset writes to one OpenShift MachineSet (issue 40, docs/CAPACITY_DESIGN.md): the node labels of its
template that name the sharing its new nodes boot into, and its replicas. Up within the cluster autoscaler's limits,
never where a MachineAutoscaler owns them; down only by Machines whose nodes run no GPU pod, each annotated
``machine.openshift.io/delete-machine`` first so the MachineSet deletes those and no other. The sharing configuration
itself (the mig-parted layout, the device-plugin profile) is planned by plan/mig.py or plan/sharing.py with no node to
label, into the same ObjectWrites, so it is written before the MachineSet names it. Pure: no I/O.

Every platform fact relied on is in docs/PLATFORM_FACTS.md, "Cluster autoscaler and node pools (issue 40)"."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_MPS,
    METHOD_TIME_SLICING,
    MIG_STRATEGY_MIXED,
    build_sharing_config,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import find_gpu_model
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_pods import gpu_pods_by_node
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_parted import validate_mig_layout
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_DEVICE_PLUGIN_CONFIG,
    LABEL_MIG_CONFIG,
    NodeGpuState,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.autoscaling import (
    machineset_node_labels,
    targeting_autoscalers,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.capacity_records import (
    ADDED_NODES_ANNOTATION,
    SCALE_UPS_ANNOTATION,
    added_nodes,
    format_time,
    recent_scale_ups,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.mig import MigExpectation, expected_devices
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import on_version_read
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import MACHINESET_MACHINE_LABEL
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing import NodeExpectation
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.sharing_planner.growth import (
    OWNER_AUTOSCALER,
    machineset_growers,
    new_nodes_at_most,
    shared_limits,
)

MODE_WHOLE = "whole"
MODE_MIG = "mig"
# The MachineSet deletes a Machine carrying this annotation first when its replicas drop, under every deletePolicy
# (openshift/machine-api-operator, pkg/controller/machineset/delete_policy.go).
DELETE_MACHINE_ANNOTATION = "machine.openshift.io/delete-machine"

# What the new nodes of a MachineSet boot into: ``mode`` (whole, mig, time-slicing or mps); for MIG the mig-parted
# ``layout`` and the ``config_name`` it is written under; for time-slicing and MPS the device-plugin profile's
# ``config_key``, its ``replicas`` and ``rename_by_default``.
NewNodeSharing = namedtuple("NewNodeSharing", "mode layout config_name config_key replicas rename_by_default")
# One gpu_machineset task: the MachineSet, the replicas wanted (None: unchanged) and the sharing (None: unchanged).
MachineSetRequest = namedtuple("MachineSetRequest", "namespace name replicas sharing")


def new_node_sharing(options):
    """The NewNodeSharing of the module's ``sharing`` option (None when not given); refuses what its mode lacks or
    does not take."""
    if not options:
        return None
    mode = options["mode"]
    wanted = dict(
        mig=("layout", "config_name"),
        whole=(),
    ).get(mode, ("config_key", "replicas"))
    missing = [name for name in wanted if options.get(name) in (None, [])]
    if missing:
        raise GpuShareError("sharing.mode=%s needs sharing.%s." % (mode, " and sharing.".join(missing)))
    extra = [
        name
        for name in ("layout", "config_name", "config_key", "replicas")
        if options.get(name) not in (None, []) and name not in wanted
    ]
    if extra:
        raise GpuShareError("sharing.mode=%s does not take sharing.%s." % (mode, ", sharing.".join(extra)))
    return NewNodeSharing(
        mode=mode,
        layout=options.get("layout"),
        config_name=options.get("config_name"),
        config_key=options.get("config_key"),
        replicas=options.get("replicas"),
        rename_by_default=bool(options.get("rename_by_default")),
    )


def sharing_config(sharing, mig_strategy=None):
    """The device-plugin configuration of a time-slicing or MPS NewNodeSharing; refused as the device plugin refuses it
    under the cluster's ``mig_strategy`` (MPS with mixed)."""
    return build_sharing_config(
        sharing.mode, sharing.replicas, rename_by_default=sharing.rename_by_default, mig_strategy=mig_strategy
    )


def template_labels(sharing):
    """The template's node labels that name ``sharing`` (None: the label is removed, the policy's default applies)."""
    if sharing.mode == MODE_MIG:
        return {LABEL_MIG_CONFIG: sharing.config_name, LABEL_DEVICE_PLUGIN_CONFIG: None}
    if sharing.mode in (METHOD_TIME_SLICING, METHOD_MPS):
        return {LABEL_MIG_CONFIG: None, LABEL_DEVICE_PLUGIN_CONFIG: sharing.config_key}
    return {LABEL_MIG_CONFIG: None, LABEL_DEVICE_PLUGIN_CONFIG: None}


def new_node_expectation(sharing, layout, gpus):
    """What a new node shows once it joined in ``sharing`` (``layout``: the MIG layout as validated), as the sharing
    modules' waits check it."""
    if sharing.mode == MODE_MIG:
        return MigExpectation(sharing.config_name, expected_devices(layout, gpus), MIG_STRATEGY_MIXED)
    if sharing.mode in (METHOD_TIME_SLICING, METHOD_MPS):
        return NodeExpectation(sharing_config(sharing))
    return NodeExpectation(None)


class MachineSetChange(object):
    """What one gpu_machineset task does to its MachineSet, added to the ObjectWrites ``plan`` (the configuration's
    writes, or none): ``replicas`` before and after, ``removed`` (Machine name -> its node or None) and the
    ``expectation`` a new node must meet (None when nothing joins)."""

    def __init__(self, plan, machineset, replicas_before, replicas_after):
        self.plan = plan
        self.machineset = machineset
        self.replicas_before = replicas_before
        self.replicas_after = replicas_after
        self.removed = {}
        self.expectation = None


def _describe(machineset):
    meta = machineset.get("metadata") or {}
    return "MachineSet %s/%s" % (meta.get("namespace"), meta.get("name"))


def _new_node_model(grower, nodes):
    """The GPU model of the MachineSet's new nodes: that of a ready node it made whose GPUs GPU Feature Discovery has
    labelled, else the catalog's for the product its template or annotations give; None when neither tells."""
    ready = set(grower.ready_nodes)
    models = [NodeGpuState.from_node(node).gpu_model for node in nodes if node["metadata"]["name"] in ready]
    if any(models):
        return next(model for model in models if model)
    new = grower.new_node
    return find_gpu_model(new.product, new.gpu_memory_mib) if new.product else None


def _validated_layout(sharing, grower, nodes, where, warnings):
    """The MIG layout the MachineSet's new nodes get, validated as mig-parted would on their GPUs."""
    model = _new_node_model(grower, nodes)
    if model is None:
        raise GpuShareError(
            "%s: cannot tell the GPU model of its new nodes (it has no ready node, and its template labels no %s), "
            "so a MIG layout cannot be checked against them; scale it to one node first"
            % (where, "nvidia.com/gpu.product")
        )
    if not model.mig_capable:
        raise GpuShareError("%s: its GPUs (%s) do not support MIG; choose time-slicing or mps" % (where, model.name))
    return validate_mig_layout(sharing.layout, model, grower.new_node.gpus, "new nodes of " + where, warnings=warnings)


def _counted_gpus(sharing, gpus):
    """What one new node counts against the ClusterAutoscaler's GPU limit of its type: its allocatable nvidia.com/gpu,
    replicas included when shared unrenamed, else its GPUs (plan/autoscaling.autoscaler_gpu_count)."""
    shared = sharing is not None and sharing.mode in (METHOD_TIME_SLICING, METHOD_MPS)
    return gpus * sharing.replicas if shared and not sharing.rename_by_default else gpus


def plan_machineset(request, plan, machineset, autoscaling, nodes, pods, now):
    """Add ``request``'s MachineSet writes to ``plan`` (an ObjectWrites holding the configuration's writes);
    ``autoscaling``: run/machine_api.read_openshift_autoscaling's objects; ``nodes``: every node; ``pods``: the
    workload pods; ``now``: seconds since the epoch. Returns the MachineSetChange; raises GpuShareError, before
    anything is written, for what the MachineSet cannot take."""
    where = _describe(machineset)
    if request.replicas is not None and request.replicas < 0:
        raise GpuShareError("replicas is %d; give 0 or more" % request.replicas)
    grower = _gpu_grower(machineset, autoscaling, nodes, where)
    sharing = request.sharing
    layout = None
    if sharing is not None and sharing.mode == MODE_MIG:
        layout = _validated_layout(sharing, grower, nodes, where, plan.warnings)
    wanted = grower.size if request.replicas is None else request.replicas
    change = MachineSetChange(plan, machineset, grower.size, wanted)
    patch = {}
    if sharing is not None:
        _plan_template_labels(machineset, sharing, patch)
    if wanted != grower.size:
        _plan_replicas(change, grower, sharing, (autoscaling, nodes, pods, now), patch)
    if patch:
        meta = machineset["metadata"]
        plan.object_writes[("MachineSet", meta["namespace"], meta["name"])] = (
            "patch",
            on_version_read(machineset, patch),
        )
    if wanted > grower.size and sharing is not None:
        change.expectation = new_node_expectation(sharing, layout, grower.new_node.gpus)
    labels_after = _new_node_labels(machineset)
    labels_after.update(template_labels(sharing) if sharing else {})
    plan.before["machineset"] = dict(replicas=grower.size, labels=_new_node_labels(machineset))
    plan.after["machineset"] = dict(
        replicas=wanted,
        labels=dict((label, value) for label, value in labels_after.items() if value is not None),
        removed_machines=sorted(change.removed),
    )
    return change


def _gpu_grower(machineset, autoscaling, nodes, where):
    """The MachineSet as growth.py sees it (its size, owner, what a new node brings); refused when not a GPU one."""
    growers = machineset_growers(
        [machineset], autoscaling["machine_autoscalers"], autoscaling["machines"], nodes, None, None
    )
    if not growers:
        raise GpuShareError(
            "%s is not a GPU MachineSet: no GPU annotation, no cluster-api/accelerator label, no GPU node; run "
            "gpu_autoscaling on it first" % where
        )
    return growers[0]


def _plan_replicas(change, grower, sharing, read, patch):
    """The replicas into ``patch``, with the collection's records; a scale-up within the autoscaler's limits, a
    scale-in by Machines whose nodes run no GPU pod (``read``: autoscaling objects, nodes, pods, now)."""
    autoscaling, nodes, pods, now = read
    machineset, wanted = change.machineset, change.replicas_after
    where = _describe(machineset)
    _refuse_autoscaler_owned(grower, machineset, autoscaling, where)
    patch.setdefault("spec", {})["replicas"] = wanted
    annotations = patch.setdefault("metadata", {}).setdefault("annotations", {})
    if wanted > grower.size:
        _refuse_over_limits(grower, sharing, autoscaling, nodes, wanted, where)
        recent = recent_scale_ups(machineset, now)
        recent.append(dict(at=format_time(now), nodes=wanted - grower.size))
        annotations[SCALE_UPS_ANNOTATION] = json.dumps(recent, sort_keys=True)
        annotations[ADDED_NODES_ANNOTATION] = str(added_nodes(machineset) + wanted - grower.size)
    else:
        change.removed = _plan_scale_in(
            change.plan, machineset, autoscaling["machines"], pods, (grower.size, wanted), where
        )
        annotations[ADDED_NODES_ANNOTATION] = str(max(0, added_nodes(machineset) - (grower.size - wanted)))


def _new_node_labels(machineset):
    labels = machineset_node_labels(machineset)
    return dict((label, labels[label]) for label in (LABEL_MIG_CONFIG, LABEL_DEVICE_PLUGIN_CONFIG) if label in labels)


def _plan_template_labels(machineset, sharing, patch):
    current = machineset_node_labels(machineset)
    labels = dict((label, value) for label, value in template_labels(sharing).items() if current.get(label) != value)
    if labels:
        patch["spec"] = {"template": {"spec": {"metadata": {"labels": labels}}}}


def _refuse_autoscaler_owned(grower, machineset, autoscaling, where):
    """A MachineAutoscaler owns the replicas: the cluster autoscaler sets them, the collection never does."""
    if grower.owner != OWNER_AUTOSCALER:
        return
    names = [
        "%s/%s" % (ma["metadata"].get("namespace"), ma["metadata"].get("name"))
        for ma in targeting_autoscalers(machineset, autoscaling["machine_autoscalers"])
    ]
    raise GpuShareError(
        "%s: its replicas are the cluster autoscaler's (MachineAutoscaler %s targets it, minReplicas %s, maxReplicas "
        "%s), and the collection never writes them. Give no replicas (the template labels are still set), or delete "
        "the MachineAutoscaler to let the plan own its size"
        % (where, ", ".join(names), grower.min_size, grower.max_size)
    )


def _refuse_over_limits(grower, sharing, autoscaling, nodes, wanted, where):
    """The ClusterAutoscaler's limits (maxNodesTotal, cores, memory, GPUs of the type counted as it counts them) bind
    a size the plan sets too: the autoscaler stops every scale-up while the cluster is over one."""
    new = grower.new_node
    counted = grower._replace(new_node=new._replace(gpus=_counted_gpus(sharing, new.gpus)))
    most, limited_by = new_nodes_at_most(counted, shared_limits(autoscaling["cluster_autoscalers"], nodes))
    if most is not None and wanted - grower.size > most:
        raise GpuShareError(
            "%s: %d more node(s) would exceed the ClusterAutoscaler's %s (at most %d more fit, each counting %d "
            "GPU(s) of type %s); ask for replicas %d or less, or raise the limit"
            % (
                where,
                wanted - grower.size,
                " and ".join(limited_by),
                most,
                counted.new_node.gpus,
                new.gpu_type,
                grower.size + most,
            )
        )


def _is_marked(machine):
    return DELETE_MACHINE_ANNOTATION in ((machine.get("metadata") or {}).get("annotations") or {})


def _node_of(machine):
    return (((machine.get("status") or {}).get("nodeRef")) or {}).get("name")


def _plan_scale_in(plan, machineset, machines, pods, sizes, where):
    """Mark ``count`` Machines whose nodes run no GPU pod for deletion (those already marked first, then those with
    no node, then the newest); refuse when fewer are idle, or when a Machine marked already runs GPU pods (the
    MachineSet would delete it first). ``sizes``: the replicas now and wanted. Returns {Machine name: its node or
    None}."""
    meta = machineset["metadata"]
    count = sizes[0] - sizes[1]
    own = [
        machine
        for machine in machines
        if machine["metadata"].get("namespace") == meta["namespace"]
        and (machine["metadata"].get("labels") or {}).get(MACHINESET_MACHINE_LABEL) == meta["name"]
        and not machine["metadata"].get("deletionTimestamp")
    ]
    busy = gpu_pods_by_node(pods)
    marked_busy = sorted(
        machine["metadata"]["name"] for machine in own if _is_marked(machine) and _node_of(machine) in busy
    )
    if marked_busy:
        raise GpuShareError(
            "%s: Machine(s) %s carry %s, so the MachineSet would delete them first, but their nodes run GPU pods; "
            "remove that annotation, or end those pods first"
            % (where, ", ".join(marked_busy), DELETE_MACHINE_ANNOTATION)
        )
    idle = [machine for machine in own if _node_of(machine) not in busy]
    if len(idle) < count:
        running = sorted(set(_node_of(machine) for machine in own) & set(busy))
        raise GpuShareError(
            "%s: lowering replicas from %d to %d removes %d node(s), but only %d of its nodes run no GPU pod; %s run "
            "GPU pods (%s). The collection never removes a node with GPU pods: end or move them first"
            % (
                where,
                sizes[0],
                sizes[1],
                count,
                len(idle),
                ", ".join(running),
                "; ".join(
                    "%s: %s" % (node, ", ".join("%s/%s" % (pod["namespace"], pod["name"]) for pod in busy[node]))
                    for node in running
                ),
            )
        )
    idle.sort(key=lambda machine: machine["metadata"].get("creationTimestamp") or "", reverse=True)
    idle.sort(key=lambda machine: (not _is_marked(machine), _node_of(machine) is not None))
    removed = {}
    for machine in idle[:count]:
        removed[machine["metadata"]["name"]] = _node_of(machine)
        if not _is_marked(machine):
            plan.object_writes[("Machine", meta["namespace"], machine["metadata"]["name"])] = (
                "patch",
                on_version_read(machine, {"metadata": {"annotations": {DELETE_MACHINE_ANNOTATION: "true"}}}),
            )
    return removed
