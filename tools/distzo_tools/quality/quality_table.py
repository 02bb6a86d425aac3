"""The quality table and figure (docs/quality.md) from the runs of
tools/quality_runs.py.

    python3 tools/quality_table.py [--records docs/quality-runs] [--write [--allow-missing]]
                                   [--png PNG] [--long-png PNG] [--estimators-png PNG]

prints the tables (markdown) made from the runs' records (quality_runs.py
copies each made run's record to docs/quality-runs; an OUT directory of run
directories reads the same); with --write it also replaces the generated part
of docs/quality.md (between <!-- quality-table:begin --> and
<!-- quality-table:end -->) and the README's table (<!-- quality-readme:begin/end -->)
and draws the figures docs/quality.png and, once a run is carried on past step
1000, docs/quality-long.png (its dev loss and the two trends fitted to it). A
run not yet made shows as "—".

The estimators' tables (issue 57; between <!-- estimators-table:begin --> and
<!-- estimators-table:end -->) count forward evaluations of a 16-example
micro-batch (steps × evaluations a step: MeZO-SGD 2, FZOO N + 1): per task,
those at which distzo's MeZO-SGD (the task's lr; each seed) and each
estimator run first reach MeZO-SGD's seed-1 step-1000 dev accuracy, the wall
time to there, test accuracy at the budget (2000 evaluations) and the goal's
verdict (the target within a third of the budget, test accuracy at least
MeZO-SGD's); a run not made says "not made" and its verdict "open". Once an
estimator run is made, --write draws docs/quality-estimators.png (dev
accuracy against forward evaluations).

--write refuses to turn a number docs/quality.md shows into "—" or "not made" (its run's
record is missing: lost, or a choice changed) unless --allow-missing.

It refuses (exit 1) a choice quality_runs.py declares (a task's prompt, MeZO
lr, first-order lr, FZOO lr) that is not the best on dev among the runs made: every
choice is made on dev, and the test numbers are read only for the chosen.

Numbers: test accuracy on the task's 1000 test examples (mean ± sample std
over seeds where there are several), dev accuracy on its 500 dev examples;
wall time is each run's whole command (evaluations included) on the machine
that made it, as run.json says.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import statistics
import sys
from dataclasses import dataclass

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "yaml", "numpy", "h5py")

from distzo_tools.quality import quality_runs as qr  # noqa: E402

REPO = qr.REPO
TASKS = list(qr.PROMPTS)
DASH = "—"


class Results:
    """What the runs' records (or run directories) under `out` hold; None where a run is not made."""

    def __init__(self, out: str):
        self.out = out

    def dir(self, task: str, name: str) -> str:
        return os.path.join(self.out, task, name)

    def done(self, task: str, name: str) -> bool:
        return os.path.exists(os.path.join(self.dir(task, name), "run.json"))

    def record(self, task: str, name: str):
        if not self.done(task, name):
            return None
        with open(os.path.join(self.dir(task, name), "run.json"), encoding="utf-8") as fh:
            return json.load(fh)

    def result(self, task: str, name: str):
        """result.json of a Python reference run."""
        if not self.done(task, name):
            return None
        with open(os.path.join(self.dir(task, name), "result.json"), encoding="utf-8") as fh:
            return json.load(fh)

    def curve(self, task: str, name: str, sub: str = ""):
        """[(step, loss, accuracy)] of an eval.csv; a longer run's from step 0 (its parent's first)."""
        if not self.done(task, name):
            return None
        with open(os.path.join(self.dir(task, name), sub, "eval.csv"), newline="", encoding="utf-8") as fh:
            rows = [(int(r["step"]), float(r["eval_loss"]), float(r["accuracy"])) for r in csv.DictReader(fh)]
        parent = "" if sub else qr.parent_name(name)
        if parent and rows[0][0] > 0:  # distzo's eval.csv holds the steps after the resume
            rows = [p for p in self.curve(task, parent) if p[0] < rows[0][0]] + rows
        return rows

    def longest(self, task: str, name: str) -> str:
        """The longer run that carries `name` on, where it is made; else `name`."""
        made = [r.name for r in qr.plan() if r.task == task and r.parent == name and self.done(task, r.name)]
        return made[0] if made else name

    def test_of(self, task: str, name: str):
        """(accuracy, loss) on test of a run of any kind, or None."""
        kind = name.split("-")[0]
        if kind in ("zeroshot", "distzo", "fzoo"):
            c = self.curve(task, name, "" if kind == "zeroshot" else "test")
            return None if c is None else (c[-1][2], c[-1][1])
        r = self.result(task, name)
        return None if r is None else (r["test_accuracy"], r["test_loss"])

    def seconds(self, task: str, name: str):
        r = self.record(task, name)
        return None if r is None else r["seconds"]


def chosen_finetune(task: str) -> str:
    """The name of `task`'s first-order fine-tuning run at its chosen lr."""
    return f"finetune-lr{qr.lr_tag(qr.FT_LR[task])}"


def pct(x) -> str:
    return DASH if x is None else f"{100 * x:.1f}"


def mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return DASH
    if len(values) == 1:
        return f"{100 * values[0]:.1f}"
    return f"{100 * statistics.mean(values):.1f} ± {100 * statistics.stdev(values):.1f}"


def minutes(seconds) -> str:
    """Seconds below 2 min (where whole minutes would round 90 s and 119 s alike), minutes above."""
    return DASH if seconds is None else f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def best_on_dev(task, what, chosen, options, wrong: list) -> str:
    """The cell of a choice on dev: options [(label, dev accuracy, dev loss)], None where the run is not
    made; the best is the higher accuracy, then the lower loss. Where the declared `chosen` is made and
    another made option is better, a line for `wrong` (the caller refuses the choice)."""
    made = [o for o in options if o[1] is not None]
    cells = ", ".join(f"{'**' if o[0] == chosen else ''}{o[0]} {pct(o[1])} %{'**' if o[0] == chosen else ''}"
                      for o in made)
    if made:
        top = max(made, key=lambda o: (o[1], -o[2]))
        if top[0] != chosen and any(o[0] == chosen for o in made):
            wrong.append(f"{task}: {what} {chosen} declared, {top[0]} is better on dev ({pct(top[1])} %)")
    return cells or DASH


