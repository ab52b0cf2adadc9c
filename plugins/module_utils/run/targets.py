# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turning the ``nodes`` option into node names."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.node_labels import LABEL_PRODUCT

BAD_REQUEST = 400


def list_selected_nodes(kube, selector, option):
    """The nodes label selector ``selector`` (the value of ``option``) matches; a selector the API server cannot
    parse is reported against the option."""
    try:
        return kube.list_nodes(label_selector=selector).items
    except GpuShareError as exc:
        if exc.status != BAD_REQUEST:
            raise
        raise GpuShareError(
            "%s %r is not a valid label selector (%s); write it as kubectl -l takes it, e.g. 'key=value,other in "
            "(a,b)'." % (option, selector, exc.msg),
            status=exc.status,
            reason=exc.reason,
        )


def resolve_node_names(kube, nodes_option):
    """The node names the ``nodes`` option designates, or None when it designates none."""
    if not nodes_option or (not nodes_option.get("names") and not nodes_option.get("selector")):
        return None
    names = list(nodes_option.get("names") or [])
    selector = nodes_option.get("selector")
    if selector:
        matched = list_selected_nodes(kube, selector, "nodes.selector")
        if not matched:
            hint = ""
            if LABEL_PRODUCT in selector:
                hint = (
                    " %s gains a -SHARED suffix once GPUs are shared: select by a label that does not change "
                    "(gpu.machine, a pool label)." % LABEL_PRODUCT
                )
            raise GpuShareError(
                "The node selector %r matches no node; check the label (kubectl get nodes -l '%s').%s"
                % (selector, selector, hint)
            )
        names += [node["metadata"]["name"] for node in matched if node["metadata"]["name"] not in names]
    return names
