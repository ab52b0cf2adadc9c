# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/cpu_time.py counts the CPU time of what a command leaves running in a session of its own, as
testbed/cluster.py leaves a cluster's processes, once the command has waited for it to end."""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CPU_TIME = os.path.join(ROOT, "tools", "cpu_time.py")
BURNED = 0.5  # CPU seconds the detached process uses, by its own clock

# Starts the busy process in a session of its own and exits at once, leaving it behind (cluster.py up). The process
# burns its CPU once its stdin closes, so that the command can hold it before it can end.
STARTER = textwrap.dedent("""
    import subprocess, sys
    busy = "import sys, time\\nsys.stdin.read()\\nwhile time.process_time() < %s: pass"
    detached = subprocess.Popen(
        [sys.executable, "-c", busy], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    print(detached.pid)
    """ % BURNED)
# The command: the starter, then a wait until the detached process has ended (cluster.py down); not its parent.
COMMAND = textwrap.dedent("""
    import os, select, subprocess, sys
    read_end, write_end = os.pipe()
    starter = subprocess.run([sys.executable, "-c", sys.argv[1]], stdin=read_end, capture_output=True, text=True)
    os.close(read_end)
    ended = os.pidfd_open(int(starter.stdout))
    os.close(write_end)
    select.select([ended], [], [])
    """)


def test_a_detached_process_the_command_leaves_behind_counts(tmp_path):
    output = tmp_path / "cpu"
    subprocess.run([sys.executable, CPU_TIME, str(output), sys.executable, "-c", COMMAND, STARTER], check=True)
    assert float(output.read_text()) >= BURNED


def test_the_exit_code_is_the_commands(tmp_path):
    completed = subprocess.run([sys.executable, CPU_TIME, str(tmp_path / "cpu"), "sh", "-c", "exit 3"])
    assert completed.returncode == 3
    assert float((tmp_path / "cpu").read_text()) >= 0
