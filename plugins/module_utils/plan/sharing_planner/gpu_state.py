# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One GPU's state for gpu_sharing_plan: what it is, or is planned to be, and what that advertises. Pure: no I/O.

- whole: one ``nvidia.com/gpu``;
- time-slicing or MPS by ``replicas``: that many ``nvidia.com/gpu`` (``nvidia.com/gpu.shared`` when ``renamed``);
- MIG with a GPU layout (``nvidia/mig_layouts``' form): one ``nvidia.com/mig-<profile>`` per instance (the mixed
  strategy; a MIG-disabled GPU of a MIG node is whole);
- unknown: a GPU whose state cannot be read back (a MIG config the planner cannot resolve); it advertises nothing the
  planner counts, and can be kept only with its whole node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    METHOD_MPS,
    METHOD_TIME_SLICING,
    RESOURCE_GPU,
    RESOURCE_GPU_SHARED,
    mig_resource_name,
)


class GpuKind(object):
    """The kinds of GPU state; each is also the ``mode`` gpu_sharing_plan's answer gives a node in that state."""

    WHOLE = "whole"
    MIG = "mig"
    TIME_SLICING = METHOD_TIME_SLICING
    MPS = METHOD_MPS
    UNKNOWN = "unknown"
    SHARED = (TIME_SLICING, MPS)
    # Kinds a change away from stops the node's pods: mig-manager reconfigures only GPUs nothing runs on (the modules
    # drain the node for it), and the MPS control daemon restarts with its clients; an unknown GPU may be either.
    STOPPING_FROM = (MIG, MPS, UNKNOWN)
    STOPPING_TO = (MIG, MPS)


class GpuState(namedtuple("GpuState", "kind layout replicas renamed")):
    """One GPU's state: its ``kind`` (``GpuKind``); for MIG its ``layout`` (sorted (profile, count) pairs), for
    time-slicing and MPS its ``replicas`` and whether they are ``renamed`` (``.shared``). Build it with ``WHOLE``,
    ``UNKNOWN``, ``mig_gpu`` and ``shared_gpu``: equal states are equal values."""

    __slots__ = ()

    @property
    def is_mig(self):
        return self.kind == GpuKind.MIG

    @property
    def is_shared(self):
        return self.kind in GpuKind.SHARED

    def advertises(self):
        """{resource: count} a GPU in this state advertises."""
        if self.kind == GpuKind.WHOLE:
            return {RESOURCE_GPU: 1}
        if self.is_mig:
            return dict((mig_resource_name(profile), count) for profile, count in self.layout)
        if self.is_shared:
            return {RESOURCE_GPU_SHARED if self.renamed else RESOURCE_GPU: self.replicas}
        return {}

    def free_slices(self, model):
        """Compute slices a MIG GPU of ``model`` leaves unpartitioned (0 in any other state)."""
        if not self.is_mig:
            return 0
        return model.compute_slices - sum(count * model.facts[profile]["slices"] for profile, count in self.layout)

    def sort_key(self):
        """The order states are listed in wherever the order reaches the plan (the program's variables, the reading
        back): by kind, then the text of the details. Among equally good plans the solver's pick depends on it, so it
        is the order the planner has always used: the text of the tuples states were before they had a type
        (``("mig", layout)``, ``(method, replicas, renamed)``, ``("whole",)``, ``("unknown",)``)."""
        if self.is_mig:
            details = (self.layout,)
        elif self.is_shared:
            details = (self.replicas, self.renamed)
        else:
            details = ()
        return repr((self.kind,) + details)


WHOLE = GpuState(GpuKind.WHOLE, None, None, None)
UNKNOWN = GpuState(GpuKind.UNKNOWN, None, None, None)


def mig_gpu(layout):
    """A MIG GPU split as ``layout`` (sorted (profile, count) pairs; empty: MIG on, nothing split)."""
    return GpuState(GpuKind.MIG, tuple(layout), None, None)


def shared_gpu(method, replicas, renamed=False):
    """A GPU shared by ``method`` (``GpuKind.TIME_SLICING`` or ``GpuKind.MPS``) in ``replicas``."""
    return GpuState(method, None, replicas, bool(renamed))


def stops_pods(old, new):
    """Whether changing one GPU from ``old`` to ``new`` stops the node's GPU pods (``GpuKind.STOPPING_FROM``,
    ``STOPPING_TO``). Time-slicing replicas and whole GPUs change through a device-plugin restart, which running pods
    survive."""
    return old != new and (old.kind in GpuKind.STOPPING_FROM or new.kind in GpuKind.STOPPING_TO)


def states_supply(states):
    """{resource: count} GPUs in ``states`` advertise together."""
    supply = {}
    for state in states:
        for resource, count in state.advertises().items():
            supply[resource] = supply.get(resource, 0) + count
    return supply
