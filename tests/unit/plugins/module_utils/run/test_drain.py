# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run/drain.py's one GPU-pod rule, the part that decides without the cluster: refuse (in check mode too) unless drain
or force, and the ``evicted`` report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpushare.k8s.plugins.module_utils.errors import GpuShareError
from ansible_collections.gpushare.k8s.plugins.module_utils.run.drain import drain_report, refuse_while_gpu_pods_run

BLOCKING = {
    "n2": [{"namespace": "ml", "name": "train-1"}],
    "n1": [{"namespace": "ml", "name": "train-0"}, {"namespace": "web", "name": "infer"}],
}


def test_gpu_pods_refuse_the_change_naming_each_pod_by_node_and_the_way_out():
    with pytest.raises(GpuShareError) as caught:
        refuse_while_gpu_pods_run(BLOCKING, drain=False, change="reset")
    assert caught.value.msg.startswith(
        "GPU pods run on the node(s) to reset: n1: ml/train-0, web/infer; n2: ml/train-1."
    )
    assert "set drain=true" in caught.value.msg and "force=true" not in caught.value.msg  # no force option here


def test_a_module_with_force_offers_it():
    with pytest.raises(GpuShareError, match="or force=true to go ahead under them"):
        refuse_while_gpu_pods_run(BLOCKING, drain=False, force=False)


@pytest.mark.parametrize("blocking, drain, force", [({}, False, None), (BLOCKING, True, None), (BLOCKING, False, True)])
def test_no_pods_drain_or_force_go_ahead(blocking, drain, force):
    assert refuse_while_gpu_pods_run(blocking, drain, force) is None


def test_the_evicted_report_names_the_pods_only_when_draining():
    assert drain_report(BLOCKING, drain=True) == {"n1": ["ml/train-0", "web/infer"], "n2": ["ml/train-1"]}
    assert drain_report(BLOCKING, drain=False) == {}
