# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/mig_profile: go-nvlib's MIG profile grammar (section 2 of the reference's mig-parted-rules.md) and the config
and resource names that write '+' as '.' (section 3), on the shipped MIG config's copy in ``data/nvidia``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from nvidia_rules import SHIPPED_CONFIGS

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.device_plugin_config import (
    check_resource_name,
    mig_profile_of_resource,
    mig_resource_name,
)
from ansible_collections.gpushare.k8s.plugins.module_utils.nvidia.mig_profile import (
    canonical_profile,
    name_form,
    parse_mig_profile,
    profile_from_name_form,
)

PROFILES = [
    ("1g.5gb", "1g.5gb"),
    ("1c.1g.5gb", "1g.5gb"),
    ("01g.05gb", "1g.5gb"),
    ("7g.80gb", "7g.80gb"),
    ("1c.7g.80gb", "1c.7g.80gb"),
    ("3c.4g.20gb", "3c.4g.20gb"),  # format only: no range check at parse time
    ("0g.5gb", "0g.5gb"),
    ("1g.10gb+me", "1g.10gb+me"),
    ("1c.1g.10gb+me", "1g.10gb+me"),
    ("1g.24gb+me.all", "1g.24gb+me.all"),
    ("1g.24gb-me", "1g.24gb-me"),
    ("2g.48gb+gfx", "2g.48gb+gfx"),
    ("1g.5gb+me,gfx", "1g.5gb+me,gfx"),
    ("1g.5gb+ME", "1g.5gb+ME"),
    ("1g.5gb+m3", "1g.5gb+m3"),
    ("1g.5gb+me+gfx", None),  # one '+': 'me+gfx' is one attribute with a bad character
    ("1g.5gb+me-gfx", None),
    ("1g.5gb+", None),
    ("1g.5gb+me,", None),
    ("1g.5gb+me,me", None),
    ("1g.5gb+1me", None),
    ("1g.5gb+.me", None),
    ("1g.5gb+me.", None),
    ("1g.5gb+m e", None),
    (" 1g.5gb", None),
    ("1g.5gb ", None),
    ("1G.5gb", None),
    ("1g.5GB", None),
    ("1g5gb", None),
    ("1g.10gb.me", None),
    ("1c.1g.5gb.x", None),
    ("g.5gb", None),
    ("1g.gb", None),
    ("+1g.5gb", None),
    ("-1g.5gb", None),
    ("1.5g.5gb", None),
    ("", None),
    ("mig-1g.10gb", None),
]


@pytest.mark.parametrize("profile, canonical", PROFILES)
def test_profile_grammar(profile, canonical):
    if canonical is None:
        with pytest.raises(GpuShareError, match="MIG profile"):
            parse_mig_profile(profile)
    else:
        assert canonical_profile(profile) == canonical


def test_attribute_profiles_are_distinct():
    assert canonical_profile("1g.10gb+me") != canonical_profile("1g.10gb")
    assert canonical_profile("1g.24gb+me") != canonical_profile("1g.24gb-me")


NAME_FORMS = [
    ("1g.10gb+me", "1g.10gb.me"),
    ("4g.96gb+gfx", "4g.96gb.gfx"),
    ("1g.24gb+me.all", "1g.24gb.me.all"),
    ("1g.24gb-me", "1g.24gb-me"),
    ("3g.40gb", "3g.40gb"),
]


@pytest.mark.parametrize("profile, written", NAME_FORMS)
def test_name_forms(profile, written):
    assert name_form(profile) == written
    assert profile_from_name_form(written) == profile
    assert mig_resource_name(profile) == "nvidia.com/mig-" + written
    assert mig_profile_of_resource("nvidia.com/mig-" + written) == profile
    check_resource_name("nvidia.com/mig-" + written, "resource")


@pytest.mark.parametrize("name", sorted(SHIPPED_CONFIGS))
def test_shipped_config_names_are_all_profile(name):
    """Generated and shipped per-profile configs hold one profile at its most, named all-<profile with '.'>."""
    if name in ("all-disabled", "all-enabled", "all-balanced"):
        return
    profile = profile_from_name_form(name[len("all-") :])
    for item in SHIPPED_CONFIGS[name]:
        assert list(item["mig-devices"]) == [profile]
