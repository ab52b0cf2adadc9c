# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_nvidia_smi: the parsers of ``nvidia-smi -L`` and ``nvidia-smi mig -lgi`` on real outputs, the pods/exec
call (kube/pod_exec.py) against a stand-in websocket, and the runner's choice of pod and per-node report.

Outputs: ``data/nvidia/nvidia-smi-*.txt`` next to this file (copies; its README names each source)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from k8s_objects import NAMESPACE, cluster_policy, container, cpu_node, h100_mig_single, pod, t4_node

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.kube import pod_exec
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.nvidia_smi import (
    LIST_GPU_INSTANCES_COMMAND,
    LIST_GPUS_COMMAND,
    parse_gpu_instances,
    parse_gpu_list,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.run import nvidia_smi as runner

DATA = os.path.join(os.path.dirname(__file__), "data", "nvidia")


def output(name):
    with open(os.path.join(DATA, name)) as data_file:
        return data_file.read()


def instance(gpu, profile, profile_id, instance_id, start, size):
    return dict(
        gpu=gpu,
        profile=profile,
        profile_id=profile_id,
        instance_id=instance_id,
        placement=dict(start=start, size=size),
    )


# --- nvidia-smi -L ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, gpu",
    [
        (
            "nvidia-smi-L-h100-80gb-hbm3.txt",
            dict(
                index=0,
                name="NVIDIA H100 80GB HBM3",
                uuid="GPU-4105e5ed-d7bd-00a7-11b9-802094451979",
                mig_devices=[],
            ),
        ),
        (
            "nvidia-smi-L-h200.txt",
            dict(index=0, name="NVIDIA H200", uuid="GPU-b1267e25-009c-4eeb-46c7-35a1f773ed67", mig_devices=[]),
        ),
    ],
)
def test_a_gpu_without_mig_is_one_line(name, gpu):
    assert parse_gpu_list(output(name)) == [gpu]


def test_mig_devices_are_listed_under_their_gpu_with_profile_index_and_uuid():
    (gpu,) = parse_gpu_list(output("nvidia-smi-L-h100-pcie-mig.txt"))
    assert (gpu["name"], gpu["uuid"]) == ("NVIDIA H100 PCIe", "GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02")
    assert gpu["mig_devices"] == [
        dict(index=0, profile="3g.40gb", uuid="MIG-da06d78f-7534-56a0-a062-62fef012be91"),
        dict(index=1, profile="1g.10gb", uuid="MIG-8aa1fc52-9818-58ec-bc64-8f0cae121bb4"),
        dict(index=2, profile="1g.10gb", uuid="MIG-42fa9c93-1430-5ccc-b623-c02fb93b7f5a"),
        dict(index=3, profile="1g.10gb", uuid="MIG-6d96b431-44ba-5360-80b0-9359561c927d"),
    ]


def test_drivers_before_r470_print_gpu_instance_and_compute_instance_in_the_mig_uuid():
    (gpu,) = parse_gpu_list(output("nvidia-smi-L-a100-sxm4-40gb-mig-legacy-uuid.txt"))
    assert gpu["name"] == "A100-SXM4-40GB"
    assert [device["profile"] for device in gpu["mig_devices"]] == ["1g.5gb"] * 7
    assert [device["index"] for device in gpu["mig_devices"]] == list(range(7))
    assert [device["uuid"].rsplit("/", 2)[1] for device in gpu["mig_devices"]] == [
        "7",
        "8",
        "9",
        "11",
        "12",
        "13",
        "14",
    ]
    assert gpu["mig_devices"][0]["uuid"] == "MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/7/0"


def test_several_gpus_some_with_mig():
    gpus = parse_gpu_list(output("nvidia-smi-L-a100-sxm4-80gb-four-gpus.txt"))
    assert [(gpu["index"], len(gpu["mig_devices"])) for gpu in gpus] == [(0, 4), (1, 0), (2, 0), (3, 0)]
    assert {device["profile"] for device in gpus[0]["mig_devices"]} == {"1g.20gb"}
    assert gpus[3]["uuid"] == "GPU-69ec2344-ebac-b028-f88f-452abb3d7f11"


def test_compute_instance_profiles_are_kept_as_printed():
    (gpu,) = parse_gpu_list(output("nvidia-smi-L-a100-sxm4-40gb-compute-instances.txt"))
    assert [device["profile"] for device in gpu["mig_devices"]] == ["1c.3g.20gb", "1c.3g.20gb"]


