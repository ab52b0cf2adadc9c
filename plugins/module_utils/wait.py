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
    """Wait until every node named in ``expectations`` satisfies its check (see wait_for_objects)."""
    return wait_for_objects(kube.list_nodes, kube.watch_nodes, expectations, timeout, what, "node")


def wait_for_daemon_sets(kube, namespace, expectations, timeout, what):
    """Wait until every DaemonSet of ``namespace`` named in ``expectations`` satisfies its check."""
    return wait_for_objects(lambda: kube.list_daemon_sets(namespace=namespace),
                            lambda resource_version, seconds: kube.watch_daemon_sets(namespace, resource_version, seconds),
                            expectations, timeout, what, "DaemonSet")


def wait_for_objects(list_objects, watch_objects, expectations, timeout, what, kind):
    """Wait until every object named in ``expectations`` satisfies its check.

    ``expectations`` maps an object name to a function ``object dict -> None or str``: None when the
    object is as wanted, else a short account of what is still wrong. The objects are LISTed once
    (``list_objects() -> (items, resourceVersion)``), then followed by a watch from that LIST's
    resourceVersion (``watch_objects(resourceVersion, seconds)``), re-listed only if the server
    expired it. Returns the final objects by name; on timeout raises GpuShareError listing each
    unmet object and what it shows.
    """
    deadline = time.monotonic() + timeout
    latest, unmet = {}, {}

    def observe(obj):
        name = obj["metadata"]["name"]
        latest[name] = obj
        problem = expectations[name](obj)
        if problem:
            unmet[name] = problem
        else:
            unmet.pop(name, None)

    def relist():
        items, resource_version = list_objects()
        for item in items:
            if item["metadata"]["name"] in expectations:
                observe(item)
        return resource_version

    resource_version = relist()
    missing = sorted(set(expectations) - set(latest))
    if missing:
        raise GpuShareError("Cannot wait for %s: %s(s) %s do not exist." % (what, kind, ", ".join(missing)))

    while unmet:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GpuShareError(
                "Timed out after %ss waiting for %s; %d %s(s) not there yet: %s"
                % (timeout, what, len(unmet), kind, "; ".join("%s: %s" % (name, unmet[name]) for name in sorted(unmet))),
                details={"unmet": unmet},
            )
        try:
            for event_type, obj in watch_objects(resource_version, remaining):
                resource_version = obj["metadata"].get("resourceVersion", resource_version)
                if event_type == "BOOKMARK" or obj["metadata"].get("name") not in expectations:
                    continue
                if event_type == "DELETED":
                    raise GpuShareError("%s %s was deleted while waiting for %s." % (kind, obj["metadata"]["name"], what))
                observe(obj)
                if not unmet:
                    break
        except GpuShareError as exc:
            if exc.status != GONE:
                raise
            # The watch window expired: start again from a fresh LIST.
            resource_version = relist()
    return latest
