"""The quality table's references that distzo does not run: a linear probe on
the frozen model and first-order fine-tuning (docs/quality.md).

    python3 tools/quality_reference.py probe    DECK --test TEST.h5 --out DIR
    python3 tools/quality_reference.py finetune DECK --test TEST.h5 --out DIR --lr 1e-5 [--epochs 3]

Both read a distzo deck (model.path, data.train, data.eval = the dev set,
data.micro_batch, data.shuffle_seed, optim.seed; --set SECTION.KEY=VALUE
overrides, as in tools/mezo_finetune.py) and use MeZO's prompt-based
classification exactly as distzo does: the last prompt token's logits over the
candidate label words (mezo_finetune.candidate_logits).

probe — linear probing (MeZO's Table 1 "LP"): the final hidden state of the
  last prompt token (after the model's final norm; (N, hidden) float64) of
  every train, dev and test example, standardised with the train mean and
  spread, and a multinomial logistic regression over the candidates fitted
  to the train set by full-batch L-BFGS with an L2 penalty lambda/2 |W|^2 on
  the mean cross-entropy. lambda is chosen on dev from --lambdas (best dev
  accuracy, ties to the lower dev loss); test is evaluated once, for the
  chosen lambda. Writes probe.csv (lambda,train_accuracy,dev_loss,
  dev_accuracy), result.json and run.log.

finetune — full first-order fine-tuning (the ceiling): every parameter,
  AdamW (betas 0.9/0.999, eps 1e-8, weight decay --weight-decay with MeZO's
  no-decay rule for biases and norms), the learning rate decayed linearly
  to 0 over the run (--schedule constant to keep it), batches of
  data.micro_batch in distzo's data order (tools/mezo_finetune.DataOrder:
  step s sees the examples distzo's step s sees) for --epochs passes over
  the train set, the same loss as distzo's. Dev is evaluated before
  training and after every epoch (eval.csv in distzo's format), test once
  at the end (result.json). Choose the lr on dev across runs, then read the
  chosen run's test line. Writes eval.csv, metrics.csv (step,loss,lr,
  step_seconds), result.json and run.log; the model only with --save.

Both are references, labelled as such in the table: distzo runs neither.
Needs torch, transformers, numpy, h5py, pyyaml.
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
    requires.check(__file__, "numpy", "h5py", "torch", "transformers", "yaml")

# mezo_finetune: ClassificationData, candidate_logits, evaluate, DataOrder, read_deck;
# mezo_reference: load_model_h5, uses_weight_decay
from distzo_tools.references import mezo_finetune, mezo_reference  # noqa: E402


class Log:
    """Lines to stdout and DIR/run.log."""

    def __init__(self, out_dir: str):
        os.makedirs(out_dir, exist_ok=True)
        self.fh = open(os.path.join(out_dir, "run.log"), "w", encoding="utf-8")

    def __call__(self, line: str) -> None:
        print(line, flush=True)
        self.fh.write(line + "\n")
        self.fh.flush()


def load_sets(cfg: dict, test_path: str):
    """train, dev, test ClassificationData with one candidate list."""
    import torch

    if not cfg["eval"]:
        raise SystemExit("quality_reference: the deck has no data.eval (the dev set lambda or lr is chosen on)")
    sets = [mezo_finetune.ClassificationData(p) for p in (cfg["train"], cfg["eval"], test_path)]
    for s in sets[1:]:
        if not torch.equal(s.candidates, sets[0].candidates):
            raise SystemExit(f"quality_reference: {s.path} has other candidates than {sets[0].path}")
    return sets


def write_result(out_dir: str, result: dict) -> None:
    path = os.path.join(out_dir, "result.json")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(path + ".tmp", path)


# ---------------------------------------------------------------------------
# linear probe


def last_token_features(model, data, batch_size: int):
    """(N, hidden) float64: the final hidden state at each example's last prompt token."""
    import torch

    rows = []
    with torch.no_grad():
        for s in range(0, data.n, batch_size):
            b = data.batch(list(range(s, min(data.n, s + batch_size))))
            if model.config.model_type != "opt":
                hidden = model.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                                     position_ids=mezo_reference.position_ids_from_mask(b["attention_mask"]),
                                     use_cache=False).last_hidden_state
            else:
                hidden = model.model.decoder(input_ids=b["input_ids"],
                                             attention_mask=b["attention_mask"]).last_hidden_state
            rows.append(hidden[torch.arange(hidden.shape[0]), b["lengths"] - 1].double())
    return torch.cat(rows)