def test_a_media_extension_device():
    # Built from the H100 PCIe listing's layout (see the data README: no public capture of a +me device).
    text = output("nvidia-smi-L-h100-pcie-mig.txt") + (
        "  MIG 1g.10gb+me  Device  4: (UUID: MIG-00000000-0000-0000-0000-000000000000)\n"
    )
    assert parse_gpu_list(text)[0]["mig_devices"][4] == dict(
        index=4, profile="1g.10gb+me", uuid="MIG-00000000-0000-0000-0000-000000000000"
    )


@pytest.mark.parametrize(
    "text, line",
    [
        # What nvidia-smi prints when it cannot talk to the driver.
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n",
            1,
        ),
        # The full `nvidia-smi` table is not the listing.
        ("+-----------------------------------------------------------------------------------------+\n", 1),
        # A MIG device with no GPU above it.
        ("  MIG 1g.10gb     Device  0: (UUID: MIG-da06d78f-7534-56a0-a062-62fef012be91)\n", 1),
        # A profile go-nvlib's grammar refuses.
        (output("nvidia-smi-L-h100-pcie-mig.txt").replace("MIG 1g.10gb     Device  2", "MIG 1x.10gb     Device  2"), 4),
    ],
)
def test_anything_else_is_refused_naming_the_line(text, line):
    with pytest.raises(GpuShareError) as error:
        parse_gpu_list(text)
    assert "'nvidia-smi -L' printed something this module does not know, on line %d" % line in error.value.msg


def test_no_gpu_listed_is_an_error():
    with pytest.raises(GpuShareError, match="listed no GPU: 'No devices were found'"):
        parse_gpu_list("No devices were found\n")
    with pytest.raises(GpuShareError, match="listed no GPU"):
        parse_gpu_list("")


# --- nvidia-smi mig -lgi ------------------------------------------------------------------------


def test_gpu_instances_with_profile_ids_and_placements():
    assert parse_gpu_instances(output("nvidia-smi-mig-lgi-h100-pcie-mig.txt")) == [
        instance(0, "1g.10gb", 19, 7, 0, 1),
        instance(0, "1g.10gb", 19, 8, 1, 1),
        instance(0, "1g.10gb", 19, 9, 2, 1),
        instance(0, "3g.40gb", 9, 2, 4, 4),
    ]


def test_the_same_gpu_lists_as_many_devices_as_instances_of_each_profile():
    devices = parse_gpu_list(output("nvidia-smi-L-h100-pcie-mig.txt"))[0]["mig_devices"]
    instances = parse_gpu_instances(output("nvidia-smi-mig-lgi-h100-pcie-mig.txt"))
    assert sorted(device["profile"] for device in devices) == sorted(gi["profile"] for gi in instances)


def test_the_older_narrower_table():
    instances = parse_gpu_instances(output("nvidia-smi-mig-lgi-a100-40gb-all-1g.5gb.txt"))
    assert [(gi["instance_id"], gi["placement"]["start"]) for gi in instances] == [(7 + n, n) for n in range(7)]
    assert {(gi["gpu"], gi["profile"], gi["profile_id"], gi["placement"]["size"]) for gi in instances} == {
        (0, "1g.5gb", 19, 1)
    }


def test_several_gpus_and_profiles():
    instances = parse_gpu_instances(output("nvidia-smi-mig-lgi-two-gpus-three-profiles.txt"))
    assert [gi["gpu"] for gi in instances] == [0] * 4 + [1] * 4
    assert instances[2] == instance(0, "2g.20gb", 14, 3, 0, 2)
    assert instances[7] == instance(1, "3g.40gb", 9, 1, 4, 4)


def test_a_media_extension_instance():
    # Built from the H100 PCIe table's layout with the +me profile's name and ID as the reference H100's
    # `nvidia-smi mig -lgip` lists them (MIG 1g.10gb+me, 20); see the data README.
    rows = output("nvidia-smi-mig-lgi-h100-pcie-mig.txt") + (
        "|   0  MIG 1g.10gb+me      20       13          3:1     |\n"
        "+-------------------------------------------------------+\n"
    )
    assert parse_gpu_instances(rows)[-1] == instance(0, "1g.10gb+me", 20, 13, 3, 1)


