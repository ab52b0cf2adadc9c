# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's records on a MachineSet it scales (issue 40): how many of its replicas the collection added and
has not removed, which bounds what gpu_sharing_plan proposes to take back (scale-in), and its scale-ups of the last
hour, which bound what the plan adds per hour (the autopilot's ``gpu_autoplan_max_new_nodes``). gpu_machineset writes
them with the replicas, in the same patch. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import json
import time

ADDED_NODES_ANNOTATION = "gpushare.k8s/added-nodes"
# JSON: [{"at": RFC 3339 UTC, "nodes": n}], the entries older than SCALE_UP_WINDOW_SECONDS dropped at each write.
SCALE_UPS_ANNOTATION = "gpushare.k8s/scale-ups"
SCALE_UP_WINDOW_SECONDS = 3600


def _annotations(machineset):
    return (machineset.get("metadata") or {}).get("annotations") or {}


def parse_time(text):
    """Seconds since the epoch of an RFC 3339 UTC time as Kubernetes writes it ("2026-11-29T07:00:00Z"), else None."""
    try:
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None


def format_time(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def recent_scale_ups(machineset, now):
    """The collection's scale-ups of ``machineset`` within the last SCALE_UP_WINDOW_SECONDS before ``now``: a list of
    {"at", "nodes"}; an unreadable record counts as none, one ahead of ``now`` (another machine's clock) counts."""
    text = _annotations(machineset).get(SCALE_UPS_ANNOTATION)
    try:
        entries = json.loads(text) if text else []
    except ValueError:
        return []
    recent = []
    for entry in entries if isinstance(entries, list) else []:
        at = parse_time(entry.get("at")) if isinstance(entry, dict) else None
        if at is not None and at > now - SCALE_UP_WINDOW_SECONDS and isinstance(entry.get("nodes"), int):
            recent.append(dict(at=entry["at"], nodes=entry["nodes"]))
    return recent


def added_nodes(machineset):
    """How many of the MachineSet's replicas the collection added and has not removed (0 without a record)."""
    text = _annotations(machineset).get(ADDED_NODES_ANNOTATION)
    try:
        return max(0, int(text))
    except (TypeError, ValueError):
        return 0


def nodes_added_within_the_hour(machinesets, now):
    """The nodes the collection added to ``machinesets`` in the hour before ``now`` (seconds since the epoch)."""
    return sum(entry["nodes"] for machineset in machinesets for entry in recent_scale_ups(machineset, now))
