#!/usr/bin/env python3
"""`python3 tools/mezo_finetune.py ...` runs distzo_tools.references.mezo_finetune as a command (tools/README.md)."""
import runpy

if __name__ == "__main__":
    runpy.run_module("distzo_tools.references.mezo_finetune", run_name="__main__", alter_sys=True)
