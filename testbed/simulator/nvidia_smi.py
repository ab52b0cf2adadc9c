"""nvidia-smi in the driver container: ``nvidia-smi -L`` and ``nvidia-smi mig -lgi`` printed from a node's
simulated GPUs (``sim.gpushare.k8s/hardware``) and the MIG layout mig-manager last applied there.

Formats, as drivers from R470 on print them (public captures: Scaleway's H100 PCIe documentation,
``scaleway/docs-content@09ec87a276224e5d1dc18eb8d52360f3fdef9762:compute/gpu/how-to/use-nvidia-mig-technology.mdx``,
after ``nvidia-smi mig -cgi 9,19,19,19 -C``; NVIDIA/DCGM#138, 2023-12-05)::

    GPU 0: NVIDIA H100 PCIe (UUID: GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02)
      MIG 3g.40gb     Device  0: (UUID: MIG-da06d78f-7534-56a0-a062-62fef012be91)

    |   0  MIG 1g.10gb         19        7          0:1     |

What the simulator decides, where the captures show a result but not the driver's rule:

- GPU instances are created largest first; a 3-slice instance takes the upper half of the GPU first
  (``-cgi 9,...`` gives ``4:4``), every other one the lowest free start. The placement size is the profile's
  memory in eighths of the GPU; the starts a profile may take are multiples of it, as many as its compute
  slices allow (1g: 0..6, 2g: 0, 2, 4, 3g: 0, 4).
- A GPU instance's id is its placement's position in the GPU's memory tree (0 the whole GPU, 1-2 the halves,
  3-6 the quarters, 7-14 the eighths), as both captures show (but GPU 1 of the DCGM one, where the driver
  numbered otherwise, for reasons the capture does not give). ``-L`` lists MIG devices by it, ``mig -lgi`` lists
  instances by profile id (highest first), then instance id.
- UUIDs are stable per node, GPU and instance (hashes of their names), so repeated reads agree.

Exit codes: 0, or 6 (nvidia-smi's "a query to find an object was unsuccessful") when there is nothing to
list: ``No MIG-enabled devices found.``, ``No GPU instances found: Not Found``, ``No devices were found``.
"""

import hashlib

from testbed.simulator import nvml

NOT_FOUND_EXIT_CODE = 6
# nvidia-smi's code for arguments it refuses; the simulated one knows only the two listings.
INVALID_ARGUMENT_EXIT_CODE = 2
LIST_GPUS = ("-L",)
LIST_GPU_INSTANCES = ("mig", "-lgi")

# Every placement size (eighths of memory) -> the id of its first placement in the GPU's memory tree.
FIRST_INSTANCE_ID = {8: 0, 4: 1, 2: 3, 1: 7}
TABLE_RULE = "+" + "-" * 55 + "+"
TABLE_HEADER = (
    TABLE_RULE,
    "| GPU instances:                                        |",
    "| GPU   Name             Profile  Instance   Placement  |",
    "|                          ID       ID       Start:Size |",
    "|" + "=" * 55 + "|",
)


class GpuInstance(object):
    """One GPU instance of a GPU: its ``gpu`` index, ``profile`` name, NVML ``profile_id``, ``instance_id`` and
    placement (``start``, ``size`` in eighths of the GPU's memory)."""

    def __init__(self, gpu, profile, profile_id, instance_id, start, size):
        self.gpu = gpu
        self.profile = profile
        self.profile_id = profile_id
        self.instance_id = instance_id
        self.start = start
        self.size = size


def _placements(gpu, profile):
    """The starts an instance of ``profile`` may take on ``gpu``, in the order the driver tries them."""
    facts = gpu.mig_profiles[profile]
    size = gpu.memory_slices(profile)
    starts = [index * size for index in range(gpu.compute_slices // facts.slices)]
    starts = [start for start in starts if start + size <= nvml.MEMORY_SLICES]
    return starts[::-1] if facts.slices == 3 else starts


def gpu_instances(gpu, index, layout):
    """The GPU instances of GPU ``index`` holding ``layout`` ({profile: count}); mig-parted checked it fits."""
    taken = [False] * nvml.MEMORY_SLICES
    instances = []
    wanted = [profile for profile, count in layout.items() for _ in range(count)]
    for profile in sorted(wanted, key=lambda name: (-gpu.memory_slices(name), name)):
        size = gpu.memory_slices(profile)
        start = next(start for start in _placements(gpu, profile) if not any(taken[start : start + size]))
        taken[start : start + size] = [True] * size
        instance_id = FIRST_INSTANCE_ID[size] + start // size
        instances.append(GpuInstance(index, profile, gpu.mig_profiles[profile].profile_id, instance_id, start, size))
    return instances


def _uuid(*names):
    digest = hashlib.sha1("/".join(str(name) for name in names).encode()).hexdigest()
    return "-".join((digest[:8], digest[8:12], digest[12:16], digest[16:20], digest[20:32]))


def list_gpus(node_name, gpu, layout):
    """``nvidia-smi -L``: each GPU, then its MIG devices (one per GPU instance) by instance id."""
    lines = []
    for index, gpu_layout in enumerate(layout):
        lines.append("GPU %d: %s (UUID: GPU-%s)" % (index, gpu.nvml_name, _uuid(node_name, index)))
        instances = sorted(gpu_instances(gpu, index, gpu_layout or {}), key=lambda item: item.instance_id)
        for device, instance in enumerate(instances):
            uuid = _uuid(node_name, index, instance.instance_id, instance.profile)
            lines.append("  MIG %-11s Device %2d: (UUID: MIG-%s)" % (instance.profile, device, uuid))
    return "".join(line + "\n" for line in lines)


def list_gpu_instances(gpu, layout):
    """``nvidia-smi mig -lgi``: (output, exit code)."""
    enabled = [(index, gpu_layout) for index, gpu_layout in enumerate(layout) if gpu_layout is not None]
    if not enabled:
        return "No MIG-enabled devices found.\n", NOT_FOUND_EXIT_CODE
    instances = [instance for index, gpu_layout in enabled for instance in gpu_instances(gpu, index, gpu_layout)]
    if not instances:
        return "No GPU instances found: Not Found\n", NOT_FOUND_EXIT_CODE
    lines = list(TABLE_HEADER)
    for instance in sorted(instances, key=lambda item: (item.gpu, -item.profile_id, item.instance_id)):
        placement = "%d:%d" % (instance.start, instance.size)
        lines.append(
            "| %3d  %-16s%6d%9d%13s     |"
            % (instance.gpu, "MIG " + instance.profile, instance.profile_id, instance.instance_id, placement)
        )
        lines.append(TABLE_RULE)
    return "".join(line + "\n" for line in lines), 0


def run(node_name, hardware, layout, args):
    """``nvidia-smi <args>`` on a node: (stdout, stderr, exit code). ``hardware`` None: a node without GPU."""
    if hardware is None:
        return "No devices were found\n", "", NOT_FOUND_EXIT_CODE
    gpu = nvml.gpu_of(hardware)
    layout = layout or [None] * hardware["count"]
    if tuple(args) == LIST_GPUS:
        return list_gpus(node_name, gpu, layout), "", 0
    if tuple(args) == LIST_GPU_INSTANCES:
        output, exit_code = list_gpu_instances(gpu, layout)
        return output, "", exit_code
    return (
        "",
        "the simulated nvidia-smi answers only 'nvidia-smi -L' and 'nvidia-smi mig -lgi', not %r\n" % " ".join(args),
        INVALID_ARGUMENT_EXIT_CODE,
    )
