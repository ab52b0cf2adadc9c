"""gpu_monitoring against the local cluster (issue 10): the ServiceMonitor switched on in the policy, check mode
and diff, idempotence, refusal of an empty task, and gpu_reset restore undoing it."""

from integration_helpers import ONE_PROFILE

pytestmark = ONE_PROFILE  # two ClusterPolicy fields: the same on every platform

MODULE = "gpu_monitoring"


def ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    return result


def dcgm(kube):
    return kube.policy()["spec"]["dcgmExporter"]


def test_service_monitor_on_check_mode_diff_idempotence_and_restore(run_module, kube, profile, audit_writes):
    before = dcgm(kube)
    wanted = not before["serviceMonitor"]["enabled"]  # the seed has it off except on VKS
    with audit_writes() as audit:
        checked = ok(run_module(MODULE, {"service_monitor": wanted}, check=True, diff=True))
    assert checked["changed"] and audit.writes == []
    assert checked["diff"] == {
        "before": {"dcgmExporter.serviceMonitor.enabled": not wanted},
        "after": {"dcgmExporter.serviceMonitor.enabled": wanted},
    }
    assert ok(run_module(MODULE, {"service_monitor": wanted}))["changed"]
    assert dcgm(kube) == dict(before, serviceMonitor={"enabled": wanted})
    with audit_writes() as audit:
        again = ok(run_module(MODULE, {"service_monitor": wanted, "dcgm_exporter": True}))
    assert again["changed"] is False and audit.writes == []
    ok(run_module("gpu_reset", {"restore": True}))
    assert dcgm(kube) == before


def test_nothing_asked_is_refused(run_module):
    result = run_module(MODULE, {})
    assert result["failed"] and "dcgm_exporter" in result["msg"]
