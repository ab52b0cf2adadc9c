# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run/result.py, the one result builder and the tail of the runners that neither drain nor wait: pure, so tested on
plans and node dicts without any cluster (the writes themselves are the integration tests')."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from k8s_objects import t4_node

from ansible_collections.gpushare.k8s.plugins.module_utils.plan.objects import Fleet, ObjectWrites
from ansible_collections.gpushare.k8s.plugins.module_utils.run.operator import OperatorInstall
from ansible_collections.gpushare.k8s.plugins.module_utils.run.result import (
    new_result,
    plan_result,
    record_after,
    report_and_write,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run.writer import Planned

OPERATOR = OperatorInstall({"metadata": {"name": "cluster-policy"}}, "gpu-operator", None)


def a_plan(changed=True, warnings=()):
    plan = ObjectWrites("profiles")
    plan.before, plan.after = {"replicas": 1}, {"replicas": 4 if changed else 1}
    if changed:
        plan.config_map_patch = {"data": {"t4": "..."}}
    plan.warnings = list(warnings)
    return plan


class Ansible(object):
    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


class Module(object):
    """What report_and_write reads of GpuShareModule: ``ansible.warn``, ``check_mode`` and ``kube`` (None here: a
    test that reached a write would fail on it)."""

    def __init__(self, check_mode):
        self.ansible = Ansible()
        self.check_mode = check_mode
        self.kube = None


def test_a_plan_result_names_the_operator_when_there_is_one_and_carries_the_diff_and_fields():
    plan = a_plan()
    assert plan_result(Planned(OPERATOR, plan), hard={"a": 1}) == dict(
        changed=True,
        cluster_policy="cluster-policy",
        namespace="gpu-operator",
        diff=dict(before={"replicas": 1}, after={"replicas": 4}),
        hard={"a": 1},
    )
    # gpu_quota's and gpu_autoscaling's plans write nothing of the operator's: no policy, their own fields.
    assert plan_result(Planned(None, a_plan(changed=False)), namespace="team") == dict(
        changed=False, diff=dict(before={"replicas": 1}, after={"replicas": 1}), namespace="team"
    )


def test_the_diff_is_the_plans_own_before_and_after():
    # What the module returns is the plan's view, not a copy that could drift from it.
    plan = a_plan()
    result = plan_result(Planned(OPERATOR, plan))
    assert result["diff"]["before"] is plan.before and result["diff"]["after"] is plan.after


def test_new_result_adds_each_node_before_in_name_order():
    nodes = [t4_node("b"), t4_node("a", config="t4")]
    result = new_result(OPERATOR, a_plan(), Fleet(nodes), {"b", "a"}, config_key="t4")
    assert list(result["nodes"]) == ["a", "b"]
    assert result["nodes"]["a"]["before"]["device_plugin_config"] == "t4"
    assert result["nodes"]["b"]["before"]["device_plugin_config"] is None
    assert result["config_key"] == "t4" and result["cluster_policy"] == "cluster-policy"


def test_record_after_says_which_nodes_rebooted_by_their_boot_id():
    before = t4_node("n")
    before["status"]["nodeInfo"] = {"bootID": "one"}
    same, rebooted = copy.deepcopy(before), copy.deepcopy(before)
    rebooted["status"]["nodeInfo"]["bootID"] = "two"
    fleet = Fleet([before, dict(copy.deepcopy(before), metadata=dict(before["metadata"], name="m"))])
    result = new_result(OPERATOR, a_plan(), fleet, ["n"])
    record_after(result, fleet, {"n": same, "m": rebooted})
    assert result["nodes"]["n"]["rebooted"] is False and "after" in result["nodes"]["n"]
    assert result["nodes"]["m"] == dict(after=result["nodes"]["m"]["after"], rebooted=True)  # waited for, not listed


def test_record_after_never_calls_a_node_without_a_boot_id_rebooted():
    fleet = Fleet([t4_node("n")])
    result = new_result(OPERATOR, a_plan(), fleet, ["n"])
    later = t4_node("n")
    later["status"]["nodeInfo"] = {"bootID": "new"}
    record_after(result, fleet, {"n": later})
    assert result["nodes"]["n"]["rebooted"] is False


def test_report_and_write_warns_and_in_check_mode_writes_nothing():
    module = Module(check_mode=True)
    planned = Planned(OPERATOR, a_plan(warnings=["mind the gap"]))
    result = report_and_write(module, planned, lambda: planned, tolerations=[])
    assert module.ansible.warnings == ["mind the gap"]
    assert result["changed"] is True and result["tolerations"] == []  # check mode reports the change it would make


def test_report_and_write_writes_nothing_when_nothing_changes():
    module = Module(check_mode=False)
    result = report_and_write(module, Planned(None, a_plan(changed=False)), None, platform="scaleway")
    assert result == dict(changed=False, diff=dict(before={"replicas": 1}, after={"replicas": 1}), platform="scaleway")
