"""Every run behind the quality table (docs/quality.md), as data, and a runner
that makes what is missing.

    python3 tools/quality_runs.py list    [--only GLOB]   # each run: done or not, minutes
    python3 tools/quality_runs.py run     [--only GLOB] [--dry-run]
    python3 tools/quality_runs.py archive [--only GLOB]   # copy made runs' records to RECORDS

A run is one directory OUT/TASK/NAME (default OUT out/quality); it is done when
its run.json exists (written last: the commands, wall seconds, the CPU) there
or in its record (below: made on another machine; a run that carries it on
needs it made again here, for its checkpoint), so `run` makes only what is
missing, in the plan's order (a file OUT/STOP makes it stop before the next
run), and a run cut off midway is made again from its newest checkpoint, bit
for bit: distzo's (checkpoint.resume: latest) or PyTorch MeZO's
(mezo_finetune.py --checkpoint-interval 100 --resume); its wall seconds are
then the sum over its invocations (kept in OUT/TASK/NAME/seconds-spent.json
until it is made; run.json says how many invocations when more than one).

What the table is made from — run.json, eval.csv, test/eval.csv, result.json,
a few KB a run — is copied, once a run is made, to RECORDS/TASK/NAME/ (paths
relative to the checkout, the Python as python3; default docs/quality-runs,
committed: the table outlives the machine that made the runs; checkpoints and
logs stay in OUT). `archive` copies it again for runs already made. `run`
needs what tools/make_real_model.sh and tools/make_tasks.sh make first: MODEL_DIR
(default out/smollm2) with the model file and
MODEL_DIR/tasks/TASK-PROMPT/{train,dev,test}.h5; `list` needs neither.

The plan, in the order `run` makes it (NAME under OUT/TASK/):

  zeroshot-PROMPT-dev    distzo, optim.steps 0, each task's two prompts on dev
  zeroshot-PROMPT-test   the prompt chosen on dev (PROMPTS below), on test
  distzo-lrLR[-epsEPS]-sSEED
                         MeZO-SGD with distzo for STEPS steps from the deck
                         inputs/quality_movies.yaml (the task's files, lr, seed;
                         dev every 100 steps into eval.csv; checkpoints every
                         100, the last two kept), then test/: the last
                         checkpoint on test (optim.steps 0)
  distzo-...-resume      the run from its step STEPS-100 checkpoint in a new
                         directory: the digest, eval.csv and metrics.csv must
                         equal the straight run's (the runner checks it)
  probe                  tools/quality_reference.py probe (linear probe)
  finetune-lrLR          tools/quality_reference.py finetune (AdamW, 3 epochs)
  mezo-lrLR-sSEED        tools/mezo_finetune.py --keep-z: PyTorch MeZO on the
                         same batches for the same steps, test at the end
  distzo-lrLR-s1-MODE    the chosen run under P=2 (2 ranks), D=2 (2 ranks,
                         micro-batch 8: the same global batch), offload with
                         K=0 resident blocks, a bf16 master (stochastic rounding)
  ...-s1-toN             a seed-1 run (distzo, PyTorch MeZO) carried on from its
                         step-STEPS checkpoint to LONG_STEPS: with a constant lr
                         the same run as a straight one that long (eval.csv
                         holds the steps after STEPS); where the curves flatten
  fzoo-nN-lrLR-s1-third  FZOO (optim.estimator one_sided, N directions) for a
                         third of the budget of forward evaluations, over the
                         lr grid FZOO_LR_CANDIDATES; fzoo-nN-lrLR-s1: the
                         chosen lr (FZOO_LR) carried on to the whole budget
  lezo-kK-lrLR-s1[-third] block-sparse MeZO-SGD (optim.perturbed_blocks K), a
                         third of the budget over LEZO_LR_CANDIDATES, then the
                         chosen lr (LEZO_LR) carried on to all of it
  torch-fzoo-nN-lrLR-s1-third
                         tools/mezo_finetune.py's FZOO on the same deck at the
                         chosen lr: the PyTorch reference beside distzo's curve

The choices (the prompt of each task, its lr, ε, its first-order lr) are data
here (PROMPTS, LR, EPS, FT_LR), made on dev; tools/quality_table.py shows the dev
numbers they were made on and refuses a choice that is not the best on dev of
the runs that were made.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

from distzo_tools import REPO, TOOLS, requires

if __name__ == "__main__":  # before the import below: a missing package is one pip line
    requires.check(__file__, "yaml")

import yaml  # noqa: E402

BASE_DECK = os.path.join(REPO, "inputs", "quality_movies.yaml")
RECORDS = os.path.join(REPO, "docs", "quality-runs")
# a run directory's files that tools/quality_table.py reads, those a run has; run.json (its "made" mark) last
RECORD_FILES = ("eval.csv", os.path.join("test", "eval.csv"), "result.json", "run.json")

# task -> its two prompts (tools/make_tasks.sh), the one chosen on dev first
PROMPTS = {
    "movies": ("review", "movie"),
    "amazon": ("review", "product"),
    "tweets": ("tweet", "feel"),
    "nyt": ("text", "opinion"),
}
STEPS = 1000
# MeZO lr per task, chosen on dev among LR_CANDIDATES
LR = {"movies": 1e-5, "amazon": 3e-5, "tweets": 3e-5, "nyt": 3e-5}
# Per task: 1e-5 and 3e-5 everywhere, and 1e-4 where 3e-5, the grid's top, won (a choice at the
# edge of a grid is not a choice); movies' 3e-5 already overshot (its dev loss turned up)
LR_CANDIDATES = {"movies": (1e-5, 3e-5), "amazon": (1e-5, 3e-5, 1e-4), "tweets": (1e-5, 3e-5, 1e-4),
                 "nyt": (1e-5, 3e-5, 1e-4)}
# MeZO's ε for every task (the deck's, MeZO's 1e-3), chosen on dev on movies at its lr among EPS_CANDIDATES
EPS = 1e-3
EPS_CANDIDATES = (1e-4, 1e-3, 1e-2)
# first-order (AdamW, linear decay, 3 epochs) lr per task, chosen on dev among FT_LR_CANDIDATES
FT_LR = {"movies": 1e-4, "amazon": 1e-4, "tweets": 1e-5, "nyt": 3e-5}
# Per task: 1e-5 and 3e-5 everywhere, and the next lr up wherever the grid's top won (as for MeZO's lr):
# 1e-4 where 3e-5 won, 3e-4 where 1e-4 then won (movies, amazon)
FT_LR_CANDIDATES = {"movies": (1e-5, 3e-5, 1e-4, 3e-4), "amazon": (1e-5, 3e-5, 1e-4, 3e-4), "tweets": (1e-5, 3e-5),
                    "nyt": (1e-5, 3e-5, 1e-4)}
SEEDS = {"movies": (1, 2, 3), "amazon": (1,), "tweets": (1,), "nyt": (1,)}
MEZO_SEEDS = {"movies": (1, 2, 3), "amazon": (1,), "tweets": (1,), "nyt": (1,)}
MODES_TASK = "movies"
# mode -> (ranks, deck sections merged over the plain deck); MODE_MINUTES: each one's wall time, measured
MODES = {
    "p2": (2, {"parallel": {"perturbation": 2}}),
    "d2": (2, {"parallel": {"data": 2}, "data": {"micro_batch": 8}}),
    "offload0": (1, {"placement": {"mode": "offload", "resident_blocks": 0}}),
    "bf16": (1, {"precision": {"storage": "bf16", "rounding": "stochastic"}}),
}
MODE_MINUTES = {"p2": 39, "d2": 40, "offload0": 44, "bf16": 42}
# the longer runs: the curves of amazon, tweets and nyt still rose at STEPS; movies' dev loss still
# fell, and 3000 steps tests its extrapolation to first-order fine-tuning's (docs/quality.md).
# PyTorch MeZO is carried on where its run kept a checkpoint (movies' first one did not).
LONG_STEPS = {"movies": 3000, "amazon": 2000, "tweets": 2000, "nyt": 2000}
LONG_MEZO = ("amazon", "tweets", "nyt")
# Estimators beyond MeZO-SGD (optim.estimator, docs/perturbation.md), judged in forward evaluations of a
# 16-example micro-batch: MeZO-SGD's STEPS steps are BUDGET = 2 x STEPS of them. one_sided is FZOO's
# (N directions + L(θ): N + 1 evaluations a step, Rademacher z). Its lr is chosen on dev among
# FZOO_LR_CANDIDATES with runs of a third of the budget (the goal: MeZO's step-STEPS dev accuracy in at
# most a third of its evaluations), dev every EVAL_EVALUATIONS evaluations (MeZO's every 100 steps);
# the chosen run is carried on from there to the whole budget (constant lr: the same run as a straight
# one). FZOO_LR: the choice, per task, once its grid is made.
SPSA_EVALUATIONS = 2  # MeZO-SGD (spsa, one query): L(θ + εz) and L(θ − εz) a step
BUDGET = SPSA_EVALUATIONS * STEPS
EVAL_EVALUATIONS = 200
FZOO_N = 8
# movies: 1e-4 and 3e-4 trailed MeZO-SGD at every equal evaluation count (dev loss and accuracy), and
# a FZOO step spends 9 evaluations where MeZO's spends 2, so the grid reaches up to 3e-3; 1e-3 and
# 3e-3 ended at the same dev accuracy (79.8 %), 1e-3 with the lower dev loss (0.436 vs 0.448).
# The other tasks start from movies' two best lrs; one that wins at the grid's edge extends it (a
# choice at the edge of a grid is not a choice): 1e-3 won on tweets and on amazon, so both go down to 3e-4;
# on tweets 3e-4 trailed (87.8 % against 92.0 % on dev), so 1e-3 is its choice. On nyt 3e-3 won (90.0 % at
# its step 66, against 1e-3's 88.0 % at the end) at the grid's upper edge; 1e-2 diverged (64.4 %), so 3e-3 stays.
# On amazon 3e-4 tied 1e-3 at 85.4 % on dev, 1e-3 with the lower dev loss (0.373 vs 0.418), as on movies: 1e-3.
FZOO_LR_CANDIDATES = {"movies": (1e-4, 3e-4, 1e-3, 3e-3), "amazon": (3e-4, 1e-3, 3e-3), "tweets": (3e-4, 1e-3, 3e-3),
                      "nyt": (1e-3, 3e-3, 1e-2)}
FZOO_LR = {"movies": 1e-3, "amazon": 1e-3, "tweets": 1e-3, "nyt": 3e-3}
# Block-sparse MeZO-SGD (optim.perturbed_blocks: LeZO's layer-wise sparsity): K = LEZO_K of SmolLM2's 30
# decoder blocks perturbed and updated a step, two evaluations a step like MeZO-SGD; a smaller z reaches
# fewer parameters, so its lr grid starts at MeZO's and goes up. Movies only until a run there says it
# pays; LEZO_LR: the choice, once made.
LEZO_K = 8
LEZO_LR_CANDIDATES = {"movies": (1e-5, 3e-5)}
LEZO_LR = {}


def lr_tag(lr: float) -> str:
    return f"{lr:.0e}".replace("e-0", "e-").replace("e+0", "e")


@dataclass
class Run:
    """One directory of the plan. kind: zeroshot | distzo | resume | probe | finetune | mezo."""

    task: str
    kind: str
    name: str
    prompt: str
    split: str = "dev"  # zeroshot: the set evaluated
    lr: float = 0.0
    seed: int = 1
    mode: str = ""  # distzo: "" (one rank, resident, fp32) or a key of MODES
    steps: int = STEPS  # distzo, mezo: more carries on the run of `parent` from its step STEPS
    eps: float = EPS  # distzo: MeZO's ε
    estimator: str = "spsa"  # distzo: optim.estimator
    queries: int = 1  # distzo: optim.queries (one_sided: N)
    perturbed_blocks: int = 0  # distzo: optim.perturbed_blocks (0: every block)
    parent_steps: int = STEPS  # the step of the parent's checkpoint a longer run carries on from
    minutes: float = 0.0  # the estimate `list` shows: measured on the 2-core AMD EPYC

    @property
    def key(self) -> str:
        return f"{self.task}/{self.name}"

    @property
    def parent(self) -> str:
        """The run a longer run carries on, or ""."""
        return parent_name(self.name)


def longer_name(task: str, name: str) -> str:
    """The name of run `name` carried on to its task's LONG_STEPS."""
    return f"{name}-to{LONG_STEPS[task]}"


