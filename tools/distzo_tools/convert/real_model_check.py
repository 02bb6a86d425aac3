"""Check distzo on a real pretrained model (SmolLM2, Gemma 3) against
transformers, and measure the model's zero-shot accuracy on distzo
classification datasets.

    python3 tools/real_model_check.py check MODEL.h5 MODEL.gguf TOKENIZER.json [--distzo build/distzo]
    python3 tools/real_model_check.py check MODEL.h5 MODEL.gguf TOKENIZER.json --transformers-only
    python3 tools/real_model_check.py zero-shot MODEL.h5 dev.h5 test.h5 [--batch 16]

MODEL.h5 is the distzo model file tools/gguf_to_h5.py wrote from MODEL.gguf,
TOKENIZER.json its --tokenizer-dir output (tools/make_real_model.sh makes all
three). The reference is transformers loading the same GGUF itself
(`AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32)`,
which dequantises with the same `gguf` code), so the conversion is checked
against an independent reading of the file, not against itself.

`check` prints a table and exits non-zero if any of these fails:

1. tensors: every tensor of MODEL.h5 equals transformers' state dict exactly
   (bit for bit; the tied lm_head is embed_tokens in both);
2. transformers ranks " Paris" among its TOP_K most likely next tokens after
   "The capital of France is" (a sanity check of the reference itself: the
   instruction-tuned SmolLM2 says " Paris" first, the base Gemma 3 270M
   " the", then " Paris" third);
3. distzo's logits: 8 prompts of 1 to 75 tokens (prose, code, digits, a
   chat-template prompt with special tokens, a movie-review prompt) are
   tokenised with TOKENIZER.json, right-padded to one length T with the pad id
   of the model's config, and written to INPUT.h5 (`input_ids`, `attention_mask`,
   (B, T) int32); `DISTZO forward MODEL.h5 INPUT.h5 OUTPUT.h5` must write
   `logits` (B, T, V) float32. At the real-token positions the largest
   |distzo - transformers| must be <= 1e-3 * max |transformers logit|.
   Transformers gets distzo's positions explicitly: cumsum(mask) - 1, 1 at
   pads (LlamaForCausalLM's default arange(T) is the same for right padding
   at real tokens, but say what distzo does);
4. distzo's greedy next token after "The capital of France is" is
   transformers'.

--transformers-only runs 1 and 2 (for a machine without a distzo build).
--long runs 3 and 4 on the Paris prompt and one prompt of about 740 tokens
instead of the eight: past Gemma 3's 512-token sliding window, so its local
layers attend within the window (distzo's windowed attention against
transformers' sliding-window mask).
The difference in 3 is rounding only: both sides compute in float32 from the
same float32 weights. (The configs differ in one spelling: rms_norm_eps is
1e-05 in MODEL.h5 and 9.99999974e-06, the GGUF's float32 widened, in
transformers' reading; both are the same float32 number, and transformers
run on MODEL.h5 gives bit-identical logits.)

`zero-shot` loads MODEL.h5 into transformers (tools/mezo_reference.py) and
evaluates each classification file as distzo's evaluation does
(docs/datasets.md): the logits at the last prompt token restricted to the
candidates; prints accuracy, the share of examples given the last label and
the mean cross-entropy over the candidates. It then times one full forward
(all-position logits, as a training step computes) on a batch of --batch
examples of the first file at its padded length T.

Needs torch, transformers, numpy, h5py, tokenizers; `check` also gguf and
accelerate (transformers' GGUF loading).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "torch", "transformers")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from distzo_tools import formats  # noqa: E402
# mezo_finetune: ClassificationData, candidate_logits;
# mezo_reference: load_model_h5, position_ids_from_mask, set_threads
from distzo_tools.references import mezo_finetune, mezo_reference  # noqa: E402

PARIS_PROMPT = "The capital of France is"
PARIS_ANSWER = " Paris"
# Prompt 0 is the Paris prompt. The others cover a one-token row, a 75-token
# row, digits (split one per token), code, special tokens, and the
# sentiment prompt distzo fine-tunes on.
PROMPTS = (
    PARIS_PROMPT,
    "Hello",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return",
    "Water boils at 100 degrees Celsius at sea level, and in 1742 Anders Celsius proposed",
    "<|im_start|>user\nWhat is the tallest mountain in Europe?<|im_end|>\n<|im_start|>assistant\n",
    "Review: a charming and often affecting journey .\nSentiment:",
    "Zeroth-order optimisation estimates a gradient from two forward passes: the loss is "
    "measured at the parameters moved a small step along a random direction and at the "
    "parameters moved the same step the other way, and the difference of the two losses, "
    "divided by twice the step, says how steep the loss is along that direction. Repeating "
    "this with fresh random directions and",
)
# --long: one more prompt, past Gemma 3's 512-token sliding window (its local
# layers attend within the window there, its global layers to every key):
# an English paragraph of ~75 tokens (Gemma 3's tokenizer), ten times over.
LONG_PROMPT = " ".join([PROMPTS[-1] + " so on."] * 10)
REL_TOL = 1e-3  # max |distzo - transformers| <= REL_TOL * max |logit|
TOP_K = 5  # " Paris" must be among transformers' TOP_K next tokens


class CheckError(RuntimeError):
    """A usage or input problem (not a failed comparison): printed as one line."""


def _tokenizer(path: str):
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(path)
    except Exception as e:  # tokenizers raises a plain Exception
        raise CheckError(f"{path}: cannot load tokenizer ({e})") from None


def _pad_id(cfg) -> int:
    """The pad id of the model's config.json (else its eos, else 0): only its
    being a valid id matters, pads never reach a real token."""
    hf = json.loads(cfg.hf_config_json) if cfg.hf_config_json else {}
    for key in ("pad_token_id", "eos_token_id"):
        if isinstance(hf.get(key), int):
            return hf[key]
    return 0


def prompt_batch(tok, pad_id: int, prompts=PROMPTS) -> tuple[np.ndarray, np.ndarray]:
    """(input_ids, attention_mask), (B, T) int32, right-padded, for `prompts`."""
    rows = [tok.encode(p).ids for p in prompts]
    T = max(map(len, rows))
    ids = np.full((len(rows), T), pad_id, np.int32)
    mask = np.zeros((len(rows), T), np.int32)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
    return ids, mask


def load_gguf_model(gguf_path: str):
    """transformers' own float32 reading of the GGUF (eval mode)."""
    import torch
    from transformers import AutoModelForCausalLM

    directory, filename = os.path.split(os.path.abspath(gguf_path))
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=filename, dtype=torch.float32)
    return model.eval()


