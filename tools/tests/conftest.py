"""A test that needs a package the tools use and that is not installed is
skipped, naming the package and the pip line, not failed: the tests import
torch, transformers, gguf, ... where they need them, and an imported tool's
requires.check raises ModuleNotFoundError naming the first missing one. A
test module that needs numpy and h5py at its top skips whole
(pytest.importorskip)."""

import pytest

from distzo_tools import requires


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    error = call.excinfo.value if call.excinfo is not None else None
    if call.when == "call" and isinstance(error, ModuleNotFoundError) and error.name in requires.PIP:
        report.outcome = "skipped"
        path, line, _ = item.location
        report.longrepr = (path, line + 1, f"Skipped: needs {requires.PIP[error.name]} "
                                           f"({requires.install_command([error.name])})")
