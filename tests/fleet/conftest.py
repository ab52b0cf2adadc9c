"""The fleet tests use the integration tests' playbook runner (tests/integration/integration_helpers.py)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))


def pytest_configure(config):
    config.addinivalue_line("markers", "profiles(*names): the cluster profiles a test runs on")
