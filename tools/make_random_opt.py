#!/usr/bin/env python3
"""`python3 tools/make_random_opt.py ...` runs distzo_tools.bench.make_random_opt as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.bench.make_random_opt", run_name="__main__", alter_sys=True)
