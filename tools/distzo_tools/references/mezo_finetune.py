"""Fine-tune with the PyTorch MeZO or FZOO reference, from a distzo deck: the
baseline curve next to distzo's.

    python3 tools/mezo_finetune.py inputs/demo.yaml --out out/mezo-demo
    python3 tools/mezo_finetune.py inputs/demo.yaml --out out/mezo-s2 --set optim.seed=2

reads the same deck `distzo run` reads (model.path, data.train, data.eval,
data.micro_batch, data.shuffle_seed, optim.steps/lr/schedule/warmup_steps/eps/
weight_decay/seed/estimator/queries/distribution, eval.interval/max_examples)
and trains the same model file on the same dataset files with the deck's
estimator as implemented in tools/mezo_reference.py:

  * optim.estimator: spsa (the default): MeZO-SGD (Malladi et al. 2023,
    Algorithm 1: in-place θ ± εz with torch.manual_seed(s) and torch.normal
    per tensor, projected gradient, in-place update; mezo_step). Only
    optim.queries = 1 with the gaussian distribution (MeZO's setting).
  * optim.estimator: one_sided: FZOO (Dang et al. 2025, as DKmiyan/FZOO
    trainer.py zo_step / zo_update; mezo_reference.one_sided_step): N =
    optim.queries >= 2 directions u_i, rademacher (FZOO's
    torch.randint(0, 2) * 2 - 1) or gaussian, each drawn after
    torch.manual_seed(direction_seed(seed, step, i)); in place θ += εu_i,
    L_i = L(θ), θ −= εu_i; then L0 = L(θ); σ = population std of the L_i;
    θ ← θ − lr·Σ_i (L_i − L0)/(Nσ)·u_i − lr·wd·θ (the weight decay MeZO's
    rule gives, on no bias or norm, once a step; FZOO's code has none). A
    step with σ = 0 or a non-finite loss is skipped (θ kept), as distzo
    skips it.

What is the same as distzo, on purpose:

  * the examples of every step: distzo's data order (docs/datasets.md, "Data
    order": Philox-4x32-10 Fisher-Yates per epoch), re-implemented here, so step
    s sees exactly the micro-batch distzo's step s sees;
  * the loss: MeZO's classification loss — the logits of the last prompt token
    (position lengths[i]-1) restricted to the candidate tokens, softmax
    cross-entropy against the label, mean over the batch (prediction = argmax);
    for OPT, Llama (and kin) and Gemma 3 model files alike (the rotary models
    get distzo's positions, mezo_reference.position_ids_from_mask; their
    lm_head may be untied);
  * the learning-rate schedule (distzo's warm-up from 0, constant / linear /
    cosine decay) and the evaluations (before training, every eval.interval
    steps, at the end; the first eval.max_examples examples, in file order).

What differs: z. distzo draws it from counter-based Philox (docs/perturbation.md),
MeZO from torch's generator, so the two runs are different random searches from
the same start; compare curves, not parameters. L(θ) does not depend on z, so
one_sided's step-1 `loss` (L0) is distzo's step-1 `loss` up to float rounding
(tools/tests/test_references.py checks it).

Outputs in --out, in distzo's CSV formats: eval.csv (step,eval_loss,accuracy,
examples), metrics.csv (step,loss,loss_plus,loss_minus,g,lr,step_seconds; as
distzo writes them: spsa's loss is (L+ + L−)/2; one_sided's loss is L0,
loss_plus the mean of the L_i, loss_minus empty, g the mean of the
(L_i − L0)/σ, not finite for a skipped step) and run.log. The model is not
saved unless --save MODEL.h5.

Checkpoints (--checkpoint-interval N): every N steps and after the last,
--out/mezo-checkpoint.pt (θ in fp32, the step, the settings, how many CSV rows
were written; one file, replaced atomically). --resume continues from it, bit
for bit: z (every direction's) and the micro-batch of a step depend on the
step alone, so a run cut off at any point and resumed ends with the straight
run's eval.csv and metrics.csv (but step_seconds). With a constant lr it also extends a finished
run to more steps (--set optim.steps=2000), in place or, with --resume-from
OTHER/mezo-checkpoint.pt, into a new --out that starts with OTHER's CSV rows;
any other setting must be the checkpoint's, torch threads included (they
change the bits of a GEMM).

Needs torch, transformers, numpy, h5py, pyyaml (tools/mezo_reference.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from distzo_tools.references import mezo_reference  # noqa: E402  (load_model_h5, mezo_step, ...)

# ---------------------------------------------------------------------------
# distzo's data order (docs/datasets.md)

M32 = 0xFFFFFFFF


def philox(c, k):
    """Philox-4x32-10 on one counter block."""
    c, k = list(c), list(k)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k[1]) & M32, p0 & M32]
    return c


def permutation(n: int, seed: int, epoch: int) -> list:
    key = philox([epoch & M32, epoch >> 32, 0, 0x444B4559], [seed & M32, seed >> 32])[:2]
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        w = philox([i & M32, i >> 32, 0, 0x44535750], key)
        j = ((w[1] << 32) | w[0]) % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


assert permutation(10, 1234, 0) == [3, 0, 6, 7, 5, 8, 9, 1, 4, 2]  # tests/test_dataset.cpp


class DataOrder:
    """Step s of a single replica takes positions [s*B, (s+1)*B) of the
    concatenated per-epoch permutations."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.cache = n, seed, {}

    def _perm(self, epoch):
        if epoch not in self.cache:
            if len(self.cache) > 2:
                self.cache.pop(min(self.cache))
            self.cache[epoch] = permutation(self.n, self.seed, epoch)
        return self.cache[epoch]

    def micro_batch(self, step: int, batch: int) -> list:
        return [self._perm(p // self.n)[p % self.n] for p in range(step * batch, (step + 1) * batch)]


def lr_at(step: int, peak: float, schedule: str, warmup: int, total: int) -> float:
    """distzo's LrSchedule::at (src/zo/lr_schedule.cpp)."""
    if step < warmup:
        return peak * step / max(1, warmup)
    if schedule == "constant":
        return peak
    progress = (step - warmup) / max(1, total - warmup)
    if schedule == "linear":
        return peak * max(0.0, 1.0 - progress)
    return peak * max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


# ---------------------------------------------------------------------------
# data and loss


class ClassificationData:
    """A distzo classification dataset file (docs/datasets.md) as torch tensors."""

    def __init__(self, path: str):
        import torch

        with h5py.File(path, "r") as f:
            task = f.attrs["task"]
            task = task.decode() if isinstance(task, bytes) else str(task)
            if task != "classification":
                raise SystemExit(f"mezo_finetune: {path}: task {task!r}; only classification is implemented")
            self.input_ids = torch.from_numpy(f["input_ids"][()].astype(np.int64))
            self.lengths = torch.from_numpy(f["lengths"][()].astype(np.int64))
            self.labels = torch.from_numpy(f["labels"][()].astype(np.int64))
            self.candidates = torch.from_numpy(f["candidates"][()].astype(np.int64))
        self.n, self.seq_len = self.input_ids.shape
        self.path = path

    def batch(self, idx) -> dict:
        import torch

        idx = torch.as_tensor(idx, dtype=torch.long)
        ids, lengths = self.input_ids[idx], self.lengths[idx]
        # trim trailing all-pad columns: right padding does not change the result
        width = int(lengths.max())
        ids = ids[:, :width]
        mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
        return {"input_ids": ids, "attention_mask": mask, "lengths": lengths, "labels": self.labels[idx]}


def candidate_logits(model, batch: dict, candidates):
    """(B, K) logits of the candidate tokens at each row's last prompt token."""
    import torch

    if model.config.model_type != "opt":  # rotary models: distzo's positions
        hidden = model.model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            position_ids=mezo_reference.position_ids_from_mask(batch["attention_mask"]),
            use_cache=False,
        ).last_hidden_state
    else:
        hidden = model.model.decoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    last = hidden[torch.arange(hidden.shape[0]), batch["lengths"] - 1]  # (B, hidden)
    head = model.lm_head.weight[candidates]  # embed_tokens when tied (OPT; the others unless untied)
    return last @ head.T


def make_loss_fn(candidates):
    import torch

    def loss_fn(model, batch):
        logits = candidate_logits(model, batch, candidates)
        return float(torch.nn.functional.cross_entropy(logits.double(), batch["labels"]))

    return loss_fn


def evaluate(model, data: ClassificationData, limit: int, batch_size: int):
    import torch

    n = min(limit, data.n) if limit > 0 else data.n
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for s in range(0, n, batch_size):
            b = data.batch(list(range(s, min(n, s + batch_size))))
            logits = candidate_logits(model, b, data.candidates).double()
            loss_sum += float(torch.nn.functional.cross_entropy(logits, b["labels"], reduction="sum"))
            correct += int((logits.argmax(1) == b["labels"]).sum())
    return loss_sum / n, correct / n, n


# ---------------------------------------------------------------------------
# deck


def read_deck(path: str, overrides) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:
        deck = yaml.safe_load(fh)
    for item in overrides:
        key, _, value = item.partition("=")
        section, _, name = key.partition(".")
        if not name:
            raise SystemExit(f"mezo_finetune: --set {item!r}: expected SECTION.KEY=VALUE")
        deck.setdefault(section, {})[name] = yaml.safe_load(value)
    d, o, e = deck.get("data", {}), deck.get("optim", {}), deck.get("eval", {}) or {}
    cfg = {
        "model": deck["model"]["path"],
        "train": d["train"],
        "eval": d.get("eval", ""),
        "micro_batch": int(d.get("micro_batch", 8)),
        "shuffle_seed": int(d.get("shuffle_seed", 0)),
        "steps": int(o["steps"]),
        "lr": float(o["lr"]),
        "schedule": o.get("schedule", "constant"),
        "warmup_steps": int(o.get("warmup_steps", 0)),
        "eps": float(o.get("eps", 1e-3)),
        "weight_decay": float(o.get("weight_decay", 0.0)),
        "seed": int(o.get("seed", 0)),
        "queries": int(o.get("queries", 1)),
        "distribution": o.get("distribution", "gaussian"),
        "eval_interval": int(e.get("interval", 0)),
        "eval_max": int(e.get("max_examples", 0)),
    }
    cfg["estimator"] = o.get("estimator", "spsa")
    if cfg["estimator"] == "spsa":
        if cfg["queries"] != 1 or cfg["distribution"] != "gaussian":
            raise SystemExit("mezo_finetune: optim.estimator spsa: only optim.queries = 1 with the gaussian "
                             "distribution (MeZO) is implemented")
    elif cfg["estimator"] == "one_sided":
        if cfg["queries"] < 2:
            raise SystemExit(f"mezo_finetune: optim.estimator one_sided needs optim.queries >= 2 (got "
                             f"{cfg['queries']}): σ, the spread of the N losses, of one loss is 0")
        if cfg["distribution"] not in mezo_reference.DISTRIBUTIONS:
            raise SystemExit(f"mezo_finetune: optim.distribution {cfg['distribution']!r}: expected "
                             + " or ".join(mezo_reference.DISTRIBUTIONS))
    else:
        raise SystemExit(f"mezo_finetune: optim.estimator {cfg['estimator']!r}: only spsa (MeZO) and one_sided "
                         "(FZOO) are implemented")
    par = deck.get("parallel", {}) or {}
    if int(par.get("data", 1)) != 1:
        raise SystemExit("mezo_finetune: parallel.data > 1 changes the global batch; use a single-replica deck")
    return cfg


# ---------------------------------------------------------------------------
# checkpoints

CHECKPOINT = "mezo-checkpoint.pt"


def save_checkpoint(path: str, step: int, settings: dict, params, written: dict) -> None:
    """θ after `step` steps, the settings that made it and the CSV row counts; atomic."""
    import torch

    state = {"format": "mezo_finetune checkpoint 1", "step": step, "settings": settings,
             "eval_rows": written["eval"], "metrics_rows": written["metrics"],
             "params": {name: t.detach().clone() for name, t in params}}
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


def load_checkpoint(path: str, settings: dict, params, out: str):
    """Copy the checkpoint's θ into `params`; (step, eval.csv rows, metrics.csv rows) as it left them
    in `out`, the directory of the run that wrote it.
    Refuses a checkpoint whose settings would make another run than the straight one."""
    import torch

    state = torch.load(path, weights_only=True)
    if state.get("format") != "mezo_finetune checkpoint 1":
        raise SystemExit(f"mezo_finetune: {path} is not a mezo_finetune checkpoint")
    step, saved = state["step"], {"estimator": "spsa", **state["settings"]}  # older checkpoints: MeZO's
    differ = [k for k in sorted(set(saved) | set(settings)) if k != "steps" and saved.get(k) != settings.get(k)]
    if differ:
        raise SystemExit(f"mezo_finetune: {path} was made with other settings: "
                         + ", ".join(f"{k} {saved.get(k)!r} there, {settings.get(k)!r} here" for k in differ)
                         + " (resume with the checkpoint's, or start another --out)")
    if settings["steps"] < step:
        raise SystemExit(f"mezo_finetune: {path} is at step {step}, past optim.steps {settings['steps']}")
    if settings["steps"] != saved["steps"] and saved["schedule"] != "constant":
        raise SystemExit(f"mezo_finetune: {path} was made for {saved['steps']} steps with the {saved['schedule']} "
                         f"schedule, whose lr depends on the total: {settings['steps']} steps is another run "
                         "(start it in another --out)")
    names = [n for n, _ in params]
    if sorted(names) != sorted(state["params"]):
        raise SystemExit(f"mezo_finetune: {path} holds other tensors than the model")
    with torch.no_grad():
        for name, t in params:
            t.copy_(state["params"][name])
    rows = []
    for name, count in (("eval.csv", state["eval_rows"]), ("metrics.csv", state["metrics_rows"])):
        with open(os.path.join(out, name), newline="", encoding="utf-8") as fh:
            kept = list(csv.reader(fh))[:count]
        if len(kept) != count:
            raise SystemExit(f"mezo_finetune: {out}/{name} has {len(kept)} rows, the checkpoint wrote {count}")
        rows.append(kept)
    return step, rows[0], rows[1]


def read_eval_csv(path: str):
    """(steps, eval_loss, accuracy) arrays of an eval.csv (distzo's or ours)."""
    steps, loss, acc = [], [], []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["accuracy"] != "":
                steps.append(int(row["step"]))
                loss.append(float(row["eval_loss"]))
                acc.append(float(row["accuracy"]))
    return np.array(steps), np.array(loss), np.array(acc)


def plot(out_png: str, distzo_runs, mezo_runs, title: str) -> None:
    """Eval accuracy and eval loss against step: one thin line per run (an
    output directory with an eval.csv), a thick line for each method's mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    for runs, name, color in ((distzo_runs, "distzo", "tab:blue"), (mezo_runs, "MeZO (PyTorch reference)", "tab:orange")):
        curves = [read_eval_csv(os.path.join(r, "eval.csv")) for r in runs]
        for col, ax, scale in ((2, axes[0], 100.0), (1, axes[1], 1.0)):
            for c in curves:
                ax.plot(c[0], scale * c[col], color=color, alpha=0.3, linewidth=1)
            if curves and all(len(c[0]) == len(curves[0][0]) and (c[0] == curves[0][0]).all() for c in curves):
                mean = np.mean([c[col] for c in curves], axis=0)
                ax.plot(curves[0][0], scale * mean, color=color, linewidth=2.5, marker="o", markersize=3,
                        label=f"{name}, mean of {len(curves)} seed{'s' if len(curves) > 1 else ''}")
    axes[0].set_ylabel("test accuracy (%)")
    axes[1].set_ylabel("test loss (cross-entropy over the label words)")
    axes[1].axhline(np.log(2), color="gray", linestyle=":", linewidth=1)
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right" if ax is axes[0] else "upper right", fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out_png, metadata={"Software": None})
    print(f"wrote {out_png}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "plot":
        q = argparse.ArgumentParser(prog="mezo_finetune.py plot",
                                    description="Plot eval accuracy against step for distzo and MeZO runs.")
        q.add_argument("--distzo", nargs="*", default=[], metavar="DIR", help="distzo output dirs (eval.csv)")
        q.add_argument("--mezo", nargs="*", default=[], metavar="DIR", help="mezo_finetune output dirs (eval.csv)")
        q.add_argument("--title", default="")
        q.add_argument("--out", required=True, metavar="PNG")
        a = q.parse_args(argv[1:])
        requires.check(__file__, "matplotlib")
        plot(a.out, a.distzo, a.mezo, a.title)
        return 0
    p = argparse.ArgumentParser(description="MeZO or FZOO (PyTorch reference) fine-tuning from a distzo deck.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("deck", help="distzo deck (YAML)")
    p.add_argument("--out", required=True, help="output directory (eval.csv, metrics.csv, run.log)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a deck value, e.g. optim.seed=2 (repeatable)")
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    p.add_argument("--save", metavar="MODEL.h5", help="write the fine-tuned model (distzo model format)")
    p.add_argument("--test", metavar="TEST.h5",
                   help="also evaluate this set once, after the last step (result.json: test loss and accuracy)")
    p.add_argument("--keep-z", action="store_true",
                   help="draw z once a step and keep it (4 bytes a parameter; one_sided: N times that) instead "
                        "of redrawing it for each of its uses: the same bits, fewer draws "
                        "(mezo_reference.mezo_step, one_sided_step)")
    p.add_argument("--checkpoint-interval", type=int, default=0, metavar="N",
                   help=f"write --out/{CHECKPOINT} every N steps and after the last (default 0: never)")
    p.add_argument("--resume", action="store_true",
                   help=f"continue from --out/{CHECKPOINT} when it exists (otherwise start at step 0 "
                        "or from --resume-from)")
    p.add_argument("--resume-from", metavar="CKPT",
                   help="start from another run's checkpoint (and its CSV rows) instead of step 0")
    p.add_argument("--log-interval", type=int, default=50)
    args = p.parse_args(argv)
    if args.checkpoint_interval < 0:
        raise SystemExit(f"mezo_finetune: --checkpoint-interval {args.checkpoint_interval}: expected N >= 0")
    requires.check(__file__, "torch", "transformers", "yaml")

    import torch

    torch.set_num_threads(args.threads)
    cfg = read_deck(args.deck, args.set)
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, CHECKPOINT)
    resuming = args.resume and os.path.exists(ckpt_path)
    source = ckpt_path if resuming else args.resume_from
    if source and not os.path.exists(source):
        raise SystemExit(f"mezo_finetune: --resume-from {source}: no such file")
    log_fh = open(os.path.join(args.out, "run.log"), "a" if resuming else "w")

    def say(line):
        print(line, flush=True)
        log_fh.write(line + "\n")
        log_fh.flush()

    model = mezo_reference.load_model_h5(cfg["model"], attn_implementation="eager")
    train = ClassificationData(cfg["train"])
    ev = ClassificationData(cfg["eval"]) if cfg["eval"] else None
    if ev is not None and not torch.equal(ev.candidates, train.candidates):
        raise SystemExit("mezo_finetune: data.eval and data.train have different candidates")
    test = ClassificationData(args.test) if args.test else None
    if test is not None and not torch.equal(test.candidates, train.candidates):
        raise SystemExit(f"mezo_finetune: {args.test} and data.train have different candidates")
    params = mezo_reference.trainable_parameters(model)
    n_params = sum(t.numel() for _, t in params)
    one_sided = cfg["estimator"] == "one_sided"
    method = (f"FZOO (one_sided, N = {cfg['queries']}, {cfg['distribution']} z)" if one_sided
              else "MeZO (spsa, q = 1, gaussian z)")
    say(f"mezo_finetune {args.deck}: {method}, {n_params} parameters, batch {cfg['micro_batch']}, "
        f"steps {cfg['steps']}, eps {cfg['eps']:g}, lr {cfg['lr']:g} ({cfg['schedule']}, "
        f"warm-up {cfg['warmup_steps']}), wd {cfg['weight_decay']:g}, seed {cfg['seed']}, "
        f"torch threads {torch.get_num_threads()}")
    order = DataOrder(train.n, cfg["shuffle_seed"])
    loss_fn = make_loss_fn(train.candidates)

    settings = dict(cfg, threads=torch.get_num_threads())
    start, eval_rows, met_rows = 0, [["step", "eval_loss", "accuracy", "examples"]], \
        [["step", "loss", "loss_plus", "loss_minus", "g", "lr", "step_seconds"]]
    if source:
        start, eval_rows, met_rows = load_checkpoint(source, settings, params, os.path.dirname(source))
        say(f"resumed from {source} at step {start}")
    # the CSVs as the checkpoint left them: rows written after it are made again
    eval_fh = open(os.path.join(args.out, "eval.csv"), "w", newline="")
    eval_csv = csv.writer(eval_fh)
    eval_csv.writerows(eval_rows)
    met_fh = open(os.path.join(args.out, "metrics.csv"), "w", newline="")
    met_csv = csv.writer(met_fh)
    met_csv.writerows(met_rows)
    written = {"eval": len(eval_rows), "metrics": len(met_rows)}
    accuracy = {int(r[0]): float(r[2]) for r in eval_rows[1:]}

    def run_eval(step, when):
        loss, acc, n = evaluate(model, ev, cfg["eval_max"], cfg["micro_batch"])
        eval_csv.writerow([step, f"{loss:.9g}", f"{acc:.9g}", n])
        eval_fh.flush()
        written["eval"] += 1
        accuracy[step] = acc
        say(f"eval {when:<6} step {step}: loss {loss:.4f}, accuracy {acc:.4f} ({n} examples)")

    t_start = time.time()
    if ev and not source:
        run_eval(0, "start")
    for step in range(start, cfg["steps"]):
        t0 = time.time()
        batch = train.batch(order.micro_batch(step, cfg["micro_batch"]))
        lr = lr_at(step, cfg["lr"], cfg["schedule"], cfg["warmup_steps"], cfg["steps"])
        if one_sided:
            seeds = [mezo_reference.direction_seed(cfg["seed"], step, i) for i in range(cfg["queries"])]
            r = mezo_reference.one_sided_step(model, batch, seeds, cfg["eps"], lr, cfg["weight_decay"],
                                              params=params, loss_fn=loss_fn, distribution=cfg["distribution"],
                                              keep_z=args.keep_z)
        else:
            r = mezo_reference.mezo_step(model, batch, mezo_reference.step_seed(cfg["seed"], step), cfg["eps"],
                                         lr, cfg["weight_decay"], params=params, loss_fn=loss_fn,
                                         keep_z=args.keep_z)
        done = step + 1
        met_csv.writerow([done, f"{r.loss:.9g}", f"{r.loss_plus:.9g}",
                          "" if r.loss_minus is None else f"{r.loss_minus:.9g}",
                          f"{r.projected_grad:.9g}", f"{lr:.9g}", f"{time.time() - t0:.6g}"])
        written["metrics"] += 1
        if one_sided and not r.updated:
            say(f"step {done}: a loss or g is not finite (σ = {r.spread:g}): update skipped")
        if done % args.log_interval == 0 or done == cfg["steps"]:
            met_fh.flush()
            say(f"step {done}/{cfg['steps']}  loss {r.loss:.4f}  g {r.projected_grad:+.3e}  lr {lr:.2e}  "
                f"{time.time() - t_start:.0f} s")
        if ev and (done == cfg["steps"] or (cfg["eval_interval"] > 0 and done % cfg["eval_interval"] == 0)):
            run_eval(done, "end" if done == cfg["steps"] else "")
        if args.checkpoint_interval and (done % args.checkpoint_interval == 0 or done == cfg["steps"]):
            met_fh.flush()
            save_checkpoint(ckpt_path, done, settings, params, written)
    if ev and cfg["steps"] == 0:
        run_eval(0, "end")
    met_fh.close()
    say(f"done: {cfg['steps']} steps in {time.time() - t_start:.0f} s" + (f" (from step {start})" if start else ""))
    if ev:
        say(f"accuracy: {accuracy[0]:.4f} before, {accuracy[cfg['steps']]:.4f} after fine-tuning "
            f"({ev.n if cfg['eval_max'] <= 0 else min(ev.n, cfg['eval_max'])} held-out examples)")
    if test is not None:
        test_loss, test_acc, n = evaluate(model, test, 0, cfg["micro_batch"])
        say(f"test: loss {test_loss:.4f}, accuracy {test_acc:.4f} ({n} examples)")
        with open(os.path.join(args.out, "result.json"), "w", encoding="utf-8") as fh:
            json.dump({"method": ("FZOO" if one_sided else "MeZO") + " (PyTorch reference)", "deck": args.deck,
                       "model": cfg["model"], "test": args.test, "steps": cfg["steps"], "lr": cfg["lr"],
                       "eps": cfg["eps"], "seed": cfg["seed"], "test_accuracy": test_acc, "test_loss": test_loss,
                       "test_examples": n, "seconds": time.time() - t_start}, fh, indent=1, sort_keys=True)
            fh.write("\n")
    if args.save:
        from distzo_tools import formats

        cfg_h5, _ = formats.read_model(cfg["model"])
        keep = formats.expected_tensors(cfg_h5)  # a tied lm_head is embed_tokens, not saved twice
        state = {k: v.detach().numpy() for k, v in model.state_dict().items() if k in keep}
        formats.write_model(args.save, cfg_h5, state)
        say(f"wrote {args.save}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
