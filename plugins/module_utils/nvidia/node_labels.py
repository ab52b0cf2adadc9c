# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Node object says about its GPUs (GPU Feature Discovery labels and device plugin resources).

Pure: works on the plain dict the Kubernetes API returns for a Node. The label names are NVIDIA's
(reference file, sections 2 and 4); other code imports them from here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    MIG_RESOURCE_PREFIX,
    MIG_STRATEGY_MIXED,
    RESOURCE_GPU,
    RESOURCE_PREFIX,
    SHARED_RESOURCE_SUFFIX,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.gpu_catalog import (
    base_product,
    find_gpu_model,
    mig_profile_of_product,
    model_by_device_id,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.hami import registered_devices
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import name_form, profile_from_name_form

LABEL_PRESENT = "nvidia.com/gpu.present"
LABEL_PRODUCT = "nvidia.com/gpu.product"
LABEL_COUNT = "nvidia.com/gpu.count"
LABEL_MEMORY = "nvidia.com/gpu.memory"
LABEL_COMPUTE_MAJOR = "nvidia.com/gpu.compute.major"
LABEL_COMPUTE_MINOR = "nvidia.com/gpu.compute.minor"
# Node Feature Discovery's PCI labels carry the device ID when its deviceLabelFields include "device":
# feature.node.kubernetes.io/pci-<class>_<vendor>_<device>[_...].present (or without the class).
_NFD_PCI_LABEL = re.compile(
    r"^feature\.node\.kubernetes\.io/pci-(?:[0-9a-f]{4}_)?10de_([0-9a-f]{4})(?:_[0-9a-f_]*)?\.present$"
)
LABEL_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_SHARING_STRATEGY = "nvidia.com/gpu.sharing-strategy"
LABEL_MIG_CAPABLE = "nvidia.com/mig.capable"
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
LABEL_MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
LABEL_MPS_CAPABLE = "nvidia.com/mps.capable"
LABEL_DEVICE_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
LABEL_DEPLOY_PREFIX = "nvidia.com/gpu.deploy."

# Value mig-manager gives the gpu.deploy.<component> labels while it reconfigures MIG.
PAUSED_FOR_MIG_CHANGE = "paused-for-mig-change"

# The operands mig-manager pauses, in its order.
MIG_PAUSED_COMPONENTS = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "nvsm")
MIG_STATE_SUCCESS = "success"
MIG_STATE_PENDING = "pending"
MIG_STATE_REBOOTING = "rebooting"
# mig-manager is still working on the node: another change now would race it.
BUSY_MIG_STATES = (MIG_STATE_PENDING, MIG_STATE_REBOOTING)
MIG_STATE_FAILED = "failed"
SHARING_NONE = "none"

# GFD's single-strategy product for a layout it cannot describe: <model>-MIG-INVALID, count 0.
MIG_INVALID_SUFFIX = "-MIG-INVALID"

# Kubernetes' rule for a non-empty label value (apimachinery's IsValidLabelValue), which the values of these
# labels and of the autoscalers' GPU labels obey: no '/', so a resource name such as nvidia.com/gpu is never one.
LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
LABEL_VALUE_MAX_LENGTH = 63
LABEL_VALUE_RULE = (
    "a label value: letters, digits, '-', '_' and '.', starting and ending with a letter or digit, "
    "63 characters or less"
)


def is_label_value(value):
    """True when ``value`` can be the value of a label on a node."""
    return isinstance(value, str) and len(value) <= LABEL_VALUE_MAX_LENGTH and bool(LABEL_VALUE.match(value))


def deploy_label(component):
    """``nvidia.com/gpu.deploy.<component>``, the label that switches an operand on or off on a node."""
    return LABEL_DEPLOY_PREFIX + component


def mig_label(profile, attribute):
    """A mixed-strategy MIG label such as ``nvidia.com/mig-1g.10gb.count`` (``+`` written ``.``:
    ``nvidia.com/mig-1g.10gb.me.count``)."""
    return "%s%s.%s" % (MIG_RESOURCE_PREFIX, name_form(profile), attribute)