def parent_name(name: str) -> str:
    """The run a longer run's `name` carries on (the name without -toN; an estimator's whole-budget
    run carries on its third-budget run, NAME-third), or ""."""
    m = re.fullmatch(r"(.+)-to\d+", name)
    if m:
        return m.group(1)
    return (name + "-third" if name.startswith(("fzoo-", "lezo-")) and not name.endswith("-third")
            else "")


def longer(run: Run) -> Run:
    """`run` (a seed-1 distzo or MeZO run) carried on to its task's LONG_STEPS."""
    steps = LONG_STEPS[run.task]
    return Run(run.task, run.kind, longer_name(run.task, run.name), run.prompt, lr=run.lr, seed=run.seed,
               steps=steps, minutes=round(run.minutes * (steps - STEPS) / STEPS))


def distzo_name(lr: float, seed: int, mode: str = "", eps: float = EPS) -> str:
    return (f"distzo-lr{lr_tag(lr)}" + (f"-eps{lr_tag(eps)}" if eps != EPS else "") + f"-s{seed}"
            + (f"-{mode}" if mode else ""))


def plan() -> list:
    """Every run, in the order `run` makes them: the table's core first (one
    long run per task and its references), then the lr comparisons the other
    runs depend on, then seeds, the PyTorch MeZO curves, the modes."""
    runs = []
    for task, prompts in PROMPTS.items():
        runs += [Run(task, "zeroshot", f"zeroshot-{p}-dev", p, "dev", minutes=0.35) for p in prompts]
        runs.append(Run(task, "zeroshot", f"zeroshot-{prompts[0]}-test", prompts[0], "test", minutes=0.65))
    for task in PROMPTS:
        runs.append(Run(task, "probe", "probe", PROMPTS[task][0], minutes=3))
    for task in PROMPTS:
        runs.append(distzo_run(task, LR[task], 1))
    runs.append(mezo_run("movies", 1))
    runs += [finetune_run(task, FT_LR[task]) for task in PROMPTS]  # the ceilings; the rest of each grid below
    for task in PROMPTS:
        if task != "movies":
            runs += [distzo_run(task, lr, 1) for lr in LR_CANDIDATES[task] if lr != LR[task]]
    runs += [distzo_run("movies", LR["movies"], 1, eps=eps) for eps in EPS_CANDIDATES if eps != EPS]
    for task in PROMPTS:
        runs += [distzo_run(task, LR[task], seed) for seed in SEEDS[task][1:]]
    runs += [mezo_run(task, 1) for task in PROMPTS if task != "movies"]
    runs += [finetune_run(task, lr) for task in PROMPTS for lr in FT_LR_CANDIDATES[task] if lr != FT_LR[task]]
    runs += [distzo_run(MODES_TASK, LR[MODES_TASK], 1, mode) for mode in MODES]
    for task in PROMPTS:
        runs.append(Run(task, "resume", distzo_name(LR[task], 1) + "-resume", PROMPTS[task][0], lr=LR[task],
                        minutes=4))
    runs += [distzo_run("movies", lr, 1) for lr in LR_CANDIDATES["movies"] if lr != LR["movies"]]
    for task in PROMPTS:
        runs += [mezo_run(task, seed) for seed in MEZO_SEEDS[task][1:]]
    for task in PROMPTS:
        runs.append(longer(distzo_run(task, LR[task], 1)))
        if task in LONG_MEZO:
            runs.append(longer(mezo_run(task, 1)))
    return runs + estimator_runs()


