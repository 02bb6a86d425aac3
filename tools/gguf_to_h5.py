#!/usr/bin/env python3
"""`python3 tools/gguf_to_h5.py ...` runs distzo_tools.convert.gguf_to_h5 as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.convert.gguf_to_h5", run_name="__main__", alter_sys=True)
