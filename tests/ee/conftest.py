"""The EE tests use the integration tests' helpers (tests/integration/integration_helpers.py)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "profiles(*names): the cluster profiles a test runs on")
