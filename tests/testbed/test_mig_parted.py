"""The simulated mig-parted's parser, profile grammar and device filters (mig-parted-rules.md sections
1-5), without a cluster. Cluster-level behaviour (state labels, Events) is in test_mig.py."""

import pytest
import yaml

from testbed.simulator import nvml
from testbed.simulator.mig_parted import (
    MigConfigError,
    apply_config,
    canonical_profile,
    filter_matches,
    parse_config,
    parse_profile,
    shipped_config_yaml,
)

A100 = {"product": "NVIDIA-A100-PCIE-40GB", "count": 2, "pci_device_id": "0x20F110DE"}
T4 = {"product": "Tesla-T4", "count": 1, "pci_device_id": "0x1EB810DE"}
ENTRY = {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}


def config(**configs):
    return yaml.safe_dump({"version": "v1", "mig-configs": configs})


def test_shipped_config_parses_with_its_81_configs():
    assert len(parse_config(shipped_config_yaml())) == 81


@pytest.mark.parametrize("text", ["", "{}", "version: v1\n"])
def test_empty_documents_are_valid_and_hold_no_config(text):
    assert parse_config(text) == {}


@pytest.mark.parametrize(
    "document, reason",
    [
        ({"version": "v1", "mig-configs": {"a": [ENTRY]}, "extra": 1}, "unexpected field: extra"),
        ({"version": "v1", "mig-configs": {"a": [dict(ENTRY, devicez=1)]}}, "unexpected field: devicez"),
        ({"mig-configs": {"a": [ENTRY]}}, "unable to parse with missing 'version' field"),
        ({"version": "v2", "mig-configs": {"a": [ENTRY]}}, "unknown version: v2"),
        ({"version": 1, "mig-configs": {"a": [ENTRY]}}, "cannot unmarshal number"),
        ({"version": "v1", "mig-configs": {}}, "at least one entry in 'mig-configs' is required"),
        ({"version": "v1", "mig-configs": {"a": []}}, "at least one entry in 'a' is required"),
        ({"version": "v1", "mig-configs": {"a": [{"mig-enabled": False}]}}, "missing required field: devices"),
        ({"version": "v1", "mig-configs": {"a": [{"devices": "all"}]}}, "missing required field: mig-enabled"),
        (
            {"version": "v1", "mig-configs": {"a": [dict(ENTRY, devices="All")]}},
            "invalid string input for 'devices': All",
        ),
        ({"version": "v1", "mig-configs": {"a": [dict(ENTRY, devices=[0, "1"])]}}, "cannot unmarshal"),
        (
            {"version": "v1", "mig-configs": {"a": [dict(ENTRY, **{"mig-enabled": "yes please"})]}},
            "cannot unmarshal string",
        ),
        (
            {"version": "v1", "mig-configs": {"a": [{"devices": "all", "mig-enabled": True}]}},
            "missing required field 'mig-devices' when 'mig-enabled' is true",
        ),
        (
            {"version": "v1", "mig-configs": {"a": [dict(ENTRY, **{"mig-enabled": False})]}},
            "MIG devices included when 'mig-enabled' is false",
        ),
        ({"version": "v1", "mig-configs": {"a": [dict(ENTRY, **{"mig-devices": {"1g.10gb.me": 1}})]}}, "mig-devices"),
        ({"version": "v1", "mig-configs": {"a": [dict(ENTRY, **{"mig-devices": {"3g.20gb": 0}})]}}, "all counts"),
        ({"version": "v1", "mig-configs": {"a": [dict(ENTRY, **{"mig-devices": {"3g.20gb": -1}})]}}, "invalid count"),
    ],
)
def test_strict_parser_refuses(document, reason):
    with pytest.raises(MigConfigError, match=reason):
        parse_config(yaml.safe_dump(document))


def test_unparsable_yaml_is_refused():
    with pytest.raises(MigConfigError, match="error parsing config file"):
        parse_config("version: v1\nmig-configs: [unclosed\n")


def test_what_the_parser_does_not_check():
    # Format only: a profile no GPU has, a mix of 0 and positive counts, an index list not range-checked.
    parsed = parse_config(
        config(a=[{"devices": [7, -1], "mig-enabled": True, "mig-devices": {"0g.0gb": 100, "1g.5gb": 0}}])
    )
    assert parsed["a"][0].devices == [7, -1]


@pytest.mark.parametrize(
    "profile, parts",
    [
        ("1g.5gb", (1, 1, 5, "")),
        ("1c.7g.80gb", (1, 7, 80, "")),
        ("01g.05gb", (1, 1, 5, "")),
        ("1g.10gb+me", (1, 1, 10, "+me")),
        ("1g.24gb+me.all", (1, 1, 24, "+me.all")),
        ("1g.24gb-me", (1, 1, 24, "-me")),
        ("1g.5gb+me,gfx", (1, 1, 5, "+me,gfx")),
    ],
)
def test_profile_grammar_accepts(profile, parts):
    assert parse_profile(profile) == parts


