# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan/monitoring (gpu_monitoring) and its restore."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from k8s_objects import cluster_policy, merge_patch

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.monitoring import plan_monitoring
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore import plan_restore


def test_the_service_monitor_on_then_unchanged_then_restored():
    policy = cluster_policy()  # dcgmExporter: {enabled: true}, no serviceMonitor
    plan = plan_monitoring(policy, service_monitor=True)
    assert plan.before == {"dcgmExporter.serviceMonitor.enabled": False}
    after = merge_patch(policy, plan.policy_patch)
    assert after["spec"]["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": True}}
    assert not plan_monitoring(after, dcgm_exporter=True, service_monitor=True).changed
    restored = merge_patch(after, plan_restore(after, [], []).policy_patch)
    assert restored["spec"]["dcgmExporter"] == {"enabled": True}
    assert "gpushare.k8s/restore" not in (restored["metadata"].get("annotations") or {})


def test_defaults_count_for_unset_fields_and_only_given_fields_are_written():
    policy = cluster_policy()
    del policy["spec"]["dcgmExporter"]
    assert not plan_monitoring(policy, dcgm_exporter=True, service_monitor=False).changed
    plan = plan_monitoring(policy, dcgm_exporter=False)
    assert plan.policy_patch["spec"] == {"dcgmExporter": {"enabled": False}}


def test_a_service_monitor_without_the_exporter_warns():
    assert plan_monitoring(cluster_policy(), dcgm_exporter=False, service_monitor=True).warnings
    off = merge_patch(cluster_policy(), {"spec": {"dcgmExporter": {"enabled": False}}})
    assert plan_monitoring(off, service_monitor=True).warnings
    assert not plan_monitoring(cluster_policy(), service_monitor=True).warnings


def test_on_off_on_again_still_restores_exactly():
    policy = cluster_policy()
    on = merge_patch(policy, plan_monitoring(policy, service_monitor=True).policy_patch)
    off = merge_patch(on, plan_monitoring(on, service_monitor=False).policy_patch)
    restored = merge_patch(off, plan_restore(off, [], []).policy_patch)
    assert restored["spec"]["dcgmExporter"] == policy["spec"]["dcgmExporter"]
