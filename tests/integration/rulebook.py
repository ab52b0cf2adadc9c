"""ansible-rulebook (PyPI; Java from Debian, tools/install_java.sh) running the gpu_autoplan rulebook against the local
cluster, as a process of its own: for the rulebook's integration test (test_eda_autoplan.py) and its benchmark
(benchmarks/bench_eda.py)."""

import os
import signal
import subprocess
import sys
import time

import yaml
from integration_helpers import REPO, VENV_BIN, module_env

# The play of playbooks/sharing_plan.yml, as ansible-rulebook prints the playbook's output.
PLAN_PLAY = "PLAY [Plan the GPU sharing layout, then apply it]"
STARTED = "gpu_demand: following unschedulable GPU pods"
NOTHING_WAITS = "gpu_demand: no event: no pod waits for planned GPU resources"


def install_java():
    install = subprocess.run(
        ["bash", os.path.join(REPO, "tools", "install_java.sh")], capture_output=True, text=True, check=False
    )
    assert install.returncode == 0, "tools/install_java.sh: %s%s" % (install.stdout, install.stderr)


class Rulebook(object):
    """ansible-rulebook running ``rulebook`` (default gpushare.k8s.gpu_autoplan, as users run it) against ``cluster``
    with the rulebook's ``variables``, in ``folder`` (pathlib), its output (the source's log and the playbooks') in
    ``log``; ``options``, more of ansible-rulebook's command line."""

    def __init__(self, cluster, folder, variables, rulebook="gpushare.k8s.gpu_autoplan", options=()):
        self.log = str(folder / "ansible-rulebook.log")
        inventory = folder / "inventory.yml"
        inventory.write_text(
            yaml.safe_dump(
                {
                    "all": {
                        "hosts": {
                            "localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
                        }
                    }
                }
            )
        )
        variables_file = folder / "vars.yml"
        variables_file.write_text(yaml.safe_dump(variables))
        env = module_env(cluster, {"PATH": VENV_BIN + os.pathsep + os.environ["PATH"]})
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [
                    os.path.join(VENV_BIN, "ansible-rulebook"),
                    "--rulebook",
                    rulebook,
                    "--inventory",
                    str(inventory),
                    "--vars",
                    str(variables_file),
                    "-v",
                ]
                + list(options),
                cwd=str(folder),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def started(self):
        """Once the source follows the cluster and its first window closed: the first LISTs open it, and on a fleet
        where nothing waits it closes without an event."""
        self.wait_for(STARTED)
        self.wait_for(NOTHING_WAITS)
        return self

    def output(self):
        with open(self.log) as log:
            return log.read()

    def wait_for(self, text, count=1, timeout=120):
        """Until ``text`` is in the output ``count`` times; the output then."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            output = self.output()
            if output.count(text) >= count:
                return output
            assert self.process.poll() is None, "ansible-rulebook exited %s:\n%s" % (self.process.returncode, output)
            time.sleep(0.5)
        raise AssertionError("no %r (x%d) after %ss in ansible-rulebook's output:\n%s" % (text, count, timeout, output))

    def plans(self):
        """The sharing-plan playbooks that ran, from their output."""
        return self.output().count(PLAN_PLAY)

    def exited(self, timeout):
        """ansible-rulebook's exit status, once it ended by itself."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("ansible-rulebook still runs after %ss:\n%s" % (timeout, self.output()))

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