def pci_device_id_of(labels):
    """The GPU's PCI device ID (``0x233010DE``) from Node Feature Discovery's labels, when exactly one
    MIG GPU the catalog knows is named there; None otherwise."""
    found = set()
    for name, value in labels.items():
        match = _NFD_PCI_LABEL.match(name.lower())
        if match and str(value).lower() == "true":
            device_id = "0x%s10DE" % match.group(1).upper()
            if model_by_device_id(device_id) is not None:
                found.add(device_id)
    return found.pop() if len(found) == 1 else None


def _to_int(value):
    """An int from a label string, None when it is not a plain integer."""
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


# Kubernetes writes a count in its canonical quantity form: the device plugin's 20,000 devices are "20k"
# (resource.NewQuantity(n, DecimalSI)), and a quantity may also carry a binary suffix or an exponent.
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)|[eE]([+-]?[0-9]+))?$")
_QUANTITY_SUFFIXES = dict(
    k=10**3, M=10**6, G=10**9, T=10**12, P=10**15, E=10**18, Ki=2**10, Mi=2**20, Gi=2**30, Ti=2**40, Pi=2**50, Ei=2**60
)


def count_of_quantity(value):
    """The whole number a Kubernetes quantity string ("8", "20k", "1Ki", "2e3") stands for, None when it is not a
    whole number (a count of devices never is fractional)."""
    match = _QUANTITY.match(str(value).strip()) if value is not None else None
    if not match:
        return None
    number, suffix, exponent = match.groups()
    whole, _dot, fraction = number.partition(".")
    # Exact integer arithmetic: number = digits / 10**len(fraction), times the suffix or 10**exponent.
    numerator, denominator = int((whole or "0") + fraction), 10 ** len(fraction)
    if suffix:
        numerator *= _QUANTITY_SUFFIXES[suffix]
    elif exponent:
        power = int(exponent)
        if power >= 0:
            numerator *= 10**power
        else:
            denominator *= 10**-power
    return numerator // denominator if numerator % denominator == 0 else None


def _nvidia_resources(resources):
    """The ``nvidia.com/*`` entries of a capacity/allocatable map, as ints."""
    result = {}
    for name, value in (resources or {}).items():
        number = count_of_quantity(value)
        if name.startswith(RESOURCE_PREFIX) and number is not None:
            result[name] = number
    return result


def _mig_resources(labels):
    """profile -> count from the mixed-strategy ``nvidia.com/mig-<profile>.count`` labels; the profile
    with its attributes (``nvidia.com/mig-1g.10gb.me.count`` -> ``1g.10gb+me``)."""
    result = {}
    suffix = ".count"
    for name, value in labels.items():
        if name.startswith(MIG_RESOURCE_PREFIX) and name.endswith(suffix):
            profile = profile_from_name_form(name[len(MIG_RESOURCE_PREFIX) : -len(suffix)])
            count = _to_int(value)
            if profile and count is not None:
                result[profile] = count
    return result


