# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generate ``plugins/module_utils/nvidia/nvidia_data.py`` from NVIDIA's facts.

Run from the repository root: ``python tools/gen_nvidia_data.py`` (``--check`` fails when the file
is stale; a unit test runs that check). The inputs are the copies in
``tests/unit/plugins/module_utils/data/nvidia/`` (their README names each source and commit):

- ``default-mig-parted-config.json``: the 81 MIG configs the GPU Operator ships
  (NVIDIA/gpu-operator@a22dbf671f2e26f9a1e342f8eea28e196235e110 assets/state-mig-manager/0400_configmap.yaml);
- ``pci-device-ids.json``: the 27 device IDs of its device filters (pci.ids 2025.07.11 as vendored by
  NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d);
- ``h100-80gb-hbm3-nvml.json``, ``h200-nvml.json``: MIG profiles NVML reports on a real H100 80GB HBM3 and
  H200 (driver 580.159.04).

``MODELS`` below is the one hand-written part: which device IDs form one GPU model, the product tokens
GPU Feature Discovery's label carries, the memory size go-nvlib names profiles after, and the profile
names (each read from the shipped config's section for those device IDs, its ``all-balanced`` entry and
the NVML dumps). Everything else is derived, and every derived figure is checked here against every
figure NVIDIA gives: a shipped count that disagrees with the rule stops the generator.
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "data", "nvidia")
OUTPUT = os.path.join(ROOT, "plugins", "module_utils", "nvidia", "nvidia_data.py")

SOURCES = {
    "gpu-operator": "NVIDIA/gpu-operator@a22dbf671f2e26f9a1e342f8eea28e196235e110",
    "mig-parted": "NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d",
    "go-nvlib": "NVIDIA/go-nvlib@3c161560521e3208792199f2ed0d559a5f3ae4f4",
    "k8s-device-plugin": "NVIDIA/k8s-device-plugin@1b826acc6af3079d8923bac395c3124b8861a9a6",
    "pci.ids": "pci.ids 2025.07.11 (vendored in NVIDIA/mig-parted@bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d)",
    "nvml": "NVML on an NVIDIA H100 80GB HBM3 and an NVIDIA H200, driver 580.159.04, read 2026-11-22",
}


def _seven(g1, g1l, g2, g3, g7, me=True):
    """Profiles of a 7-compute-slice GPU named by go-nvlib's rule: 1/8, 2/8 (1g and 2g), 4/8 (3g, 4g), 8/8."""
    names = ["1g.%dgb" % g1, "1g.%dgb" % g1l, "2g.%dgb" % g2, "3g.%dgb" % g3, "4g.%dgb" % g3, "7g.%dgb" % g7]
    if me:
        names.insert(1, "1g.%dgb+me" % g1)
    return names