def fzoo_run(task: str, lr: float, seed: int, third: bool) -> Run:
    """FZOO's one-sided estimator with N = FZOO_N at `lr`: a third of the budget, or all of it (carried
    on from the third)."""
    evaluations = FZOO_N + 1
    third_steps = BUDGET // 3 // evaluations
    steps = third_steps if third else BUDGET // evaluations
    name = f"fzoo-n{FZOO_N}-lr{lr_tag(lr)}-s{seed}" + ("-third" if third else "")
    minutes = 0.027 * steps * evaluations  # 2 evaluations of SmolLM2 at 16 examples: ~3.2 s on 2 cores
    return Run(task, "distzo", name, PROMPTS[task][0], lr=lr, seed=seed, steps=steps, estimator="one_sided",
               queries=FZOO_N, parent_steps=third_steps, minutes=round(minutes if third else minutes * 2 / 3))


def torch_fzoo_run(task: str, lr: float, seed: int) -> Run:
    """FZOO as the PyTorch reference implements it (tools/mezo_finetune.py with the same deck: the same
    model file, batches, N, ε, Rademacher z and lr) for a third of the budget: its curve beside distzo's
    shows that a gain is the method's, not distzo's."""
    evaluations = FZOO_N + 1
    steps = BUDGET // 3 // evaluations
    return Run(task, "mezo", f"torch-fzoo-n{FZOO_N}-lr{lr_tag(lr)}-s{seed}-third", PROMPTS[task][0], lr=lr,
               seed=seed, steps=steps, estimator="one_sided", queries=FZOO_N, parent_steps=steps,
               minutes=round(0.03 * steps * evaluations))  # PyTorch MeZO: 57 min for 2 000 evaluations


