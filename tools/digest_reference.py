#!/usr/bin/env python3
"""`python3 tools/digest_reference.py ...` runs distzo_tools.references.digest_reference as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.references.digest_reference", run_name="__main__", alter_sys=True)