# name, product family tokens (GFD's nvidia.com/gpu.product), device IDs, the memory GB go-nvlib names
# profiles after (total memory rounded up to a GiB), compute slices, memory slices, profiles.
MODELS = [
    dict(
        name="A30 24GB",
        families=["A30"],
        device_ids=["0x20B710DE"],
        memory_gb=24,
        compute_slices=4,
        memory_slices=4,
        profiles=["1g.6gb", "1g.6gb+me", "2g.12gb", "2g.12gb+me", "4g.24gb"],
    ),
    dict(
        name="A100 40GB",
        families=["A100", "A800"],
        device_ids=["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"],
        memory_gb=40,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(5, 10, 10, 20, 40),
    ),
    dict(
        name="A100 80GB",
        families=["A100", "A800", "A100X", "AX800"],
        device_ids=["0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"],
        memory_gb=80,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(10, 20, 20, 40, 80),
    ),
    dict(
        name="H100 80GB HBM3",
        families=["H100 HBM3"],
        device_ids=["0x233010DE"],
        memory_gb=80,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(10, 20, 20, 40, 80),
        nvml={"0x233010DE": ("h100-80gb-hbm3-nvml.json", "NVIDIA H100 80GB HBM3")},
    ),
    dict(
        name="H100 80GB",
        families=["H100", "H800"],
        device_ids=["0x233110DE", "0x232210DE", "0x232410DE"],
        memory_gb=80,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(10, 20, 20, 40, 80),
    ),
    dict(
        name="H100 NVL 94GB",
        families=["H100 NVL", "H800 NVL"],
        device_ids=["0x232110DE", "0x233A10DE"],
        memory_gb=94,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(12, 24, 24, 47, 94),
    ),
    dict(
        name="H100 96GB",
        families=["H100", "GH200", "H20", "PG506"],
        device_ids=["0x233D10DE", "0x234210DE", "0x232910DE", "0x20B610DE"],
        memory_gb=96,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(12, 24, 24, 48, 96),
    ),
    dict(
        name="H200 141GB",
        families=["H200"],
        device_ids=["0x233510DE"],
        memory_gb=141,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(18, 35, 35, 71, 141),
        nvml={"0x233510DE": ("h200-nvml.json", "NVIDIA H200")},
    ),
    dict(
        name="H200 NVL 141GB",
        families=["H200 NVL"],
        device_ids=["0x233B10DE"],
        memory_gb=141,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(18, 35, 35, 71, 141),
    ),
    dict(
        name="GH200 144GB",
        families=["GH200"],
        device_ids=["0x234810DE"],
        memory_gb=144,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(18, 36, 36, 72, 144),
    ),
    dict(
        name="B200 180GB",
        families=["B200"],
        device_ids=["0x290110DE"],
        memory_gb=180,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(23, 45, 45, 90, 180),
    ),
    dict(
        name="GB200 186GB",
        families=["GB200"],
        device_ids=["0x294110DE"],
        memory_gb=186,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(23, 47, 47, 93, 186),
    ),
    dict(
        name="GB200 189GB",
        families=["GB200"],
        device_ids=[],
        memory_gb=189,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(24, 47, 47, 95, 189),
        # The shipped all-1g.24gb.me, all-3g.95gb, all-4g.95gb and all-7g.189gb name this memory size (vGPU type
        # GB200-189C for device 0x2941), but no device filter does.
        note="no device filter names this size: matched by product and memory only",
    ),
    dict(
        name="B300 269GB",
        families=["B300"],
        device_ids=["0x318210DE"],
        memory_gb=269,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(34, 67, 67, 135, 269),
    ),
    dict(
        name="GB300 278GB",
        families=["GB300"],
        device_ids=["0x31C210DE"],
        memory_gb=278,
        compute_slices=7,
        memory_slices=8,
        profiles=_seven(35, 70, 70, 139, 278),
    ),
    dict(
        name="RTX PRO 6000 Blackwell 96GB",
        families=["RTX PRO 6000"],
        device_ids=["0x2BB510DE"],
        memory_gb=96,
        compute_slices=4,
        memory_slices=4,
        profiles=[
            "1g.24gb",
            "1g.24gb+me",
            "1g.24gb+gfx",
            "1g.24gb+me.all",
            "1g.24gb-me",
            "2g.48gb",
            "2g.48gb+gfx",
            "2g.48gb+me.all",
            "2g.48gb-me",
            "4g.96gb",
            "4g.96gb+gfx",
        ],
    ),
]

# GPUs without MIG: GFD product tokens (nvidia-gpu-sharing.md section 4: not on T4, A10, L4, RTX cards).
NON_MIG_FAMILIES = [
    "K80",
    "M60",
    "M40",
    "P4",
    "P40",
    "P100",
    "P6",
    "V100",
    "V100S",
    "T4",
    "A2",
    "A10",
    "A10G",
    "A16",
    "A40",
    "L4",
    "L20",
    "L40",
    "L40S",
]


def load(name):
    with open(os.path.join(DATA, name)) as handle:
        return json.load(handle)


def split_profile(profile):
    """(G, GB, attribute suffix) of a plain GPU-instance profile name."""
    base, suffix = profile, ""
    for sign in "+-":
        if sign in profile:
            base, rest = profile.split(sign, 1)
            suffix = sign + rest
    g, gb = base.split(".")
    return int(g[:-1]), int(gb[:-2]), suffix


