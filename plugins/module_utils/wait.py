# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one wait mechanism: a node watch, bounded by a timeout, that says what is still wrong."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError

GONE = 410


def wait_for_nodes(kube, expectations, timeout, what):
    """Wait until every node named in ``expectations`` satisfies its check.

    ``expectations`` maps a node name to a function ``node dict -> None or str``: None when the node
    is as wanted, else a short account of what is still wrong. The nodes are LISTed once, then
    followed by a watch from that LIST's resourceVersion (re-listed only if the server expired it).
    Returns the final node dicts by name; on timeout raises GpuShareError listing each unmet node.
    """
    deadline = time.monotonic() + timeout
    latest, unmet = {}, {}

    def observe(node):
        name = node["metadata"]["name"]
        latest[name] = node
        problem = expectations[name](node)
        if problem:
            unmet[name] = problem
        else:
            unmet.pop(name, None)

    def relist():
        nodes, resource_version = kube.list_nodes()
        for node in nodes:
            if node["metadata"]["name"] in expectations:
                observe(node)
        return resource_version

    resource_version = relist()
    missing = sorted(set(expectations) - set(latest))
    if missing:
        raise GpuShareError("Cannot wait for %s: node(s) %s do not exist." % (what, ", ".join(missing)))

    while unmet:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GpuShareError(
                "Timed out after %ss waiting for %s; %d node(s) not there yet: %s"
                % (timeout, what, len(unmet), "; ".join("%s: %s" % (name, unmet[name]) for name in sorted(unmet))),
                details={"unmet": unmet},
            )
        try:
            for event_type, node in kube.watch_nodes(resource_version, remaining):
                resource_version = node["metadata"].get("resourceVersion", resource_version)
                if event_type == "BOOKMARK" or node["metadata"].get("name") not in expectations:
                    continue
                if event_type == "DELETED":
                    raise GpuShareError("Node %s was deleted while waiting for %s." % (node["metadata"]["name"], what))
                observe(node)
                if not unmet:
                    break
        except GpuShareError as exc:
            if exc.status != GONE:
                raise
            # The watch window expired: start again from a fresh LIST.
            resource_version = relist()
    return latest