def lezo_run(task: str, lr: float, seed: int, third: bool) -> Run:
    """Block-sparse MeZO-SGD (K = LEZO_K blocks a step) at `lr`: a third of the budget, or all of it
    (carried on from the third)."""
    third_steps = BUDGET // 3 // SPSA_EVALUATIONS
    steps = third_steps if third else BUDGET // SPSA_EVALUATIONS
    name = f"lezo-k{LEZO_K}-lr{lr_tag(lr)}-s{seed}" + ("-third" if third else "")
    minutes = 0.027 * steps * SPSA_EVALUATIONS
    return Run(task, "distzo", name, PROMPTS[task][0], lr=lr, seed=seed, steps=steps, perturbed_blocks=LEZO_K,
               parent_steps=third_steps, minutes=round(minutes if third else minutes * 2 / 3))


def estimator_runs() -> list:
    """The estimators' grids, then each chosen lr carried on to the whole budget, then the PyTorch
    reference at each chosen lr; then block-sparse MeZO-SGD's grid and choice."""
    runs = [fzoo_run(task, lr, 1, True) for task, lrs in FZOO_LR_CANDIDATES.items() for lr in lrs]
    runs += [fzoo_run(task, lr, 1, False) for task, lr in FZOO_LR.items()]
    runs += [torch_fzoo_run(task, lr, 1) for task, lr in FZOO_LR.items()]
    runs += [lezo_run(task, lr, 1, True) for task, lrs in LEZO_LR_CANDIDATES.items() for lr in lrs]
    return runs + [lezo_run(task, lr, 1, False) for task, lr in LEZO_LR.items()]


