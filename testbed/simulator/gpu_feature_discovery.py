"""GPU Feature Discovery: the ``nvidia.com/*`` labels of a node.

Reference ``nvidia-gpu-sharing.md`` section 2. ``labels`` is pure: from the node's hardware, the
resources the device plugin advertises (``device_plugin.advertised_resources``), the MIG strategy and
the sharing config it derives every GFD label, without ``gfd.timestamp`` (the caller stamps it when
something changed).
"""

from testbed.simulator import nvml
from testbed.simulator.device_plugin import MPS, replicas_of


def labels(hardware, advertised, mig_strategy, sharing):
    result = _machine_labels(hardware, mig_strategy)
    for item in advertised:
        result.update(_resource_labels(item, replicas_of(item, sharing), sharing))
    if sharing and sharing.strategy == MPS:
        result["nvidia.com/mps.capable"] = "true"
    return result


def _machine_labels(hardware, mig_strategy):
    gpu = nvml.gpu_of(hardware)
    driver = hardware["driver_version"].split(".")
    cuda = hardware["cuda_version"].split(".")
    return {
        "nvidia.com/gpu.family": hardware["family"],
        "nvidia.com/gpu.compute.major": str(hardware["compute_major"]),
        "nvidia.com/gpu.compute.minor": str(hardware["compute_minor"]),
        "nvidia.com/gpu.machine": hardware["machine"],
        "nvidia.com/cuda.driver-version.full": hardware["driver_version"],
        "nvidia.com/cuda.driver-version.major": driver[0],
        "nvidia.com/cuda.driver-version.minor": driver[1],
        "nvidia.com/cuda.driver-version.revision": driver[2],
        "nvidia.com/cuda.driver.major": driver[0],
        "nvidia.com/cuda.driver.minor": driver[1],
        "nvidia.com/cuda.driver.rev": driver[2],
        "nvidia.com/cuda.runtime-version.full": hardware["cuda_version"],
        "nvidia.com/cuda.runtime-version.major": cuda[0],
        "nvidia.com/cuda.runtime-version.minor": cuda[1],
        "nvidia.com/mig.capable": "true" if gpu.mig_capable else "false",
        "nvidia.com/mig.strategy": mig_strategy,
    }


def _resource_labels(advertised, replicas, sharing):
    """``<resource>.product/.memory/.replicas/.sharing-strategy/.count`` (and ``.slices.*`` for MIG)."""
    shared = replicas > 1
    renamed = shared and sharing.rename_by_default
    values = {
        # A label value cannot hold '+': GFD drops what is not [A-Za-z0-9-_.] (1g.10gb+me -> 1g.10gbme).
        "product": nvml.gfd_product(advertised.product) + ("-SHARED" if shared and not renamed else ""),
        "memory": str(advertised.memory_mib),
        "replicas": str(replicas),
        "sharing-strategy": sharing.strategy if shared else "none",
        "count": str(advertised.count_label),
    }
    if advertised.slices:
        values["slices.gi"] = values["slices.ci"] = str(advertised.slices)
    return {"%s.%s" % (advertised.resource, key): value for key, value in values.items()}
