#!/usr/bin/env python3
"""Tables and plot of perf/quality_study.sh's runs (a 2-byte master of θ
against float32 on SmolLM2-135M): RUN_DIR/NAME/{eval.csv,metrics.csv} and
RUN_DIR/NAME.log for every NAME = PRECISION-sSEED[-STEPS] found, and
RUN_DIR/rounding-fp32-s1.log (perf/rounding_study's output) if present.

    python perf/quality_study.py RUN_DIR [--plot perf/quality_bf16_vs_fp32.png] [--steps 60]

Prints markdown: one row per finished run, mean ± sample std per precision,
the paired difference from fp32 at the same seed (same z seed, same batches),
and the rounding_study table. --plot writes the figure (matplotlib): training
loss per step and seed (10-step moving mean) and test accuracy before /
after per run.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics

LABELS = {"fp32": "fp32", "bf16sr": "bf16 + SR", "bf16rn": "bf16 + RN", "fp16sr": "fp16 + SR", "fp16rn": "fp16 + RN"}
ORDER = list(LABELS)
NAME = re.compile(r"^(fp32|bf16sr|bf16rn|fp16sr|fp16rn)-s(\d+)(?:-(\d+))?$")
TAIL = 10  # steps averaged for the "final training loss"


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def load_run(run_dir, name, steps):
    ev = [r for r in read_csv(os.path.join(run_dir, name, "eval.csv")) if r["accuracy"] != ""]
    if len(ev) < 2 or int(ev[-1]["step"]) != steps:
        return None  # unfinished
    m = read_csv(os.path.join(run_dir, name, "metrics.csv"))
    loss = [float(r["loss"]) for r in m]
    g = [float(r["g"]) for r in m]
    wall = None
    log = os.path.join(run_dir, name + ".log")
    if os.path.exists(log):
        with open(log) as fh:
            w = re.search(r"^([0-9.]+) s wall", fh.read(), re.M)
        wall = float(w.group(1)) if w else None
    return {
        "acc0": 100 * float(ev[0]["accuracy"]), "loss0": float(ev[0]["eval_loss"]),
        "acc1": 100 * float(ev[-1]["accuracy"]), "loss1": float(ev[-1]["eval_loss"]),
        "train": loss, "g": g, "train_tail": statistics.mean(loss[-TAIL:]), "wall": wall,
        "g_max": max(abs(float(r["g"])) for r in m),
    }


def mean_std(xs, unit=""):
    if len(xs) == 1:
        return f"{xs[0]:+.1f}{unit} (1 seed)" if unit == "" else f"{xs[0]:.1f}{unit} (1 seed)"
    return f"{statistics.mean(xs):.1f}{unit} ± {statistics.stdev(xs):.1f}"


def corr(x, y):
    n = min(len(x), len(y))
    x, y = x[:n], y[:n]
    mx, my = statistics.mean(x), statistics.mean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / (sxx * syy) ** 0.5


def moving_mean(xs, w=TAIL):
    out = []
    for i in range(len(xs)):
        win = xs[max(0, i - w + 1): i + 1]
        out.append(sum(win) / len(win))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir")
    p.add_argument("--plot", default="")
    p.add_argument("--lr", type=float, default=1e-4, help="the deck's lr, for the rounding table (x 1, 1/10, 1/100)")
    p.add_argument("--steps", type=int, default=60, help="the runs of this length (60: the deck's)")
    p.add_argument("--documented", action="append", default=[], metavar="PREC:SEED:ACC0:ACC1:LOSS0:LOSS1",
                   help="a run not rerun here, with its published numbers (accuracy in %%); marked in the tables, "
                        "no training curve; a finished run of the same name wins")
    a = p.parse_args()

    runs = {}  # prec -> {seed: run}
    for entry in sorted(os.listdir(a.run_dir)):
        m = NAME.match(entry)
        if not m or int(m.group(3) or 60) != a.steps or not os.path.isdir(os.path.join(a.run_dir, entry)):
            continue
        r = load_run(a.run_dir, entry, a.steps)
        if r is not None:
            runs.setdefault(m.group(1), {})[int(m.group(2))] = r
    for d in a.documented:
        prec, seed, acc0, acc1, loss0, loss1 = d.split(":")
        runs.setdefault(prec, {}).setdefault(int(seed), {
            "acc0": float(acc0), "acc1": float(acc1), "loss0": float(loss0), "loss1": float(loss1),
            "train": None, "g": None, "train_tail": None, "wall": None, "g_max": None, "documented": True})

    print(f"| master | seed | test acc. before | after | gain | test loss before → after "
          f"| train loss, last {TAIL} steps | max \\|g\\| | corr(g, fp32 same seed) | wall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for prec in ORDER:
        for seed, r in sorted(runs.get(prec, {}).items()):
            if r.get("documented"):
                print(f"| {LABELS[prec]} | {seed}* | {r['acc0']:.1f} % | {r['acc1']:.1f} % | "
                      f"{r['acc1'] - r['acc0']:+.1f} | {r['loss0']:.4f} → {r['loss1']:.4f} | – | – | – | not rerun* |")
                continue
            wall = f"{r['wall']:.0f} s" if r["wall"] else "–"
            ref = runs.get("fp32", {}).get(seed)
            c = f"{corr(r['g'], ref['g']):.3f}" if prec != "fp32" and ref and ref.get("g") else "–"
            print(f"| {LABELS[prec]} | {seed} | {r['acc0']:.1f} % | {r['acc1']:.1f} % | {r['acc1'] - r['acc0']:+.1f} "
                  f"| {r['loss0']:.4f} → {r['loss1']:.4f} | {r['train_tail']:.4f} | {r['g_max']:.1f} | {c} | {wall} |")

    print()
    print("| master | seeds | test acc. after (mean ± std) | gain | test loss after | "
          "after − fp32, same seed (each) | mean |")
    print("|---|---|---|---|---|---|---|")
    fp32 = runs.get("fp32", {})
    for prec in ORDER:
        rs = runs.get(prec, {})
        if not rs:
            continue
        afters = [r["acc1"] for r in rs.values()]
        gains = [r["acc1"] - r["acc0"] for r in rs.values()]
        losses = [r["loss1"] for r in rs.values()]
        loss_s = (f"{statistics.mean(losses):.4f} ± {statistics.stdev(losses):.4f}" if len(losses) > 1
                  else f"{losses[0]:.4f}")
        diffs = {s: r["acc1"] - fp32[s]["acc1"] for s, r in sorted(rs.items()) if s in fp32}
        each = ", ".join(f"s{s}: {d:+.1f}" for s, d in diffs.items()) if prec != "fp32" else ""
        mean_d = f"{statistics.mean(diffs.values()):+.1f}" if diffs and prec != "fp32" else ""
        seeds = ",".join(f"{s_}*" if r_.get("documented") else str(s_) for s_, r_ in sorted(rs.items()))
        print(f"| {LABELS[prec]} | {seeds} | {mean_std(afters, ' %')} | {mean_std(gains)} "
              f"| {loss_s} | {each} | {mean_d} |")

    rlog = os.path.join(a.run_dir, "rounding-fp32-s1.log")
    if os.path.exists(rlog):
        row = re.compile(r"^(\S+)\s+(fp32|bf16|fp16)\s+(\S+)\s+([-\d.e]+)\s+([-\d.e]+)\s+([-\d.e]+)\s*$")
        print()
        print("| lr | master | unchanged (lost) | kept | error |")
        print("|---|---|---:|---:|---:|")
        with open(rlog) as fh:
            for line in fh:
                m = row.match(line)
                if m:
                    scale, dt, rnd, unch, kept, err = m.groups()
                    rn = {"nearest": " RN", "stochastic": " SR", "-": ""}[rnd]
                    lr = f"{float(scale) * a.lr:.0e}".replace("e-0", "e-")
                    print(f"| {lr} | {dt}{rn} | {unch} | {kept} | {err} |")

    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        colors = {"fp32": "black", "bf16sr": "tab:blue", "bf16rn": "tab:red", "fp16sr": "tab:green",
                  "fp16rn": "tab:orange"}
        fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=90)
        styles = {1: "-", 2: "--", 3: ":"}
        for prec in ORDER:
            for seed, r in sorted(runs.get(prec, {}).items()):
                if not r["train"]:
                    continue
                c = moving_mean(r["train"])
                ax0.plot(range(1, len(c) + 1), c, color=colors[prec], ls=styles.get(seed, "-."), lw=1.2,
                         label=f"{LABELS[prec]} s{seed}")
        ax0.set_xlabel("step")
        ax0.set_ylabel(f"training loss, {TAIL}-step moving mean")
        ax0.set_title("training loss per seed (same batches at every step)", fontsize=10)
        ax0.legend(fontsize=7, ncol=2)
        present = [prec for prec in ORDER if runs.get(prec)]
        for k, prec in enumerate(present):
            for j, (seed, r) in enumerate(sorted(runs[prec].items())):
                xk = k + 0.15 * (j - 1)
                ax1.plot([xk, xk], [r["acc0"], r["acc1"]], color=colors[prec], alpha=0.5)
                ax1.plot(xk, r["acc1"], "o", color=colors[prec], mfc="none" if r.get("documented") else colors[prec])
                ax1.plot(xk, r["acc0"], "_", color=colors[prec], markersize=10)
        ax1.set_xticks(range(len(present)), [LABELS[p_] for p_ in present])
        ax1.set_xlim(-0.5, len(present) - 0.5)
        ax1.set_ylabel("test accuracy (%), 1000 sentences")
        ax1.set_title("before (–) and after (o) 60 steps, per seed"
                      + ("; hollow: not rerun" if a.documented else ""), fontsize=10)
        ax1.grid(axis="y", alpha=0.3)
        fig.suptitle("SmolLM2-135M, inputs/smollm2_quick.yaml: θ's master in fp32 vs 2 bytes", fontsize=11)
        fig.tight_layout()
        fig.savefig(a.plot)
        print(f"\nwrote {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
