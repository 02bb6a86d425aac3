#!/usr/bin/env python3
"""`python3 tools/requires.py ...` runs distzo_tools.requires as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.requires", run_name="__main__", alter_sys=True)
