#!/usr/bin/env python3
"""The tables of perf/REAL_MODEL_RESULTS.md from finished runs of
inputs/smollm2_quick.yaml or inputs/gemma3_quick.yaml: distzo output
directories and tools/mezo_finetune.py output directories (eval.csv: before
and after), with each run's wall time
from its log (a "<seconds> s wall" line, as /usr/bin/time -f "%e s wall"
writes it).

    python perf/real_model_results.py --distzo R/distzo-s1 R/distzo-s2 ... --mezo R/mezo-s1 ...

Prints the markdown table (one row per seed, then mean ± sample std).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics


def before_after(run_dir: str):
    with open(os.path.join(run_dir, "eval.csv"), newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["accuracy"] != ""]
    first, last = rows[0], rows[-1]
    return (float(first["accuracy"]), float(first["eval_loss"]), float(last["accuracy"]),
            float(last["eval_loss"]), int(last["step"]))


def wall_seconds(run_dir: str) -> float | None:
    log = run_dir.rstrip("/") + ".log"
    if not os.path.exists(log):
        return None
    with open(log) as fh:
        m = re.search(r"^([0-9.]+) s wall$", fh.read(), re.M)
    return float(m.group(1)) if m else None


def seed_of(run_dir: str) -> str:
    m = re.search(r"s(\d+)$", run_dir.rstrip("/"))
    return m.group(1) if m else "?"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--distzo", nargs="*", default=[])
    p.add_argument("--mezo", nargs="*", default=[])
    a = p.parse_args()
    print("| method | seed | test accuracy before | after | gain | test loss before → after | steps | wall time |")
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in (("distzo", a.distzo), ("PyTorch MeZO", a.mezo)):
        gains, afters, walls = [], [], []
        for r in runs:
            acc0, loss0, acc1, loss1, steps = before_after(r)
            wall = wall_seconds(r)
            gains.append(100 * (acc1 - acc0))
            afters.append(100 * acc1)
            if wall is not None:
                walls.append(wall)
            print(f"| {name} | {seed_of(r)} | {100 * acc0:.1f} % | {100 * acc1:.1f} % | "
                  f"{100 * (acc1 - acc0):+.1f} | {loss0:.4f} → {loss1:.4f} | {steps} | "
                  + (f"{wall:.0f} s |" if wall is not None else "– |"))
        if len(runs) > 1:
            print(f"| {name} | mean ± std | | {statistics.mean(afters):.1f} ± {statistics.stdev(afters):.1f} % | "
                  f"{statistics.mean(gains):+.1f} ± {statistics.stdev(gains):.1f} | | | "
                  + (f"{statistics.median(walls):.0f} s (median) |" if walls else "– |"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
