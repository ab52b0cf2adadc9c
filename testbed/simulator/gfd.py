"""What GPU Feature Discovery labels and the device plugin advertises for a node.

Reference file, section 2. ``render`` is pure: from the node's hardware, its MIG layout (see
``mig.py``), the MIG strategy and the applied sharing config it derives every GFD label (without
``gfd.timestamp``, which the caller stamps when something changed) and the ``nvidia.com/*``
capacity and allocatable.
"""

from ansible_collections.gpushare.k8s.plugins.module_utils.gpu_models import mig_memory_mib, profile_slices

from testbed.simulator.mig import gpu_model_of
from testbed.simulator.names import GPU_RESOURCE, SHARED_SUFFIX
from testbed.simulator.sharing import MPS


class GpuView(object):
    def __init__(self):
        self.labels = {}
        self.capacity = {}
        self.allocatable = {}


class _Advertised(object):
    """One resource the device plugin advertises; GFD describes it with labels named after it.

    ``count_label`` is what the ``.count`` label shows: the devices, except for full GPUs under the
    mixed strategy, where GFD still counts the physical GPUs while the resource drops to the non-MIG ones.
    """

    def __init__(self, resource, devices, product, memory_mib, slices=None, count_label=None):
        self.resource = resource
        self.devices = devices
        self.count_label = devices if count_label is None else count_label
        self.product = product
        self.memory_mib = memory_mib
        self.slices = slices


def render(hardware, layout, mig_strategy, sharing):
    view = GpuView()
    view.labels.update(_machine_labels(hardware, mig_strategy))
    for advertised in _advertised_resources(hardware, layout, mig_strategy):
        replicas = sharing.replicas.get(advertised.resource, 1) if sharing else 1
        _describe(view, advertised, replicas, sharing)
    if sharing and sharing.strategy == MPS:
        view.labels["nvidia.com/mps.capable"] = "true"
    return view


def _machine_labels(hardware, mig_strategy):
    model = gpu_model_of(hardware)
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
        "nvidia.com/mig.capable": "true" if model is not None and model.mig_capable else "false",
        "nvidia.com/mig.strategy": mig_strategy,
    }


def _advertised_resources(hardware, layout, mig_strategy):
    product, count, memory = hardware["product"], hardware["count"], hardware["memory_mib"]
    mig_gpus = [gpu for gpu in layout if gpu is not None]
    if not mig_gpus or mig_strategy == "none":
        return [_Advertised(GPU_RESOURCE, count, product, memory)]
    model = gpu_model_of(hardware)
    if mig_strategy == "single":
        profiles = {profile for gpu in mig_gpus for profile, instances in gpu.items() if instances}
        uniform = len(mig_gpus) == count and len(profiles) == 1 and all(len(gpu) == 1 for gpu in mig_gpus)
        if not uniform:
            return [_Advertised(GPU_RESOURCE, 0, product + "-MIG-INVALID", 0)]
        profile = profiles.pop()
        instances = sum(gpu[profile] for gpu in mig_gpus)
        return [_Advertised(GPU_RESOURCE, instances, "%s-MIG-%s" % (product, profile), mig_memory_mib(model, profile), profile_slices(profile))]
    # mixed: full GPUs stay nvidia.com/gpu (0 when all are MIG-enabled), MIG devices get their own resources.
    totals = {}
    for gpu in mig_gpus:
        for profile, instances in gpu.items():
            totals[profile] = totals.get(profile, 0) + instances
    advertised = [_Advertised(GPU_RESOURCE, count - len(mig_gpus), product, memory, count_label=count)]
    for profile in sorted(totals):
        advertised.append(_Advertised("nvidia.com/mig-" + profile, totals[profile], "%s-MIG-%s" % (product, profile),
                                      mig_memory_mib(model, profile), profile_slices(profile)))
    return advertised


def _describe(view, advertised, replicas, sharing):
    shared = replicas > 1
    renamed = shared and sharing.rename_by_default
    prefix = advertised.resource
    labels = {
        "product": advertised.product + ("-SHARED" if shared and not renamed else ""),
        "memory": str(advertised.memory_mib),
        "replicas": str(replicas),
        "sharing-strategy": sharing.strategy if shared else "none",
    }
    labels["count"] = str(advertised.count_label)
    if advertised.slices:
        labels["slices.gi"] = labels["slices.ci"] = str(advertised.slices)
    view.labels.update({"%s.%s" % (prefix, key): value for key, value in labels.items()})
    if renamed:
        view.capacity[advertised.resource] = str(advertised.devices)
        view.allocatable[advertised.resource] = "0"
        view.capacity[advertised.resource + SHARED_SUFFIX] = view.allocatable[advertised.resource + SHARED_SUFFIX] = str(advertised.devices * replicas)
    else:
        view.capacity[advertised.resource] = view.allocatable[advertised.resource] = str(advertised.devices * replicas)
