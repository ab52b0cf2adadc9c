"""The simulated GPUs, as NVML reports them: name, memory, PCI device id, compute capability, and the
MIG profiles of each (slices, the most instances one GPU holds, memory in MiB).

The simulator keeps its own copy of NVIDIA's facts in ``testbed/nvidia_data/`` (its README names
every file's source) and never uses the collection's GPU catalog: a wrong fact there must not be
confirmed by a stand-in that shares it.

Where the facts of a MIG profile come from:

- GPUs measured through NVML (``*-nvml.json``: H100 80GB HBM3, H200): every profile NVML lists, with
  its slice count, ``instanceCount``, ``memorySizeMB`` (MiB) and profile ``id`` as the driver reported them.
- Other GPUs: the profile names listed in ``GPUS`` below (the MIG table of the reference
  ``nvidia-gpu-sharing.md``, section 4, plus the ``+me`` profile of NVIDIA's shipped config), the most
  instances from NVIDIA's shipped ``default-mig-parted-config`` (the count its ``all-<profile>``
  config gives the GPU's PCI device id), the memory estimated by ``estimated_memory_mib``, and the profile
  id the measured GPUs give the same kind of profile (``profile_kind``): NVML numbers profiles by kind, not
  by model (both dumps agree: 1-slice 19, its ``+me`` 20, its double-memory variant 15, 2-slice 14...).
"""

import functools
import json
import os

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nvidia_data")
SHIPPED_MIG_CONFIG = "default-mig-parted-config.json"
# A MIG-capable GPU's memory is cut into eight slices (go-nvlib getMigMemorySizeGB rounds to 1/8).
MEMORY_SLICES = 8
MIB = 1024 * 1024
GIB = 1024 * MIB

