"""gpu_quota against the local cluster (issue 10): gpu_preflight's quota finding fixed by the module it names,
check mode and diff, idempotence, refusals before any write, and removal."""

from integration_helpers import ONE_PROFILE
from kubernetes import client
from workloads import gpu_pod

pytestmark = ONE_PROFILE  # a namespace's ResourceQuota: the same on every platform

MODULE = "gpu_quota"


def ok(result):
    assert not result.get("failed"), "module failed: %s\n%s" % (result.get("msg"), result["_stdout"])
    return result


def hard(api_client, namespace, name="gpu-quota"):
    quota = client.CoreV1Api(api_client).read_namespaced_resource_quota(name, namespace)
    return dict(quota.spec.hard or {})


def quota_findings(run_module, namespace):
    result = ok(run_module("gpu_preflight", {"checks": ["quota"]}))
    return [f for f in result["findings"] if f["object"] == "Namespace/" + namespace]


def test_preflights_quota_finding_is_fixed_by_gpu_quota(run_module, api_client, kube, namespace):
    gpu_pod(api_client, kube.gpu_nodes()[0], namespace)
    [found] = quota_findings(run_module, namespace)
    assert "gpu_quota (quota_namespace: %s)" % namespace in found["fixed_by"]
    result = ok(run_module(MODULE, {"quota_namespace": namespace, "limits": {"nvidia.com/gpu": 2}}))
    assert result["changed"] and result["hard"] == {"requests.nvidia.com/gpu": "2"}
    assert hard(api_client, namespace) == {"requests.nvidia.com/gpu": "2"}
    assert quota_findings(run_module, namespace) == []


def test_check_mode_diff_idempotence_and_absent(run_module, api_client, namespace, audit_writes):
    args = {"quota_namespace": namespace, "limits": {"nvidia.com/gpu.shared": 8, "nvidia.com/mig-1g.10gb": 4}}
    with audit_writes() as audit:
        checked = ok(run_module(MODULE, args, check=True, diff=True))
    assert checked["changed"] and audit.writes == []
    assert checked["diff"]["before"]["hard"] == {
        "requests.nvidia.com/gpu.shared": None,
        "requests.nvidia.com/mig-1g.10gb": None,
    }
    ok(run_module(MODULE, args))
    with audit_writes() as audit:
        again = ok(run_module(MODULE, args))
    assert again["changed"] is False and audit.writes == []
    assert hard(api_client, namespace) == {
        "requests.nvidia.com/gpu.shared": "8",
        "requests.nvidia.com/mig-1g.10gb": "4",
    }
    ok(run_module(MODULE, {"quota_namespace": namespace, "limits": {"nvidia.com/gpu.shared": 0}, "state": "absent"}))
    assert hard(api_client, namespace) == {"requests.nvidia.com/mig-1g.10gb": "4"}
    gone = ok(
        run_module(MODULE, {"quota_namespace": namespace, "limits": {"nvidia.com/mig-1g.10gb": 0}, "state": "absent"})
    )
    assert gone["changed"]
    assert client.CoreV1Api(api_client).list_namespaced_resource_quota(namespace).items == []


def test_bad_input_is_refused_before_any_write(run_module, namespace, audit_writes):
    with audit_writes() as audit:
        cpu = run_module(MODULE, {"quota_namespace": namespace, "limits": {"cpu": 4}})
        negative = run_module(MODULE, {"quota_namespace": namespace, "limits": {"nvidia.com/gpu": -1}})
        missing = run_module(MODULE, {"quota_namespace": "no-such-namespace", "limits": {"nvidia.com/gpu": 1}})
    assert cpu["failed"] and "not an NVIDIA resource" in cpu["msg"]
    assert negative["failed"] and "whole number" in negative["msg"]
    assert missing["failed"] and "no-such-namespace" in missing["msg"]
    assert audit.writes == []