def check_choices(res: Results) -> list:
    """The dev numbers behind each declared choice; exits when a made run beats a choice on dev."""
    lines, wrong = [], []

    def best(task, what, chosen, options):
        return best_on_dev(task, what, chosen, options, wrong)

    for task in TASKS:
        prompts = []
        for p in qr.PROMPTS[task]:
            c = res.curve(task, f"zeroshot-{p}-dev")
            prompts.append((p, c[0][2] if c else None, c[0][1] if c else None))
        lrs = []
        for lr in qr.LR_CANDIDATES[task]:
            c = res.curve(task, qr.distzo_name(lr, 1))
            lrs.append((f"{lr:g}", c[-1][2] if c else None, c[-1][1] if c else None))
        epss = []
        for eps in qr.EPS_CANDIDATES:
            c = res.curve(task, qr.distzo_name(qr.LR[task], 1, eps=eps)) if task == "movies" else None
            epss.append((f"{eps:g}", c[-1][2] if c else None, c[-1][1] if c else None))
        eps_cell = best(task, "ε", f"{qr.EPS:g}", epss) if task == "movies" else f"{qr.EPS:g} (movies')"
        fts = []
        for lr in qr.FT_LR_CANDIDATES[task]:
            r = res.result(task, f"finetune-lr{qr.lr_tag(lr)}")
            fts.append((f"{lr:g}", r["dev_accuracy"] if r else None, r["dev_loss"] if r else None))
        probe = res.result(task, "probe")
        probe_cell = DASH if probe is None else f"{probe['lambda']:g} ({pct(probe['dev_accuracy'])} %)"
        lines.append(f"| {task} | {best(task, 'prompt', qr.PROMPTS[task][0], prompts)} "
                     f"| {best(task, 'lr', f'{qr.LR[task]:g}', lrs)} "
                     f"| {eps_cell} "
                     f"| {best(task, 'first-order lr', f'{qr.FT_LR[task]:g}', fts)} "
                     f"| {probe_cell} |")
    if wrong:
        raise SystemExit("quality_table: a declared choice is not the best on dev (change it in "
                         "tools/quality_runs.py):\n  " + "\n  ".join(wrong))
    return lines


def rows(res: Results):
    """(label, {task: cell}, {task: cost}) for each method of the main table."""
    out = []

    def add(label, names_of, cost_of):
        cells, costs = {}, {}
        for task in TASKS:
            names = names_of(task)
            tests = [res.test_of(task, n) for n in names]
            cells[task] = mean_std([t[0] if t else None for t in tests]) if names else DASH
            costs[task] = cost_of(task, names) if names else DASH
        out.append((label, cells, costs))

    def wall(task, names):
        secs = [res.seconds(task, n) for n in names if res.seconds(task, n) is not None]
        return minutes(statistics.median(secs)) if secs else DASH

    lr = qr.LR
    add("majority class", lambda t: [], lambda t, n: DASH)
    add("zero-shot, best dev prompt", lambda t: [f"zeroshot-{qr.PROMPTS[t][0]}-test"],
        lambda t, n: f"0 steps, {wall(t, n)}")
    add("linear probe (reference, torch)", lambda t: ["probe"], lambda t, n: wall(t, n))
    add("MeZO, PyTorch (reference)", lambda t: [qr.mezo_name(lr[t], s) for s in qr.MEZO_SEEDS[t]],
        lambda t, n: f"{qr.STEPS} steps, {wall(t, n)}")
    add("**distzo** MeZO-SGD", lambda t: [qr.distzo_name(lr[t], s) for s in qr.SEEDS[t]],
        lambda t, n: f"{qr.STEPS} steps, {wall(t, n)}")
    for mode, label in (("p2", "P=2 (2 ranks)"), ("d2", "D=2 (2 ranks × 8)"), ("offload0", "offload, K=0"),
                        ("bf16", "bf16 master, SR")):
        add(f"distzo, {label}", lambda t, m=mode: [qr.distzo_name(lr[t], 1, m)] if t == qr.MODES_TASK else [],
            lambda t, n: f"{qr.STEPS} steps, {wall(t, n)}")
    def carried_on(t, n):
        return DASH if res.seconds(t, n[0]) is None else f"{qr.LONG_STEPS[t]} steps, +{wall(t, n)}"

    add("MeZO, PyTorch, carried on (seed 1)",
        lambda t: [qr.longer_name(t, qr.mezo_name(lr[t], 1))] if t in qr.LONG_MEZO else [], carried_on)
    add("**distzo**, carried on (seed 1)", lambda t: [qr.longer_name(t, qr.distzo_name(lr[t], 1))],
        carried_on)
    add("first-order fine-tuning (reference, torch AdamW)", lambda t: [chosen_finetune(t)],
        lambda t, n: ft_cost(res, t, n))
    return out


def ft_cost(res: Results, task: str, names) -> str:
    r = res.result(task, names[0])
    return DASH if r is None else f"{r['steps']} steps ({r['epochs']:g} epochs), {minutes(r['seconds'])}"


def majority(paths: qr.Paths) -> dict:
    """{task: the larger class's share of its test set, as a cell}: the one row read from the
    tasks' files (MODEL_DIR/tasks, tools/make_tasks.sh), not the records; "—" without them."""
    import h5py
    import numpy as np

    cells, missing = {}, []
    for task in TASKS:
        path = paths.task_file(task, qr.PROMPTS[task][0], "test")
        if not os.path.isfile(path):
            cells[task] = DASH
            missing.append(path)
            continue
        with h5py.File(path, "r") as f:
            labels = f["labels"][()]
        cells[task] = f"{100 * np.bincount(labels).max() / len(labels):.1f}"
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        print(f"quality_table: no {missing[0]}{more}: the majority-class row shows {DASH} "
              "(tools/make_real_model.sh, then tools/make_tasks.sh, make the tasks)", file=sys.stderr)
    return cells


