# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_autoscaling's plan: what the cluster autoscaler must know about GPU pools (reference section 5).

OpenShift: each GPU MachineSet's node label ``cluster-api/accelerator``, its ``machine.openshift.io/GPU``
annotation (physical GPUs per machine, read when it scales from zero) and zone label, a MachineAutoscaler
targeting it, and the ClusterAutoscaler ``default``'s ``spec.resourceLimits.gpus`` entry of that type. An entry counts
the nodes whose ``cluster-api/accelerator`` value equals its ``type``: one whose type is no label value
(``nvidia.com/gpu``) never counts any, and of two entries of one type only the last is applied. It counts each such
node as its allocatable ``nvidia.com/gpu`` (time-slicing and MPS replicas included, unless renamed), or, when that is
zero, as its group's template (the GPU annotation: physical GPUs): cluster-autoscaler's ``GetNodeGpuTarget``
(docs/PLATFORM_FACTS.md, "GPU resource limits count the label's type and nvidia.com/gpu"). Other platforms: the node
label their autoscaler reads for a pool's GPU type. Pure; every field not named here is left as it is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    RESOURCE_GPU,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import (
    LABEL_VALUE_RULE,
    NodeGpuState,
    is_label_value,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.platforms import (
    ACCELERATOR_LABEL,
    AUTOSCALER_GPU_LABEL,
    CLUSTER_AUTOSCALER,
    CLUSTER_AUTOSCALER_NAME,
    MACHINE_AUTOSCALER,
    MACHINESET,
    MACHINESET_GPU_ANNOTATION,
    RECOMMENDED_DELAY_AFTER_ADD,
    ZONE_LABEL,
    machineset_node_names,
    parse_duration,
)


def autoscaler_gpu_count(state, template_gpus):
    """What the cluster autoscaler counts a node (``state``, a NodeGpuState) as against the GPU limit of its type: its
    allocatable nvidia.com/gpu, replicas included, else ``template_gpus``, its group's template's (GetNodeGpuTarget)."""
    return state.allocatable.get(RESOURCE_GPU, 0) or template_gpus


def suggested_accelerator(states):
    """A GPU type for the autoscaler from the nodes' product label (``Tesla-T4`` -> ``tesla-t4``), else None."""
    for state in states:
        if state.base_product:
            return re.sub(r"[^a-z0-9-]", "", state.base_product.lower().replace("nvidia-", "").replace("_", "-"))
    return None


def _meta(obj):
    return obj.get("metadata") or {}


