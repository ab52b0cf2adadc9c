# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpushare.k8s contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs a command and writes the CPU time of its whole process tree (user + system seconds) to a file.

    python tools/cpu_time.py OUTPUT COMMAND [ARGUMENT...]

The tree includes the processes the command starts in sessions of their own and leaves behind: a test cluster's
etcd, API server, controller manager, scheduler and simulator (testbed/cluster.py starts them with
``start_new_session`` and exits). This process is their child subreaper (Linux's ``PR_SET_CHILD_SUBREAPER``), so
when their parent exits they are reparented to it instead of to init, and their CPU time joins its own children's
(``RUSAGE_CHILDREN``) when it reaps them. Every process the tree waited for counts too: the kernel adds a reaped
child's own reaped children to it. A process still running when the command ends is not waited for (nothing of a
test job should be: ``cluster.py down`` waits until its processes are gone) and does not count. Exits with the
command's exit code. tests/run-cluster-tests.sh runs each job under it (the CPU-s column of its summary).
"""

import ctypes
import os
import resource
import sys

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def become_child_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, "prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(error))


def run(argv):
    """Runs ``argv`` to its end, reaping the orphans that end meanwhile, then those already ended; its exit code."""
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write("cpu_time.py: cannot run %s: %s\n" % (argv[0], exc))
        os._exit(127)
    while True:
        reaped, status = os.wait()
        if reaped == pid:
            break
    while True:
        try:
            reaped, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # no child left
            break
        if not reaped:  # children left, all still running
            break
    return os.waitstatus_to_exitcode(status)


def cpu_seconds_of_children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    output, argv = sys.argv[1], sys.argv[2:]
    become_child_subreaper()
    code = run(argv)
    with open(output, "w") as result:
        result.write("%.1f\n" % cpu_seconds_of_children())
    return code


if __name__ == "__main__":
    sys.exit(main())
