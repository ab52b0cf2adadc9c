"""The simulated kubelets' exec endpoint (testbed/simulator/kubelet_exec.py) and the nvidia-smi it runs
(testbed/simulator/nvidia_smi.py): its listings against public captures of real ones, then pods/exec through
the real API server, as ``kubernetes.stream`` (and so gpu_nvidia_smi) calls it."""

import json
import os
import re

import pytest
from kubernetes.stream import stream
from simulator_helpers import label_node, labels, wait_for, wait_for_node

from testbed.simulator import kubelet_exec, mig_parted, nvidia_smi, nvml
from testbed.simulator.kube import as_dict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_DIR = os.environ.get("GPUSHARE_CLUSTER_DIR", os.path.join(REPO, ".cluster"))
H100 = "gpu-h100-0"  # 8 x NVIDIA-H100-80GB-HBM3
T4 = "gpu-t4-0"  # 1 x Tesla-T4, no MIG
UUID = re.compile(r"\b(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")

# `nvidia-smi -L` and `nvidia-smi mig -lgi` of an H100 PCIe after `nvidia-smi mig -cgi 9,19,19,19 -C`, as
# Scaleway's documentation shows them (scaleway/docs-content@09ec87a276224e5d1dc18eb8d52360f3fdef9762,
# compute/gpu/how-to/use-nvidia-mig-technology.mdx).
H100_PCIE_LIST = """\
GPU 0: NVIDIA H100 PCIe (UUID: GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02)
  MIG 3g.40gb     Device  0: (UUID: MIG-da06d78f-7534-56a0-a062-62fef012be91)
  MIG 1g.10gb     Device  1: (UUID: MIG-8aa1fc52-9818-58ec-bc64-8f0cae121bb4)
  MIG 1g.10gb     Device  2: (UUID: MIG-42fa9c93-1430-5ccc-b623-c02fb93b7f5a)
  MIG 1g.10gb     Device  3: (UUID: MIG-6d96b431-44ba-5360-80b0-9359561c927d)
"""
H100_PCIE_INSTANCES = """\
+-------------------------------------------------------+
| GPU instances:                                        |
| GPU   Name             Profile  Instance   Placement  |
|                          ID       ID       Start:Size |
|=======================================================|
|   0  MIG 1g.10gb         19        7          0:1     |
+-------------------------------------------------------+
|   0  MIG 1g.10gb         19        8          1:1     |
+-------------------------------------------------------+
|   0  MIG 1g.10gb         19        9          2:1     |
+-------------------------------------------------------+
|   0  MIG 3g.40gb          9        2          4:4     |
+-------------------------------------------------------+
"""
# GPU 0's rows of `nvidia-smi mig -lgi` on 80 GB GPUs holding what the shipped all-balanced config gives an H100
# 80GB HBM3 (https://github.com/NVIDIA/DCGM/issues/138, comment of 2023-12-05).
BALANCED_GPU_0_ROWS = [
    "|   0  MIG 1g.10gb         19        9          2:1     |",
    "|   0  MIG 1g.10gb         19       10          3:1     |",
    "|   0  MIG 2g.20gb         14        3          0:2     |",
    "|   0  MIG 3g.40gb          9        2          4:4     |",
]
SUCCESS = {"metadata": {}, "status": "Success"}
NON_ZERO_EXIT = "command terminated with non-zero exit code: exit status %d"  # CRI-O, the openshift profile's runtime


def without_uuids(text):
    return UUID.sub(lambda match: match.group(1) + "-<uuid>", text)


