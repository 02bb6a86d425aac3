#!/usr/bin/env python3
"""Tests of tools/requires.py and of the tools' use of it (standard library
only: ctest runs this file as python_tools_requires; tools/test_tools.py runs
these tests too).

    python3 tools/test_requires.py      # or: python -m pytest tools/test_requires.py

1. make_real_model.sh with a package missing (DISTZO_TOOLS_MISSING=gguf) exits
   2 with the one pip line, no traceback, runs no Python but the check (its
   $PYTHON is a wrapper that logs each call), so it downloads nothing, and
   makes no output directory.
2. A Python tool (gguf_to_h5.py) likewise, before its first third-party
   import; digest_reference.py checks numpy and h5py only when it reads files
   (--known-answers needs neither); imported, a tool's check raises
   ModuleNotFoundError, which the tests skip on.
3. Every third-party module a tool imports is in requires.PIP, and every tool
   run as a script checks, before its imports, every third-party module its
   module-level imports load, through the tools' own modules too.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import requires  # noqa: E402

STDLIB = set(sys.stdlib_module_names) | {"__future__"} if hasattr(sys, "stdlib_module_names") else None
TOOLS = sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".py"))


def _run(cmd, missing, **env):
    full = dict(os.environ, **env)
    full[requires.MISSING_ENV] = missing
    # Were anything to reach the network, let it fail at once instead.
    full.update(PIP_NO_INDEX="1", http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9")
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=120)


def _assert_pip_line(r, *packages):
    out = r.stdout + r.stderr
    assert r.returncode == 2, f"exit status {r.returncode}, expected 2:\n{out}"
    assert "Traceback" not in out, out
    lines = [line.split() for line in r.stderr.splitlines() if "-m pip install" in line]
    assert len(lines) == 1, f"expected one pip line:\n{out}"
    assert all(p in lines[0] for p in packages), f"{packages} not all in {lines[0]}"


def test_make_real_model_checks_first():
    with tempfile.TemporaryDirectory() as tmp:
        log, python, out = (os.path.join(tmp, n) for n in ("calls", "python3", "out"))
        with open(python, "w") as fh:
            fh.write(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
        os.chmod(python, 0o755)
        for model in ("smollm2", "gemma3-270m"):
            r = _run(["bash", os.path.join(HERE, "make_real_model.sh"), "--model", model, out], "gguf",
                     PYTHON=python)
            _assert_pip_line(r, "gguf")
            assert "==>" not in r.stdout, r.stdout  # no step began
            assert not os.path.exists(out), "an output directory was made"
        with open(log) as fh:
            calls = fh.read().splitlines()
        assert len(calls) == 2 and all(c.split()[0].endswith("/requires.py") for c in calls), calls


def test_python_tool_checks_first():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.h5")
        r = _run([sys.executable, os.path.join(HERE, "gguf_to_h5.py"), os.path.join(tmp, "x.gguf"), out], "gguf")
        _assert_pip_line(r, "gguf")
        assert not os.path.exists(out)
        r = _run([sys.executable, os.path.join(HERE, "gguf_to_h5.py"), "--help"], "gguf,yaml")
        _assert_pip_line(r, "gguf")  # only what the tool needs: not pyyaml
        assert "pyyaml" not in r.stderr, r.stderr
        digest = os.path.join(HERE, "digest_reference.py")
        r = _run([sys.executable, digest, os.path.join(tmp, "model.h5")], "numpy")
        _assert_pip_line(r, "numpy")
        r = _run([sys.executable, digest, "--known-answers"], "numpy,h5py")
        assert r.returncode == 0 and r.stdout, r.stdout + r.stderr


def test_imported_check_raises():
    saved = os.environ.get(requires.MISSING_ENV)
    os.environ[requires.MISSING_ENV] = "gguf,yaml"
    try:
        try:
            requires.check(os.path.join(HERE, "gguf_to_h5.py"), "yaml", "gguf")
        except ModuleNotFoundError as err:
            assert err.name == "yaml" and "-m pip install pyyaml gguf" in str(err), str(err)
        else:
            raise AssertionError("no ModuleNotFoundError")
    finally:
        if saved is None:
            del os.environ[requires.MISSING_ENV]
        else:
            os.environ[requires.MISSING_ENV] = saved
    assert requires.install_command(["pip", "numpy"]).endswith(" -m ensurepip --upgrade && "
                                                               + requires.install_command(["numpy"]))


def _module_imports(tool):
    """(the names the tool's module-level statements import, in order as (statement
    index, name); every name it imports anywhere; the index of its
    `if __name__ == "__main__": requires.check(__file__, ...)` and the modules checked)."""
    with open(os.path.join(HERE, tool + ".py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    top, everywhere, check = [], set(), (None, ())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            everywhere.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            everywhere.add(node.module.split(".")[0])
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.Import):
            top += [(i, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            top.append((i, node.module.split(".")[0]))
        elif isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func) == "requires.check":
                    check = (i, tuple(a.value for a in call.args[1:]))
    return top, everywhere, check


def test_checks_cover_imports():
    if STDLIB is None:
        return  # Python < 3.10 has no sys.stdlib_module_names
    info = {t: _module_imports(t) for t in TOOLS}

    def third_party(names):
        return {n for n in names if n not in STDLIB and n not in info}

    for tool, (_, everywhere, _) in info.items():
        unknown = third_party(everywhere) - set(requires.PIP)
        assert not unknown, f"{tool}.py imports {sorted(unknown)}, not in requires.PIP"

    def loads(tool, seen=()):  # third-party modules a tool's module-level imports load
        top = info[tool][0]
        out = third_party(n for _, n in top)
        for _, n in top:
            if n in info and n not in seen:
                out |= loads(n, seen + (tool,))
        return out

    for tool, (top, _, (at, checked)) in info.items():
        needed = loads(tool)
        if not needed or tool == "requires":
            continue
        with open(os.path.join(HERE, tool + ".py"), encoding="utf-8") as fh:
            if '__name__ == "__main__"' not in fh.read():
                continue  # a module, not a command (distzo_h5.py)
        assert at is not None, f"{tool}.py: no requires.check(__file__, ...) before its imports"
        first = min(i for i, n in top if n in needed or (n in info and loads(n)))
        assert at < first, f"{tool}.py: requires.check comes after its first third-party import"
        assert needed <= set(checked), f"{tool}.py: requires.check misses {sorted(needed - set(checked))}"


def _run_all(tests) -> int:
    failed = 0
    for test in tests:
        try:
            test()
            print(f"ok   {test.__name__}")
        except Exception:  # noqa: BLE001 - report and go on
            import traceback

            failed += 1
            traceback.print_exc()
            print(f"FAIL {test.__name__}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


TESTS = [test_make_real_model_checks_first, test_python_tool_checks_first, test_imported_check_raises,
         test_checks_cover_imports]

if __name__ == "__main__":
    sys.exit(_run_all(TESTS))