@pytest.mark.parametrize(
    "profile",
    [
        "1g.10gb.me",
        "1G.5GB",
        "1g.5gb+me+gfx",
        "1g.5gb+me-gfx",
        "1g.5gb+",
        "1g.5gb+me,me",
        "1g.5gb+1me",
        "1g.5gb+.me",
        "1g.5gb+me.",
        "1g 5gb",
        "5gb",
        "1g.5gb+m_e",
    ],
)
def test_profile_grammar_refuses(profile):
    with pytest.raises(MigConfigError):
        parse_profile(profile)


def test_canonical_profile_drops_an_equal_compute_count():
    assert canonical_profile("1c.1g.5gb") == "1g.5gb"
    assert canonical_profile("1c.7g.80gb") == "1c.7g.80gb"


@pytest.mark.parametrize(
    "device_filter, matches",
    [
        ([], True),
        (["0x20F110DE"], True),
        (["0x20f110de"], True),
        (["0x233010DE", "0x20F110DE"], True),
        (["0x233010DE"], False),
        (["0x20F110DE:0x145F10DE"], False),  # a subsystem part needs the subsystem to match, unknown here
        (["A100-PCIE-40GB"], False),  # product names parse as config but never match hardware
        (["0x20F110DE:0x1:0x2"], False),
        # strconv.ParseUint(s, 0, 32): any base with its prefix, underscores after the prefix, 32 bits.
        ([str(0x20F110DE)], True),
        (["0x20F1_10DE"], True),
        (["0x120F110DE"], False),
        (["0x"], False),
        ([""], False),
    ],
)
def test_device_filters(device_filter, matches):
    assert filter_matches(device_filter, A100) is matches


def test_device_filter_with_subsystem_matches_when_both_parts_do():
    hardware = dict(A100, pci_subsystem_id="0x145F10DE")
    assert filter_matches(["0x20F110DE:0x145F10DE"], hardware)
    assert not filter_matches(["0x20F110DE:0x000010DE"], hardware)


def test_entries_apply_in_order_to_the_gpus_they_select():
    configs = parse_config(
        config(
            mixed=[
                {"devices": "all", "mig-enabled": True, "mig-devices": {"7g.40gb": 1}},
                {"devices": [1], "mig-enabled": False},
                {"device-filter": "0x233010DE", "devices": [0], "mig-enabled": True, "mig-devices": {"1g.5gb": 7}},
            ]
        )
    )
    assert apply_config(configs, "mixed", A100, [None, None]) == [{"7g.40gb": 1}, None]


def test_gpu_no_entry_selects_keeps_its_layout():
    configs = parse_config(config(first=[{"devices": [0], "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]))
    assert apply_config(configs, "first", A100, [None, {"7g.40gb": 1}]) == [{"3g.20gb": 2}, {"7g.40gb": 1}]


def test_selected_config_must_exist():
    with pytest.raises(MigConfigError, match="selected mig-config not present: other"):
        apply_config(parse_config(config(one=[ENTRY])), "other", A100, [None, None])


def test_gpu_without_mig_is_skipped_for_all_devices_but_refused_by_index():
    configs = parse_config(config(every=[ENTRY], first=[dict(ENTRY, devices=[0])]))
    assert apply_config(configs, "every", T4, [None]) == [None]
    with pytest.raises(MigConfigError, match="cannot set MIG config on non MIG-capable GPU"):
        apply_config(configs, "first", T4, [None])


@pytest.mark.parametrize(
    "mig_devices, reason",
    [
        ({"3g.40gb": 1}, 'MIG profile "3g.40gb" not found on this GPU'),
        ({"1g.5gb": 8}, "at most 7 x 1g.5gb"),
        ({"3g.20gb": 2, "1g.5gb": 1}, "all orderings failed"),
        ({"4g.20gb": 1, "3g.20gb": 1, "1g.5gb": 1}, "all orderings failed"),
        ({"1c.3g.20gb": 1}, "not modelled"),
    ],
)
def test_layouts_that_do_not_fit_the_gpu_fail(mig_devices, reason):
    configs = parse_config(config(x=[{"devices": "all", "mig-enabled": True, "mig-devices": mig_devices}]))
    with pytest.raises(MigConfigError, match=reason):
        apply_config(configs, "x", A100, [None, None])


def test_layouts_that_fit():
    configs = parse_config(
        config(
            four_three=[{"devices": "all", "mig-enabled": True, "mig-devices": {"4g.20gb": 1, "3g.20gb": 1}}],
            spelled=[{"devices": "all", "mig-enabled": True, "mig-devices": {"1c.1g.5gb": 3, "1g.5gb": 4}}],
        )
    )
    assert apply_config(configs, "four_three", A100, [None, None])[0] == {"4g.20gb": 1, "3g.20gb": 1}
    assert apply_config(configs, "spelled", A100, [None, None])[0] == {"1g.5gb": 7}


def test_memory_slices_come_from_the_profile_memory():
    h100 = nvml.gpu("NVIDIA-H100-80GB-HBM3")
    assert {name: h100.memory_slices(name) for name in h100.mig_profiles} == {
        "1g.10gb": 1,
        "1g.10gb+me": 1,
        "1g.20gb": 2,
        "2g.20gb": 2,
        "3g.40gb": 4,
        "4g.40gb": 4,
        "7g.80gb": 8,
    }
