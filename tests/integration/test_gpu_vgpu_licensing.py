"""gpu_vgpu_licensing against the local cluster (issue 10): the licence Secret and the policy's licensingConfig,
check mode and diff without writes, idempotence, the token absent from everything Ansible prints, restore and
absent. The runs that carry the token go through ``ansible-playbook``: what the controller prints is part of what
is checked."""

import base64

from integration_helpers import ONE_PROFILE
from kubernetes.client.exceptions import ApiException

pytestmark = ONE_PROFILE  # vGPU guests: OpenShift on a hypervisor

MODULE = "gpu_vgpu_licensing"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.integration-test-token.c2lnbmF0dXJl"
NAME = "licensing-config"


def ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    assert TOKEN not in result["_stdout"] and "integration-test-token" not in result["_stdout"]
    return result


def secret(kube):
    try:
        return kube.core.read_namespaced_secret(NAME, kube.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def licensing_config(kube):
    return (kube.policy()["spec"].get("driver") or {}).get("licensingConfig")


def test_licence_check_mode_diff_idempotence_restore_and_absent(
    run_module, run_module_via_playbook, kube, audit_writes
):
    before = licensing_config(kube)
    args = {"client_configuration_token": TOKEN, "gridd_conf": "FeatureType=4\n"}
    with audit_writes() as audit:
        checked = ok(run_module_via_playbook(MODULE, args, check=True, diff=True))
    assert checked["changed"] and audit.writes == [] and secret(kube) is None
    assert checked["diff"]["after"]["secret"] == {
        "gridd.conf": "FeatureType=4\n",
        "client_configuration_token.tok": "<set, changed by this task>",
    }

    result = ok(run_module_via_playbook(MODULE, args, diff=True))
    assert result["changed"] and result["licensing_config"] == {"secretName": NAME, "nlsEnabled": True}
    stored = secret(kube)
    assert base64.b64decode(stored.data["client_configuration_token.tok"]).decode() == TOKEN
    assert base64.b64decode(stored.data["gridd.conf"]).decode() == "FeatureType=4\n"
    assert licensing_config(kube) == {"secretName": NAME, "nlsEnabled": True}

    with audit_writes() as audit:
        again = ok(run_module_via_playbook(MODULE, args))
    assert again["changed"] is False and audit.writes == []

    ok(run_module("gpu_reset", {"restore": True}))
    assert licensing_config(kube) == before
    result = ok(run_module(MODULE, {"state": "absent"}))
    assert secret(kube) is None


def test_refusals_write_nothing_and_never_echo_the_token(run_module, run_module_via_playbook, audit_writes):
    with audit_writes() as audit:
        missing = run_module(MODULE, {})
        no_feature = run_module_via_playbook(
            MODULE, {"client_configuration_token": TOKEN, "gridd_conf": "ServerPort=7070"}
        )
    assert missing["failed"] and "client_configuration_token" in missing["msg"]
    assert no_feature["failed"] and "FeatureType" in no_feature["msg"]
    assert TOKEN not in no_feature["_stdout"]
    assert audit.writes == []