# One entry per simulated GPU model, keyed by the name NVML reports. ``nvml`` names a measured dump
# in nvidia_data/ (which then supplies memory, compute capability and MIG profiles); otherwise
# ``memory_mib`` and ``compute`` are the usual nvidia-smi figures for that board, not measured here.
# PCI device ids of MIG GPUs are those of ``pci-device-ids.json``; the non-MIG ones (T4, A10, L4)
# come from pci.ids and appear in no device-filter.
GPUS = {
    "NVIDIA A100-PCIE-40GB": dict(
        pci_device_id="0x20F110DE",
        family="ampere",
        memory_mib=40960,
        compute=(8, 0),
        mig_profiles=("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    ),
    "NVIDIA H100 80GB HBM3": dict(pci_device_id="0x233010DE", family="hopper", nvml="h100-80gb-hbm3-nvml.json"),
    "NVIDIA H100 PCIe": dict(
        pci_device_id="0x233110DE",
        family="hopper",
        memory_mib=81559,
        compute=(9, 0),
        mig_profiles=("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ),
    "NVIDIA H200": dict(pci_device_id="0x233510DE", family="hopper", nvml="h200-nvml.json"),
    "Tesla T4": dict(pci_device_id="0x1EB810DE", family="turing", memory_mib=15360, compute=(7, 5)),
    "NVIDIA A10": dict(pci_device_id="0x223610DE", family="ampere", memory_mib=23028, compute=(8, 6)),
    "NVIDIA L4": dict(pci_device_id="0x27B810DE", family="ada-lovelace", memory_mib=23034, compute=(8, 9)),
}


class MigProfile(object):
    """One GPU-instance profile on one GPU model (``name`` as NVML prints it, e.g. ``1g.10gb+me``)."""

    def __init__(self, name, slices, max_instances, memory_mib, profile_id, measured):
        self.name = name
        self.slices = slices
        self.max_instances = max_instances
        self.memory_mib = memory_mib
        self.profile_id = profile_id  # what `nvidia-smi mig -lgi` prints as "Profile ID"
        self.measured = measured

    def __repr__(self):
        return "MigProfile(%r, slices=%d, max=%d, %d MiB)" % (
            self.name,
            self.slices,
            self.max_instances,
            self.memory_mib,
        )


class Gpu(object):
    """One GPU model. ``mig_profiles`` is empty when the GPU has no MIG."""

    def __init__(self, nvml_name, pci_device_id, family, memory_mib, compute, mig_profiles, measured):
        self.nvml_name = nvml_name
        self.product = gfd_product(nvml_name)
        self.pci_device_id = pci_device_id
        self.family = family
        self.memory_mib = memory_mib
        self.compute = compute
        self.mig_profiles = mig_profiles
        self.measured = measured

    @property
    def mig_capable(self):
        return bool(self.mig_profiles)

    @property
    def compute_slices(self):
        """Compute slices of the whole GPU: those of its largest profile (7; 4 on an A30)."""
        return max(profile.slices for profile in self.mig_profiles.values()) if self.mig_profiles else 0

    def memory_slices(self, profile):
        """Eighths of the GPU's memory one instance of ``profile`` takes (go-nvlib rounds up to 1/8)."""
        return -(-self.mig_profiles[profile].memory_mib * MEMORY_SLICES // self.memory_mib)

    def __repr__(self):
        return "Gpu(%r)" % self.nvml_name


def gfd_product(nvml_name):
    """GPU Feature Discovery's product label: characters outside [A-Za-z0-9-_. ] dropped, spaces become '-'."""
    kept = "".join(char for char in nvml_name if char.isascii() and (char.isalnum() or char in "-_. "))
    return kept.replace(" ", "-")


def load(name):
    with open(os.path.join(DATA_DIR, name)) as data:
        return json.load(data)


def profile_slices(profile):
    """GPU-instance slices a profile name says: ``3g.40gb`` -> 3, ``1g.10gb+me`` -> 1."""
    return int(profile.split("g.", 1)[0].split(".")[-1])


def profile_memory_gb(profile):
    """The GB figure of a profile name: ``3g.40gb`` -> 40."""
    return int(profile.split("g.", 1)[1].split("gb", 1)[0])


def named_memory_gb(total_mib, memory_mib):
    """The GB figure go-nvlib puts in a profile's name (``getMigMemorySizeGB``, mig-parted-rules.md §2):
    the profile's share of the GPU's memory rounded up to 1/8, times the GPU's memory in whole GB."""
    eighths = -(-memory_mib * MEMORY_SLICES // total_mib)
    total_gb = -(-total_mib * MIB // GIB)
    return int(eighths * total_gb / float(MEMORY_SLICES) + 0.5)


def estimated_memory_mib(total_mib, profile, full_profile):
    """Memory of one ``profile`` instance on a GPU not measured here: the share of the GPU's memory its
    name gives (its GB over the GB of the full-GPU profile), rounded down to a MiB.

    This is the largest size that go-nvlib's naming rule (``named_memory_gb``) still names after the
    profile. Real sizes are a little smaller (9984 MiB for 1g.10gb on a measured H100 80GB HBM3, where
    this rule would give 10194), and never the name's GB x 1024.
    """
    return total_mib * profile_memory_gb(profile) // profile_memory_gb(full_profile)


def profile_kind(profile, profiles):
    """What NVML numbers a profile by: its slices, its attributes (``+me``), and whether it is the double-memory
    variant of that slice count (``1g.20gb`` next to ``1g.10gb``), among the GPU's ``profiles`` names."""
    slices, attributes = profile_slices(profile), profile.partition("+")[2]
    plain = [name for name in profiles if profile_slices(name) == slices and "+" not in name]
    doubled = not attributes and profile_memory_gb(profile) > min(profile_memory_gb(name) for name in plain)
    return slices, attributes, doubled


def _measured_profile_ids():
    """``{profile kind: NVML profile id}`` from the measured GPUs (ValueError if they disagree)."""
    ids = {}
    for spec in GPUS.values():
        if "nvml" in spec:
            for gpu in load(spec["nvml"])["gpus"]:
                names = [item["name"][len("MIG ") :] for item in gpu["gpu_instance_profiles"]]
                for name, item in zip(names, gpu["gpu_instance_profiles"]):
                    if ids.setdefault(profile_kind(name, names), item["id"]) != item["id"]:
                        raise ValueError("the NVML dumps disagree on the profile id of %s" % name)
    return ids


def _shipped_max_instances(configs, profile, pci_device_id):
    """How many ``profile`` instances NVIDIA's shipped ``all-<profile>`` config puts on a GPU with this id."""
    name = "all-" + profile.replace("+", ".")
    for entry in configs.get(name) or []:
        device_filter = entry["device-filter"]
        if device_filter is None or pci_device_id.lower() in [item.lower() for item in device_filter]:
            return entry["mig-devices"][profile]
    raise ValueError("the shipped MIG config has no %s for %s" % (name, pci_device_id))


def _measured_profiles(dump):
    profiles = {}
    for item in dump["gpu_instance_profiles"]:
        name = item["name"][len("MIG ") :]
        profiles[name] = MigProfile(
            name, item["sliceCount"], item["instanceCount"], item["memorySizeMB"], item["id"], True
        )
    return profiles


def _gpu(nvml_name, spec, shipped_configs, profile_ids):
    if "nvml" in spec:
        dump = [gpu for gpu in load(spec["nvml"])["gpus"] if gpu["name"] == nvml_name][0]
        return Gpu(
            nvml_name,
            spec["pci_device_id"],
            spec["family"],
            dump["memory_total_mib"],
            tuple(dump["cuda_cc"]),
            _measured_profiles(dump),
            True,
        )
    names = spec.get("mig_profiles") or ()
    full = max(names, key=profile_slices) if names else None
    profiles = {
        name: MigProfile(
            name,
            profile_slices(name),
            _shipped_max_instances(shipped_configs, name, spec["pci_device_id"]),
            estimated_memory_mib(spec["memory_mib"], name, full),
            profile_ids[profile_kind(name, names)],
            False,
        )
        for name in names
    }
    return Gpu(nvml_name, spec["pci_device_id"], spec["family"], spec["memory_mib"], spec["compute"], profiles, False)


@functools.lru_cache(maxsize=None)
def gpus():
    """``{GFD product label: Gpu}`` for every simulated GPU model."""
    shipped, profile_ids = load(SHIPPED_MIG_CONFIG)["configs"], _measured_profile_ids()
    models = [_gpu(name, spec, shipped, profile_ids) for name, spec in GPUS.items()]
    return {gpu.product: gpu for gpu in models}


def gpu(product):
    """The simulated GPU model whose GFD product label is ``product`` (KeyError if none)."""
    return gpus()[product]


def gpu_of(hardware):
    """The GPU model of a node's ``sim.gpushare.k8s/hardware`` record."""
    return gpu(hardware["product"])