@pytest.mark.parametrize(
    "text",
    [
        output("nvidia-smi-mig-lgi-h100-80gb-hbm3-mig-disabled.txt"),
        # MIG on, no GPU instance yet.
        "No GPU instances found: Not Found\n",
    ],
)
def test_mig_off_or_no_instance_is_an_empty_list(text):
    assert parse_gpu_instances(text) == []


@pytest.mark.parametrize(
    "text, message",
    [
        (
            output("nvidia-smi-mig-lgi-h100-pcie-mig.txt").replace("MIG 3g.40gb          9", "MIG 3g.40gb          x"),
            "on line 12: '|   0  MIG 3g.40gb          x        2          4:4     |'",
        ),
        (
            output("nvidia-smi-mig-lgi-h100-pcie-mig.txt").replace(
                "MIG 1g.10gb         19        8", "MIG 1g.10gb+  19 8"
            ),
            "on line 8:",
        ),
        ("Failed to display GPU instances: Insufficient Permissions\n", "on line 1:"),
        ("", "printed neither its GPU-instance table nor one of No MIG-enabled devices found, No GPU instances"),
    ],
)
def test_anything_else_is_a_clear_error(text, message):
    with pytest.raises(GpuShareError) as error:
        parse_gpu_instances(text)
    assert "'nvidia-smi mig -lgi'" in error.value.msg and message in error.value.msg


# --- pods/exec (kube/pod_exec.py) ---------------------------------------------------------------


def operand_pod(name, daemonset, node, phase="Running", containers=("nvidia-driver-ctr",), annotations=None):
    result = pod(name, [container(ctr) for ctr in containers], namespace=NAMESPACE, node_name=node, phase=phase)
    result["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": daemonset}]
    if annotations:
        result["metadata"]["annotations"] = annotations
    return result


class FakeConnection(object):
    """The WSClient stand-in: channel contents as the API server would have sent them."""

    def __init__(self, channels, finishes=True):
        self.channels = channels
        self.finishes = finishes
        self.closed = False

    def run_forever(self, timeout=None):
        pass

    def is_open(self):
        return not self.finishes

    def read_channel(self, channel, timeout=0):
        return self.channels.get(channel, "")

    def close(self):
        self.closed = True


def status(exit_code):
    if exit_code == 0:
        return json.dumps({"metadata": {}, "status": "Success"})
    return json.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": "command terminated with non-zero exit code: error executing command, exit status %d"
            % exit_code,
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(exit_code)}]},
        }
    )


@pytest.fixture
def exec_calls(monkeypatch):
    """Replace kubernetes.stream.stream: ``exec_calls.answer(command) -> FakeConnection or exception``."""

    class Calls(list):
        answers = {}

    calls = Calls()

    def fake_stream(function, name, namespace, command, container, **kwargs):
        calls.append(dict(pod=name, namespace=namespace, command=command, container=container, kwargs=kwargs))
        answer = calls.answers[tuple(command)]
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(pod_exec, "stream", fake_stream)
    return calls


def handshake_refusal(code, message):
    """The ApiException kubernetes.stream raises when the API server refuses the websocket."""
    from kubernetes.client.exceptions import ApiException

    body = json.dumps({"kind": "Status", "status": "Failure", "message": message, "code": code})
    return ApiException(
        status=0,
        reason="Handshake status %d Internal Server Error -+-+- {'content-type': 'application/json'} -+-+- %s"
        % (code, body),
    )


def test_exec_returns_stdout_stderr_and_exit_code(exec_calls):
    exec_calls.answers[LIST_GPU_INSTANCES_COMMAND] = FakeConnection(
        {1: "", 2: output("nvidia-smi-mig-lgi-h100-80gb-hbm3-mig-disabled.txt"), 3: status(6)}
    )
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    result = pod_exec.exec_in_pod(None, driver, "nvidia-driver-ctr", LIST_GPU_INSTANCES_COMMAND, 30)
    assert (result.stdout, result.stderr, result.exit_code) == ("", "No MIG-enabled devices found.\n", 6)
    assert exec_calls[0]["command"] == ["nvidia-smi", "mig", "-lgi"]
    assert exec_calls[0]["kwargs"] == dict(stdin=False, stdout=True, stderr=True, tty=False, _preload_content=False)