def exited(code):
    """The Status a kubelet on CRI-O sends on channel 3 for a command that exited with ``code``."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": NON_ZERO_EXIT % code,
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


# --- without a cluster: the listings, the runtimes' answers ---------------------------------------------


def test_listings_of_an_h100_pcie_are_those_of_the_real_one():
    gpu, layout = nvml.gpu("NVIDIA-H100-PCIe"), [{"3g.40gb": 1, "1g.10gb": 3}]
    assert nvidia_smi.list_gpu_instances(gpu, layout) == (H100_PCIE_INSTANCES, 0)
    assert without_uuids(nvidia_smi.list_gpus("gpu-h100-pcie-0", gpu, layout)) == without_uuids(H100_PCIE_LIST)


def test_mig_off_and_mig_without_instances_list_nothing_with_exit_code_6():
    assert nvidia_smi.list_gpu_instances(nvml.gpu("Tesla-T4"), [None]) == ("No MIG-enabled devices found.\n", 6)
    h100 = nvml.gpu("NVIDIA-H100-80GB-HBM3")
    assert nvidia_smi.list_gpu_instances(h100, [{}, None]) == ("No GPU instances found: Not Found\n", 6)
    assert nvidia_smi.list_gpus("n", h100, [{}, None]).count("\n") == 2


@pytest.mark.parametrize("product", sorted(product for product, gpu in nvml.gpus().items() if gpu.mig_capable))
def test_every_shipped_layout_gets_disjoint_placements(product):
    gpu = nvml.gpu(product)
    configs = mig_parted.parse_config(mig_parted.shipped_config_yaml())
    hardware = {"product": product, "count": 1, "pci_device_id": gpu.pci_device_id}
    for name in configs:
        try:
            (layout,) = mig_parted.apply_config(configs, name, hardware, [None])
        except mig_parted.MigConfigError:
            continue  # not for this GPU
        instances = nvidia_smi.gpu_instances(gpu, 0, layout or {})
        slices = [start for item in instances for start in range(item.start, item.start + item.size)]
        assert len(slices) == len(set(slices)) and max(slices or [0]) < nvml.MEMORY_SLICES, name
        assert len({item.instance_id for item in instances}) == len(instances) == sum((layout or {}).values()), name


def test_exit_statuses_as_each_runtime_reports_them():
    command = ["nvidia-smi", "mig", "-lgi"]
    assert json.loads(kubelet_exec.exit_status("cri-o://1.20.0", command, 6)) == exited(6)
    containerd = json.loads(kubelet_exec.exit_status("containerd://1.7.22", command, 6))
    assert containerd["message"] == (
        "command terminated with non-zero exit code: error executing command [nvidia-smi mig -lgi], exit code 6"
    )
    assert json.loads(kubelet_exec.exit_status("containerd://1.7.22", command, 0)) == SUCCESS


def test_a_missing_executable_as_each_runtime_reports_it():
    stdout, stderr, status = kubelet_exec.not_found("cri-o://1.20.0", ["ls", "/"])
    assert (stdout, stderr, json.loads(status)) == (
        "",
        "executable file `ls` not found in $PATH: No such file or directory\n",
        exited(127),
    )
    stdout, stderr, status = kubelet_exec.not_found("containerd://1.7.22", ["ls", "/"])
    status = json.loads(status)
    assert (stdout, stderr, status["reason"], status["code"]) == ("", "", "InternalError", 500)
    assert status["message"].startswith("Internal error occurred: error executing command in container: ")
    assert status["message"].endswith('exec: "ls": executable file not found in $PATH: unknown')
    assert status["details"] == {"causes": [{"message": status["message"][len("Internal error occurred: ") :]}]}


# --- pods/exec through the API server ------------------------------------------------------------------


def running_pod(kube, profile, node, daemonset):
    """The pod of ``daemonset`` on ``node`` once it runs."""
    return wait_for(
        kube.core.list_namespaced_pod,
        lambda pod: pod["metadata"]["ownerReferences"][0]["name"] == daemonset
        and pod["status"].get("phase") == "Running"
        and not pod["metadata"].get("deletionTimestamp"),
        "a running %s pod on %s" % (daemonset, node),
        profile.operator_namespace,
        field_selector="spec.nodeName=" + node,
    )


def exec_in(kube, pod, command):
    """``kubectl exec <pod> -- <command>``: (stdout, stderr, the Status the kubelet sent on channel 3)."""
    connection = stream(
        kube.core.connect_get_namespaced_pod_exec,
        pod["metadata"]["name"],
        pod["metadata"]["namespace"],
        command=command,
        container=pod["spec"]["containers"][0]["name"],
        stdin=False,
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
    )
    connection.run_forever(timeout=30)
    assert not connection.is_open(), "the kubelet did not close the stream"
    return connection.read_channel(1), connection.read_channel(2), json.loads(connection.read_channel(3))


def test_every_node_sends_the_api_server_to_the_exec_endpoint(kube):
    with open(os.path.join(CLUSTER_DIR, "kubelet-port")) as recorded:
        port = int(recorded.read())
    for node in as_dict(kube.core.list_node)["items"]:
        status = node["status"]
        assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == port
        assert {"type": "InternalIP", "address": "127.0.0.1"} in status["addresses"]


def test_nvidia_smi_in_the_driver_pod_of_a_gpu_without_mig(kube, profile):
    driver = running_pod(kube, profile, T4, "nvidia-driver-daemonset")
    stdout, stderr, status = exec_in(kube, driver, ["nvidia-smi", "-L"])
    assert (without_uuids(stdout), stderr, status) == ("GPU 0: Tesla T4 (UUID: GPU-<uuid>)\n", "", SUCCESS)
    assert exec_in(kube, driver, ["nvidia-smi", "mig", "-lgi"]) == ("No MIG-enabled devices found.\n", "", exited(6))
    # The same GPU every time; another node's GPU is another one.
    assert exec_in(kube, driver, ["nvidia-smi", "-L"])[0] == stdout
    other = running_pod(kube, profile, "gpu-t4-1", "nvidia-driver-daemonset")
    assert exec_in(kube, other, ["nvidia-smi", "-L"])[0] != stdout


def test_nvidia_smi_lists_the_gpu_instances_mig_manager_created(kube, profile):
    revision = label_node(kube, H100, {"nvidia.com/mig.config": "all-balanced"})
    wait_for_node(kube, H100, lambda node: labels(node).get("nvidia.com/mig.config.state") == "pending", since=revision)
    wait_for_node(kube, H100, lambda node: labels(node).get("nvidia.com/mig.config.state") == "success")
    driver = running_pod(kube, profile, H100, "nvidia-driver-daemonset")

    stdout, _stderr, status = exec_in(kube, driver, ["nvidia-smi", "mig", "-lgi"])
    assert status == SUCCESS
    rows = [line for line in stdout.splitlines() if " MIG " in line]
    assert len(rows) == 8 * 4
    assert rows[:4] == BALANCED_GPU_0_ROWS

    stdout, _stderr, status = exec_in(kube, driver, ["nvidia-smi", "-L"])
    assert status == SUCCESS
    gpu_0 = without_uuids(stdout).split("GPU 1:")[0]
    assert gpu_0 == (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-<uuid>)\n"
        "  MIG 3g.40gb     Device  0: (UUID: MIG-<uuid>)\n"
        "  MIG 2g.20gb     Device  1: (UUID: MIG-<uuid>)\n"
        "  MIG 1g.10gb     Device  2: (UUID: MIG-<uuid>)\n"
        "  MIG 1g.10gb     Device  3: (UUID: MIG-<uuid>)\n"
    )
    assert stdout.count("GPU ") == 8 and stdout.count("  MIG ") == 32


def test_other_commands_and_other_pods_have_no_such_executable(kube, profile):
    driver = running_pod(kube, profile, T4, "nvidia-driver-daemonset")
    assert exec_in(kube, driver, ["nvidia-smi", "-q"])[2] == exited(2)  # the simulated nvidia-smi lists only
    plugin = running_pod(kube, profile, T4, "nvidia-device-plugin-daemonset")
    assert exec_in(kube, plugin, ["nvidia-smi", "-L"]) == (
        "",
        "executable file `nvidia-smi` not found in $PATH: No such file or directory\n",
        exited(127),
    )
    assert exec_in(kube, driver, ["cat", "/proc/driver/nvidia/version"])[2] == exited(127)
