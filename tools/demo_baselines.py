#!/usr/bin/env python3
"""`python3 tools/demo_baselines.py ...` runs distzo_tools.demo.demo_baselines as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.demo.demo_baselines", run_name="__main__", alter_sys=True)
