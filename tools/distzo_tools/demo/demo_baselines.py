"""Reference points for a classification demo: what the pretrained model knows
before fine-tuning, and what first-order training reaches with the same budget.

    python3 tools/demo_baselines.py inputs/demo/model.h5 \
        --train inputs/demo/train.h5 --dev inputs/demo/dev.h5 --test inputs/demo/test.h5

Prints, for the dev and the test file (docs/demo.md quotes them):

  zero-shot   accuracy of the prompt as is (the larger label-word logit), the
              share of examples it calls the last label, and the ranking AUC of
              the logit difference (0.5 = no signal, whatever the threshold);
  threshold   the same logit difference with its threshold re-fitted on the
              training file (best training accuracy): what calibrating the
              label prior alone gives;
  probe       L2 logistic regression on the final hidden state at the last
              prompt token (the features the label-word head reads), trained on
              the training file, L2 strength chosen on dev: roughly what
              adapting the head alone could give;
  first-order full fine-tuning with Adam on the same loss (softmax over the
              label-word logits), the same micro-batch and number of steps as
              the deck's MeZO run, in the same data order, lr chosen on dev:
              the usual upper reference for MeZO (its paper's "FT").

Every choice is made on dev; test is only reported. Deterministic (seeded,
--threads torch threads). Needs torch, transformers, numpy, h5py.
"""

from __future__ import annotations

import argparse
import copy
import sys

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "torch", "transformers")

# mezo_finetune: ClassificationData, DataOrder, candidate_logits, evaluate; mezo_reference: load_opt_h5
from distzo_tools.references import mezo_finetune, mezo_reference  # noqa: E402


def last_hidden(model, data, batch_size=100):
    """(N, hidden) final hidden states at each example's last prompt token."""
    import torch

    rows = []
    with torch.no_grad():
        for s in range(0, data.n, batch_size):
            b = data.batch(list(range(s, min(data.n, s + batch_size))))
            h = model.model.decoder(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state
            rows.append(h[torch.arange(h.shape[0]), b["lengths"] - 1].double())
    return torch.cat(rows)


def auc(score, labels) -> float:
    """P(score of a random label-1 example > that of a random label-0 one), ties 1/2."""
    pos, neg = score[labels == 1], score[labels == 0]
    greater = (pos[:, None] > neg[None, :]).double().mean()
    ties = (pos[:, None] == neg[None, :]).double().mean()
    return float(greater + 0.5 * ties)


def accuracy(pred, labels) -> float:
    return float((pred == labels).double().mean())


def best_threshold(score, labels) -> float:
    """The cut between consecutive sorted scores with the best accuracy of
    `score > cut -> label 1` (ties go to the lower cut)."""
    import torch

    s = torch.sort(score).values
    cuts = torch.cat([s[:1] - 1, (s[1:] + s[:-1]) / 2, s[-1:] + 1])
    accs = torch.stack([((score > c).long() == labels).double().mean() for c in cuts])
    return float(cuts[int(torch.argmax(accs))])


def fit_logistic(x, y, l2: float):
    """Weights (D,) and bias of L2-regularised logistic regression (LBFGS, double).
    Features are standardised with the training mean/std inside."""
    import torch

    mean, std = x.mean(0), x.std(0) + 1e-12
    xs = (x - mean) / std
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=500, tolerance_grad=1e-10, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xs @ w + b, y.double()) + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    w, b = w.detach(), b.detach()
    return lambda z: ((z - mean) / std) @ w + b


