"""The three platforms' simulated GPU fleets (reference file, section 5): OpenShift on AWS, Scaleway Kapsule, VNG Cloud
VKS; their node pools, operator namespace and policy, container runtime and driver, the GPU taint."""

from testbed.simulator.names import GPU_RESOURCE

GPU_TAINT = {"key": GPU_RESOURCE, "effect": "NoSchedule"}


class NodePool(object):
    """Identical nodes: ``gpus`` x ``product`` (no GPU when ``product`` is None) in a ``machine``."""

    def __init__(self, name, size, machine, cpu, memory, product=None, gpus=0, labels=None, machineset=None):
        """``machineset``: the OpenShift MachineSet whose Machines the nodes are (one Machine per node)."""
        self.name = name
        self.size = size
        self.machine = machine
        self.cpu = cpu
        self.memory = memory
        self.product = product
        self.gpus = gpus
        self.labels = labels or {}
        self.machineset = machineset


class Profile(object):
    def __init__(
        self,
        name,
        operator_namespace,
        policy_name,
        runtime,
        driver,
        cuda,
        zone,
        gpu_pools,
        cpu_pool,
        platform_namespaces=(),
        service_monitor=False,
    ):
        self.name = name
        self.operator_namespace = operator_namespace
        self.policy_name = policy_name
        self.runtime = runtime
        self.driver = driver
        self.cuda = cuda
        self.zone = zone
        self.gpu_pools = gpu_pools
        self.cpu_pool = cpu_pool
        self.platform_namespaces = platform_namespaces
        self.service_monitor = service_monitor

    @property
    def namespaces(self):
        return (self.operator_namespace,) + tuple(self.platform_namespaces)


OPENSHIFT_T4_MACHINESET = "gpushare-ocp-gpu-t4-us-east-1a"


OPENSHIFT_T4_ACCELERATOR = "tesla-t4"


MACHINE_API_NAMESPACE = "openshift-machine-api"


OPENSHIFT_NFD_NAMESPACE = "openshift-nfd"


PROFILES = {
    "openshift": Profile(
        "openshift",
        "nvidia-gpu-operator",
        "gpu-cluster-policy",
        "cri-o://1.20.0",
        "550.127.08",
        "12.4",
        "us-east-1a",
        gpu_pools=[
            NodePool("gpu-a100", 2, "PowerEdge-R750xa", "64", "512Gi", "NVIDIA-A100-PCIE-40GB", 2),
            NodePool("gpu-h100", 2, "PowerEdge-XE9680", "224", "2Ti", "NVIDIA-H100-80GB-HBM3", 8),
            NodePool(
                "gpu-t4",
                2,
                "g4dn.xlarge",
                "4",
                "16Gi",
                "Tesla-T4",
                1,
                # The MachineSet's node template labels; the MachineSet's own name is on its Machines only.
                labels={"cluster-api/accelerator": OPENSHIFT_T4_ACCELERATOR},
                machineset=OPENSHIFT_T4_MACHINESET,
            ),
        ],
        cpu_pool=NodePool("worker", 2, "m5.2xlarge", "8", "32Gi"),
        platform_namespaces=(MACHINE_API_NAMESPACE, OPENSHIFT_NFD_NAMESPACE),
    ),
    "scaleway": Profile(
        "scaleway",
        "kube-system",
        "cluster-policy",
        "containerd://1.7.22",
        "560.35.03",
        "12.6",
        "fr-par-2",
        gpu_pools=[
            NodePool(
                "scw-gpu-h100",
                3,
                "SCW-H100-1-80G",
                "24",
                "240Gi",
                "NVIDIA-H100-PCIe",
                1,
                labels={
                    "k8s.scaleway.com/pool-name": "gpu-h100",
                    "node.kubernetes.io/instance-type": "H100-1-80G",
                    # The label Kapsule's autoscaler reads for GPU pools (reference section 5); value unchecked.
                    "k8s.scw.cloud/gpu": "true",
                },
            )
        ],
        cpu_pool=NodePool(
            "scw-default",
            2,
            "PRO2-S",
            "8",
            "32Gi",
            labels={"k8s.scaleway.com/pool-name": "default", "node.kubernetes.io/instance-type": "PRO2-S"},
        ),
    ),
    "vks": Profile(
        "vks",
        "gpu-operator",
        "cluster-policy",
        "containerd://1.7.13",
        "550.54.15",
        "12.4",
        "HCM03-1A",
        gpu_pools=[
            NodePool("vks-gpu-a10", 2, "OpenStack-Nova", "16", "64Gi", "NVIDIA-A10", 1),
            NodePool("vks-gpu-t4", 1, "OpenStack-Nova", "16", "64Gi", "Tesla-T4", 2),
            NodePool("vks-gpu-l4", 1, "OpenStack-Nova", "16", "64Gi", "NVIDIA-L4", 1),
        ],
        cpu_pool=NodePool("vks-cpu", 2, "OpenStack-Nova", "8", "32Gi"),
        service_monitor=True,
    ),
}