def test_an_unreachable_kubelet_is_told_apart(exec_calls):
    exec_calls.answers[LIST_GPUS_COMMAND] = handshake_refusal(
        500, "error dialing backend: dial tcp: lookup gpu-h100-0 on 10.0.0.10:53: no such host"
    )
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    with pytest.raises(pod_exec.KubeletUnreachable) as error:
        pod_exec.exec_in_pod(None, driver, "nvidia-driver-ctr", LIST_GPUS_COMMAND, 30)
    assert error.value.msg == (
        "pods/exec to gpu-operator/nvidia-driver-daemonset-x7k2p (container nvidia-driver-ctr) on node "
        "gpu-h100-0 failed: error dialing backend: dial tcp: lookup gpu-h100-0 on 10.0.0.10:53: no such host"
    )
    assert error.value.status == 500


def test_a_refusal_and_a_command_that_cannot_run_say_why(exec_calls):
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    exec_calls.answers[LIST_GPUS_COMMAND] = handshake_refusal(
        403, 'pods "nvidia-driver-daemonset-x7k2p" is forbidden: User "ci" cannot get resource "pods/exec"'
    )
    with pytest.raises(GpuShareError) as error:
        pod_exec.exec_in_pod(None, driver, "nvidia-driver-ctr", LIST_GPUS_COMMAND, 30)
    assert not isinstance(error.value, pod_exec.KubeletUnreachable)
    assert error.value.msg.endswith(
        'failed: pods "nvidia-driver-daemonset-x7k2p" is forbidden: User "ci" cannot get ' 'resource "pods/exec"'
    )
    not_found = json.dumps(
        {
            "status": "Failure",
            "reason": "InternalError",
            "message": "Internal error occurred: error executing command in container: failed to exec in container: "
            'starting container process caused: exec: "nvidia-smi": executable file not found in $PATH',
        }
    )
    exec_calls.answers[LIST_GPUS_COMMAND] = FakeConnection({3: not_found})
    with pytest.raises(GpuShareError, match='exec: "nvidia-smi": executable file not found in \\$PATH'):
        pod_exec.exec_in_pod(None, driver, "nvidia-driver-ctr", LIST_GPUS_COMMAND, 30)


def test_a_command_still_running_at_the_timeout_is_an_error_and_the_connection_closed(exec_calls):
    connection = FakeConnection({}, finishes=False)
    exec_calls.answers[LIST_GPUS_COMMAND] = connection
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    with pytest.raises(GpuShareError, match="did not finish within 5 seconds"):
        pod_exec.exec_in_pod(None, driver, "nvidia-driver-ctr", LIST_GPUS_COMMAND, 5)
    assert connection.closed


def test_the_container_is_the_one_kubectl_exec_picks():
    annotated = operand_pod(
        "nvidia-driver-daemonset-x7k2p",
        "nvidia-driver-daemonset",
        "gpu-h100-0",
        containers=("nvidia-peermem-ctr", "nvidia-driver-ctr"),
        annotations={"kubectl.kubernetes.io/default-container": "nvidia-driver-ctr"},
    )
    assert pod_exec.default_container(annotated) == "nvidia-driver-ctr"
    toolkit = operand_pod(
        "nvidia-container-toolkit-daemonset-4h2lq",
        "nvidia-container-toolkit-daemonset",
        "gpu-h100-0",
        containers=("nvidia-container-toolkit-ctr",),
    )
    assert pod_exec.default_container(toolkit) == "nvidia-container-toolkit-ctr"


# --- the runner: which pod, and the node's report -----------------------------------------------


def test_the_driver_pod_first_then_the_toolkit_pod():
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    toolkit = operand_pod(
        "nvidia-container-toolkit-daemonset-4h2lq", "nvidia-container-toolkit-daemonset", "gpu-h100-0"
    )
    elsewhere = operand_pod("nvidia-driver-daemonset-9zq8m", "nvidia-driver-daemonset", "gpu-h100-1")
    assert runner.nvidia_smi_pod([toolkit, elsewhere, driver], "gpu-h100-0", NAMESPACE) is driver
    # Preinstalled driver: no driver pod on the node.
    assert runner.nvidia_smi_pod([toolkit, elsewhere], "gpu-h100-0", NAMESPACE) is toolkit
    # OpenShift's Driver Toolkit path: one driver DaemonSet per RHCOS version.
    versioned = operand_pod("nvidia-driver-daemonset-415.92.2024-0-abcde", "nvidia-driver-daemonset-415.92.2024-0", "n")
    assert runner.nvidia_smi_pod([versioned], "n", NAMESPACE) is versioned


