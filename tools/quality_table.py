#!/usr/bin/env python3
"""`python3 tools/quality_table.py ...` runs distzo_tools.quality.quality_table as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.quality.quality_table", run_name="__main__", alter_sys=True)