def curve_gap(res: Results, task: str):
    """Largest |distzo mean − MeZO mean| of dev accuracy over the eval points every run has
    (a seed's longer run standing for it where made), and the std of every run's accuracy
    there (None with two runs)."""
    d = [res.curve(task, res.longest(task, qr.distzo_name(qr.LR[task], s))) for s in qr.SEEDS[task]]
    m = [res.curve(task, res.longest(task, qr.mezo_name(qr.LR[task], s))) for s in qr.MEZO_SEEDS[task]]
    d, m = [c for c in d if c], [c for c in m if c]
    if not d or not m:
        return None
    steps = sorted(set.intersection(*[{p[0] for p in c} for c in d + m]))
    gaps = []
    for s in steps:
        da = [dict((p[0], p[2]) for p in c)[s] for c in d]
        ma = [dict((p[0], p[2]) for p in c)[s] for c in m]
        spread = statistics.stdev(da + ma) if len(da) + len(ma) > 2 else None
        gaps.append((abs(statistics.mean(da) - statistics.mean(ma)), s, spread, len(da), len(ma)))
    return max(gaps), len(steps)


def modes_table(res: Results) -> str:
    """The modes' runs next to the plain one: digest, dev and test accuracy at the end."""
    task, lr = qr.MODES_TASK, qr.LR[qr.MODES_TASK]
    plain = res.record(task, qr.distzo_name(lr, 1))
    lines = ["| run | ranks | digest at step 1000 | = plain run's | dev accuracy | test accuracy | wall time |",
             "|---|---|---|---|---|---|---|"]
    for mode, label in [("", "plain: 1 rank, resident, fp32 master")] + [
            ("p2", "P=2: the ± evaluations on 2 ranks"), ("d2", "D=2: 2 replicas × micro-batch 8"),
            ("offload0", "offload, K=0: every block streamed"), ("bf16", "bf16 master, stochastic rounding")]:
        name = qr.distzo_name(lr, 1, mode)
        rec = res.record(task, name)
        if rec is None:
            lines.append(f"| {label} | {qr.MODES[mode][0] if mode else 1} | {DASH} | | | | |")
            continue
        same = DASH if plain is None else ("yes" if rec["digest"] == plain["digest"] else "no")
        dev, test = res.curve(task, name)[-1][2], res.test_of(task, name)[0]
        lines.append(f"| {label} | {qr.MODES[mode][0] if mode else 1} | `{rec['digest']}` | {same if mode else ''} "
                     f"| {pct(dev)} | {pct(test)} | {minutes(rec['seconds'])} |")
    resumed = []
    for t in TASKS:
        rec = res.record(t, qr.distzo_name(qr.LR[t], 1) + "-resume")
        if rec is not None:
            resumed.append(f"{t} (`{rec['digest']}`)")
    tail = ("\nResumed from the step-900 checkpoint into a new directory, the same digest, last dev evaluation "
            "and metrics.csv trajectory columns for all 100 steps (quality_runs.py checks them): "
            + (", ".join(resumed) if resumed else DASH) + ".\n")
    return "\n".join(lines) + "\n" + tail


def first_epoch_loss(res: Results, task: str):
    """First-order fine-tuning's dev loss after its first epoch (its eval.csv's second row), or None."""
    c = res.curve(task, chosen_finetune(task))
    return None if c is None or len(c) < 2 else c[1][1]


def loss_trend(curve, since: int):
    """Least-squares fits of the dev loss over a curve's evaluations from step `since` on:
    (change per 100 steps of a line in the step, the line's (slope, intercept), the
    (slope, intercept) of loss = a + b·ln(step)). A falling loss that slows down
    reaches a level later than the line says and, where it slows as ln(step)'s,
    when the second fit says."""
    import numpy as np

    pts = [(s, loss) for s, loss, _ in curve if s >= since]
    x, y = np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)
    line, log = np.polyfit(x, y, 1), np.polyfit(np.log(x), y, 1)
    return 100 * line[0], tuple(line), tuple(log)


def step_reaching(target: float, line, log):
    """The steps at which the two fits of loss_trend reach `target` (None where a fit does not fall)."""
    at_line = (target - line[1]) / line[0] if line[0] < 0 else None
    at_log = math.exp((target - log[1]) / log[0]) if log[0] < 0 else None
    return at_line, at_log


def long_runs_table(res: Results) -> str:
    """The carried-on seed-1 runs: where they ended and how fast the dev loss still fell,
    against first-order fine-tuning's dev loss after one epoch."""
    lines = ["| run | dev accuracy, step 1000 → end | dev loss, step 1000 → end | dev loss per 100 steps "
             "from 1000 on (line) | first-order's dev loss after 1 epoch | reached at step: line / ln(step) fit |",
             "|---|---|---|---|---|---|"]
    for task in TASKS:
        for name in (qr.distzo_name(qr.LR[task], 1), qr.mezo_name(qr.LR[task], 1)):
            long = qr.longer_name(task, name)
            c = res.curve(task, long)
            if c is None:
                continue
            at = dict((p[0], p) for p in c)
            start, end = at.get(qr.STEPS), c[-1]
            per100, line, log = loss_trend(c, qr.STEPS)
            target = first_epoch_loss(res, task)
            reach = DASH
            if target is not None:
                a, b = step_reaching(target, line, log)
                reach = " / ".join(DASH if s is None else f"{s:,.0f}" for s in (a, b))
            lines.append(f"| {task}/{long} | {DASH if start is None else pct(start[2])} → {pct(end[2])} "
                         f"| {DASH if start is None else f'{start[1]:.3f}'} → {end[1]:.3f} | {per100:+.4f} "
                         f"| {DASH if target is None else f'{target:.3f}'} | {reach} |")
    return "\n".join(lines) + "\n"


