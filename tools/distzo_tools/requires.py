"""The Python packages a tool needs, checked before it does any work: a
missing one is one `pip install` line and exit status 2, not a traceback
halfway through (or after a download).

In a command module, before its own third-party imports (standard library
only here and in the package's __init__ files):

    from distzo_tools import requires

    if __name__ == "__main__":
        requires.check(__file__, "numpy", "h5py", "gguf")

and in its main(), once the arguments say which optional modes run,
`requires.check(__file__, "transformers", "tokenizers")`. A command runs as
__main__ (tools/NAME.py runs its module with runpy, as `python3 -m` does), so
the check sees it is one; its messages name tools/NAME.py. From a shell
script:

    python3 tools/requires.py make_real_model.sh pip numpy h5py gguf ...

Modules are looked up with importlib.util.find_spec, never imported (torch
alone takes seconds to import). A tool run as a script that lacks any prints
them and the one command that installs them all, to stderr, and exits 2; a
tool imported as a module (by the tests, by another tool) gets
ModuleNotFoundError instead, naming the first missing module.

The pip line names each package at the version tools/requirements.txt pins
(`gguf==0.19.0`): the versions the documented numbers were made with; a
package the file does not list is named bare.

DISTZO_TOOLS_MISSING=gguf,torch (comma-separated modules) makes the check
treat those as not installed: how the tests see the message without
uninstalling anything.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys

# Every third-party module the tools import -> its package on PyPI.
PIP = {
    "accelerate": "accelerate",
    "gguf": "gguf",
    "h5py": "h5py",
    "llama_cpp": "llama-cpp-python",
    "matplotlib": "matplotlib",
    "numpy": "numpy",
    "pip": "pip",
    "safetensors": "safetensors",
    "tokenizers": "tokenizers",
    "torch": "torch",
    "transformers": "transformers",
    "yaml": "pyyaml",
}

MISSING_ENV = "DISTZO_TOOLS_MISSING"

_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)")

#: The pinned versions: tools/requirements.txt, next to this package.
REQUIREMENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "requirements.txt")


def pins(path: str = REQUIREMENTS) -> dict:
    """{PyPI name, lower case: "name==version"} of the requirements file's
    `name==version` lines (comments and blank lines skipped; none if the file
    is missing). Any other line is an error: the file holds exact pins only."""
    out = {}
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        return out
    for n, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pin = _PIN.fullmatch(line)
        if not pin:
            raise ValueError(f"{path}:{n}: {line!r} is not an exact pin name==version")
        out[pin.group(1).lower()] = line
    return out


def spec(package: str) -> str:
    """What the pip line installs for a PyPI package: its pin, or its name."""
    return pins().get(package.lower(), package)


def missing(modules) -> list:
    """The modules of `modules` that are not installed, in order."""
    hidden = set(filter(None, os.environ.get(MISSING_ENV, "").split(",")))
    out = []
    for m in modules:
        if m not in PIP:
            raise ValueError(f"requires: {m!r} is not in requires.PIP (add it with its PyPI name)")
        try:
            found = m not in hidden and importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):
            found = False
        if not found and m not in out:
            out.append(m)
    return out


def _python() -> str:
    """How to name this interpreter in the command: python3 where that is it."""
    on_path = shutil.which("python3")
    try:
        if on_path and os.path.samefile(on_path, sys.executable):
            return "python3"
    except OSError:
        pass
    return sys.executable or "python3"


#: Where install_command puts a virtual environment when the interpreter is
#: the system's (PEP 668: Debian 12's python3 refuses `pip install`).
VENV = "~/.venvs/distzo"


def _externally_managed() -> bool:
    """Whether pip refuses to install into this interpreter (PEP 668)."""
    import sysconfig
    marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
    return sys.prefix == sys.base_prefix and os.path.exists(marker)


def install_command(modules, needed=()) -> str:
    """The one command that installs the packages of `modules` (into a new
    virtual environment when this interpreter is the system's: then every
    one of `needed`, which the new environment lacks too)."""
    py = _python()
    packages = [spec(PIP[m]) for m in modules if m != "pip"]
    if _externally_managed():
        every = [spec(PIP[m]) for m in dict.fromkeys(list(needed) + list(modules)) if m != "pip"]
        return f"python3 -m venv {VENV} && {VENV}/bin/python3 -m pip install {' '.join(every)}"
    cmd = f"{py} -m pip install {' '.join(packages)}" if packages else ""
    if "pip" in modules:  # no pip to install with: bootstrap it first
        cmd = f"{py} -m ensurepip --upgrade" + (f" && {cmd}" if cmd else "")
    return cmd


def message(tool: str, modules, needed=()) -> str:
    """`TOOL: error: ...` (as the tools' other errors: no .py / .sh) and the
    pip line; `needed`: every module the tool checked."""
    name = os.path.basename(tool)
    tool = os.path.splitext(name)[0]
    named = ", ".join(PIP[m] if PIP[m] == m else f"{PIP[m]} (module {m})" for m in modules)
    text = f"{tool}: error: missing Python packages: {named}; install them with\n    {install_command(modules, needed)}"
    if any(PIP[m].lower() in pins() for m in modules):
        text += "\n  (the versions tools/requirements.txt pins: the documented results were made with them)"
    if _externally_managed():
        run = f"PYTHON={VENV}/bin/python3 tools/{name}" if name.endswith(".sh") else f"{VENV}/bin/python3 tools/{name}"
        text += (f"\n  (this python3 is the system's, which pip may not change (PEP 668); on Debian "
                 f"`apt install python3-venv` first) and run the tool with that Python:\n    {run}")
    return text


def _is_script(path: str) -> bool:
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    return bool(main) and os.path.realpath(main) == os.path.realpath(path)


def check(tool_file: str, *modules: str) -> None:
    """Check that `modules` are installed, for the tool at `tool_file` (its
    __file__). If not: run as a script, print the pip line and exit 2 (with
    -h / --help: the tool's docstring and the pip line, exit 0); imported,
    raise ModuleNotFoundError."""
    lack = missing(modules)
    if not lack:
        return
    text = message(tool_file, lack, modules)
    if not _is_script(tool_file):
        raise ModuleNotFoundError(text, name=lack[0])
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        # Asked how to use it: the tool's own description (its module
        # docstring), then what it needs; not an error, so not worded as one.
        doc = (sys.modules["__main__"].__doc__ or "").strip()
        needs = text.replace(": error: missing Python packages:", " needs Python packages not installed here:", 1)
        print((doc + "\n\n" if doc else "") + needs)
        sys.exit(0)
    print(text, file=sys.stderr)
    sys.exit(2)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0].startswith("-"):
        print("usage: python3 tools/requires.py TOOL MODULE...   (exit 2 and the pip line if any is missing)",
              file=sys.stderr)
        return 2
    lack = missing(argv[1:])
    if lack:
        print(message(argv[0], lack, argv[1:]), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