def distzo_run(task: str, lr: float, seed: int, mode: str = "", eps: float = EPS) -> Run:
    return Run(task, "distzo", distzo_name(lr, seed, mode, eps), PROMPTS[task][0], lr=lr, seed=seed, mode=mode,
               eps=eps, minutes=MODE_MINUTES[mode] if mode else 40)


def finetune_run(task: str, lr: float) -> Run:
    return Run(task, "finetune", f"finetune-lr{lr_tag(lr)}", PROMPTS[task][0], lr=lr,
               minutes=15 if task in ("movies", "tweets") else 11)


def mezo_name(lr: float, seed: int) -> str:
    return f"mezo-lr{lr_tag(lr)}-s{seed}"


def mezo_run(task: str, seed: int) -> Run:
    return Run(task, "mezo", mezo_name(LR[task], seed), PROMPTS[task][0], lr=LR[task], seed=seed,
               minutes=57)


class Paths:
    def __init__(self, model_dir: str, out: str):
        self.model_dir, self.out = model_dir, out

    @property
    def model(self) -> str:
        """The model file; only making a run needs it (`list` and the table read records)."""
        models = sorted(f for f in os.listdir(self.model_dir) if f.endswith(".h5")) \
            if os.path.isdir(self.model_dir) else []
        if not models:
            raise SystemExit(f"quality_runs: no model file in {self.model_dir} (run tools/make_real_model.sh first)")
        return os.path.join(self.model_dir, models[0])

    def task_file(self, task: str, prompt: str, split: str) -> str:
        return os.path.join(self.model_dir, "tasks", f"{task}-{prompt}", f"{split}.h5")

    def data(self, task: str, prompt: str, split: str) -> str:
        """task_file, which must exist (making a run needs it)."""
        path = self.task_file(task, prompt, split)
        if not os.path.isfile(path):
            raise SystemExit(f"quality_runs: {path} missing (run tools/make_tasks.sh {self.model_dir})")
        return path

    def run_dir(self, run: Run) -> str:
        return os.path.join(self.out, run.task, run.name)


def merge(deck: dict, sections: dict) -> dict:
    for section, values in sections.items():
        deck.setdefault(section, {}).update(values)
    return deck


def distzo_deck(paths: Paths, run: Run, out_dir: str) -> dict:
    """The long-run deck (inputs/quality_movies.yaml) for this run's task, lr, seed and mode."""
    with open(BASE_DECK, encoding="utf-8") as fh:
        deck = yaml.safe_load(fh)
    deck["model"]["path"] = paths.model
    deck["data"]["train"] = paths.data(run.task, run.prompt, "train")
    deck["data"]["eval"] = paths.data(run.task, run.prompt, "dev")
    deck["optim"].update(steps=run.steps, lr=run.lr or LR[run.task], eps=run.eps, seed=run.seed)
    deck["checkpoint"] = {"interval": 100, "keep": 2, "resume": "latest"}
    if run.estimator != "spsa":  # FZOO's: Rademacher z; dev and checkpoints by evaluations, not steps
        evaluations = run.queries + 1
        deck["optim"].update(estimator=run.estimator, queries=run.queries, distribution="rademacher")
        deck["eval"]["interval"] = EVAL_EVALUATIONS // evaluations
        deck["checkpoint"]["interval"] = run.parent_steps
    if run.perturbed_blocks:  # block-sparse: dev every 100 steps as MeZO's; checkpoints where the third ends
        deck["optim"]["perturbed_blocks"] = run.perturbed_blocks
        deck["checkpoint"]["interval"] = run.parent_steps
    deck["output"]["dir"] = out_dir
    return merge(deck, MODES[run.mode][1]) if run.mode else deck


