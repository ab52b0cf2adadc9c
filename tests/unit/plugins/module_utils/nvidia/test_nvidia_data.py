# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia/nvidia_data: it is what tools/gen_nvidia_data.py makes of the copies in ``data/nvidia`` (never edited by
hand)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))


def test_generated_data_is_fresh():
    """plugins/module_utils/nvidia/nvidia_data.py is exactly what tools/gen_nvidia_data.py makes of data/nvidia/."""
    subprocess.check_call([sys.executable, os.path.join(ROOT, "tools", "gen_nvidia_data.py"), "--check"])
