# -*- coding: utf-8 -*-
"""gpu_vgpu_licensing's planner: the Secret (or deprecated ConfigMap) and the policy's licensingConfig, the
token compared but never shown, idempotence, absent, and refusals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json

import pytest
from k8s_objects import NAMESPACE, cluster_policy, merge_patch

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.restore_record import created_record, restore_patch
from ansible_collections.gpushare.k8s.plugins.module_utils.plan.vgpu_licensing import plan_vgpu_licensing

TOKEN = "eyJhbGciOiJSUzI1NiJ9.secret-token-value.signature"
KEY = ("Secret", NAMESPACE, "licensing-config")


def params(**overrides):
    base = dict(
        client_configuration_token=TOKEN,
        gridd_conf="FeatureType=1\n",
        name="licensing-config",
        storage="secret",
        nls_enabled=True,
        state="present",
    )
    base.update(overrides)
    return base


def secret_from(body):
    return dict(body, metadata=dict(body["metadata"], resourceVersion="7"))


def applied(policy, plan):
    return merge_patch(policy, plan.policy_patch) if plan.policy_patch else policy


def test_a_new_licence_creates_the_secret_and_points_the_policy_at_it_without_showing_the_token():
    policy = cluster_policy()
    plan = plan_vgpu_licensing(policy, NAMESPACE, None, params())
    action, body = plan.object_writes[KEY]
    assert action == "create" and body["metadata"]["annotations"] == created_record()
    assert base64.b64decode(body["data"]["client_configuration_token.tok"]).decode() == TOKEN
    assert base64.b64decode(body["data"]["gridd.conf"]).decode() == "FeatureType=1\n"
    assert plan.policy_patch["spec"]["driver"]["licensingConfig"] == {
        "secretName": "licensing-config",
        "nlsEnabled": True,
        "configMapName": None,
    }
    assert plan.after["licensingConfig"] == {"secretName": "licensing-config", "nlsEnabled": True}
    assert plan.after["secret"]["client_configuration_token.tok"] == "<set, changed by this task>"
    shown = json.dumps([plan.before, plan.after, plan.warnings])
    assert TOKEN not in shown and "secret-token-value" not in shown
    # Applied, the same task plans nothing.
    again = plan_vgpu_licensing(applied(policy, plan), NAMESPACE, secret_from(body), params())
    assert not again.changed
    assert (
        again.before["secret"]
        == again.after["secret"]
        == {
            "gridd.conf": "FeatureType=1\n",
            "client_configuration_token.tok": "<set>",
        }
    )


def test_a_new_token_patches_only_the_token_and_other_policy_fields_stay():
    policy = cluster_policy()
    policy["spec"].setdefault("driver", {})["enabled"] = True
    first = plan_vgpu_licensing(policy, NAMESPACE, None, params())
    policy, secret = applied(policy, first), secret_from(first.object_writes[KEY][1])
    plan = plan_vgpu_licensing(policy, NAMESPACE, secret, params(client_configuration_token="new-token"))
    action, patch = plan.object_writes[KEY]
    assert action == "patch" and list(patch["data"]) == ["client_configuration_token.tok"]
    assert plan.policy_patch is None and policy["spec"]["driver"]["enabled"] is True


def test_the_deprecated_config_map_form_warns_and_switching_drops_the_other_field():
    policy = cluster_policy()
    plan = plan_vgpu_licensing(policy, NAMESPACE, None, params(storage="configmap"))
    assert plan.config_map_create == {"client_configuration_token.tok": TOKEN, "gridd.conf": "FeatureType=1\n"}
    assert any("deprecates licensingConfig.configMapName" in warning for warning in plan.warnings)
    policy = applied(policy, plan)
    assert policy["spec"]["driver"]["licensingConfig"] == {"configMapName": "licensing-config", "nlsEnabled": True}
    to_secret = plan_vgpu_licensing(policy, NAMESPACE, None, params())
    assert applied(policy, to_secret)["spec"]["driver"]["licensingConfig"] == {
        "secretName": "licensing-config",
        "nlsEnabled": True,
    }


def test_absent_removes_the_policy_field_and_the_secret_this_module_created():
    policy = cluster_policy()
    first = plan_vgpu_licensing(policy, NAMESPACE, None, params())
    policy, secret = applied(policy, first), secret_from(first.object_writes[KEY][1])
    plan = plan_vgpu_licensing(policy, NAMESPACE, secret, params(state="absent", client_configuration_token=None))
    assert plan.object_writes == {KEY: ("delete", None)}
    assert "licensingConfig" not in applied(policy, plan)["spec"]["driver"]
    assert plan.after == {"licensingConfig": None, "secret": None}
    # A user's own Secret is kept; the policy field goes.
    users = dict(secret, metadata={"name": "licensing-config", "namespace": NAMESPACE})
    kept = plan_vgpu_licensing(policy, NAMESPACE, users, params(state="absent", client_configuration_token=None))
    assert kept.object_writes == {} and kept.policy_patch is not None
    # Nothing configured: nothing to do.
    idle = plan_vgpu_licensing(
        cluster_policy(), NAMESPACE, None, params(state="absent", client_configuration_token=None)
    )
    assert not idle.changed


def test_restore_puts_the_users_licensing_config_back():
    policy = cluster_policy()
    policy["spec"].setdefault("driver", {})["licensingConfig"] = {"configMapName": "old", "nlsEnabled": False}
    plan = plan_vgpu_licensing(policy, NAMESPACE, None, params())
    changed = applied(policy, plan)
    restored = merge_patch(changed, restore_patch(changed))
    assert restored["spec"]["driver"]["licensingConfig"] == {"configMapName": "old", "nlsEnabled": False}


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(client_configuration_token="  \n"), "client_configuration_token is empty"),
        (dict(gridd_conf="ServerAddress=nls.example.com\n"), "no FeatureType line"),
    ],
)
def test_bad_input_is_refused_and_the_message_never_holds_the_token(overrides, message):
    with pytest.raises(GpuShareError) as refused:
        plan_vgpu_licensing(cluster_policy(), NAMESPACE, None, params(**overrides))
    assert message in refused.value.msg and TOKEN not in refused.value.msg