def machineset_node_labels(machineset):
    return ((((machineset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("metadata") or {}).get(
        "labels"
    ) or {}


def machineset_zone(machineset):
    """The zone a MachineSet's machines are created in, from its provider spec (AWS placement, GCP/Azure zone)."""
    value = ((((machineset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("providerSpec") or {}).get(
        "value"
    ) or {}
    return (value.get("placement") or {}).get("availabilityZone") or value.get("zone") or None


def machineset_key(machineset):
    return (_meta(machineset).get("namespace"), _meta(machineset).get("name"))


def machineset_node_states(machines, nodes):
    """{(namespace, MachineSet name): [NodeGpuState]} of the nodes its Machines became (``status.nodeRef``)."""
    by_name = dict((_meta(node).get("name"), node) for node in nodes)
    return dict(
        (key, [NodeGpuState.from_node(by_name[name]) for name in names if name in by_name])
        for key, names in machineset_node_names(machines).items()
    )


def is_gpu_machineset(machineset, states):
    annotations = _meta(machineset).get("annotations") or {}
    return (
        ACCELERATOR_LABEL in machineset_node_labels(machineset)
        or any(state.is_gpu_node for state in states)
        or (annotations.get(MACHINESET_GPU_ANNOTATION) or "0") not in ("0", "")
    )


def targeting_autoscalers(machineset, machine_autoscalers):
    """The MachineAutoscalers whose scaleTargetRef is this MachineSet."""
    name, namespace = _meta(machineset).get("name"), _meta(machineset).get("namespace")
    found = []
    for autoscaler in machine_autoscalers:
        target = (autoscaler.get("spec") or {}).get("scaleTargetRef") or {}
        if (
            target.get("name") == name
            and target.get("kind", "MachineSet") == "MachineSet"
            and _meta(autoscaler).get("namespace") == namespace
        ):
            found.append(autoscaler)
    return found


def cluster_autoscaler_gpu_limits(cluster_autoscaler):
    """The ClusterAutoscaler's ``spec.resourceLimits.gpus``; [] when it or the list is absent."""
    spec = (cluster_autoscaler or {}).get("spec") or {}
    return (spec.get("resourceLimits") or {}).get("gpus") or []


def gpu_limit_text(entry):
    """``{type: nvidia.com/gpu, min: 0, max: 8}``: a resourceLimits.gpus entry as messages show it."""
    return "{%s}" % ", ".join("%s: %s" % (key, entry[key]) for key in ("type", "min", "max") if key in entry)


def never_matching_reason(entry):
    """Why no node can ever carry the GPU type of a resourceLimits.gpus entry, or None when a node could: the
    autoscaler compares the type with the value of the nodes' cluster-api/accelerator label (reference section 5)."""
    gpu_type = entry.get("type")
    if gpu_type is None or gpu_type == "":
        return "it has no type"
    if is_label_value(gpu_type):
        return None
    if "/" in str(gpu_type):
        rule = (
            "it cannot contain '/': the type is the %s value of a GPU MachineSet, such as tesla-t4, not a resource "
            "name" % ACCELERATOR_LABEL
        )
    else:
        rule = LABEL_VALUE_RULE
    return "%s is not a label value (%s), so no node can ever carry it" % (gpu_type, rule)


def superseding_index(gpu_limits, index):
    """The index of the last later entry of the same type, or None: the autoscaler applies one limit per type, the
    last (cluster-autoscaler fills its min and max maps from the --gpu-total flags in the list's order)."""
    gpu_type = gpu_limits[index].get("type")
    later = [i for i in range(index + 1, len(gpu_limits)) if gpu_limits[i].get("type") == gpu_type]
    return later[-1] if later else None


def machineset_accelerators(machinesets):
    """The valid GPU types (cluster-api/accelerator values) the MachineSets give their nodes."""
    values = set(machineset_node_labels(machineset).get(ACCELERATOR_LABEL) for machineset in machinesets)
    return set(value for value in values if value and is_label_value(value))


class AutoscalingRequest(object):
    """gpu_autoscaling's options, checked before anything is read from the cluster."""

    def __init__(self, params):
        self.machinesets = params.get("machinesets")
        self.accelerator = params.get("accelerator")
        self.gpus_per_machine = params.get("gpus_per_machine")
        self.min_replicas = params.get("min_replicas")
        self.max_replicas = params.get("max_replicas")
        self.gpu_limit = params.get("gpu_limit")
        self.delay_after_add = params.get("delay_after_add")
        self.zone_label = params.get("zone_label", True)
        self.create_cluster_autoscaler = params.get("create_cluster_autoscaler", False)
        self.gpu_label = params.get("autoscaler_gpu_label")
        self.validate()

    def validate(self):
        if self.accelerator is not None and not is_label_value(self.accelerator):
            raise GpuShareError(
                "accelerator %r is not a GPU type the autoscaler can match: it must be %s (e.g. nvidia-t4; never "
                "nvidia.com/gpu)." % (self.accelerator, LABEL_VALUE_RULE)
            )
        if self.gpus_per_machine is not None and self.gpus_per_machine < 1:
            raise GpuShareError("gpus_per_machine must be 1 or more (physical GPUs per machine).")
        if self.min_replicas is not None and self.min_replicas < 0:
            raise GpuShareError("min_replicas must be 0 or more.")
        if self.max_replicas is not None and self.max_replicas < 1:
            raise GpuShareError("max_replicas must be 1 or more.")
        if None not in (self.min_replicas, self.max_replicas) and self.min_replicas > self.max_replicas:
            raise GpuShareError(
                "min_replicas (%d) is above max_replicas (%d)." % (self.min_replicas, self.max_replicas)
            )
        if self.gpu_limit is not None:
            low, high = self.gpu_limit["min"], self.gpu_limit["max"]
            if low < 0 or high < 1 or low > high:
                raise GpuShareError(
                    "gpu_limit needs 0 <= min <= max and max >= 1 (GPUs of this type in the cluster, as the "
                    "autoscaler counts them); "
                    "got min=%d, max=%d." % (low, high)
                )
        if self.delay_after_add is not None and parse_duration(self.delay_after_add) is None:
            raise GpuShareError(
                "delay_after_add %r is not a duration: use Go's form, e.g. 15m, 1h or 10m30s." % self.delay_after_add
            )


def _object_key(kind, obj):
    return (kind, _meta(obj).get("namespace"), _meta(obj)["name"])


def _ref(key):
    kind, namespace, name = key
    return "%s/%s" % (kind, "%s/%s" % (namespace, name) if namespace else name)


class _MachineSetPlan(object):
    """One GPU MachineSet: the values it must carry and the MachineAutoscaler targeting it."""

    def __init__(self, machineset, states, autoscalers, request):
        self.machineset = machineset
        self.name = _meta(machineset)["name"]
        self.namespace = _meta(machineset).get("namespace")
        self.states = states
        self.autoscalers = autoscalers
        labels = machineset_node_labels(machineset)
        current = labels.get(ACCELERATOR_LABEL)
        valid_current = current if current and is_label_value(current) else None
        self.accelerator = request.accelerator or valid_current or suggested_accelerator(states)
        if self.accelerator is None:
            raise GpuShareError(
                "MachineSet %s/%s: no GPU type to give the autoscaler (no valid %s label and no GPU node to read the "
                "product from): set accelerator, e.g. nvidia-t4." % (self.namespace, self.name, ACCELERATOR_LABEL)
            )
        annotations = _meta(machineset).get("annotations") or {}
        annotated = annotations.get(MACHINESET_GPU_ANNOTATION) or ""
        # A valid annotation is never rewritten: on AWS the Machine API's MachineSet controller sets it from the
        # instance type on every reconcile (docs/PLATFORM_FACTS.md), so a different value would be a tug of war.
        self.annotated_gpus = int(annotated) if annotated.isdigit() and int(annotated) > 0 else None
        self.requested_gpus = request.gpus_per_machine
        counted = max([state.count for state in states] or [0])
        self.gpus_per_machine = self.annotated_gpus or request.gpus_per_machine or counted or None
        self.min_replicas = request.min_replicas
        self.max_replicas = request.max_replicas
        if autoscalers:
            spec = autoscalers[0].get("spec") or {}
            self.min_replicas = spec.get("minReplicas") if self.min_replicas is None else self.min_replicas
            self.max_replicas = spec.get("maxReplicas") if self.max_replicas is None else self.max_replicas
        self.autoscaled = bool(autoscalers) or None not in (request.min_replicas, request.max_replicas)
        if self.autoscaled and None not in (self.min_replicas, self.max_replicas):
            if self.min_replicas > self.max_replicas:
                raise GpuShareError(
                    "MachineSet %s/%s: min_replicas %d would be above its MachineAutoscaler's maxReplicas %d; give "
                    "both." % (self.namespace, self.name, self.min_replicas, self.max_replicas)
                )
        scales_from_zero = self.autoscaled and (self.min_replicas or 0) == 0
        if scales_from_zero and self.gpus_per_machine is None:
            raise GpuShareError(
                "MachineSet %s/%s scales from zero and no node shows how many GPUs a machine has: set gpus_per_machine "
                "(the %s annotation the autoscaler reads)." % (self.namespace, self.name, MACHINESET_GPU_ANNOTATION)
            )
        self.zone = machineset_zone(machineset) if request.zone_label and scales_from_zero else None
        # What the autoscaler counts a machine as against the type's GPU limit: its node's allocatable
        # nvidia.com/gpu, else (zero, or no node yet) the template's physical GPUs. The largest the set's nodes show.
        advertised = max([autoscaler_gpu_count(state, 0) for state in states] or [0])
        self.counted_per_machine = max(advertised, self.gpus_per_machine or 0)

    def machineset_write(self):
        """(before, after, merge patch or None) of the MachineSet's fields this module owns."""
        labels = machineset_node_labels(self.machineset)
        annotations = _meta(self.machineset).get("annotations") or {}
        wanted_labels = {ACCELERATOR_LABEL: self.accelerator}
        if self.zone and ZONE_LABEL not in labels:
            wanted_labels[ZONE_LABEL] = self.zone
        wanted_annotations = {}
        if self.annotated_gpus is None and self.gpus_per_machine is not None:
            wanted_annotations[MACHINESET_GPU_ANNOTATION] = str(self.gpus_per_machine)
        before = dict(("labels." + key, labels.get(key)) for key in wanted_labels)
        before.update(("annotations." + key, annotations.get(key)) for key in wanted_annotations)
        after = dict(("labels." + key, value) for key, value in wanted_labels.items())
        after.update(("annotations." + key, value) for key, value in wanted_annotations.items())
        patch = {}
        changed_labels = dict((key, value) for key, value in wanted_labels.items() if labels.get(key) != value)
        changed_annotations = dict(
            (key, value) for key, value in wanted_annotations.items() if annotations.get(key) != value
        )
        if changed_labels:
            patch["spec"] = {"template": {"spec": {"metadata": {"labels": changed_labels}}}}
        if changed_annotations:
            patch["metadata"] = {"annotations": changed_annotations}
        return before, after, patch or None

    def machine_autoscaler_write(self):
        """(before, after, (action, body) or None) of the MachineAutoscaler targeting this MachineSet."""
        if not self.autoscaled:
            return None, None, None
        after = {"minReplicas": self.min_replicas, "maxReplicas": self.max_replicas}
        if not self.autoscalers:
            body = {
                "apiVersion": "%s/%s" % MACHINE_AUTOSCALER[:2],
                "kind": "MachineAutoscaler",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": dict(
                    after,
                    scaleTargetRef={"apiVersion": "%s/%s" % MACHINESET[:2], "kind": "MachineSet", "name": self.name},
                ),
            }
            return None, after, ("create", body)
        spec = self.autoscalers[0].get("spec") or {}
        before = {"minReplicas": spec.get("minReplicas"), "maxReplicas": spec.get("maxReplicas")}
        changed = dict((key, value) for key, value in after.items() if before[key] != value)
        return before, after, ("patch", {"spec": changed}) if changed else None

    def counted_gpus_at_most(self):
        """The most this set can count against its type's GPU limit, in the autoscaler's unit."""
        return self.counted_per_machine * (self.max_replicas or 0)

    def shared_ways(self):
        return max([state.replicas for state in self.states] or [1])


def plan_openshift_autoscaling(request, machinesets, cluster_autoscalers, machine_autoscalers, machines, nodes):
    """The MachineSet, MachineAutoscaler and ClusterAutoscaler writes for the GPU MachineSets asked for."""
    states_by_machineset = machineset_node_states(machines, nodes)
    pools = [
        _MachineSetPlan(
            machineset,
            states_by_machineset.get(machineset_key(machineset), []),
            targeting_autoscalers(machineset, machine_autoscalers),
            request,
        )
        for machineset in _chosen_machinesets(request, machinesets, states_by_machineset)
    ]
    plan = ObjectWrites()
    for pool in pools:
        _plan_machineset_writes(plan, pool)
    autoscaled = [pool for pool in pools if pool.autoscaled]
    if autoscaled:
        # The GPU types nodes will carry: the planned ones, and those of the MachineSets left as they are.
        planned = set(pool.name for pool in pools)
        carried = set(pool.accelerator for pool in pools) | machineset_accelerators(
            machineset for machineset in machinesets if _meta(machineset)["name"] not in planned
        )
        _plan_cluster_autoscaler(plan, request, cluster_autoscalers, autoscaled, carried)
    return plan


def _chosen_machinesets(request, machinesets, states_by_machineset):
    """The MachineSets named in the request (each must exist), else every GPU MachineSet (there must be one)."""
    by_name = dict((_meta(machineset)["name"], machineset) for machineset in machinesets)
    if request.machinesets:
        missing = sorted(set(request.machinesets) - set(by_name))
        if missing:
            raise GpuShareError(
                "MachineSet(s) not found: %s (have: %s)." % (", ".join(missing), ", ".join(sorted(by_name)) or "none")
            )
        return [by_name[name] for name in request.machinesets]
    chosen = [
        machineset
        for machineset in machinesets
        if is_gpu_machineset(machineset, states_by_machineset.get(machineset_key(machineset), []))
    ]
    if not chosen:
        raise GpuShareError(
            "No GPU MachineSet found (none has a %s label, a %s annotation or GPU nodes): name them in "
            "machinesets." % (ACCELERATOR_LABEL, MACHINESET_GPU_ANNOTATION)
        )
    return chosen


def _plan_machineset_writes(plan, pool):
    """One MachineSet's write and its MachineAutoscaler's (a warning when it has none and gets none), and a warning
    when its GPUs are shared: the autoscaler counts the replicas against the limit, but not when scaling from zero."""
    key = _object_key("MachineSet", pool.machineset)
    before, after, patch = pool.machineset_write()
    plan.before[_ref(key)], plan.after[_ref(key)] = before, after
    if patch:
        plan.object_writes[key] = ("patch", patch)
    if pool.annotated_gpus is not None and pool.requested_gpus not in (None, pool.annotated_gpus):
        plan.warnings.append(
            "MachineSet %s/%s: gpus_per_machine %d is not written, its %s annotation already says %d: on AWS the "
            "Machine API sets it from the instance type on every reconcile; elsewhere, change it by hand if it is "
            "wrong." % (pool.namespace, pool.name, pool.requested_gpus, MACHINESET_GPU_ANNOTATION, pool.annotated_gpus)
        )
    before, after, write = pool.machine_autoscaler_write()
    if after is not None:
        key = ("MachineAutoscaler", pool.namespace, pool.name)
        if pool.autoscalers:
            key = _object_key("MachineAutoscaler", pool.autoscalers[0])
        plan.before[_ref(key)], plan.after[_ref(key)] = before, after
        if write:
            plan.object_writes[key] = write
    else:
        plan.warnings.append(
            "MachineSet %s/%s has no MachineAutoscaler and min_replicas/max_replicas were not given: it is "
            "labelled for the autoscaler but does not scale." % (pool.namespace, pool.name)
        )
    if pool.shared_ways() > 1:
        plan.warnings.append(
            "MachineSet %s/%s's GPUs are shared %d ways: the autoscaler counts a machine as its node's allocatable "
            "%s (%d here) against the GPU limit of its type, which is therefore in that unit; but scaling from zero "
            "it takes a new machine for its %s physical GPU(s), so it may add more machines than the pods need "
            "(AKS #3427)."
            % (
                pool.namespace,
                pool.name,
                pool.shared_ways(),
                RESOURCE_GPU,
                pool.counted_per_machine,
                pool.gpus_per_machine or "unknown",
            )
        )


def _usable_gpu_limits(current_limits):
    """The resourceLimits.gpus entries that can limit something, and a warning naming each entry dropped: one whose
    type no node can carry, or one a later entry of the same type overrides."""
    kept, warnings = [], []
    for index, entry in enumerate(current_limits):
        reason = never_matching_reason(entry)
        later = None if reason else superseding_index(current_limits, index)
        if later is not None:
            reason = "gpus[%d] has the same type, and the autoscaler applies only the last entry of a type" % later
        if reason:
            warnings.append(
                "ClusterAutoscaler %s: dropping spec.resourceLimits.gpus[%d] %s: %s."
                % (CLUSTER_AUTOSCALER_NAME, index, gpu_limit_text(entry), reason)
            )
        else:
            kept.append(dict(entry))
    return kept, warnings


def _unmatched_limit_warnings(limits, carried):
    """Entries of a valid type no MachineSet carries are kept: a MachineSet of that type may be created later, and
    only its operator knows; the warning says they limit nothing meanwhile."""
    return [
        "ClusterAutoscaler %s: the spec.resourceLimits.gpus entry %s matches no MachineSet's %s label, so it limits "
        "nothing now; it is kept for a MachineSet of that type to come (remove it if none will)."
        % (CLUSTER_AUTOSCALER_NAME, gpu_limit_text(entry), ACCELERATOR_LABEL)
        for entry in limits
        if entry.get("type") not in carried
    ]


def _gpu_limits(request, current_limits, pools):
    """resourceLimits.gpus without the entries that do nothing (with a warning each), and with one entry per pool GPU
    type: given, kept, or added as min 0 and max what the pools of that type can reach, as the autoscaler counts."""
    limits, warnings = _usable_gpu_limits(current_limits)
    reach = {}
    for pool in pools:
        reach[pool.accelerator] = reach.get(pool.accelerator, 0) + pool.counted_gpus_at_most()
    for accelerator in sorted(reach):
        entry = next((entry for entry in limits if entry.get("type") == accelerator), None)
        if entry is None:
            entry = {"type": accelerator, "min": 0, "max": max(reach[accelerator], 1)}
            limits.append(entry)
        if request.gpu_limit is not None:
            entry.update(min=request.gpu_limit["min"], max=request.gpu_limit["max"])
    return limits, warnings


def _plan_cluster_autoscaler(plan, request, cluster_autoscalers, pools, carried):
    autoscaler = next((ca for ca in cluster_autoscalers if _meta(ca).get("name") == CLUSTER_AUTOSCALER_NAME), None)
    key = ("ClusterAutoscaler", None, CLUSTER_AUTOSCALER_NAME)
    spec = (autoscaler or {}).get("spec") or {}
    current_limits = cluster_autoscaler_gpu_limits(autoscaler)
    limits, warnings = _gpu_limits(request, current_limits, pools)
    plan.warnings.extend(warnings + _unmatched_limit_warnings(limits, carried))
    current_delay = (spec.get("scaleDown") or {}).get("delayAfterAdd")
    if autoscaler is None:
        if not request.create_cluster_autoscaler:
            plan.warnings.append(
                "There is no ClusterAutoscaler %s, so nothing scales: set create_cluster_autoscaler to create it with "
                "the GPU limits and scaleDown.delayAfterAdd %s."
                % (CLUSTER_AUTOSCALER_NAME, RECOMMENDED_DELAY_AFTER_ADD)
            )
            return
        delay = request.delay_after_add or RECOMMENDED_DELAY_AFTER_ADD
        body = {
            "apiVersion": "%s/%s" % CLUSTER_AUTOSCALER[:2],
            "kind": "ClusterAutoscaler",
            "metadata": {"name": CLUSTER_AUTOSCALER_NAME},
            "spec": {"resourceLimits": {"gpus": limits}, "scaleDown": {"enabled": True, "delayAfterAdd": delay}},
        }
        plan.before[_ref(key)] = None
        plan.after[_ref(key)] = {"resourceLimits.gpus": limits, "scaleDown.delayAfterAdd": delay}
        plan.object_writes[key] = ("create", body)
        return
    before = {"resourceLimits.gpus": current_limits}
    after = {"resourceLimits.gpus": limits}
    patch = {}
    if limits != current_limits:
        # The list is replaced whole: resourceVersion makes the write fail rather than drop an entry someone
        # added since the read.
        patch = {"metadata": {"resourceVersion": _meta(autoscaler)["resourceVersion"]}}
        patch["spec"] = {"resourceLimits": {"gpus": limits}}
    if request.delay_after_add is not None:
        before["scaleDown.delayAfterAdd"] = current_delay
        after["scaleDown.delayAfterAdd"] = request.delay_after_add
        if current_delay != request.delay_after_add:
            patch.setdefault("spec", {})["scaleDown"] = {"delayAfterAdd": request.delay_after_add}
    plan.before[_ref(key)], plan.after[_ref(key)] = before, after
    if patch:
        plan.object_writes[key] = ("patch", patch)


def plan_node_autoscaling_labels(request, platform, fleet, node_names):
    """Platforms without MachineSets: the node label the platform's autoscaler reads for the GPU type, or the one
    given in ``autoscaler_gpu_label`` (VKS's is not confirmed: docs/PLATFORM_FACTS.md)."""
    label = request.gpu_label or AUTOSCALER_GPU_LABEL.get(platform)
    if label is None:
        raise GpuShareError(
            "The platform was not recognised (no OpenShift MachineSets, Scaleway or VKS node labels), so there is no "
            "autoscaler GPU label to write; gpu_autoscaling knows OpenShift, Scaleway Kapsule and VNG Cloud VKS. "
            "Name the label in autoscaler_gpu_label."
        )
    plan = ObjectWrites()
    names = node_names if node_names is not None else fleet.gpu_node_names()
    if not names:
        raise GpuShareError("No GPU node to label: check the nodes option.")
    not_gpu = sorted(name for name in names if not fleet.states[name].is_gpu_node)
    if not_gpu:
        raise GpuShareError("Not GPU nodes (no nvidia.com/gpu.present label): %s." % ", ".join(not_gpu))
    for name in sorted(names):
        accelerator = request.accelerator or suggested_accelerator([fleet.states[name]])
        if accelerator is None:
            raise GpuShareError("Node %s shows no GPU product label: set accelerator." % name)
        plan.relabel(fleet, name, label, accelerator)
    if plan.node_patches:
        plan.warnings.append(
            "Labels set on %s nodes are lost when the pool replaces a node: set %s in the pool's (node group's) "
            "labels too, so new nodes come up with it." % (platform or "these", label)
        )
    return plan