def compare_tensors(tensors: dict, model) -> list[str]:
    """Names of the tensors of the distzo file that differ from the model's
    state dict (or are missing there); lm_head must be embed_tokens if tied."""
    state = model.state_dict()
    bad = [n for n, a in tensors.items() if n not in state or not np.array_equal(a, state[n].numpy())]
    if "lm_head.weight" not in tensors and not np.array_equal(
        state["lm_head.weight"].numpy(), tensors["model.embed_tokens.weight"]
    ):
        bad.append("lm_head.weight (transformers' head is not embed_tokens)")
    return bad


def transformers_logits(model, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(B, T, V) float32 logits at distzo's positions."""
    import torch

    mask_t = torch.from_numpy(mask.astype(np.int64))
    with torch.no_grad():
        out = model(
            input_ids=torch.from_numpy(ids.astype(np.int64)),
            attention_mask=mask_t,
            position_ids=mezo_reference.position_ids_from_mask(mask_t),
            use_cache=False,
        )
    return out.logits.float().numpy()


def run_distzo(distzo: str, model_path: str, ids: np.ndarray, mask: np.ndarray, work: str) -> tuple[np.ndarray, float]:
    """(logits (B, T, V), seconds) of `distzo forward` on the batch."""
    inp, out = os.path.join(work, "input.h5"), os.path.join(work, "output.h5")
    with h5py.File(inp, "w") as f:
        f.create_dataset("input_ids", data=ids, track_times=False)
        f.create_dataset("attention_mask", data=mask, track_times=False)
    cmd = [distzo, "forward", model_path, inp, out]
    print("running:", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        said = [ln for ln in lines if "error" in ln][:2] or lines[-3:]
        raise CheckError(f"{' '.join(cmd)} exited with status {proc.returncode}: " + " | ".join(said))
    with h5py.File(out, "r") as f:
        if "logits" not in f:
            raise CheckError(f"{out}: no dataset 'logits' (found {sorted(f.keys())})")
        logits = f["logits"][()]
    return logits, seconds


def check(args) -> int:
    mezo_reference.set_threads(args.threads)
    for path in (args.model, args.gguf, args.tokenizer):
        if not os.path.isfile(path):
            raise CheckError(f"{path}: no such file")
    if not args.transformers_only and not (os.path.isfile(args.distzo) and os.access(args.distzo, os.X_OK)):
        raise CheckError(f"{args.distzo}: no distzo executable (build it, give --distzo, or --transformers-only)")
    cfg, tensors = formats.read_model(args.model)
    tok = _tokenizer(args.tokenizer)
    paris = tok.encode(PARIS_ANSWER, add_special_tokens=False).ids
    if len(paris) != 1:
        raise CheckError(f"{PARIS_ANSWER!r} is {len(paris)} tokens with {args.tokenizer}: the check needs one")
    paris = paris[0]
    failures = []

    t0 = time.perf_counter()
    model = load_gguf_model(args.gguf)
    print(f"transformers read {args.gguf} in {time.perf_counter() - t0:.1f} s")
    bad = compare_tensors(tensors, model)
    n = len(tensors)
    print(f"[{'ok' if not bad else 'FAIL'}] tensors: {n - len(bad)}/{n} of {args.model} bit-identical to "
          f"transformers' GGUF reading" + (f"; differ: {', '.join(bad[:5])}" if bad else ""))
    if bad:
        failures.append("tensors")

    # --long: the Paris prompt and the long one only (nine rows of 741 tokens
    # over Gemma 3's 262144-token vocabulary would be 7 GB of logits a side).
    prompts = (PARIS_PROMPT, LONG_PROMPT) if args.long else PROMPTS
    ids, mask = prompt_batch(tok, _pad_id(cfg), prompts)
    lengths = mask.sum(1)
    t0 = time.perf_counter()
    ref = transformers_logits(model, ids, mask)
    print(f"transformers forward, B={ids.shape[0]} T={ids.shape[1]}: {time.perf_counter() - t0:.2f} s")
    ref_last = ref[0, lengths[0] - 1]
    ref_next = ref_last.argmax()
    paris_rank = int((ref_last > ref_last[paris]).sum()) + 1
    ok = paris_rank <= TOP_K
    print(f"[{'ok' if ok else 'FAIL'}] transformers: after {PARIS_PROMPT!r} {PARIS_ANSWER!r} ({paris}) is "
          f"next token number {paris_rank} (must be <= {TOP_K}); number 1 is "
          f"{tok.decode([int(ref_next)])!r} ({ref_next})")
    if not ok:
        failures.append("transformers Paris")

    if args.transformers_only:
        print(f"distzo not run (--transformers-only); prompt lengths {lengths.tolist()}")
    else:
        work = args.work or tempfile.mkdtemp(prefix="real_model_check.")
        os.makedirs(work, exist_ok=True)
        try:
            got, seconds = run_distzo(args.distzo, args.model, ids, mask, work)
        finally:
            if not args.work:  # a temp dir: only the numbers are kept
                shutil.rmtree(work)
        if got.shape != ref.shape or got.dtype != np.float32:
            raise CheckError(f"distzo logits are {got.dtype} {got.shape}, expected float32 {ref.shape}")
        real = mask.astype(bool)
        scale = float(np.abs(ref[real]).max())
        worst = float(np.abs(got[real] - ref[real]).max())
        print(f"distzo forward: {seconds:.2f} s (whole command)" + (f"; input.h5, output.h5 in {work}" if args.work else ""))
        print(f"{'#':>2} {'tokens':>6} {'max|logit|':>10} {'max|diff|':>10} {'diff/max':>9} "
              f"{'argmax agree':>12}  last-token next (transformers / distzo)")
        for i, prompt in enumerate(prompts):
            L = int(lengths[i])
            r, g = ref[i, :L], got[i, :L]
            agree = float((r.argmax(-1) == g.argmax(-1)).mean())
            d = float(np.abs(g - r).max())
            m = float(np.abs(r).max())
            nxt = (tok.decode([int(r[-1].argmax())]), tok.decode([int(g[-1].argmax())]))
            print(f"{i:>2} {L:>6} {m:>10.3f} {d:>10.2e} {d / m:>9.1e} {agree:>12.3f}  "
                  f"{nxt[0]!r} / {nxt[1]!r}   {json.dumps(prompt)[:40]}")
        ok = worst <= REL_TOL * scale
        print(f"[{'ok' if ok else 'FAIL'}] distzo logits: max |diff| {worst:.3e} over {int(real.sum())} real "
              f"positions, tolerance {REL_TOL:g} * {scale:.3f} = {REL_TOL * scale:.3e}")
        if not ok:
            failures.append("distzo logits")
        got_next = got[0, lengths[0] - 1].argmax()
        ok = got_next == ref_next
        print(f"[{'ok' if ok else 'FAIL'}] distzo: next token after {PARIS_PROMPT!r} is "
              f"{tok.decode([int(got_next)])!r} ({got_next}), transformers' {ref_next}")
        if not ok:
            failures.append("distzo next token")
    if failures:
        print(f"FAILED: {', '.join(failures)}")
        return 1
    print("all checks passed")
    return 0


def zero_shot(args) -> int:
    import torch

    mezo_reference.set_threads(args.threads)
    for path in [args.model] + args.data:
        if not os.path.isfile(path):
            raise CheckError(f"{path}: no such file")
    model = mezo_reference.load_model_h5(args.model)
    first = None
    print(f"{'file':<40} {'N':>5} {'T':>4}  {'accuracy':>16}  {'last label':>10}  {'loss':>7}")
    for path in args.data:
        data = mezo_finetune.ClassificationData(path)
        first = first or data
        t0 = time.perf_counter()
        logits = []
        with torch.no_grad():
            for s in range(0, data.n, args.batch):
                batch = data.batch(list(range(s, min(data.n, s + args.batch))))
                logits.append(mezo_finetune.candidate_logits(model, batch, data.candidates).double())
        logits = torch.cat(logits)
        seconds = time.perf_counter() - t0
        loss = float(torch.nn.functional.cross_entropy(logits, data.labels))
        pred = logits.argmax(1)
        correct = int((pred == data.labels).sum())
        called_last = float((pred == len(data.candidates) - 1).double().mean())
        print(f"{path:<40} {data.n:>5} {data.seq_len:>4}  {correct / data.n:>7.1%} ({correct:>4}/{data.n:<4})"
              f"  {called_last:>10.1%}  {loss:>7.4f}   ({seconds:.0f} s)")

    # One full forward (logits at every position) of a batch at the file's T.
    b = min(args.batch, first.n)
    ids = first.input_ids[:b]
    mask = (torch.arange(first.seq_len)[None, :] < first.lengths[:b, None]).long()
    inputs = {"input_ids": ids, "attention_mask": mask,
              "position_ids": mezo_reference.position_ids_from_mask(mask), "use_cache": False}
    times = []
    with torch.no_grad():
        for _ in range(args.repeats + 1):
            t0 = time.perf_counter()
            model(**inputs)
            times.append(time.perf_counter() - t0)
    times = times[1:]  # the first call warms up
    print(f"full forward, batch {b} x T {first.seq_len} ({torch.get_num_threads()} torch threads): median "
          f"{statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f}, {len(times)} runs)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="distzo vs transformers on a real model (SmolLM2, Gemma 3); zero-shot accuracy on distzo datasets.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="See the module docstring (head -50 tools/distzo_tools/convert/real_model_check.py).",
    )
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="tensors, and distzo forward vs transformers (exit 1 on failure)")
    c.add_argument("model", help="distzo model file from tools/gguf_to_h5.py")
    c.add_argument("gguf", help="the GGUF it was converted from")
    c.add_argument("tokenizer", help="tokenizer.json (gguf_to_h5.py --tokenizer-dir)")
    c.add_argument("--distzo", default=os.environ.get("DISTZO", "build/distzo"),
                   help="distzo executable (default $DISTZO or build/distzo)")
    c.add_argument("--transformers-only", action="store_true", help="skip distzo: tensors and transformers only")
    c.add_argument("--long", action="store_true",
                   help="the Paris prompt and one of ~740 tokens (past Gemma 3's 512-token sliding window) "
                        "in place of the eight prompts")
    c.add_argument("--work", metavar="DIR", help="keep input.h5 and output.h5 here (default: a temp dir, removed)")
    c.add_argument("--threads", type=int, default=2, help="torch threads (default %(default)s)")
    z = sub.add_parser("zero-shot", help="zero-shot accuracy on classification files, and forward time")
    z.add_argument("model", help="distzo model file")
    z.add_argument("data", nargs="+", help="distzo classification dataset files")
    z.add_argument("--batch", type=int, default=16, help="batch size (default %(default)s)")
    z.add_argument("--repeats", type=int, default=3, help="timed forwards after one warm-up (default %(default)s)")
    z.add_argument("--threads", type=int, default=2, help="torch threads (default %(default)s)")
    args = p.parse_args(argv)
    if args.command == "check":  # transformers reads the GGUF with gguf and accelerate
        requires.check(__file__, "tokenizers", "gguf", "accelerate")
    try:
        return check(args) if args.command == "check" else zero_shot(args)
    except (CheckError, formats.FormatError, OSError) as e:
        print(f"real_model_check: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
