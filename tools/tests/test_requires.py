"""Tests of distzo_tools/requires.py and of the tools' use of it (standard
library only, no pytest needed: ctest runs this file as python_tools_requires).

    cd tools && python3 -m tests.test_requires     # or: python3 -m pytest tools/tests/test_requires.py

1. make_real_model.sh with a package missing (DISTZO_TOOLS_MISSING=gguf) exits
   2 with the one pip line, no traceback, runs no Python but the check (its
   $PYTHON is a wrapper that logs each call), so it downloads nothing, and
   makes no output directory.
2. A Python tool (gguf_to_h5.py) likewise, before its first third-party
   import; digest_reference.py checks numpy and h5py only when it reads files
   (--known-answers needs neither); imported, a tool's check raises
   ModuleNotFoundError, which the tests skip on.
3. Every third-party module the package imports is in requires.PIP, and every
   command module checks, before its imports, every third-party module its
   module-level imports load, through the package's own modules too; the
   packages Python imports before a command load none.
4. Every command module has its wrapper tools/NAME.py and every wrapper runs
   one; each, with every package missing, says the one pip line (or, needing
   none, its usage) and exits.
5. tools/requirements.txt holds exact pins only, of packages in requires.PIP,
   among them every package make_real_model.sh checks; the pip lines name
   them at those versions; README and docs/real_model.md install from it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile

from distzo_tools import TOOLS, requires

STDLIB = set(sys.stdlib_module_names) | {"__future__"} if hasattr(sys, "stdlib_module_names") else None
PACKAGE = "distzo_tools"


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
    _assert_pinned(lines[0], packages)


def _assert_pinned(words, packages):
    """Each of `packages` is in the pip line `words` at its tools/requirements.txt pin."""
    for p in packages:
        want = requires.pins().get(p, p)
        assert want in words, f"{want} not in {words}"


def _assert_help_and_pip_line(r, *packages):
    """--help of a tool whose packages are missing: its description, then
    the one pip line, on stdout, exit 0."""
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"exit status {r.returncode}, expected 0:\n{out}"
    assert "Traceback" not in out, out
    lines = [line.split() for line in r.stdout.splitlines() if "-m pip install" in line]
    assert len(lines) == 1, f"expected one pip line:\n{out}"
    _assert_pinned(lines[0], packages)
    assert not r.stdout.lstrip().startswith("python3 -m pip") and "needs Python packages" in r.stdout, (
        f"expected the tool's description before the pip line:\n{out}")
    assert "error: missing Python packages" not in r.stdout, f"--help is not an error:\n{out}"


def test_make_real_model_checks_first():
    with tempfile.TemporaryDirectory() as tmp:
        log, python, out = (os.path.join(tmp, n) for n in ("calls", "python3", "out"))
        with open(python, "w") as fh:
            fh.write(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
        os.chmod(python, 0o755)
        for model in ("smollm2", "gemma3-270m"):
            r = _run(["bash", os.path.join(TOOLS, "make_real_model.sh"), "--model", model, out], "gguf",
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
        r = _run([sys.executable, os.path.join(TOOLS, "gguf_to_h5.py"), os.path.join(tmp, "x.gguf"), out], "gguf")
        _assert_pip_line(r, "gguf")
        assert not os.path.exists(out)
        r = _run([sys.executable, os.path.join(TOOLS, "gguf_to_h5.py"), "--help"], "gguf,yaml")
        _assert_help_and_pip_line(r, "gguf")  # only what the tool needs: not pyyaml
        assert "pyyaml" not in r.stdout, r.stdout
        digest = os.path.join(TOOLS, "digest_reference.py")
        r = _run([sys.executable, digest, os.path.join(tmp, "model.h5")], "numpy")
        _assert_pip_line(r, "numpy")
        r = _run([sys.executable, digest, "--known-answers"], "numpy,h5py")
        assert r.returncode == 0 and r.stdout, r.stdout + r.stderr


def test_imported_check_raises():
    saved = os.environ.get(requires.MISSING_ENV)
    os.environ[requires.MISSING_ENV] = "gguf,yaml"
    try:
        try:
            requires.check(os.path.join(TOOLS, "gguf_to_h5.py"), "yaml", "gguf")
        except ModuleNotFoundError as err:
            pinned = " ".join(requires.pins().get(p, p) for p in ("pyyaml", "gguf"))
            assert err.name == "yaml" and f"-m pip install {pinned}" in str(err), str(err)
        else:
            raise AssertionError("no ModuleNotFoundError")
    finally:
        if saved is None:
            del os.environ[requires.MISSING_ENV]
        else:
            os.environ[requires.MISSING_ENV] = saved
    if not requires._externally_managed():  # else: a new virtual environment, which has pip
        assert requires.install_command(["pip", "numpy"]).endswith(" -m ensurepip --upgrade && "
                                                                   + requires.install_command(["numpy"]))


def _package_modules() -> dict:
    """{dotted name: file} of every module of the package (an __init__ under its package's name)."""
    out = {}
    for root, _, files in os.walk(os.path.join(TOOLS, PACKAGE)):
        for f in files:
            if f.endswith(".py"):
                parts = os.path.relpath(os.path.join(root, f), TOOLS)[:-3].split(os.sep)
                out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(root, f)
    return out


MODULES = _package_modules()


def _imported(node) -> list:
    """The modules an import statement loads: `from P import M` loads P, and P.M where that is a module."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES]
    return []


def _parents(module: str) -> list:
    """The packages Python imports before `module`: distzo_tools, distzo_tools.convert, ..."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _third_party(names) -> set:
    tops = {n.split(".")[0] for n in names}
    return {n for n in tops if n not in STDLIB and n != PACKAGE}


def _module_imports(module):
    """(the modules its module-level statements import, as (statement index,
    name); every module it imports anywhere; the index of its
    `if __name__ == "__main__": requires.check(__file__, ...)` and the modules
    checked; whether it is a command, with a module-level `if __name__ == "__main__"`)."""
    with open(MODULES[module], encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    top, everywhere, check, command = [], set(), (None, ()), False
    for node in ast.walk(tree):
        everywhere.update(_imported(node))
    for i, node in enumerate(tree.body):
        top += [(i, name) for name in _imported(node)]
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            command = True
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func) == "requires.check":
                    check = (i, tuple(a.value for a in call.args[1:]))
    return top, everywhere, check, command


def test_checks_cover_imports():
    if STDLIB is None:
        return  # Python < 3.10 has no sys.stdlib_module_names
    info = {m: _module_imports(m) for m in MODULES}

    for module, (_, everywhere, _, _) in info.items():
        unknown = _third_party(everywhere) - set(requires.PIP)
        assert not unknown, f"{module} imports {sorted(unknown)}, not in requires.PIP"

    def loads(module, seen=()):  # third-party modules that importing `module` loads
        out = set()
        for name in _parents(module) + [module]:
            if name in seen:
                continue
            top = info[name][0]
            out |= _third_party(n for _, n in top)
            for _, n in top:
                if n in info:
                    out |= loads(n, seen + (name,))
        return out

    for module, (top, _, (at, checked), command) in info.items():
        if not command:
            continue
        for parent in _parents(module):
            assert not loads(parent), f"{parent} loads {sorted(loads(parent))}, before {module} can check"
        needed = loads(module)
        if not needed:
            continue
        assert at is not None, f"{module}: no requires.check(__file__, ...) before its imports"
        first = min(i for i, n in top if _third_party([n]) or (n in info and loads(n)))
        assert at < first, f"{module}: requires.check comes after its first third-party import"
        assert needed <= set(checked), f"{module}: requires.check misses {sorted(needed - set(checked))}"


def _wrappers() -> dict:
    """{NAME.py: the module it runs} of the command wrappers in tools/."""
    out = {}
    for f in sorted(os.listdir(TOOLS)):
        if f.endswith(".py"):
            with open(os.path.join(TOOLS, f), encoding="utf-8") as fh:
                calls = [n for n in ast.walk(ast.parse(fh.read()))
                         if isinstance(n, ast.Call) and ast.unparse(n.func) == "runpy.run_module"]
            assert len(calls) == 1, f"tools/{f}: not a wrapper that runs one module of {PACKAGE}"
            out[f] = calls[0].args[0].value
    return out


def test_every_command_has_its_wrapper():
    commands = {m for m in MODULES if _module_imports(m)[3]}
    wrappers = _wrappers()
    for f, module in wrappers.items():
        assert module in commands, f"tools/{f} runs {module}, which is no command module"
        assert module.rsplit(".", 1)[1] + ".py" == f, f"tools/{f} runs {module}: a wrapper has its module's name"
    lacking = commands - set(wrappers.values())
    assert not lacking, f"command modules without a wrapper in tools/: {sorted(lacking)}"


def test_wrappers_check_first():
    for f in _wrappers():
        args = ["make_real_model.sh", "numpy"] if f == "requires.py" else ["--help"]
        r = _run([sys.executable, os.path.join(TOOLS, f), *args], ",".join(requires.PIP))
        if f == "requires.py":
            _assert_pip_line(r)
        elif "-m pip install" in r.stdout:
            _assert_help_and_pip_line(r)
        else:  # a command of the standard library alone
            assert r.returncode == 0 and r.stdout.startswith("usage: " + f), (
                f"tools/{f} --help:\n{r.stdout}{r.stderr}")


def test_requirements_pinned():
    pinned = requires.pins()
    assert pinned, f"{requires.REQUIREMENTS}: no pins"
    known = {v.lower() for v in requires.PIP.values()}
    assert set(pinned) <= known, f"pinned but not in requires.PIP: {sorted(set(pinned) - known)}"
    with open(os.path.join(TOOLS, "make_real_model.sh"), encoding="utf-8") as fh:
        script = fh.read()
    call = script[script.index('"$REPO/tools/requires.py" make_real_model.sh'):].split("||")[0]
    checked = call.replace("\\\n", " ").split()[2:]
    assert "gguf" in checked and "transformers" in checked, checked
    unpinned = [requires.PIP[m] for m in checked if m != "pip" and requires.PIP[m].lower() not in pinned]
    assert not unpinned, f"make_real_model.sh checks {unpinned}, which tools/requirements.txt does not pin"
    assert requires.install_command(["gguf"]).endswith(" -m pip install " + pinned["gguf"])
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "requirements.txt")
        for line in ("gguf>=0.19", "gguf", "gguf==0.19.0 --hash=sha256:00", "gguf==0.19.0; python_version>'3'"):
            with open(bad, "w") as fh:
                fh.write(f"# a comment\n\nnumpy==2.4.6  # kept\n{line}\n")
            try:
                requires.pins(bad)
            except ValueError as err:
                assert ":4:" in str(err), str(err)
            else:
                raise AssertionError(f"{line!r} accepted as an exact pin")
        assert requires.pins(os.path.join(tmp, "none.txt")) == {}
    root = os.path.dirname(TOOLS)
    for doc in ("README.md", os.path.join("docs", "real_model.md")):
        with open(os.path.join(root, doc), encoding="utf-8") as fh:
            assert "-m pip install -r tools/requirements.txt" in fh.read(), f"{doc}: no pip line of tools/requirements.txt"


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
         test_checks_cover_imports, test_every_command_has_its_wrapper, test_wrappers_check_first,
         test_requirements_pinned]

if __name__ == "__main__":
    sys.exit(_run_all(TESTS))