def eval_deck(paths: Paths, model: str, train: str, eval_set: str, out_dir: str) -> dict:
    """optim.steps 0: evaluate `model` on `eval_set` once (micro-batch 16)."""
    with open(BASE_DECK, encoding="utf-8") as fh:
        deck = yaml.safe_load(fh)
    deck["model"]["path"] = model
    deck["data"].update(train=train, eval=eval_set)
    deck["optim"]["steps"] = 0
    deck.pop("checkpoint", None)
    deck.pop("eval", None)
    deck["output"]["dir"] = out_dir
    return deck


def write_deck(path: str, deck: dict) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# written by tools/quality_runs.py\n")
        yaml.safe_dump(deck, fh, sort_keys=False)
    return path


PYTHON_KINDS = ("probe", "finetune", "mezo")  # the runs made by tools/quality_reference.py and mezo_finetune.py


def commands(paths: Paths, run: Run, distzo: str, python: str) -> list:
    """The commands that make `run`, each an argv list; decks are written on the way."""
    d = paths.run_dir(run)
    test = paths.data(run.task, run.prompt, "test")
    if run.kind == "zeroshot":
        deck = eval_deck(paths, paths.model, paths.data(run.task, run.prompt, "train"),
                         paths.data(run.task, run.prompt, run.split), d)
        return [[distzo, "run", write_deck(os.path.join(d, "deck.yaml"), deck)]]
    if run.kind == "distzo":
        ranks = MODES[run.mode][0] if run.mode else 1
        deck = distzo_deck(paths, run, d)
        if run.parent and not (os.path.isdir(d) and any(f.startswith("ckpt-") for f in os.listdir(d))):
            deck["checkpoint"]["resume"] = parent_checkpoint(paths, run, f"ckpt-{run.parent_steps:06d}.h5")
        train = write_deck(os.path.join(d, "deck.yaml"), deck)
        last = os.path.join(d, f"ckpt-{run.steps:06d}.h5")
        test_deck = eval_deck(paths, last, paths.data(run.task, run.prompt, "train"), test, os.path.join(d, "test"))
        launch = ["mpiexec", "-n", str(ranks)] if ranks > 1 else []
        return [launch + [distzo, "run", train],
                [distzo, "run", write_deck(os.path.join(d, "test", "deck.yaml"), test_deck)]]
    if run.kind == "resume":
        straight = os.path.join(paths.out, run.task, distzo_name(run.lr, run.seed))
        deck = distzo_deck(paths, run, d)
        deck["checkpoint"]["resume"] = os.path.join(straight, f"ckpt-{STEPS - 100:06d}.h5")
        return [[distzo, "run", write_deck(os.path.join(d, "deck.yaml"), deck)]]
    # the Python references read a distzo deck of the task
    deck = write_deck(os.path.join(d, "deck.yaml"), distzo_deck(paths, run, d))
    if run.kind == "probe":
        return [[python, os.path.join(TOOLS, "quality_reference.py"), "probe", deck, "--test", test, "--out", d]]
    if run.kind == "finetune":
        return [[python, os.path.join(TOOLS, "quality_reference.py"), "finetune", deck, "--test", test, "--out", d,
                 "--lr", repr(run.lr)]]
    if run.kind == "mezo":
        parent = ["--resume-from", parent_checkpoint(paths, run, "mezo-checkpoint.pt")] if run.parent else []
        return [[python, os.path.join(TOOLS, "mezo_finetune.py"), deck, "--out", d, "--keep-z", "--test", test,
                 "--checkpoint-interval", "100", "--resume", *parent]]
    raise ValueError(run.kind)


def parent_checkpoint(paths: Paths, run: Run, name: str) -> str:
    """The step-STEPS checkpoint of the run `run` carries on."""
    path = os.path.join(paths.out, run.task, run.parent, name)
    if not os.path.isfile(os.path.join(paths.out, run.task, run.parent, "run.json")) or not os.path.isfile(path):
        raise SystemExit(f"quality_runs: {run.key} carries on {run.task}/{run.parent}, which is not made "
                         f"here or has no {name} (one with only a record was made elsewhere: remove its record "
                         "to make it again here)")
    return path


def read_csv_rows(path: str) -> list:
    with open(path, encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in fh]


# The UTC time distzo writes at the start of every run.log line
# ("2026-12-06T22:41:07.123Z "); logs of runs before it have none.
LOG_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")