def test_no_pod_names_the_daemonsets_looked_for():
    deleting = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    deleting["metadata"]["deletionTimestamp"] = "2026-11-23T10:00:00Z"
    with pytest.raises(GpuShareError) as error:
        runner.nvidia_smi_pod([deleting], "gpu-h100-0", NAMESPACE)
    assert error.value.msg.startswith(
        "No pod of the DaemonSet nvidia-driver-daemonset* (the operator's driver) or "
        "nvidia-container-toolkit-daemonset (preinstalled drivers) runs on node gpu-h100-0 in namespace "
        "gpu-operator:"
    )


def test_a_driver_pod_that_is_not_running_is_not_replaced_by_the_toolkit_pod():
    starting = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0", phase="Pending")
    toolkit = operand_pod(
        "nvidia-container-toolkit-daemonset-4h2lq", "nvidia-container-toolkit-daemonset", "gpu-h100-0"
    )
    with pytest.raises(GpuShareError, match="nvidia-driver-daemonset-x7k2p on node gpu-h100-0 is Pending, not Running"):
        runner.nvidia_smi_pod([starting, toolkit], "gpu-h100-0", NAMESPACE)


def test_a_node_report_from_real_outputs(exec_calls):
    exec_calls.answers[LIST_GPUS_COMMAND] = FakeConnection({1: output("nvidia-smi-L-h100-pcie-mig.txt"), 3: status(0)})
    exec_calls.answers[LIST_GPU_INSTANCES_COMMAND] = FakeConnection(
        {1: output("nvidia-smi-mig-lgi-h100-pcie-mig.txt"), 3: status(0)}
    )
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    report = runner.read_node(None, driver, 30)
    assert report["pod"] == "gpu-operator/nvidia-driver-daemonset-x7k2p"
    assert report["container"] == "nvidia-driver-ctr"
    assert report["error"] is None
    assert len(report["gpus"][0]["mig_devices"]) == 4 and len(report["gpu_instances"]) == 4


def test_mig_off_exits_non_zero_and_reads_as_no_instance(exec_calls):
    exec_calls.answers[LIST_GPUS_COMMAND] = FakeConnection({1: output("nvidia-smi-L-h200.txt"), 3: status(0)})
    exec_calls.answers[LIST_GPU_INSTANCES_COMMAND] = FakeConnection(
        {1: output("nvidia-smi-mig-lgi-h100-80gb-hbm3-mig-disabled.txt"), 3: status(6)}
    )
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h200-0")
    report = runner.read_node(None, driver, 30)
    assert (report["gpu_instances"], report["error"]) == ([], None)
    assert report["gpus"][0]["name"] == "NVIDIA H200"


def test_a_failing_listing_is_the_node_error(exec_calls):
    exec_calls.answers[LIST_GPUS_COMMAND] = FakeConnection(
        {
            1: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n",
            3: status(9),
        }
    )
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    report = runner.read_node(None, driver, 30)
    assert report["gpus"] is None and report["gpu_instances"] is None
    assert report["error"] == (
        "'nvidia-smi -L' exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the "
        "NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."
    )
    assert len(exec_calls) == 1  # mig -lgi is not tried after that


def test_an_unreachable_kubelet_says_why_and_what_it_means_on_the_test_cluster(exec_calls):
    exec_calls.answers[LIST_GPUS_COMMAND] = handshake_refusal(
        500, "error dialing backend: dial tcp: lookup gpu-h100-0: no such host"
    )
    driver = operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0")
    error = runner.read_node(None, driver, 30)["error"]
    assert error.startswith(
        "pods/exec to gpu-operator/nvidia-driver-daemonset-x7k2p (container nvidia-driver-ctr) on node "
        "gpu-h100-0 failed: error dialing backend: dial tcp: lookup gpu-h100-0: no such host. The kubelet on that "
        "node did not answer"
    )
    assert error.endswith("nodes are simulated and have no kubelet, so gpu_nvidia_smi cannot run there.")


class FakeKube(object):
    """The KubeApi calls the runner makes, answered from lists."""

    api_client = None

    def __init__(self, nodes, pods):
        self.nodes, self.pods = nodes, pods

    def list_cluster_policies(self):
        return [cluster_policy()]

    def get_daemon_set(self, namespace, name):
        return {"metadata": {"name": name, "namespace": namespace}} if namespace == NAMESPACE else None

    def list_nodes(self, label_selector=None):
        assert label_selector is None
        return self.nodes, "1"

    def list_namespaced_pods(self, namespace, label_selector=None):
        return [pod for pod in self.pods if pod["metadata"]["namespace"] == namespace], "1"