def tables(res: Results, paths: qr.Paths) -> str:
    choice_lines = check_choices(res)
    head = "| method | " + " | ".join(TASKS) + " |\n|---|" + "---|" * len(TASKS) + "\n"
    main_rows = rows(res)
    maj = majority(paths)
    acc = head + "".join(
        f"| {label} | " + " | ".join(maj[t] if label == "majority class" else cells[t] for t in TASKS) + " |\n"
        for label, cells, _ in main_rows)
    cost = head + "".join(f"| {label} | " + " | ".join(costs[t] for t in TASKS) + " |\n"
                          for label, _, costs in main_rows if label != "majority class")
    gap_lines = []
    for task in TASKS:
        g = curve_gap(res, task)
        if g is None:
            gap_lines.append(f"| {task} | {DASH} | | |")
            continue
        (gap, step, spread, nd, nm), points = g
        gap_lines.append(f"| {task} | {points} | {100 * gap:.1f} points at step {step} ({nd} distzo / {nm} MeZO "
                         f"seed{'s' if nm > 1 else ''}) | {DASH if spread is None else f'{100 * spread:.1f}'} |")
    choice = ("| task | prompt: zero-shot dev accuracy | MeZO lr: dev accuracy at step "
              f"{qr.STEPS} | MeZO ε: the same, on movies | first-order lr: dev accuracy after training "
              "| probe: λ (dev accuracy) |\n"
              "|---|---|---|---|---|---|\n" + "\n".join(choice_lines) + "\n")
    gaps = ("| task | eval points | largest gap, distzo vs PyTorch MeZO (dev accuracy) | seed spread there "
            "(std of every run's accuracy, points) |\n|---|---|---|---|\n" + "\n".join(gap_lines) + "\n")
    return (f"Test accuracy (%), 1000 test examples per task; mean ± std over seeds where a row has several:\n\n"
            f"{acc}\nWhat each took (steps; wall time of one run, median over seeds, evaluations included):\n\n"
            f"{cost}\nThe choices, on dev only (500 examples; bold = chosen):\n\n{choice}\n"
            f"distzo's dev curve against PyTorch MeZO's (same batches, other z):\n\n{gaps}\n"
            f"Every mode on {qr.MODES_TASK} (lr {qr.LR[qr.MODES_TASK]:g}, seed 1, global batch 16):\n\n"
            f"{modes_table(res)}\n"
            "The runs carried on past step 1000 (seed 1; the dev loss fitted by least squares over the "
            "evaluations from step 1000 on):\n\n"
            f"{long_runs_table(res)}")


# Estimators beyond MeZO-SGD (issue 57; quality_runs.estimator_runs): forward evaluations of a 16-example
# micro-batch to MeZO-SGD's step-STEPS dev accuracy, and test accuracy at its budget of them.

# an estimator run's name (quality_runs.fzoo_run): family, N, lr, seed, a third of the budget or all of it
# (torch-fzoo: the PyTorch reference of FZOO, quality_runs.torch_fzoo_run: a comparison, never a choice)
# (lezo: block-sparse MeZO-SGD, quality_runs.lezo_run: K blocks a step in place of N)
ESTIMATOR_NAME = re.compile(r"(fzoo|torch-fzoo|lezo)-[nk](\d+)-lr(\d(?:\.\d+)?e[-+]?\d+)-s(\d+)(-third)?")
ESTIMATOR_LABEL = {"fzoo": "FZOO", "torch-fzoo": "FZOO in PyTorch", "lezo": "block-sparse MeZO-SGD"}
SPSA_EVALUATIONS = qr.SPSA_EVALUATIONS
THIRD = qr.BUDGET / 3  # the goal: the target in at most this many forward evaluations
NOT_MADE = "not made"


@dataclass(frozen=True)
class EstimatorRun:
    """One estimator run, read from its name."""

    task: str
    name: str
    family: str  # a key of ESTIMATOR_LABEL
    queries: int  # N: directions a step (lezo: K, the blocks a step perturbs)
    lr: float
    seed: int
    third: bool  # a third of the budget (the lr grid) or the whole budget (carried on from the third)

    @property
    def per_step(self) -> int:
        """Forward evaluations a step: N one-sided ones and L(θ); block-sparse MeZO-SGD's two."""
        return SPSA_EVALUATIONS if self.family == "lezo" else self.queries + 1

    @property
    def label(self) -> str:
        if self.family == "lezo":
            return f"{ESTIMATOR_LABEL[self.family]} (K = {self.queries} blocks)"
        return f"{ESTIMATOR_LABEL[self.family]} (N = {self.queries})"

    @property
    def reference(self) -> bool:
        """A reference implementation's run: shown beside distzo's, never chosen or judged."""
        return self.family.startswith("torch-")


def estimator_run(task: str, name: str):
    """The EstimatorRun that `name` names, or None."""
    m = ESTIMATOR_NAME.fullmatch(name)
    if not m:
        return None
    family, n, lr, seed, third = m.groups()
    return EstimatorRun(task, name, family, int(n), float(lr), int(seed), bool(third))


def estimator_runs_of(res: Results, task: str) -> list:
    """`task`'s estimator runs: the plan's (made or not) and any other whose record is under res.out;
    the third-budget (grid) runs first, then the whole-budget ones, each by lr, then seed."""
    names = {r.name for r in qr.estimator_runs() if r.task == task}
    d = os.path.join(res.out, task)
    if os.path.isdir(d):
        names |= {n for n in os.listdir(d) if ESTIMATOR_NAME.fullmatch(n) and res.done(task, n)}
    runs = [estimator_run(task, n) for n in names]
    return sorted(runs, key=lambda r: (r.family, r.queries, not r.third, r.lr, r.seed))


def evaluation_curve(res: Results, task: str, name: str, per_step: int):
    """[(forward evaluations, step, dev loss, dev accuracy)] of a run's dev curve, evaluations = step ×
    per_step; a whole-budget run's from step 0 (its third-budget run's first), or only its own steps
    where that record is missing. None where the run is not made."""
    if not res.done(task, name):
        return None
    parent = qr.parent_name(name)
    c = res.curve(task, name, "." if parent and not res.done(task, parent) else "")
    return [(s * per_step, s, loss, acc) for s, loss, acc in c]


def first_reach(curve, target: float):
    """The first point of an evaluation_curve whose dev accuracy is at least `target`, or None.
    (Accuracies are counts over 500 examples written in decimal: equal ones compare equal.)"""
    for p in curve:
        if p[3] >= target - 1e-9:
            return p
    return None