def fit_logistic(x, y, classes: int, lam: float):
    """W (classes, H), b (classes,) minimising mean CE + lam/2 |W|^2; full-batch
    L-BFGS from zero (the objective is strictly convex for lam > 0, so the
    minimiser does not depend on the start)."""
    import torch

    w = torch.zeros(classes, x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=1000, tolerance_grad=1e-10, tolerance_change=1e-14,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ w.T + b, y) + 0.5 * lam * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach(), b.detach()


def score(x, y, w, b):
    import torch

    logits = x @ w.T + b
    return float(torch.nn.functional.cross_entropy(logits, y)), float((logits.argmax(1) == y).double().mean())


def run_probe(args, cfg: dict) -> int:
    import torch

    say = Log(args.out)
    t0 = time.time()
    model = mezo_reference.load_model_h5(cfg["model"])
    train, dev, test = load_sets(cfg, args.test)
    classes = int(train.candidates.numel())
    say(f"probe {args.deck}: {cfg['model']}, features of the last prompt token, {classes} classes, "
        f"train {train.n} / dev {dev.n} / test {test.n}, torch threads {torch.get_num_threads()}")
    feats = [last_token_features(model, s, cfg["micro_batch"]) for s in (train, dev, test)]
    say(f"features ({feats[0].shape[1]} wide) in {time.time() - t0:.0f} s")
    mean, std = feats[0].mean(0), feats[0].std(0).clamp_min(1e-12)
    xs = [(f - mean) / std for f in feats]
    ys = [s.labels for s in (train, dev, test)]

    rows, best = [], None
    for lam in args.lambdas:
        w, b = fit_logistic(xs[0], ys[0], classes, lam)
        _, train_acc = score(xs[0], ys[0], w, b)
        dev_loss, dev_acc = score(xs[1], ys[1], w, b)
        rows.append((lam, train_acc, dev_loss, dev_acc))
        say(f"lambda {lam:g}: train accuracy {train_acc:.4f}, dev loss {dev_loss:.4f}, dev accuracy {dev_acc:.4f}")
        if best is None or (dev_acc, -dev_loss) > (best[3], -best[2]):
            best = (lam, train_acc, dev_loss, dev_acc, w, b)
    with open(os.path.join(args.out, "probe.csv"), "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["lambda", "train_accuracy", "dev_loss", "dev_accuracy"])
        for lam, tr, dl, da in rows:
            out.writerow([f"{lam:g}", f"{tr:.9g}", f"{dl:.9g}", f"{da:.9g}"])
    test_loss, test_acc = score(xs[2], ys[2], best[4], best[5])
    say(f"chosen on dev: lambda {best[0]:g}; test loss {test_loss:.4f}, test accuracy {test_acc:.4f} "
        f"({test.n} examples); {time.time() - t0:.0f} s")
    write_result(args.out, {"method": "linear probe", "deck": args.deck, "model": cfg["model"],
                            "train": cfg["train"], "dev": cfg["eval"], "test": args.test, "lambda": best[0],
                            "dev_accuracy": best[3], "dev_loss": best[2], "test_accuracy": test_acc,
                            "test_loss": test_loss, "test_examples": test.n, "seconds": time.time() - t0})
    return 0


# ---------------------------------------------------------------------------
# first-order fine-tuning


def run_finetune(args, cfg: dict) -> int:
    import torch

    say = Log(args.out)
    torch.manual_seed(cfg["seed"])
    model = mezo_reference.load_model_h5(cfg["model"])
    train, dev, test = load_sets(cfg, args.test)
    params = list(model.named_parameters())  # tied lm_head is embed_tokens: listed once
    for _, p in params:
        p.requires_grad_(True)
    decay = [p for n, p in params if mezo_reference.uses_weight_decay(n)]
    no_decay = [p for n, p in params if not mezo_reference.uses_weight_decay(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    batch_size = cfg["micro_batch"]
    per_epoch = math.ceil(train.n / batch_size)
    steps = math.ceil(args.epochs * train.n / batch_size)
    order = mezo_finetune.DataOrder(train.n, cfg["shuffle_seed"])
    n_params = sum(p.numel() for _, p in params)
    say(f"finetune {args.deck}: {n_params} parameters, AdamW lr {args.lr:g} ({args.schedule}), "
        f"wd {args.weight_decay:g}, batch {batch_size}, {args.epochs:g} epochs = {steps} steps, "
        f"seed {cfg['seed']}, shuffle seed {cfg['shuffle_seed']}, torch threads {torch.get_num_threads()}")

    eval_fh = open(os.path.join(args.out, "eval.csv"), "w", newline="")
    eval_csv = csv.writer(eval_fh)
    eval_csv.writerow(["step", "eval_loss", "accuracy", "examples"])
    met_fh = open(os.path.join(args.out, "metrics.csv"), "w", newline="")
    met_csv = csv.writer(met_fh)
    met_csv.writerow(["step", "loss", "lr", "step_seconds"])

    def run_eval(step):
        model.eval()
        loss, acc, n = mezo_finetune.evaluate(model, dev, cfg["eval_max"], batch_size)
        model.train()
        eval_csv.writerow([step, f"{loss:.9g}", f"{acc:.9g}", n])
        eval_fh.flush()
        say(f"dev step {step}: loss {loss:.4f}, accuracy {acc:.4f} ({n} examples)")
        return loss, acc

    t_start = time.time()
    run_eval(0)
    model.train()
    for step in range(steps):
        t0 = time.time()
        lr = args.lr * (1.0 - step / steps if args.schedule == "linear" else 1.0)
        for group in opt.param_groups:
            group["lr"] = lr
        b = train.batch(order.micro_batch(step, batch_size))
        loss = torch.nn.functional.cross_entropy(mezo_finetune.candidate_logits(model, b, train.candidates),
                                                 b["labels"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        done = step + 1
        met_csv.writerow([done, f"{loss.item():.9g}", f"{lr:.9g}", f"{time.time() - t0:.6g}"])
        if done % args.log_interval == 0 or done == steps:
            met_fh.flush()
            say(f"step {done}/{steps}  loss {loss.item():.4f}  lr {lr:.2e}  {time.time() - t_start:.0f} s")
        if done % per_epoch == 0 or done == steps:
            dev_loss, dev_acc = run_eval(done)
    met_fh.close()
    model.eval()
    test_loss, test_acc, n = mezo_finetune.evaluate(model, test, 0, batch_size)
    seconds = time.time() - t_start
    say(f"test after {steps} steps: loss {test_loss:.4f}, accuracy {test_acc:.4f} ({n} examples); {seconds:.0f} s")
    write_result(args.out, {"method": "first-order fine-tuning (AdamW)", "deck": args.deck,
                            "model": cfg["model"], "train": cfg["train"], "dev": cfg["eval"], "test": args.test,
                            "lr": args.lr, "schedule": args.schedule, "weight_decay": args.weight_decay,
                            "epochs": args.epochs, "steps": steps, "batch": batch_size, "seed": cfg["seed"],
                            "dev_accuracy": dev_acc, "dev_loss": dev_loss, "test_accuracy": test_acc,
                            "test_loss": test_loss, "test_examples": n, "seconds": seconds})
    if args.save:
        from distzo_tools import formats

        cfg_h5, _ = formats.read_model(cfg["model"])
        keep = formats.expected_tensors(cfg_h5)
        state = {k: v.detach().numpy() for k, v in model.state_dict().items() if k in keep}
        formats.write_model(args.save, cfg_h5, state)
        say(f"wrote {args.save}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Linear probe and first-order fine-tuning references from a distzo deck.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("probe", "finetune"):
        q = sub.add_parser(name, help="linear probe" if name == "probe" else "first-order fine-tuning")
        q.add_argument("deck", help="distzo deck (YAML): model.path, data.train, data.eval (dev), ...")
        q.add_argument("--test", required=True, metavar="TEST.h5", help="test set, evaluated once at the end")
        q.add_argument("--out", required=True, metavar="DIR", help="output directory")
        q.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                       help="override a deck value, e.g. optim.seed=2 (repeatable)")
        q.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
        if name == "probe":
            q.add_argument("--lambdas", type=float, nargs="+", default=[1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0],
                           help="L2 strengths to choose from on dev (default 1e-3 ... 100)")
        else:
            q.add_argument("--lr", type=float, required=True, help="AdamW peak learning rate")
            q.add_argument("--epochs", type=float, default=3.0, help="passes over the train set (default 3)")
            q.add_argument("--schedule", choices=("linear", "constant"), default="linear")
            q.add_argument("--weight-decay", type=float, default=0.0)
            q.add_argument("--log-interval", type=int, default=10)
            q.add_argument("--save", metavar="MODEL.h5", help="write the fine-tuned model (distzo model format)")
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    cfg = mezo_finetune.read_deck(args.deck, args.set)
    return run_probe(args, cfg) if args.command == "probe" else run_finetune(args, cfg)


if __name__ == "__main__":
    sys.exit(main())
