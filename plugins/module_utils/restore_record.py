# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an object looked like before this collection first changed it (``gpu_reset restore: true``).

Each object we change carries the annotation ``gpushare.k8s/restore``: JSON mapping a section
(``labels``, ``data``, ``spec``) to ``{field: value before our first change}``, ``null`` meaning
absent. A field already recorded is never overwritten, so the record keeps the pre-collection value
however many times the modules run afterwards.
"""

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
