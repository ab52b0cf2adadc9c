# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/preflight/checks: ``preflight``, the checks asked for with what each needs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import NAMESPACE, cluster_policy, t4_node

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.preflight import checks as pf


def test_without_the_operators_namespace_the_policys_config_map_is_not_judged():
    policy = cluster_policy(config_name="time-slicing-config")
    nodes = [t4_node("t4-0")]
    assert pf.preflight(policy, None, None, nodes, [], checks=["sharing"]) == []
    [found] = pf.preflight(policy, NAMESPACE, None, nodes, [], checks=["sharing"])
    assert "time-slicing-config" in found["message"]
