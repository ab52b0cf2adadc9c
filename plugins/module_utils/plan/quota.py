# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_quota's plan: a namespace's ResourceQuota capping NVIDIA resources. Pure; refuses bad input first.

Kubernetes caps an extended resource only through ``requests.<resource>`` in ``spec.hard`` (requests must
equal limits for it; reference section 5, Quota: ``hard: {requests.nvidia.com/gpu: N}``). Only the keys given
are written (a merge patch), so other limits of the same ResourceQuota stay as they are."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import RESOURCE_PREFIX
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import ObjectWrites
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record, was_created

REQUESTS_PREFIX = "requests."


def hard_key(resource):
    """``requests.<resource>`` for ``<resource>`` or ``requests.<resource>``."""
    return resource if resource.startswith(REQUESTS_PREFIX) else REQUESTS_PREFIX + resource


def validate_limits(limits, state):
    problems, keys = [], {}
    for resource, value in sorted((limits or {}).items()):
        key = hard_key(str(resource))
        if not key[len(REQUESTS_PREFIX) :].startswith(RESOURCE_PREFIX):
            problems.append("%s is not an NVIDIA resource (nvidia.com/...)" % resource)
            continue
        if state == "present":
            try:
                number = int(str(value))
            except ValueError:
                number = -1
            if number < 0 or isinstance(value, bool):
                problems.append("%s: the limit must be a whole number of devices or slices, not %r" % (resource, value))
                continue
            keys[key] = str(number)
        else:
            keys[key] = None
    if not keys and not problems:
        problems.append("limits: give at least one resource")
    if problems:
        raise GpuShareError("Invalid quota: %s. Nothing was changed." % "; ".join(problems))
    return keys


def plan_quota(quota, namespace, name, limits, state="present"):
    """The writes that make ResourceQuota ``namespace/name`` (None when absent) cap ``limits``."""
    keys = validate_limits(limits, state)
    plan = ObjectWrites()
    key = ("ResourceQuota", namespace, name)
    hard = dict(((quota or {}).get("spec") or {}).get("hard") or {})
    plan.before["hard"] = dict((resource, hard.get(resource)) for resource in keys)
    if state == "present":
        plan.after["hard"] = dict(keys)
        if quota is None:
            plan.object_writes[key] = (
                "create",
                {
                    "apiVersion": "v1",
                    "kind": "ResourceQuota",
                    "metadata": {"name": name, "namespace": namespace, "annotations": created_record()},
                    "spec": {"hard": dict(keys)},
                },
            )
        elif any(hard.get(resource) != value for resource, value in keys.items()):
            plan.object_writes[key] = ("patch", {"spec": {"hard": dict(keys)}})
        return plan
    plan.after["hard"] = dict((resource, None) for resource in keys)
    if quota is None or not any(resource in hard for resource in keys):
        return plan
    if was_created(quota) and not set(hard) - set(keys):
        plan.object_writes[key] = ("delete", None)
    else:
        plan.object_writes[key] = ("patch", {"spec": {"hard": dict(keys)}})
    return plan
