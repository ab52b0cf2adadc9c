# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU catalog: which GPU a GFD product label names, and its MIG profiles.

Pure: no I/O. The MIG table is NVIDIA's (mig-parted / gpu-operator shipped configs), restated from
the reference file, section 4."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections import namedtuple

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError

# A MIG layout may use at most this many compute slices on one GPU (the full-GPU profile is 7g.*).
MAX_COMPUTE_SLICES = 7

# A MIG-capable GPU's memory is cut into eight slices; a profile takes a whole number of them.
MEMORY_SLICES = 8

# Memory labels (MiB, as nvidia-smi reports) are a little below or above the marketed size
# (H100 80GB HBM3 reports 81559, H200 143771): a row matches within this fraction.
MEMORY_TOLERANCE = 0.05
_PROFILE_RE = re.compile(r"^([1-7])g\.([1-9][0-9]*)gb$")
_SIZE_TOKEN_RE = re.compile(r"^([1-9][0-9]*)GB?$", re.IGNORECASE)
_MIG_SUFFIX_RE = re.compile(r"-MIG-(.+)$")
# GFD appends it to nvidia.com/gpu.product on nodes whose GPUs are shared (time-slicing, MPS) unless renamed.
SHARED_PRODUCT_SUFFIX = "-SHARED"


class GpuModel(object):
    """One row of the catalog.

    ``profiles`` maps each MIG profile to the most instances of it one GPU can hold; ``balanced`` is
    the ``all-balanced`` layout. Both are empty for GPUs without MIG. ``memory_gb`` is the marketed
    memory size of a MIG row, None for GPUs without MIG.
    """

    def __init__(self, name, mig_capable, profiles=None, balanced=None, memory_gb=None):
        self.name = name
        self.mig_capable = mig_capable
        self.profiles = dict(profiles or {})
        self.balanced = dict(balanced or {})
        self.memory_gb = memory_gb

    @property
    def max_compute_slices(self):
        """Compute slices of the whole GPU: those of its largest profile (4 on an A30, 7 elsewhere)."""
        if not self.profiles:
            return 0
        return max(profile_slices(profile) for profile in self.profiles)

    def profile_memory_slices(self, profile):
        """How many of the GPU's eight memory slices one instance of ``profile`` takes."""
        return int(round(profile_memory_gb(profile) * MEMORY_SLICES / float(self.memory_gb)))

    def __eq__(self, other):
        return isinstance(other, GpuModel) and self.to_dict() == other.to_dict()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "GpuModel(%r, mig_capable=%r)" % (self.name, self.mig_capable)

    def to_dict(self):
        return {
            "name": self.name,
            "mig_capable": self.mig_capable,
            "profiles": dict(self.profiles),
            "balanced": dict(self.balanced),
            "memory_gb": self.memory_gb,
        }


def _mig_table(g1_small, g1_large, g2, g3, g4, g7):
    """Profiles of the usual 7-slice layout, named by their memory sizes in GB."""
    profiles = {
        "1g.%dgb" % g1_small: 7,
        "1g.%dgb" % g1_large: 4,
        "2g.%dgb" % g2: 3,
        "3g.%dgb" % g3: 2,
        "4g.%dgb" % g4: 1,
        "7g.%dgb" % g7: 1,
    }
    balanced = {"1g.%dgb" % g1_small: 2, "2g.%dgb" % g2: 1, "3g.%dgb" % g3: 1}
    return profiles, balanced


