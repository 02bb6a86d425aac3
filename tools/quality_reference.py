#!/usr/bin/env python3
"""`python3 tools/quality_reference.py ...` runs distzo_tools.quality.quality_reference as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.quality.quality_reference", run_name="__main__", alter_sys=True)