def first_order(model0, train, dev, test, steps: int, batch: int, shuffle_seed: int, lr: float, seed: int):
    """Adam fine-tuning of every parameter for `steps` micro-batches in distzo's
    data order; returns (dev acc, test acc, dev loss, test loss) at the end."""
    import torch

    torch.manual_seed(seed)
    model = copy.deepcopy(model0)
    model.train(False)  # no dropout: the same forward as evaluation and as MeZO
    for t in model.parameters():
        t.requires_grad_(True)  # load_opt_h5 loads for inference
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    order = mezo_finetune.DataOrder(train.n, shuffle_seed)
    for step in range(steps):
        b = train.batch(order.micro_batch(step, batch))
        loss = torch.nn.functional.cross_entropy(mezo_finetune.candidate_logits(model, b, train.candidates), b["labels"])
        opt.zero_grad()
        loss.backward()
        opt.step()
    dl, da, _ = mezo_finetune.evaluate(model, dev, 0, 100)
    tl, ta, _ = mezo_finetune.evaluate(model, test, 0, 100)
    return da, ta, dl, tl


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("model", help="distzo model file (.h5)")
    p.add_argument("--train", required=True, help="classification dataset used for fitting")
    p.add_argument("--dev", required=True, help="classification dataset for every choice")
    p.add_argument("--test", required=True, help="classification dataset, only reported")
    p.add_argument("--steps", type=int, default=1500, help="first-order steps (the deck's optim.steps)")
    p.add_argument("--micro-batch", type=int, default=16, help="the deck's data.micro_batch")
    p.add_argument("--shuffle-seed", type=int, default=1, help="the deck's data.shuffle_seed")
    p.add_argument("--lrs", type=float, nargs="+", default=[1e-5, 3e-5, 1e-4, 3e-4],
                   help="first-order learning rates tried on dev")
    p.add_argument("--l2", type=float, nargs="+", default=[1e-2, 1e-1, 1.0, 10.0, 100.0],
                   help="probe L2 strengths tried on dev")
    p.add_argument("--skip-first-order", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    import torch

    torch.set_num_threads(a.threads)
    model = mezo_reference.load_opt_h5(a.model, attn_implementation="eager")
    model.train(False)
    train, dev, test = (mezo_finetune.ClassificationData(x) for x in (a.train, a.dev, a.test))
    for d in (dev, test):
        if not torch.equal(d.candidates, train.candidates):
            raise SystemExit(f"demo_baselines: {d.path}: candidates differ from {train.path}")
    if train.candidates.numel() != 2:
        raise SystemExit("demo_baselines: two candidates (binary labels) expected")
    splits = {"dev": dev, "test": test}

    def margin(data):  # last-label logit minus first-label logit
        with torch.no_grad():
            out = []
            for s in range(0, data.n, 100):
                b = data.batch(list(range(s, min(data.n, s + 100))))
                lg = mezo_finetune.candidate_logits(model, b, data.candidates).double()
                out.append(lg[:, 1] - lg[:, 0])
        return torch.cat(out)

    m_train = margin(train)
    cut = best_threshold(m_train, train.labels)
    print(f"{a.model}: train {train.n}, dev {dev.n}, test {test.n} examples")
    for name, d in splits.items():
        m = margin(d)
        print(f"zero-shot  {name:<4}  accuracy {accuracy((m > 0).long(), d.labels):.3f}  "
              f"calls label 1 for {float((m > 0).double().mean()):.3f}  AUC {auc(m, d.labels):.3f}")
    for name, d in splits.items():
        print(f"threshold  {name:<4}  accuracy {accuracy((margin(d) > cut).long(), d.labels):.3f}  "
              f"(cut {cut:+.3f} fitted on train)")

    h_train, h_dev, h_test = (last_hidden(model, d) for d in (train, dev, test))
    probes = {l2: fit_logistic(h_train, train.labels, l2) for l2 in a.l2}
    dev_acc = {l2: accuracy((f(h_dev) > 0).long(), dev.labels) for l2, f in probes.items()}
    best = max(a.l2, key=lambda l2: (dev_acc[l2], l2))
    print("probe      dev   accuracy " + ", ".join(f"{dev_acc[l2]:.3f} (l2 {l2:g})" for l2 in a.l2))
    print(f"probe      test  accuracy {accuracy((probes[best](h_test) > 0).long(), test.labels):.3f}  (l2 {best:g})")

    if a.skip_first_order:
        return 0
    results = {}
    for lr in a.lrs:
        results[lr] = first_order(model, train, dev, test, a.steps, a.micro_batch, a.shuffle_seed, lr, a.seed)
        print(f"first-order dev   accuracy {results[lr][0]:.3f}  loss {results[lr][2]:.4f}  "
              f"(Adam lr {lr:g}, {a.steps} steps of {a.micro_batch})", flush=True)
    best = max(a.lrs, key=lambda lr: results[lr][0])
    print(f"first-order test  accuracy {results[best][1]:.3f}  loss {results[best][3]:.4f}  (lr {best:g}, chosen on dev)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
