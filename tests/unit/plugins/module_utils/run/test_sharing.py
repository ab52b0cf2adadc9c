# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run/sharing: a node another run relabelled after this task's write is not waited for."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def test_a_node_relabelled_after_this_tasks_write_is_not_waited_for():
    from ansible_collections.gpushare.k8s.plugins.module_utils.run.sharing import _unless_relabelled

    label = "nvidia.com/device-plugin.config"

    def node(version, value):
        return {"metadata": {"name": "n", "resourceVersion": str(version), "labels": {label: value}}}

    superseded = set()
    check = _unless_relabelled(lambda node: "not yet", "mine", "20", superseded, "n")
    # The watch replays what happened since the planning read: another run's label before this task's write
    # (version 15 < 20) is not a later writer's, so the task still waits.
    assert check(node(15, "theirs")) == "not yet" and superseded == set()
    assert check(node(20, "mine")) == "not yet"
    # Relabelled after this task's write: the later writer's profile stands, the node is no longer waited for.
    assert check(node(31, "theirs")) is None and superseded == {"n"}
    # A version that is not a number never counts as later.
    assert _unless_relabelled(lambda node: "not yet", "mine", "x", set(), "n")(node(31, "theirs")) == "not yet"