def placements(g, memory, compute_slices, memory_slices):
    """Start slices of a GPU instance: multiples of its memory slices, inside the memory and compute slices.

    This reproduces every placement ``nvidia-smi mig -lgipp`` prints on the measured H100 and H200
    ({0..6}:1, {0,2,4,6}:2, {0,2,4}:2, {0,4}:4, {0}:4, {0}:8)."""
    starts = range(0, memory_slices, memory)
    return [start for start in starts if start + memory <= memory_slices and start + g <= compute_slices]


def shipped_count(configs, profile, device_ids):
    """The count NVIDIA's shipped all-<profile> config gives these device IDs, or None."""
    entries = configs.get("all-" + profile.replace("+", "."))
    for entry in entries or []:
        wanted = entry["device-filter"]
        if wanted is None:
            return entry["mig-devices"][profile]
        if any(device in wanted for device in device_ids):
            return entry["mig-devices"][profile]
    return None


def measured(model):
    """{device id: {profile: NVML record}} of the model's measured GPUs."""
    result = {}
    for device_id, (name, nvml_name) in sorted((model.get("nvml") or {}).items()):
        gpu = [gpu for gpu in load(name)["gpus"] if gpu["name"] == nvml_name][0]
        result[device_id] = (gpu, {item["name"][len("MIG ") :]: item for item in gpu["gpu_instance_profiles"]})
    return result


def build_model(model, configs):
    dumps = measured(model)
    profiles = {}
    for profile in model["profiles"]:
        g, gb, suffix = split_profile(profile)
        memory = int(round(gb * model["memory_slices"] / float(model["memory_gb"])))
        starts = placements(g, memory, model["compute_slices"], model["memory_slices"])
        rule_max = 1 if suffix in ("+me", "+me.all") else len(starts)
        shipped = shipped_count(configs, profile, model["device_ids"]) if model["device_ids"] else None
        if shipped is not None and shipped != rule_max:
            sys.exit("%s %s: shipped count %d, rule %d" % (model["name"], profile, shipped, rule_max))
        facts = dict(
            slices=g,
            memory_slices=memory,
            max_count=rule_max,
            max_count_source="shipped config" if shipped is not None else "rule",
            memory_mib=int(memory * model["memory_gb"] * 1024 // model["memory_slices"]),
            memory_source="rule: memory slices x named memory / memory slices (an upper bound)",
            attributes=suffix,
        )
        for device_id, (gpu, nvml) in dumps.items():
            record = nvml.get(profile)
            if record is None:
                sys.exit("%s: NVML on %s has no %s" % (model["name"], device_id, profile))
            if (record["sliceCount"], record["instanceCount"]) != (g, rule_max):
                sys.exit("%s %s: NVML says %r" % (model["name"], profile, record))
            facts.update(
                memory_mib=record["memorySizeMB"],
                memory_source="NVML %s, driver %s" % (gpu["name"], "580.159.04"),
                max_count_source="NVML %s" % gpu["name"],
            )
        profiles[profile] = facts
    for device_id, (gpu, nvml) in dumps.items():
        missing = sorted(set(nvml) - set(profiles))
        if missing:
            sys.exit("%s: NVML lists %s, the table does not" % (model["name"], missing))
    result = dict(
        name=model["name"],
        families=model["families"],
        device_ids=model["device_ids"],
        memory_gb=model["memory_gb"],
        compute_slices=model["compute_slices"],
        memory_slices=model["memory_slices"],
        profiles=profiles,
        balanced=balanced(profiles, model["compute_slices"]),
    )
    if dumps:
        gpu = list(dumps.values())[0][0]
        result["measured"] = dict(memory_total_mib=gpu["memory_total_mib"], compute_capability=gpu["cuda_cc"])
    if model.get("note"):
        result["note"] = model["note"]
    return result


def balanced(profiles, compute_slices):
    """mig-parted's balanced layout (pkg/mig/builder/balanced.go:30-160): 7-slice GPUs 2x1g + 1x2g + 1x3g,
    4-slice GPUs 2x1g + 1x2g; only profiles without attributes, for each G the one with the most instances."""
    wanted = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}.get(compute_slices)
    if not wanted:
        return {}
    layout = {}
    for g, count in wanted.items():
        candidates = [p for p, f in profiles.items() if f["slices"] == g and not f["attributes"]]
        if not candidates:
            return {}
        best = max(candidates, key=lambda p: (profiles[p]["max_count"], -profiles[p]["memory_slices"]))
        layout[best] = count
    return layout


