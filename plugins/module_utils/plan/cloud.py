# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Clouds recognised from what they put on nodes, for the rules they impose (VNG Cloud VKS offers no MIG)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Platforms that offer no MIG at all (reference file, section 5), recognised from what they put on nodes:
# VNG Cloud VKS nodes carry vks.vngcloud.vn/* labels and sit in VNG's zones (HCM03-1A, HAN01-1A...).
ZONE_LABEL = "topology.kubernetes.io/zone"
_VKS_ZONE_RE = re.compile(r"^(HCM|HAN)[0-9]{2}-[0-9][A-Z]$")
_VKS_LABEL_PREFIX = "vks.vngcloud.vn/"
VKS = "VNG Cloud VKS"


def cloud_without_mig(nodes):
    """The name of the platform the nodes belong to when it offers no MIG, else None."""
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if any(key.startswith(_VKS_LABEL_PREFIX) for key in labels) or _VKS_ZONE_RE.match(labels.get(ZONE_LABEL) or ""):
            return VKS
    return None
