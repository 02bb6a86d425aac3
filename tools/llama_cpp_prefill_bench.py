#!/usr/bin/env python3
"""`python3 tools/llama_cpp_prefill_bench.py ...` runs distzo_tools.bench.llama_cpp_prefill_bench as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.bench.llama_cpp_prefill_bench", run_name="__main__", alter_sys=True)