def log_message(line: str) -> str:
    """A run.log line without the time it was written."""
    return LOG_STAMP.sub("", line, count=1)


def final_digest(run_dir: str) -> str:
    """The digest of a distzo run's `done:` line in run.log."""
    with open(os.path.join(run_dir, "run.log"), encoding="utf-8") as fh:
        done = [m for m in map(log_message, fh) if m.startswith("done:")]
    if not done:
        raise SystemExit(f"quality_runs: {run_dir}/run.log has no 'done:' line")
    return done[-1].rsplit("digest ", 1)[1].strip()


def check_resume(paths: Paths, run: Run) -> dict:
    """The resumed run must end as the straight one: digest, the dev evaluation
    at STEPS, metrics.csv's trajectory columns (step .. tokens) for the steps it ran."""
    d = paths.run_dir(run)
    straight = os.path.join(paths.out, run.task, distzo_name(run.lr, run.seed))
    a, b = final_digest(straight), final_digest(d)
    if a != b:
        raise SystemExit(f"quality_runs: {run.key}: digest {b} after the resume, {a} straight")
    ev_a, ev_b = read_csv_rows(os.path.join(straight, "eval.csv")), read_csv_rows(os.path.join(d, "eval.csv"))
    if ev_b[-1] != ev_a[-1]:
        raise SystemExit(f"quality_runs: {run.key}: last evaluation {ev_b[-1]!r}, straight {ev_a[-1]!r}")

    def trajectory(path):
        rows = read_csv_rows(path)
        header = rows[0].split(",")
        cols = header.index("tokens") + 1 if "tokens" in header else len(header) - 1
        return {r.split(",")[0]: r.split(",")[:cols] for r in rows[1:]}

    ta, tb = trajectory(os.path.join(straight, "metrics.csv")), trajectory(os.path.join(d, "metrics.csv"))
    resumed = [s for s in tb if int(s) > STEPS - 100]
    diff = [s for s in resumed if tb[s] != ta.get(s)]
    if diff or len(resumed) != 100:
        raise SystemExit(f"quality_runs: {run.key}: metrics.csv differs at steps {diff[:5]} ({len(resumed)} resumed)")
    return {"digest": b, "steps_compared": len(resumed)}


def cpu_model() -> str:
    with open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def portable(text: str, out: str = "") -> str:
    """A record's text without this machine's paths: this Python as python3, the runs' directory `out`
    as the default out/quality, any distzo executable as the checkout's build/distzo (a copy elsewhere
    is the same build), the checkout's other paths relative to it."""
    text = text.replace(sys.executable, "python3")
    if out:
        text = text.replace(os.path.abspath(out) + os.sep, os.path.join("out", "quality") + os.sep)
    text = re.sub(r'(^|[\s"])/[^\s"]*/distzo(?=\s)', r"\1build/distzo", text)
    return text.replace(REPO + os.sep, "")


def archive(run_dir: str, record_dir: str, out: str = "") -> list:
    """Copy a made run's record files (RECORD_FILES it has) from run_dir (under the runs' directory
    `out`) to record_dir, their paths portable; the copied names."""
    copied = []
    for name in RECORD_FILES:
        src = os.path.join(run_dir, name)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(record_dir, name)), exist_ok=True)
            with open(src, encoding="utf-8") as fh:
                text = fh.read()
            with open(os.path.join(record_dir, name), "w", encoding="utf-8") as fh:
                fh.write(portable(text, out))
            copied.append(name)
    return copied


SPENT = "seconds-spent.json"  # in a run's directory while it is not made: its cut-off invocations' wall time


def read_spent(path: str) -> dict:
    if not os.path.exists(path):
        return {"seconds": 0.0, "invocations": 0}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def write_json(path: str, value: dict) -> None:
    """Whole or not at all: a run cut off while writing leaves the old file."""
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(value, fh, indent=1)
        fh.write("\n")
    os.replace(path + ".tmp", path)


