# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pytest plugin: the CPU time each test costs, written to the file GPUSHARE_TEST_CPU_FILE names.

    pytest -p tests.cpu_accounting ...

One line per test (setup, call and teardown together), tab-separated: the CPU seconds of the pytest process, of the
processes it started and waited for (``ansible-playbook`` and the modules it runs, Molecule, helm: ``RUSAGE_CHILDREN``),
of the test cluster's components (etcd, the API server, the controller manager, the scheduler, the simulator, read
from /proc through the PID files of GPUSHARE_CLUSTER_DIR), their sum, then the test's node ID.
tests/run-cluster-tests.sh loads it in every job and prints the costliest tests of the run: wall times depend on what
else the machine runs, CPU times much less, so these are the numbers to cut the suite's time by. A component restarted
during a test (the fault tests) loses the CPU time of the process that ended; a test that starts clusters of its own
counts them only as far as it waits for them.
"""

import os
import resource

import pytest

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def own_and_children_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def cluster_seconds(cluster_dir):
    """The CPU seconds the cluster's running components used so far, their reaped children included."""
    pids_dir = os.path.join(cluster_dir, "pids")
    total = 0.0
    try:
        names = os.listdir(pids_dir)
    except OSError:
        return 0.0
    for name in names:
        try:
            with open(os.path.join(pids_dir, name)) as f:
                pid = int(f.read().strip())
            with open("/proc/%d/stat" % pid) as f:
                stat = f.read()
        except (OSError, ValueError):
            continue
        # The fields after the command name (which may hold spaces): utime, stime, cutime, cstime are 14 to 17.
        fields = stat.rpartition(")")[2].split()
        total += sum(int(value) for value in fields[11:15]) / CLOCK_TICKS
    return total


def sample(cluster_dir):
    own, children = own_and_children_seconds()
    return own, children, cluster_seconds(cluster_dir) if cluster_dir else 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = os.environ.get("GPUSHARE_TEST_CPU_FILE")
    cluster_dir = os.environ.get("GPUSHARE_CLUSTER_DIR")
    before = sample(cluster_dir) if path else None
    yield
    if path:
        spent = [after - start for after, start in zip(sample(cluster_dir), before)]
        spent[2] = max(spent[2], 0.0)  # a component restarted during the test: its new process counts from zero
        with open(path, "a") as f:
            f.write("%.2f\t%.2f\t%.2f\t%.2f\t%s\n" % (spent[0], spent[1], spent[2], sum(spent), item.nodeid))
