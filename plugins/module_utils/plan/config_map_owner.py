# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether an existing ConfigMap is the collection's to write: pure.

The sharing and MIG modules write their configs into a ConfigMap the user names (or the ClusterPolicy names) and
point the policy at it. A name already taken by someone else's ConfigMap (``kube-root-ca.crt``, one a controller
owns, an application's settings, the GPU Operator's own MIG ConfigMap) would be written into and handed to the
device plugin or mig-manager, which then read none of it: every GPU node would lose its sharing. So a planner that
writes into an existing ConfigMap first refuses one that something else owns or that holds anything but configs
of the kind it writes. A ConfigMap that does not exist yet is created, and is then the collection's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import keys_created_by_collection


def _owners(config_map):
    """``metadata.ownerReferences`` of an object, each as ``Kind/name``, the controller marked as such."""
    return [
        "%s/%s%s" % (owner.get("kind"), owner.get("name"), " (its controller)" if owner.get("controller") else "")
        for owner in (config_map.get("metadata") or {}).get("ownerReferences") or []
    ]


def refuse_foreign_config_map(config_map, not_a_config, what):
    """Raise GpuShareError, before any write, when ``config_map`` (a ConfigMap dict; None when it does not exist,
    which is fine) is not the collection's to write ``what`` (e.g. "device-plugin configs") into.

    It is not when it has owners (``metadata.ownerReferences``: a controller would put back or delete what it owns),
    or when a key holds anything ``not_a_config(text, where)`` says is not such a config (binary data included).
    Keys the collection added itself (its restore record) are its own whatever they hold: it may rewrite them. The
    message names the ConfigMap, every owner and offending key, and what to do."""
    if config_map is None:
        return
    metadata = config_map.get("metadata") or {}
    owners = _owners(config_map)
    own_keys = keys_created_by_collection(config_map)
    problems = ["it is owned by %s" % ", ".join(owners)] if owners else []
    keys = []
    for key, text in sorted((config_map.get("data") or {}).items()):
        problem = None if key in own_keys else not_a_config(text, "key %s" % key)
        if problem:
            problems.append(problem)
            keys.append(key)
    for key in sorted(config_map.get("binaryData") or {}):
        problems.append("key %s holds binary data" % key)
        keys.append(key)
    if not problems:
        return
    fixes = ["remove its ownerReferences"] if owners else []
    if keys:
        fixes.append("remove or fix key(s) %s" % ", ".join(keys))
    raise GpuShareError(
        "Will not write %s into ConfigMap %s/%s: %s. The collection writes only into a ConfigMap that nothing owns "
        "and that holds only %s: choose another config_map (one that does not exist yet is created), or, if this one "
        "is meant for the collection, %s."
        % (what, metadata.get("namespace"), metadata.get("name"), "; ".join(problems), what, " and ".join(fixes))
    )