def make(paths: Paths, run: Run, distzo: str, python: str, dry_run: bool, records: str) -> None:
    d = paths.run_dir(run)
    cmds = commands(paths, run, distzo, python)
    if dry_run:
        for cmd in cmds:
            print(f"quality_runs: {run.key}: {shlex.join(cmd)}", flush=True)
        return
    # A run cut off midway (a signal to distzo, a stopped session) is made again from its
    # checkpoint; its wall seconds are all its invocations' (SPENT), not only the last one's.
    spent_path = os.path.join(d, SPENT)
    spent = read_spent(spent_path)
    t0 = time.time()
    try:
        for cmd in cmds:
            print(f"quality_runs: {run.key}: {shlex.join(cmd)}", flush=True)
            with open(os.path.join(d, "stdout.log"), "a", encoding="utf-8") as log:
                rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
            if rc != 0:
                raise SystemExit(f"quality_runs: {run.key}: exit status {rc} ({d}/stdout.log)")
    except BaseException:
        write_json(spent_path, {"seconds": round(spent["seconds"] + time.time() - t0, 1),
                                "invocations": spent["invocations"] + 1})
        raise
    record = {"run": run.key, "kind": run.kind, "commands": [shlex.join(c) for c in cmds],
              "seconds": round(spent["seconds"] + time.time() - t0, 1), "cpu": cpu_model(), "cpus": os.cpu_count(),
              "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if spent["invocations"]:
        record["invocations"] = spent["invocations"] + 1
    if run.kind == "resume":
        record.update(check_resume(paths, run))
    if run.kind in ("distzo", "resume"):
        record["digest"] = final_digest(d)
    write_json(os.path.join(d, "run.json"), record)
    if os.path.exists(spent_path):
        os.remove(spent_path)
    archive(d, os.path.join(records, run.task, run.name), paths.out)
    print(f"quality_runs: {run.key}: done in {record['seconds']:.0f} s (record in {records})", flush=True)


def made_in(root: str, run: Run) -> bool:
    """Whether `run` is made in root: an OUT directory of runs or the records."""
    return os.path.exists(os.path.join(root, run.task, run.name, "run.json"))


def selected(runs: list, only: list) -> list:
    return [r for r in runs if not only or any(fnmatch.fnmatch(r.key, g) for g in only)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Make the runs behind the quality table (docs/quality.md).",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("command", choices=("list", "run", "archive"))
    p.add_argument("--only", action="append", default=[], metavar="GLOB",
                   help="runs whose TASK/NAME matches, e.g. 'movies/*' or '*/probe' (repeatable)")
    p.add_argument("--model-dir", default=os.path.join(REPO, "out", "smollm2"))
    p.add_argument("--out", default=os.path.join(REPO, "out", "quality"))
    p.add_argument("--records", default=RECORDS, help="where each made run's record is copied (default %(default)s)")
    p.add_argument("--distzo", default=os.environ.get("DISTZO", os.path.join(REPO, "build", "distzo")))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--dry-run", action="store_true", help="write the decks, print the commands, run nothing")
    args = p.parse_args(argv)
    paths = Paths(os.path.abspath(args.model_dir), os.path.abspath(args.out))
    runs = selected(plan(), args.only)
    if not runs:
        raise SystemExit(f"quality_runs: no run matches --only {' --only '.join(args.only)} "
                         "(`quality_runs.py list` names every run, TASK/NAME)")
    here = [r for r in runs if made_in(paths.out, r)]
    todo = [r for r in runs if r not in here and not made_in(args.records, r)]
    if args.command == "list":
        for r in runs:
            print(f"{'done' if r in here else 'todo' if r in todo else 'record':6} {r.key:40} ~{r.minutes:g} min")
        print(f"{len(runs) - len(todo)} of {len(runs)} done ('record': made elsewhere, only its record here); "
              f"about {sum(r.minutes for r in todo) / 60:.1f} h left on 2 cores")
        return 0
    if args.command == "archive":
        for r in here:
            copied = archive(paths.run_dir(r), os.path.join(args.records, r.task, r.name), paths.out)
            print(f"quality_runs: {r.key}: {', '.join(copied)} -> {os.path.join(args.records, r.task, r.name)}")
        print(f"quality_runs: {len(here)} records copied to {args.records}")
        return 0
    if not args.dry_run and not os.access(args.distzo, os.X_OK):
        raise SystemExit(f"quality_runs: no distzo at {args.distzo} (build it, or --distzo / $DISTZO)")
    if not args.dry_run and any(r.kind in PYTHON_KINDS for r in todo):
        # the Python references run under --python: its packages, checked before hours of runs
        rc = subprocess.call([args.python, os.path.join(TOOLS, "requires.py"), "quality_runs.py",
                              "numpy", "h5py", "torch", "transformers", "yaml"])
        if rc != 0:
            return rc
    stop = os.path.join(paths.out, "STOP")
    for i, r in enumerate(todo):
        if os.path.exists(stop):
            print(f"quality_runs: {stop} exists: stopping before {r.key} (remove it to go on)", flush=True)
            return 0
        print(f"quality_runs: [{i + 1}/{len(todo)}] {r.key} (~{r.minutes:g} min)", flush=True)
        make(paths, r, args.distzo, args.python, args.dry_run, os.path.abspath(args.records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