def wall_to(res: Results, task: str, name: str, step: int):
    """Wall seconds of run `name` to the end of `step`: its run.json seconds in proportion to the steps
    it ran (a run carried on: its parent's, then its own in proportion to the steps after the parent's);
    None without the records."""
    parent = qr.parent_name(name)
    c = res.curve(task, name, "." if parent else "")
    if c is None or res.seconds(task, name) is None:
        return None
    if not parent:
        return res.seconds(task, name) * step / c[-1][0] if c[-1][0] else None
    pc = res.curve(task, parent)
    if pc is None or res.seconds(task, parent) is None:
        return None
    start = pc[-1][0]
    if step <= start:
        return wall_to(res, task, parent, step)
    return res.seconds(task, parent) + res.seconds(task, name) * (step - start) / (c[-1][0] - start)


def verdict(reached, searched: int, per_step: int, test, reference) -> str:
    """The goal's verdict on one run. reached: the forward evaluations at which its dev curve first
    reached the target (None: not up to `searched`, its last dev evaluation's); test: its test accuracy
    at the whole budget (None: that run not made); reference: MeZO-SGD's test accuracy there.
    "does not" once the run cannot meet the goal whatever comes: the target not reached within
    BUDGET / 3 evaluations (a run that searched past the last step within a third, or reached it later),
    or test below MeZO-SGD's; "meets the goal" with both; else "open"."""
    if reached is None:
        return "does not" if searched + per_step > THIRD else "open"
    if reached > THIRD:
        return "does not"
    if test is None or reference is None:
        return "open"
    return "meets the goal" if test >= reference - 1e-9 else "does not"


def mezo_target(res: Results, task: str):
    """(dev accuracy at step STEPS, run name) of distzo's MeZO-SGD at the task's lr, seed 1; None if not made."""
    name = qr.distzo_name(qr.LR[task], 1)
    c = res.curve(task, name)
    at = dict((p[0], p[2]) for p in c) if c else {}
    return (at[qr.STEPS], name) if qr.STEPS in at else None


def mezo_test(res: Results, task: str):
    """(mean test accuracy, seeds) of distzo's MeZO-SGD at the task's lr over the seeds made (the main
    table's number), or (None, 0)."""
    tests = [t[0] for t in (res.test_of(task, qr.distzo_name(qr.LR[task], s)) for s in qr.SEEDS[task]) if t]
    return (statistics.mean(tests), len(tests)) if tests else (None, 0)


def reach_cell(point, curve) -> str:
    if curve is None:
        return DASH
    if point is None:
        return f"not within {curve[-1][0]:,}"
    return f"{point[0]:,} (step {point[1]})"