class FakeModule(object):
    def __init__(self, kube, **params):
        self.kube = kube
        self.params = dict(cluster_policy=None, namespace=None, nodes=None, exec_timeout=30, fail_on_error=True)
        self.params.update(params)


def test_every_gpu_node_by_default_each_with_its_report_and_the_hint_said_once(exec_calls):
    exec_calls.answers[LIST_GPUS_COMMAND] = handshake_refusal(500, "error dialing backend: dial tcp: i/o timeout")
    kube = FakeKube(
        [h100_mig_single("gpu-h100-0"), h100_mig_single("gpu-h100-1"), t4_node("gpu-t4-0"), cpu_node("worker-0")],
        [
            operand_pod("nvidia-driver-daemonset-x7k2p", "nvidia-driver-daemonset", "gpu-h100-0"),
            operand_pod("nvidia-driver-daemonset-9zq8m", "nvidia-driver-daemonset", "gpu-h100-1"),
        ],
    )
    result = runner.run_gpu_nvidia_smi(FakeModule(kube))
    assert sorted(result["nodes"]) == ["gpu-h100-0", "gpu-h100-1", "gpu-t4-0"]
    assert (result["cluster_policy"], result["namespace"], result["changed"]) == ("cluster-policy", NAMESPACE, False)
    for name in ("gpu-h100-0", "gpu-h100-1"):
        assert result["nodes"][name]["error"].endswith(runner.KUBELET_UNREACHABLE_HINT)
    assert result["nodes"]["gpu-t4-0"]["error"].startswith("No pod of the DaemonSet nvidia-driver-daemonset*")
    assert result["failed"]
    msg = result["msg"]
    assert msg.startswith("gpu_nvidia_smi could not read 3 of 3 node(s): gpu-h100-0: pods/exec to ")
    assert msg.count(runner.KUBELET_UNREACHABLE_HINT) == 1
    assert msg.index(runner.KUBELET_UNREACHABLE_HINT) < msg.index("gpu-h100-1: ") < msg.index("gpu-t4-0: No pod")


def test_fail_on_error_false_reports_instead_of_failing(exec_calls):
    kube = FakeKube([t4_node("gpu-t4-0")], [])
    result = runner.run_gpu_nvidia_smi(FakeModule(kube, fail_on_error=False))
    assert "failed" not in result and result["nodes"]["gpu-t4-0"]["error"]
    assert exec_calls == []


def test_named_nodes_are_read_even_without_gpu_labels(exec_calls):
    exec_calls.answers[LIST_GPUS_COMMAND] = FakeConnection({1: output("nvidia-smi-L-h200.txt"), 3: status(0)})
    exec_calls.answers[LIST_GPU_INSTANCES_COMMAND] = FakeConnection(
        {1: "No GPU instances found: Not Found\n", 3: status(6)}
    )
    kube = FakeKube(
        [cpu_node("gpu-h200-0")],
        [
            operand_pod(
                "nvidia-container-toolkit-daemonset-4h2lq",
                "nvidia-container-toolkit-daemonset",
                "gpu-h200-0",
                containers=("nvidia-container-toolkit-ctr",),
            )
        ],
    )
    result = runner.run_gpu_nvidia_smi(FakeModule(kube, nodes=dict(names=["gpu-h200-0"], selector=None)))
    report = result["nodes"]["gpu-h200-0"]
    assert (report["pod"], report["container"], report["gpu_instances"], report["error"]) == (
        "gpu-operator/nvidia-container-toolkit-daemonset-4h2lq",
        "nvidia-container-toolkit-ctr",
        [],
        None,
    )
    assert "failed" not in result


def test_no_gpu_node_is_an_error():
    with pytest.raises(GpuShareError, match="No GPU node found"):
        runner.run_gpu_nvidia_smi(FakeModule(FakeKube([cpu_node("worker-0")], [])))


def test_a_timeout_below_one_second_is_refused_before_any_call():
    with pytest.raises(GpuShareError, match="exec_timeout must be 1 second or more, not 0"):
        runner.run_gpu_nvidia_smi(FakeModule(None, exec_timeout=0))
