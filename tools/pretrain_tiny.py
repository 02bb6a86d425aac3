#!/usr/bin/env python3
"""`python3 tools/pretrain_tiny.py ...` runs distzo_tools.demo.pretrain_tiny as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.demo.pretrain_tiny", run_name="__main__", alter_sys=True)
