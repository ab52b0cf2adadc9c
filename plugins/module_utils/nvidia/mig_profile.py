# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG profile strings as go-nvlib parses them, and the forms they take in config and resource names.

Pure: no I/O. Grammar (go-nvlib ``pkg/nvlib/device/mig_profile.go:251-382`` at
NVIDIA/go-nvlib@3c161560521e3208792199f2ed0d559a5f3ae4f4, the version mig-parted vendors):
``[<C>c.]<G>g.<GB>gb[+attr[,attr...] | -attr[,attr...]]``; numbers as ``strconv.Atoi`` reads them (so
``01g.05gb`` parses), no range check at parse time; ``+`` and ``-`` never both; attributes unique,
non-empty, not starting with a digit, not starting or ending with ``.``, made of ``[A-Za-z0-9.]``.
The canonical string (``String()``) is ``<G>g.<GB>gb`` when C == G, else ``<C>c.<G>g.<GB>gb``, then
the attributes. mig-parted compares ``mig-devices`` keys as strings, so only the canonical form is
ever written. Config names and resource names write ``+`` as ``.`` (mig-parted builder.go:34-39,
device plugin rm.go:140-147): ``1g.10gb+me`` -> ``all-1g.10gb.me``, ``nvidia.com/mig-1g.10gb.me``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError

# GPU- and compute-instance slice counts NVML has profiles for (mig_profile.go:61-111).
VALID_SLICE_COUNTS = (1, 2, 3, 4, 6, 7, 8)
# Attributes NVML produces (mig_profile.go:29-34, 113-131).
NVML_ATTRIBUTES = ("+me", "+me.all", "+gfx", "-me")
# Attributes that take the GPU's one media extension: at most one such instance per GPU.
MEDIA_EXTENSION_ATTRIBUTES = ("+me", "+me.all")

_DIGITS = re.compile(r"^[0-9]+$")
_ATTRIBUTE = re.compile(r"^[A-Za-z0-9.]+$")
# A profile in name form: ``1g.10gb.me`` (``+`` written ``.``) or ``1g.24gb-me``.
_NAME_FORM = re.compile(r"^((?:[0-9]+c\.)?[0-9]+g\.[0-9]+gb)(?:\.(.+)|(-.+))?$")
# Go's strconv.Atoi on 64-bit platforms.
_MAX_INT = 2**63 - 1


class MigProfileString(object):
    """A parsed profile string: ``compute`` (C), ``gpu`` (G), ``memory_gb`` (GB), ``sign`` ('', '+' or
    '-') and ``attributes`` (as written, in order)."""

    def __init__(self, compute, gpu, memory_gb, sign, attributes):
        self.compute = compute
        self.gpu = gpu
        self.memory_gb = memory_gb
        self.sign = sign
        self.attributes = tuple(attributes)

    @property
    def suffix(self):
        return self.sign + ",".join(self.attributes) if self.attributes else ""

    @property
    def canonical(self):
        """go-nvlib's ``String()``: ``1c.1g.5gb`` -> ``1g.5gb``, ``01g.05gb`` -> ``1g.5gb``."""
        prefix = "" if self.compute == self.gpu else "%dc." % self.compute
        return "%s%dg.%dgb%s" % (prefix, self.gpu, self.memory_gb, self.suffix)

    @property
    def gpu_instance(self):
        """The GPU-instance profile this (compute-instance) profile lives in: ``1c.7g.80gb`` -> ``7g.80gb``."""
        return "%dg.%dgb%s" % (self.gpu, self.memory_gb, self.suffix)

    @property
    def is_compute_instance(self):
        return self.compute != self.gpu

    def __repr__(self):
        return "MigProfileString(%r)" % self.canonical


def _field(text, suffix, profile):
    if not text.endswith(suffix):
        raise GpuShareError("MIG profile %r: missing '%s' in '<n>%s'" % (profile, suffix, suffix))
    number = text[: -len(suffix)]
    if not _DIGITS.match(number) or int(number) > _MAX_INT:
        raise GpuShareError("MIG profile %r: malformed number in '<n>%s'" % (profile, suffix))
    return int(number)


def parse_mig_profile(profile):
    """The parsed profile, or GpuShareError saying what is wrong (the grammar above, exactly)."""
    if not isinstance(profile, str) or not profile:
        raise GpuShareError("MIG profile %r: a profile is a string such as 1g.10gb or 1g.10gb+me" % (profile,))
    if "+" in profile and "-" in profile:
        raise GpuShareError("MIG profile %r contains both '+/-' attributes" % profile)
    sign = "+" if "+" in profile else "-" if "-" in profile else ""
    fields, attributes = (profile.split(sign, 1) + [None])[:2] if sign else (profile, None)
    parts = fields.split(".", 2)
    if len(parts) == 3:
        compute, gpu, memory = (
            _field(parts[0], "c", profile),
            _field(parts[1], "g", profile),
            _field(parts[2], "gb", profile),
        )
    elif len(parts) == 2:
        gpu, memory = _field(parts[0], "g", profile), _field(parts[1], "gb", profile)
        compute = gpu
    else:
        raise GpuShareError(
            "MIG profile %r: expected [<C>c.]<G>g.<GB>gb[+attribute|-attribute], e.g. 1g.10gb or 1g.10gb+me" % profile
        )
    names = []
    if sign:
        names = attributes.split(",")
        for name in names:
            if not name:
                raise GpuShareError("MIG profile %r: empty attribute" % profile)
            if names.count(name) > 1:
                raise GpuShareError("MIG profile %r: attribute %s given twice" % (profile, name))
            if name[0].isdigit() or name[0] == "." or name[-1] == "." or not _ATTRIBUTE.match(name):
                raise GpuShareError(
                    "MIG profile %r: bad attribute %r (letters, digits and inner dots; several are separated by ',', "
                    "e.g. 1g.10gb+me, 1g.24gb+me.all)" % (profile, name)
                )
    return MigProfileString(compute, gpu, memory, sign, names)


def is_profile_string(profile):
    """True when go-nvlib parses ``profile``."""
    try:
        parse_mig_profile(profile)
    except GpuShareError:
        return False
    return True


def canonical_profile(profile):
    """The canonical form of a well-formed profile (GpuShareError otherwise)."""
    return parse_mig_profile(profile).canonical


def name_form(profile):
    """``+`` written ``.``, as in config names and resource names: ``1g.10gb+me`` -> ``1g.10gb.me``."""
    return profile.replace("+", ".")


def profile_from_name_form(text):
    """The profile a config-name or resource-name part stands for: ``1g.10gb.me`` -> ``1g.10gb+me``,
    ``1g.24gb-me`` -> ``1g.24gb-me``, ``1g.10gb`` -> ``1g.10gb``; None when it is no profile."""
    if not isinstance(text, str):
        return None
    match = _NAME_FORM.match(text)
    if not match:
        return None
    base, dotted, minus = match.groups()
    profile = base + ("+" + dotted if dotted else minus or "")
    return profile if is_profile_string(profile) else None
