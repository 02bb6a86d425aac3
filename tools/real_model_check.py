#!/usr/bin/env python3
"""`python3 tools/real_model_check.py ...` runs distzo_tools.convert.real_model_check as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.convert.real_model_check", run_name="__main__", alter_sys=True)