_A30 = ({"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1}, {"1g.6gb": 2, "2g.12gb": 1})
_A100_40 = _mig_table(5, 10, 10, 20, 20, 40)
_GPU_80 = _mig_table(10, 20, 20, 40, 40, 80)
_H100_NVL = _mig_table(12, 24, 24, 47, 47, 94)
_GPU_96 = _mig_table(12, 24, 24, 48, 48, 96)
_H200 = _mig_table(18, 35, 35, 71, 71, 141)
_GH200_144 = _mig_table(18, 36, 36, 72, 72, 144)
_B200 = _mig_table(23, 45, 45, 90, 90, 180)

# One row of NVIDIA's MIG table: a family at one memory size.
_Row = namedtuple("_Row", ["memory_gb", "profiles", "balanced"])

# family -> rows. A100X, A800 and AX800 are A100 variants with the A100's MIG
# geometry (the reference lists them as MIG capable without their own rows).
_MIG_FAMILIES = {
    "A30": [_Row(24, *_A30)],
    "A100": [_Row(40, *_A100_40), _Row(80, *_GPU_80)],
    "A100X": [_Row(80, *_GPU_80)],
    "A800": [_Row(40, *_A100_40), _Row(80, *_GPU_80)],
    "AX800": [_Row(80, *_GPU_80)],
    "H100": [_Row(80, *_GPU_80), _Row(96, *_GPU_96)],
    "H100 NVL": [_Row(94, *_H100_NVL)],
    "H800": [_Row(80, *_GPU_80)],
    "H20": [_Row(96, *_GPU_96)],
    "GH200": [_Row(96, *_GPU_96), _Row(144, *_GH200_144)],
    "H200": [_Row(141, *_H200)],
    "B200": [_Row(180, *_B200)],
}

# Product tokens of data-centre and workstation GPUs without MIG (reference: not on T4, A10, L4, RTX).
_NON_MIG_FAMILIES = frozenset(
    [
        "K80",
        "M60",
        "M40",
        "P4",
        "P40",
        "P100",
        "P6",
        "V100",
        "V100S",
        "T4",
        "A2",
        "A10",
        "A10G",
        "A16",
        "A40",
        "L4",
        "L20",
        "L40",
        "L40S",
    ]
)

_NON_MIG_BRANDS = frozenset(["RTX", "QUADRO", "GEFORCE", "TITAN", "GRID"])
_VENDOR_TOKENS = frozenset(["NVIDIA", "TESLA"])


def base_product(product):
    """The GFD product label without the ``-SHARED`` and ``-MIG-<profile>`` suffixes GFD appends.

    ``-SHARED`` comes last when a MIG single-strategy node is also shared, so it is stripped first.
    """
    return _split_product(product)[0]


def _split_product(product):
    """(base product, MIG part or None): ``NVIDIA-H100-PCIe-MIG-1g.10gb`` -> (``NVIDIA-H100-PCIe``, ``1g.10gb``)."""
    product = (product or "").strip()
    if product.upper().endswith(SHARED_PRODUCT_SUFFIX):
        product = product[: -len(SHARED_PRODUCT_SUFFIX)]
    match = _MIG_SUFFIX_RE.search(product)
    if match:
        return product[: match.start()], match.group(1)
    return product, None


def mig_profile_of_product(product):
    """The MIG profile a single-strategy product label names (``...-MIG-1g.10gb`` -> ``1g.10gb``).

    None when the label names no MIG device or an invalid layout (``-MIG-INVALID``).
    """
    mig_part = _split_product(product)[1]
    return mig_part if mig_part and is_valid_profile_name(mig_part) else None


def is_valid_profile_name(profile):
    """True for a well-formed GPU-instance profile name such as ``3g.40gb``."""
    return isinstance(profile, str) and _PROFILE_RE.match(profile) is not None


def _parse_profile(profile):
    match = _PROFILE_RE.match(profile) if isinstance(profile, str) else None
    if not match:
        raise GpuShareError("'%s' is not a MIG profile name: expected <slices>g.<memory>gb, e.g. 3g.40gb" % (profile,))
    return int(match.group(1)), int(match.group(2))


def profile_slices(profile):
    """Compute slices of a profile: ``3g.40gb`` -> 3."""
    return _parse_profile(profile)[0]


def profile_memory_gb(profile):
    """Memory of a profile in GB as its name says: ``3g.40gb`` -> 40."""
    return _parse_profile(profile)[1]


def mig_memory_mib(model, profile):
    """Nominal memory of one ``profile`` instance on ``model`` in MiB (the name's GB x 1024).

    GFD's ``nvidia.com/mig-<profile>.memory`` on real hardware is a little lower (9728 for 1g.10gb):
    this is the figure to use where only the size matters, not an exact replica of the driver.
    """
    if profile not in model.profiles:
        raise GpuShareError(
            "MIG profile %s does not exist on %s; valid profiles: %s"
            % (profile, model.name, describe_mig_profiles(model))
        )
    return profile_memory_gb(profile) * 1024


def sorted_profiles(profiles):
    """Profile names ordered by slices then memory, the order NVIDIA's tables use."""
    return sorted(profiles, key=lambda profile: (profile_slices(profile), profile_memory_gb(profile)))


def describe_mig_profiles(model):
    """``1g.10gb (max 7), 1g.20gb (max 4), ...`` for error messages; ``none`` without MIG."""
    if not model.profiles:
        return "none"
    return ", ".join("%s (max %d)" % (profile, model.profiles[profile]) for profile in sorted_profiles(model.profiles))


def _tokens(product):
    return [token for token in re.split(r"[-_ ]+", product.upper()) if token]


def _family(tokens):
    """The catalog family a product's tokens name, or None."""
    for token in tokens:
        if token == "H100" and "NVL" in tokens:
            return "H100 NVL"
        if token in _MIG_FAMILIES:
            return token
    return None


def _is_non_mig(tokens):
    if "RTX" in tokens and "PRO" in tokens:
        # RTX PRO Blackwell server cards do have MIG, but their table is not in the catalog: unknown.
        return False
    return any(token in _NON_MIG_FAMILIES or token in _NON_MIG_BRANDS for token in tokens)


def _row_by_memory(rows, memory_mib):
    """The row whose marketed size is nearest the memory label, None when none is within MEMORY_TOLERANCE."""

    def distance(row):
        nominal = row.memory_gb * 1024
        return abs(memory_mib - nominal) / float(nominal)

    nearest = min(rows, key=distance)
    return nearest if distance(nearest) <= MEMORY_TOLERANCE else None


def find_gpu_model(product, memory_mib=None):
    """The catalog row for a GFD product label and its ``nvidia.com/gpu.memory`` (MiB), or None if unknown.

    The family comes from the product; the row from, in order: the MIG profile in a single-strategy
    product (``1g.12gb`` exists only on 94/96GB parts), the memory label when it matches a row (on a
    MIG single-strategy node it describes the MIG device, so it matches none and is skipped), and a
    size in the product name (``NVIDIA-A100-SXM4-80GB``). Returns None when the row stays ambiguous.
    """
    base, mig_part = _split_product(product)
    if not base:
        return None
    tokens = _tokens(base)
    family = _family(tokens)
    if family is None:
        if _is_non_mig(tokens):
            name = " ".join(
                token for token in base.replace("_", "-").split("-") if token and token.upper() not in _VENDOR_TOKENS
            )
            return GpuModel(name or base, False)
        return None

    rows = _MIG_FAMILIES[family]
    if is_valid_profile_name(mig_part):
        rows = [row for row in rows if mig_part in row.profiles]
    if len(rows) > 1 and memory_mib:
        by_memory = _row_by_memory(rows, memory_mib)
        rows = [by_memory] if by_memory else rows
    if len(rows) > 1:
        sizes = [int(match.group(1)) for match in (_SIZE_TOKEN_RE.match(token) for token in tokens) if match]
        rows = [row for row in rows if row.memory_gb in sizes]
    if len(rows) != 1:
        return None
    row = rows[0]
    return GpuModel("%s %dGB" % (family, row.memory_gb), True, row.profiles, row.balanced, row.memory_gb)