def estimators_tables(res: Results) -> str:
    """The estimators' tables: per task the target and the verdict, then every run; exits when a
    declared FZOO_LR is not the best on dev of its grid's runs made."""
    summary, run_rows, wrong, verdicts = [], [], [], {}
    for task in TASKS:
        target = mezo_target(res, task)
        ref, ref_seeds = mezo_test(res, task)
        ref_cell = DASH if ref is None else f"{pct(ref)}" + (f" ({ref_seeds} seeds)" if ref_seeds > 1 else "")
        ft = res.test_of(task, chosen_finetune(task))
        # MeZO-SGD's own curves against the target
        mezo_reach = []
        for seed in qr.SEEDS[task]:
            name = qr.distzo_name(qr.LR[task], seed)
            c = evaluation_curve(res, task, name, SPSA_EVALUATIONS)
            label = f"{task}/{name}"
            if c is None:
                run_rows.append(f"| {label} | MeZO-SGD | {NOT_MADE} | | | | | | reference |")
                continue
            p = first_reach(c, target[0]) if target else None
            if target is not None:
                mezo_reach.append((f"{p[0]:,}" if p else f"not within {c[-1][0]:,}")
                                  + (f" (seed {seed})" if len(qr.SEEDS[task]) > 1 else ""))
            wall = wall_to(res, task, name, p[1]) if p else None
            test = res.test_of(task, name)
            run_rows.append(f"| {label} | MeZO-SGD | {c[-1][1]} × {SPSA_EVALUATIONS} = {c[-1][0]:,} "
                            f"| {pct(c[-1][3])} | {DASH if target is None else reach_cell(p, c)} "
                            f"| {DASH if wall is None else '≈ ' + minutes(wall)} | {pct(test[0] if test else None)} "
                            "| | reference |")
        # the estimators' runs
        runs = estimator_runs_of(res, task)
        if not runs:
            run_rows.append(f"| {task}/fzoo | FZOO (N = {qr.FZOO_N}) | {NOT_MADE} (no lr grid in "
                            "quality_runs.FZOO_LR_CANDIDATES yet) | | | | | | open |")
        run_verdict = {}
        for r in runs:
            label = f"{task}/{r.name}"
            c = evaluation_curve(res, task, r.name, r.per_step)
            if c is None:
                v = "reference" if r.reference else "open"
                run_rows.append(f"| {label} | {r.label}, lr {r.lr:g} | {NOT_MADE} | | | | | | {v} |")
                run_verdict[r.name] = (v, None, None)
                continue
            p = first_reach(c, target[0]) if target else None
            wall = wall_to(res, task, r.name, p[1]) if p else None
            test = None if r.third else res.test_of(task, r.name)
            test = test[0] if test else None
            whole_curve = not r.third and c[0][1] == 0  # else its third-budget record is missing
            if r.reference:
                v = "reference"
            elif target is None or (not r.third and not whole_curve):
                v = "open"
            else:
                v = verdict(p[0] if p else None, c[-1][0], r.per_step, test, ref if not r.third else None)
            run_verdict[r.name] = (v, p, test)
            run_rows.append(f"| {label} | {r.label}, lr {r.lr:g} | {c[-1][1]} × {r.per_step} = {c[-1][0]:,} "
                            f"| {pct(c[-1][3])} | {DASH if target is None else reach_cell(p, c)} "
                            f"| {DASH if wall is None else '≈ ' + minutes(wall)} "
                            f"| {DASH if r.third else pct(test)} | {'' if r.third else ref_cell} | {v} |")
        # the lr on dev among the third-budget grid (seed 1), by the rule of MeZO's lr
        fzoo_lr = qr.FZOO_LR.get(task)
        grid = []
        for r in runs:
            if r.third and r.seed == 1 and r.family == "fzoo":
                c = evaluation_curve(res, task, r.name, r.per_step)
                grid.append((f"{r.lr:g}", c[-1][3] if c else None, c[-1][2] if c else None))
        chosen = DASH if fzoo_lr is None else f"{fzoo_lr:g}"
        lr_cell = best_on_dev(task, "FZOO lr", chosen, grid, wrong)
        if fzoo_lr is None:
            lr_cell += " (none chosen yet)" if lr_cell != DASH else ""
        # the task's verdict: the chosen lr's seed-1 runs, the whole budget's where made
        v, p, test = "open", None, None
        reached = NOT_MADE
        if fzoo_lr is not None:
            for third in (False, True):
                run = next((r for r in runs if r.lr == fzoo_lr and r.seed == 1 and r.third == third
                            and r.family == "fzoo" and res.done(task, r.name)), None)
                if run:
                    v, p, test = run_verdict[run.name]
                    c = evaluation_curve(res, task, run.name, run.per_step)
                    reached = DASH if target is None else reach_cell(p, c)
                    break
        verdicts[task] = v
        gap = DASH
        if ft is not None and ref is not None:
            gap = f"{100 * (ft[0] - ref):.1f} → " + (DASH if test is None else f"{100 * (ft[0] - test):.1f}")
        target_cell = DASH if target is None else f"{pct(target[0])} ({target[1]})"
        summary.append(f"| {task} | {target_cell} | {', '.join(mezo_reach) or DASH} | {lr_cell} | {reached} "
                       f"| {pct(test)} / {ref_cell} | {gap} | {v} |")
    if wrong:
        raise SystemExit("quality_table: a declared choice is not the best on dev (change it in "
                         "tools/quality_runs.py):\n  " + "\n  ".join(wrong))
    met = sum(v == "meets the goal" for v in verdicts.values())
    open_ = sum(v == "open" for v in verdicts.values())
    need = 3
    goal = "met" if met >= need else "not met" if met + open_ < need else "open"
    third_steps = qr.BUDGET // 3 // (qr.FZOO_N + 1)
    return (
        f"The goal: MeZO-SGD's step-{qr.STEPS} dev accuracy in at most a third of its {qr.BUDGET:,} forward "
        f"evaluations ({qr.BUDGET:,} / 3 = {THIRD:,.1f}; a forward evaluation: one loss on a 16-example "
        f"micro-batch; dev and test evaluations not counted), with test accuracy at {qr.BUDGET:,} evaluations "
        f"at least MeZO-SGD's, on at least {need} of the {len(TASKS)} tasks: **{goal}** (meets the goal on "
        f"{met}, does not on {sum(v == 'does not' for v in verdicts.values())}, open on {open_}).\n\n"
        "| task | target: MeZO-SGD's dev accuracy at step "
        f"{qr.STEPS} (seed 1) | MeZO-SGD first reached it at (forward evaluations; each seed) "
        f"| FZOO lr: dev accuracy after a third of the budget (bold = chosen) | FZOO, chosen lr, seed 1, "
        "first reached it at | test accuracy at the budget: FZOO / MeZO-SGD "
        "| gap to first-order's test (points): MeZO-SGD → FZOO | verdict |\n"
        "|---|---|---|---|---|---|---|---|\n" + "\n".join(summary) + "\n\n"
        "Every run (forward evaluations = steps × evaluations a step: MeZO-SGD 2, FZOO N + 1, block-sparse "
        "MeZO-SGD 2; an FZOO "
        f"run of a third of the budget makes {third_steps} steps, dev every "
        f"{qr.EVAL_EVALUATIONS // (qr.FZOO_N + 1)}; the whole-budget one carries it on to "
        f"{qr.BUDGET // (qr.FZOO_N + 1)}):\n\n"
        "| run | estimator | forward evaluations | dev accuracy at the end | first reached the target at "
        "| wall time to there | test accuracy at the budget | MeZO-SGD's | verdict |\n"
        "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(run_rows) + "\n\n"
        "The target is one number of one noisy curve: dev accuracy is over 500 examples (0.2 points an "
        "example), and a curve can touch a level early by chance, as MeZO-SGD's own curves do where they "
        f"first reach it before {qr.BUDGET:,} evaluations; read \"first reached\" beside the curves. The lr is "
        "chosen as MeZO-SGD's: the higher dev accuracy at the end of the grid's runs (here a third of the "
        "budget), then the lower dev loss. Wall time to the target: the run's run.json seconds in proportion "
        "to the steps (its dev evaluations and its test evaluation included; a whole-budget run's adds its "
        "third-budget run's), on the machine that made it. The verdict of a task is its chosen lr's seed-1 "
        "run's (the whole budget's where made); MeZO-SGD's test accuracy is the main table's (mean over its "
        "seeds). \"FZOO in PyTorch\" is tools/mezo_finetune.py's FZOO on the same deck (model file, batches, "
        "N, ε, Rademacher z, lr) at the chosen lr: its curve beside distzo's says whether a gain is the "
        "method's.\n" + ("\n![dev accuracy against forward evaluations, MeZO-SGD and the estimators]"
                       "(quality-estimators.png)\n" if any_estimator_made(res) else ""))


def any_estimator_made(res: Results) -> bool:
    """Whether any estimator run has a record (the estimators' figure is drawn then)."""
    return any(res.done(t, r.name) for t in TASKS for r in estimator_runs_of(res, t))


