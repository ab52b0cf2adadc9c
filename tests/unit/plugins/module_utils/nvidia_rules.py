# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA's data as copied in ``data/nvidia/`` (its README names each source and commit), read here and not from the
collection's generated data so that a generation mistake is caught; and the H100 placement table of the reference's
mig-parted-rules.md section 5: shared by the tests of ``nvidia/``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "nvidia")


def load(name):
    with open(os.path.join(DATA, name)) as handle:
        return json.load(handle)


SHIPPED = load("default-mig-parted-config.json")
SHIPPED_CONFIGS = SHIPPED["configs"]
DEVICE_IDS = [item["id"] for item in load("pci-device-ids.json")["ids"]]
PLACEMENTS = [
    ({"4g.40gb": 1, "3g.40gb": 1}, None),
    ({"2g.20gb": 3, "1g.10gb": 1}, None),
    ({"2g.20gb": 3, "1g.20gb": 1}, None),
    ({"1g.20gb": 4}, None),
    ({"3g.40gb": 2}, None),
    ({"1g.10gb": 7}, None),
    ({"1g.10gb+me": 1, "1g.10gb": 6}, None),
    ({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, None),
    ({"1c.7g.80gb": 7}, None),
    ({"3c.7g.80gb": 2, "1c.7g.80gb": 1}, None),
    ({"2c.3g.40gb": 1, "1c.3g.40gb": 1, "3g.40gb": 1}, None),
    ({"7g.80gb": 1}, None),
    ({"3g.40gb": 2, "1g.10gb": 1}, "no placement"),
    ({"1g.20gb": 4, "1g.10gb": 1}, "no placement"),
    ({"4g.40gb": 1, "2g.20gb": 2}, "8 compute slices"),
    ({"1g.10gb": 8}, "holds at most 7"),
    ({"1g.10gb+me": 2}, "holds at most 1"),
    ({"4c.7g.80gb": 2}, "holds at most 1"),
    ({"5c.7g.80gb": 1}, "compute-instance profile 5c.7g.80gb does not exist"),
    ({"3c.4g.40gb": 1}, "compute-instance profile 3c.4g.40gb does not exist"),
    ({"1g.5gb": 1}, "does not exist on H100 80GB HBM3"),
    ({"1g.5gb": 0, "1g.10gb": 1}, "does not exist on H100 80GB HBM3"),
    ({"1g.10gb-me": 1}, "does not exist"),
]