class NodeGpuState(object):
    """The GPU facts of one node, read from its labels, resources, taints and schedulability."""

    def __init__(self, name, labels, capacity, allocatable, taints, unschedulable, annotations=None):
        self.name = name
        self.labels = labels
        self.product = labels.get(LABEL_PRODUCT)
        self.base_product = base_product(self.product) if self.product else None
        self.count = _to_int(labels.get(LABEL_COUNT)) or 0
        self.memory_mib = _to_int(labels.get(LABEL_MEMORY))
        major, minor = _to_int(labels.get(LABEL_COMPUTE_MAJOR)), _to_int(labels.get(LABEL_COMPUTE_MINOR))
        self.compute_capability = (major, minor or 0) if major is not None else None
        self.pci_device_id = pci_device_id_of(labels)
        self.replicas = _to_int(labels.get(LABEL_REPLICAS)) or 1
        self.sharing_strategy = labels.get(LABEL_SHARING_STRATEGY) or SHARING_NONE
        self.mig_capable = labels.get(LABEL_MIG_CAPABLE) == "true"
        self.mig_strategy = labels.get(LABEL_MIG_STRATEGY)
        self.mig_config = labels.get(LABEL_MIG_CONFIG)
        self.mig_config_state = labels.get(LABEL_MIG_CONFIG_STATE)
        self.mps_capable = labels.get(LABEL_MPS_CAPABLE) == "true"
        self.device_plugin_config = labels.get(LABEL_DEVICE_PLUGIN_CONFIG)
        self.paused_components = sorted(
            name[len(LABEL_DEPLOY_PREFIX) :]
            for name, value in labels.items()
            if name.startswith(LABEL_DEPLOY_PREFIX) and value == PAUSED_FOR_MIG_CHANGE
        )
        self.capacity = _nvidia_resources(capacity)
        self.allocatable = _nvidia_resources(allocatable)
        self.taints = list(taints or [])
        self.unschedulable = bool(unschedulable)
        # HAMi's description of the GPUs, where its device plugin ever registered (nvidia/hami.py), else None.
        self.hami_devices = registered_devices(annotations)
        self.mig_resources = _mig_resources(labels)
        self.is_gpu_node = (
            labels.get(LABEL_PRESENT) == "true"
            or LABEL_COUNT in labels
            or any(value > 0 for value in self.capacity.values())
        )
        self.gpu_model = (
            find_gpu_model(self.product, self.memory_mib, self.pci_device_id)
            if self.product or self.pci_device_id
            else None
        )
        # Single strategy names the MIG device in the product; mixed advertises nvidia.com/mig-<profile>.
        self.mig_enabled = bool(self.product and "-MIG-" in self.product) or any(
            name.startswith(MIG_RESOURCE_PREFIX) and value > 0 for name, value in self.capacity.items()
        )

    @classmethod
    def from_node(cls, node):
        metadata = node.get("metadata") or {}
        spec = node.get("spec") or {}
        status = node.get("status") or {}
        return cls(
            name=metadata.get("name"),
            labels=dict(metadata.get("labels") or {}),
            capacity=status.get("capacity"),
            allocatable=status.get("allocatable"),
            taints=spec.get("taints"),
            unschedulable=spec.get("unschedulable"),
            annotations=metadata.get("annotations"),
        )

    def shared_resource(self, resource=RESOURCE_GPU):
        """The name ``resource`` is advertised under: ``<resource>.shared`` when renameByDefault is in effect."""
        renamed = resource + SHARED_RESOURCE_SUFFIX
        return renamed if renamed in self.capacity else resource

    def to_dict(self):
        return {
            "name": self.name,
            "product": self.product,
            "base_product": self.base_product,
            "gpu_model": self.gpu_model.name if self.gpu_model else None,
            "count": self.count,
            "memory_mib": self.memory_mib,
            "compute_capability": "%d.%d" % self.compute_capability if self.compute_capability else None,
            "pci_device_id": self.pci_device_id,
            "replicas": self.replicas,
            "sharing_strategy": self.sharing_strategy,
            "mig_capable": self.mig_capable,
            "mig_strategy": self.mig_strategy,
            "mig_enabled": self.mig_enabled,
            "mig_config": self.mig_config,
            "mig_config_state": self.mig_config_state,
            "mig_resources": dict(self.mig_resources),
            "mps_capable": self.mps_capable,
            "device_plugin_config": self.device_plugin_config,
            "paused_components": list(self.paused_components),
            "capacity": dict(self.capacity),
            "allocatable": dict(self.allocatable),
            "taints": [dict(taint) for taint in self.taints],
            "unschedulable": self.unschedulable,
            "is_gpu_node": self.is_gpu_node,
        }


def advertised_mig_devices(state):
    """profile -> MIG devices a node advertises: the mixed-strategy labels, or the single-strategy product and count."""
    if state.mig_strategy == MIG_STRATEGY_MIXED:
        return dict(state.mig_resources)
    profile = mig_profile_of_product(state.product)
    return {profile: state.count} if profile else {}
