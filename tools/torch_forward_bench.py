#!/usr/bin/env python3
"""`python3 tools/torch_forward_bench.py ...` runs distzo_tools.bench.torch_forward_bench as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.bench.torch_forward_bench", run_name="__main__", alter_sys=True)
