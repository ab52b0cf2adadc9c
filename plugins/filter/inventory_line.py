# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: inventory_line
short_description: One line of text describing a GPU node from gpu_info
version_added: 0.1.0
description:
  - Formats one entry of the C(nodes) returned by M(gpushare.k8s.gpu_info) as a fixed-width line
    (name, product, count, replicas, sharing strategy, MIG state, device-plugin profile, allocatable
    C(nvidia.com/*) resources), for reports and the demo.
options:
  _input:
    description: One value of the C(nodes) dictionary returned by M(gpushare.k8s.gpu_info).
    type: dict
    required: true
author:
  - gpushare.k8s contributors (@gpushare)
"""

EXAMPLES = r"""
- name: Print the GPU nodes
  ansible.builtin.debug:
    msg: "{{ gpus.nodes | dict2items | map(attribute='value') | map('gpushare.k8s.inventory_line') | list }}"
"""

RETURN = r"""
_value:
  description: The formatted line.
  type: str
"""


def allocatable_text(node):
    """``gpu=4,mig-1g.10gb=7``: a node's allocatable ``nvidia.com/*`` resources, or ``-``."""
    return (
        ",".join(
            "%s=%s" % (name[len("nvidia.com/") :], value)
            for name, value in sorted((node.get("allocatable") or {}).items())
        )
        or "-"
    )


def inventory_line(node):
    mig = "-"
    if node.get("mig_capable"):
        mig = "%s/%s" % (node.get("mig_strategy") or "-", node.get("mig_config_state") or "-")
    allocatable = allocatable_text(node)
    return "%-16s %-32s %5s %8s %-13s %-15s %-18s %s" % (
        node.get("name"),
        node.get("product"),
        node.get("count"),
        node.get("replicas"),
        node.get("sharing_strategy"),
        mig,
        node.get("device_plugin_config") or "-",
        allocatable,
    )


class FilterModule(object):
    def filters(self):
        return {"inventory_line": inventory_line}
