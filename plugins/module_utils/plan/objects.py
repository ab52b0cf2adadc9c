# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every plan writes: ConfigMap, ClusterPolicy and node patches, in one shape the one writer applies."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def with_annotations(patch, annotations):
    if annotations:
        patch.setdefault("metadata", {})["annotations"] = annotations
    return patch
