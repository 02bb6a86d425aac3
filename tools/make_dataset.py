#!/usr/bin/env python3
"""`python3 tools/make_dataset.py ...` runs distzo_tools.datasets.make_dataset as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.datasets.make_dataset", run_name="__main__", alter_sys=True)
