# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an object looked like before this collection first changed it (``gpu_reset restore: true``).

Each object we change carries the annotation ``gpushare.k8s/restore``: JSON mapping a section
(``labels``, ``data``, ``spec``) to ``{field: value before our first change}``, ``null`` meaning
absent. A field already recorded is never overwritten, so the record keeps the pre-collection value
however many times the modules run afterwards."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

RESTORE_ANNOTATION = "gpushare.k8s/restore"
CREATED = "created"


def read_record(obj):
    """The restore record of an API object (dict), or an empty dict."""
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    try:
        record = json.loads(annotations.get(RESTORE_ANNOTATION) or "{}")
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def record_patch(obj, section, previous_values):
    """The ``metadata.annotations`` merge-patch fragment recording ``previous_values`` in ``section``.

    Returns an empty dict when every field is already recorded, so an unchanged object gets no write.
    """
    record = read_record(obj)
    recorded = record.setdefault(section, {})
    new = dict((field, value) for field, value in previous_values.items() if field not in recorded)
    if not new:
        return {}
    recorded.update(new)
    return {RESTORE_ANNOTATION: json.dumps(record, sort_keys=True)}


def created_record():
    """The annotations of an object this collection creates: restoring it means deleting it."""
    return {RESTORE_ANNOTATION: json.dumps({CREATED: True})}


def was_created(obj):
    """Whether this collection created the object (restoring it means deleting it)."""
    return bool(read_record(obj).get(CREATED))


def keys_created_by_collection(config_map):
    """ConfigMap keys this collection added (absent before its first change), per the restore record."""
    if was_created(config_map):
        return set((config_map.get("data") or {}).keys())
    return set(key for key, previous in (read_record(config_map).get("data") or {}).items() if previous is None)


def _replacement(current, wanted):
    """A merge-patch value that turns ``current`` into exactly ``wanted``.

    A merge patch merges maps, so keys present now but absent before must be nulled explicitly.
    """
    if isinstance(current, dict) and isinstance(wanted, dict):
        patch = dict((key, None) for key in current if key not in wanted)
        for key, value in wanted.items():
            patch[key] = _replacement(current.get(key), value)
        return patch
    return wanted


def restore_patch(obj):
    """The merge patch that puts back every recorded value and drops the record (None: no record).

    Spec fields are recorded by dotted path under ``spec`` (``devicePlugin.config``, ``mig.strategy``). The
    patch carries the object's resourceVersion: a run that recorded more in between makes it fail with 409
    (and the restore plans again) instead of having its record dropped unrestored.
    """
    record = read_record(obj)
    if not record or record.get(CREATED):
        return None
    patch = {"metadata": {"annotations": {RESTORE_ANNOTATION: None}}}
    version = (obj.get("metadata") or {}).get("resourceVersion")
    if version:
        patch["metadata"]["resourceVersion"] = version
    if record.get("labels"):
        patch["metadata"]["labels"] = dict(record["labels"])
    if record.get("data"):
        patch["data"] = dict(record["data"])
    for path, value in sorted((record.get("spec") or {}).items()):
        current, target = obj.get("spec") or {}, patch.setdefault("spec", {})
        fields = path.split(".")
        for field in fields[:-1]:
            current = (current or {}).get(field) if isinstance(current, dict) else None
            target = target.setdefault(field, {})
        current = current.get(fields[-1]) if isinstance(current, dict) else None
        target[fields[-1]] = _replacement(current, value)
    return patch