def check_balanced(models, configs):
    """Every all-balanced entry of the shipped config equals the balanced layout the builder gives its GPUs."""
    for entry in configs["all-balanced"]:
        for model in models:
            if set(entry["device-filter"]) & set(model["device_ids"]):
                if entry["mig-devices"] != model["balanced"]:
                    sys.exit("all-balanced for %s: shipped %r, built %r" % (model["name"], entry, model["balanced"]))


def check_ids(models):
    ids = load("pci-device-ids.json")["ids"]
    known = set(device for model in models for device in model["device_ids"])
    listed = set(item["id"] for item in ids)
    if known != listed:
        sys.exit("device IDs differ from pci-device-ids.json: %s" % sorted(known ^ listed))


def python_literal(value, indent=0, width=110):
    """``value`` as Python source: one item a line with a hanging indent of four spaces (what pep8 accepts),
    small containers on one line."""
    flat = repr(value)
    if not isinstance(value, (dict, list)) or len(flat) + indent * 4 <= width:
        return flat
    pad = "    " * (indent + 1)
    if isinstance(value, dict):
        items = ["%s%r: %s" % (pad, key, python_literal(item, indent + 1, width)) for key, item in value.items()]
        opening, closing = "{", "}"
    else:
        items = ["%s%s" % (pad, python_literal(item, indent + 1, width)) for item in value]
        opening, closing = "[", "]"
    return "%s\n%s,\n%s%s" % (opening, ",\n".join(items), "    " * indent, closing)


def render():
    shipped = load("default-mig-parted-config.json")
    configs = shipped["configs"]
    models = [build_model(model, configs) for model in MODELS]
    check_balanced(models, configs)
    check_ids(models)
    shipped_configs = {}
    for name, entries in configs.items():
        shipped_configs[name] = []
        for entry in entries:
            written = dict((key, value) for key, value in entry.items() if value is not None)
            shipped_configs[name].append(written)
    lines = [
        "# -*- coding: utf-8 -*-",
        "# Copyright: (c) 2026, gpushare.k8s contributors",
        "# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)",
        '"""NVIDIA\'s facts as Python data. GENERATED by tools/gen_nvidia_data.py: do not edit by hand.',
        "",
        "Sources (SOURCES below): the GPU Operator's shipped MIG config, the PCI device IDs its filters name,",
        "NVML dumps of a real H100 80GB HBM3 and H200; the rules in the generator's docstring.",
        '"""',
        "",
        "from __future__ import absolute_import, division, print_function",
        "",
        "__metaclass__ = type",
        "",
        "# fmt: off",
        "SOURCES = " + python_literal(SOURCES),
        "",
        "# The GPU Operator's default-mig-parted-config (key config.yaml), every config and entry in order.",
        "SHIPPED_MIG_CONFIGS = " + python_literal(shipped_configs),
        "",
        "# GPU models with MIG: profiles with their slices, most instances, memory slices and memory (MiB).",
        "MIG_MODELS = " + python_literal(models),
        "",
        "# Product tokens of GPUs without MIG.",
        "NON_MIG_FAMILIES = " + python_literal(NON_MIG_FAMILIES),
        "# fmt: on",
        "",
    ]
    return "\n".join(lines)


def main():
    text = render()
    if "--check" in sys.argv:
        with open(OUTPUT) as handle:
            if handle.read() != text:
                sys.exit("%s is stale: run python tools/gen_nvidia_data.py" % OUTPUT)
        return
    with open(OUTPUT, "w") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