def figure(res: Results, png: str) -> None:
    """Dev accuracy against step, one panel a task: distzo's seeds and modes,
    PyTorch MeZO's seeds, first-order fine-tuning's epochs (its own steps),
    and the zero-shot and probe levels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(TASKS), figsize=(4.2 * len(TASKS), 3.8), dpi=100, sharey=False)
    for ax, task in zip(axes, TASKS):
        lr = qr.LR[task]
        for names, color, label in (
                ([qr.distzo_name(lr, s) for s in qr.SEEDS[task]], "tab:blue", "distzo"),
                ([qr.mezo_name(lr, s) for s in qr.MEZO_SEEDS[task]], "tab:orange", "PyTorch MeZO")):
            curves = [c for c in (res.curve(task, res.longest(task, n)) for n in names) if c]
            for i, c in enumerate(curves):
                ax.plot([p[0] for p in c], [100 * p[2] for p in c], color=color, alpha=0.8 if i == 0 else 0.45,
                        linewidth=1.6 if i == 0 else 1.0,
                        label=f"{label} ({len(curves)} seed{'s' if len(curves) > 1 else ''})" if i == 0 else None)
        if task == qr.MODES_TASK:
            for mode, style in (("p2", (0, (1, 2))), ("d2", (0, (3, 2))), ("offload0", (0, (5, 1, 1, 1))),
                                ("bf16", (0, (2, 1)))):
                c = res.curve(task, qr.distzo_name(lr, 1, mode))
                if c:
                    ax.plot([p[0] for p in c], [100 * p[2] for p in c], color="tab:purple", linestyle=style,
                            linewidth=1.0, alpha=0.8, label=f"distzo {mode}")
        zs = res.curve(task, f"zeroshot-{qr.PROMPTS[task][0]}-dev")
        if zs:
            ax.axhline(100 * zs[0][2], color="gray", linestyle="--", linewidth=1, label="zero-shot")
        probe = res.result(task, "probe")
        if probe:
            ax.axhline(100 * probe["dev_accuracy"], color="tab:brown", linestyle=":", linewidth=1.2,
                       label="linear probe")
        ft = res.result(task, chosen_finetune(task))
        if ft:
            ax.axhline(100 * ft["dev_accuracy"], color="tab:green", linestyle="-.", linewidth=1.2,
                       label="first-order FT")
        ax.set_title(f"{task} (prompt '{qr.PROMPTS[task][0]}', lr {lr:g})", fontsize=10)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("dev accuracy (%)")
    axes[0].legend(fontsize=7.5, loc="upper left", ncol=2)
    fig.suptitle("SmolLM2-135M-Instruct, zeroth-order fine-tuning on four sentiment tasks (dev, 500 examples)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(png, metadata={"Software": None})


def figure_long(res: Results, png: str) -> bool:
    """Dev loss and dev accuracy against step of the carried-on seed-1 runs, one row a task
    that has one, with loss_trend's two fits carried to first-order fine-tuning's dev loss
    after one epoch (and its final dev accuracy); False if no run is carried on yet."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    long = {t: [(n, res.curve(t, qr.longer_name(t, n))) for n in (qr.distzo_name(qr.LR[t], 1),
                                                                  qr.mezo_name(qr.LR[t], 1))] for t in TASKS}
    long = {t: [(n, c) for n, c in runs if c] for t, runs in long.items()}
    long = {t: runs for t, runs in long.items() if runs}
    if not long:
        return False
    fig, axes = plt.subplots(len(long), 2, figsize=(10, 3.6 * len(long)), dpi=100, squeeze=False)
    for (loss_ax, acc_ax), (task, runs) in zip(axes, long.items()):
        target = first_epoch_loss(res, task)
        ft = res.result(task, chosen_finetune(task))
        for name, c in runs:
            color, label = ("tab:blue", "distzo") if name.startswith("distzo") else ("tab:orange", "PyTorch MeZO")
            steps = [p[0] for p in c]
            loss_ax.plot(steps, [p[1] for p in c], color=color, marker=".", label=label)
            acc_ax.plot(steps, [100 * p[2] for p in c], color=color, marker=".", label=label)
            _, line, log = loss_trend(c, qr.STEPS)
            reach = step_reaching(target, line, log) if target is not None else (None, None)
            # each fit drawn to where it reaches the target (or to the last evaluation)
            x = np.linspace(qr.STEPS, max(steps[-1], reach[0] or 0), 200)
            loss_ax.plot(x, line[0] * x + line[1], color=color, linestyle="--", linewidth=0.9,
                         label=f"{label}: a line fitted from step {qr.STEPS}")
            x = np.linspace(qr.STEPS, max(steps[-1], reach[1] or 0), 200)
            loss_ax.plot(x, log[0] * np.log(x) + log[1], color=color, linestyle=":", linewidth=1.1,
                         label=f"{label}: a + b ln(step) fitted from step {qr.STEPS}")
        if target is not None:
            loss_ax.axhline(target, color="tab:green", linestyle="-.", linewidth=1.2,
                            label="first-order FT after 1 epoch")
        if ft:
            acc_ax.axhline(100 * ft["dev_accuracy"], color="tab:green", linestyle="-.", linewidth=1.2,
                           label="first-order FT")
        zs = res.curve(task, f"zeroshot-{qr.PROMPTS[task][0]}-dev")
        if zs:
            acc_ax.axhline(100 * zs[0][2], color="gray", linestyle="--", linewidth=1, label="zero-shot")
        loss_ax.set_ylabel(f"{task}: dev loss")
        acc_ax.set_ylabel(f"{task}: dev accuracy (%)")
        for ax in (loss_ax, acc_ax):
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7.5)
    fig.suptitle("SmolLM2-135M-Instruct, zeroth-order runs carried on past step 1000 (dev, 500 examples)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(png, metadata={"Software": None})
    return True


def figure_estimators(res: Results, png: str) -> bool:
    """Dev accuracy against forward evaluations, one panel a task: distzo's MeZO-SGD seeds (2 a step),
    every estimator run (a third of the budget dashed, the whole budget solid, one colour an lr), the
    target (MeZO-SGD's seed-1 step-STEPS dev accuracy) and BUDGET / 3; False if no estimator run is made."""
    curves = {t: [(r, evaluation_curve(res, t, r.name, r.per_step)) for r in estimator_runs_of(res, t)]
              for t in TASKS}
    curves = {t: [(r, c) for r, c in runs if c] for t, runs in curves.items()}
    if not any(curves.values()):
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(TASKS), figsize=(4.2 * len(TASKS), 3.8), dpi=100)
    colours = ["tab:red", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan"]
    for ax, task in zip(axes, TASKS):
        mezo = [c for c in (evaluation_curve(res, task, qr.distzo_name(qr.LR[task], s), SPSA_EVALUATIONS)
                            for s in qr.SEEDS[task]) if c]
        for i, c in enumerate(mezo):  # seed 1 (the target's) first and boldest
            ax.plot([p[0] for p in c], [100 * p[3] for p in c], color="tab:blue", alpha=0.8 if i == 0 else 0.45,
                    linewidth=1.6 if i == 0 else 1.0,
                    label=f"MeZO-SGD, lr {qr.LR[task]:g}" + (f" ({len(mezo)} seeds)" if len(mezo) > 1 else "")
                    if i == 0 else None)
        lrs = sorted({r.lr for r, _ in curves[task]})
        for r, c in curves[task]:
            colour = colours[lrs.index(r.lr) % len(colours)]
            ax.plot([p[0] for p in c], [100 * p[3] for p in c], color=colour, marker=".",
                    linestyle="--" if r.third else "-", linewidth=1.0 if r.third else 1.6,
                    label=f"{r.label}, lr {r.lr:g}, s{r.seed}" + (", third" if r.third else ""))
        target = mezo_target(res, task)
        if target:
            ax.axhline(100 * target[0], color="gray", linestyle=":", linewidth=1.2, label="target")
        ax.axvline(THIRD, color="black", linestyle=":", linewidth=0.8)
        ax.set_title(f"{task}", fontsize=10)
        ax.set_xlabel("forward evaluations (16-example micro-batch)")
        ax.set_xlim(0, qr.BUDGET * 1.02)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6.5, loc="lower right")
    axes[0].set_ylabel("dev accuracy (%)")
    fig.suptitle("SmolLM2-135M-Instruct: dev accuracy against forward evaluations, MeZO-SGD and the estimators "
                 f"(dotted: the target and {qr.BUDGET:,} / 3)", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, metadata={"Software": None})
    return True


def split_block(path: str, tag: str):
    """(before, inside, after) the <!-- TAG:begin --> ... <!-- TAG:end --> block of the file at path."""
    begin, end = f"<!-- {tag}:begin -->", f"<!-- {tag}:end -->"
    with open(path, encoding="utf-8") as fh:
        doc = fh.read()
    if begin not in doc or end not in doc:
        raise SystemExit(f"quality_table: {path} has no {begin} ... {end} block")
    head, rest = doc.split(begin, 1)
    inside, tail = rest.split(end, 1)
    return head, inside, tail


def replace_block(path: str, tag: str, text: str) -> None:
    head, _, tail = split_block(path, tag)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{head}<!-- {tag}:begin -->\n{text}<!-- {tag}:end -->{tail}")


def table_cells(text: str) -> dict:
    """{(the table's header line, a row's first cell): the row's other cells} of every markdown table in text."""
    cells, header = {}, None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
        elif header is None:
            header = line
        elif not set(line) <= set("|-"):
            parts = [c.strip() for c in line.strip().strip("|").split("|")]
            cells[(header, parts[0])] = parts[1:]
    return cells


def dropped(old: str, new: str) -> list:
    """The numbers `old` shows that `new` does not: a row gone, or a cell now empty or "—"."""
    empty = ("", DASH, NOT_MADE, "open")
    new_cells, lost = table_cells(new), []
    for (header, label), cells in table_cells(old).items():
        now = new_cells.get((header, label))
        if now is None:
            if any(c not in empty for c in cells):
                lost.append(f"the row '{label}'")
            continue
        columns = [c.strip() for c in header.strip().strip("|").split("|")][1:]
        lost += [f"'{label}' / '{col}' ({was})" for col, was, is_ in zip(columns, cells, now)
                 if was not in empty and is_ in empty]
    return lost


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="The quality table and figure from tools/quality_runs.py's runs.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--records", default=qr.RECORDS,
                   help="the runs' records (quality_runs.py --records), or its --out directory")
    p.add_argument("--model-dir", default=os.path.join(REPO, "out", "smollm2"), help="the tasks' data (test labels)")
    p.add_argument("--png", help="draw the figure here (with --write: docs/quality.png)")
    p.add_argument("--long-png", help="draw the carried-on runs' figure here (with --write: docs/quality-long.png)")
    p.add_argument("--estimators-png",
                   help="draw the estimators' figure here (with --write: docs/quality-estimators.png)")
    p.add_argument("--write", action="store_true",
                   help="also write docs/quality.md's and the README's tables and the figures")
    p.add_argument("--allow-missing", action="store_true",
                   help="with --write: let numbers whose runs have no record turn into —")
    args = p.parse_args(argv)
    if args.png or args.long_png or args.estimators_png or args.write:
        requires.check(__file__, "matplotlib")
    res = Results(os.path.abspath(args.records))
    text = tables(res, qr.Paths(os.path.abspath(args.model_dir), res.out))
    print(text)
    est = estimators_tables(res)
    print(est)
    doc = os.path.join(REPO, "docs", "quality.md")
    if args.write and not args.allow_missing:
        lost = dropped(split_block(doc, "quality-table")[1], text)
        lost += dropped(split_block(doc, "estimators-table")[1], est)
        if lost:
            raise SystemExit(f"quality_table: {doc} shows numbers whose runs have no record in {res.out} "
                             "(make them, or --allow-missing):\n  " + "\n  ".join(lost))
    png = args.png or (os.path.join(REPO, "docs", "quality.png") if args.write else None)
    if png:
        figure(res, png)
        print(f"wrote {png}")
    long_png = args.long_png or (os.path.join(REPO, "docs", "quality-long.png") if args.write else None)
    if long_png and figure_long(res, long_png):
        print(f"wrote {long_png}")
    est_png = args.estimators_png or (os.path.join(REPO, "docs", "quality-estimators.png") if args.write else None)
    if est_png and figure_estimators(res, est_png):
        print(f"wrote {est_png}")
    if args.write:
        replace_block(doc, "quality-table", text)
        replace_block(doc, "estimators-table", est)
        head = text.split("\n\nWhat each took")[0] + "\n"
        replace_block(os.path.join(REPO, "README.md"), "quality-readme", head)
        # the estimators' goal and its verdict per task, without the table of every run
        replace_block(os.path.join(REPO, "README.md"), "estimators-readme", est.split("\n\nEvery run")[0] + "\n")
        print("wrote docs/quality.md and README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
