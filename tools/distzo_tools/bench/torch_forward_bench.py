"""Forward-pass tokens/s of transformers' OPTForCausalLM or LlamaForCausalLM on a
distzo model file: the PyTorch baseline of perf/bench_forward.

    python3 tools/torch_forward_bench.py MODEL.h5 --batch 8 --seq 128 --reps 5 --threads 1

Loads the SAME .h5 (config from its hf_config_json attribute, weights assigned,
lm_head tied to embed_tokens unless the file holds its own;
tools/mezo_reference.py load_model_h5), builds the
same fixed token pattern as the C++ benchmark (no padding), and times
model(input_ids, attention_mask) under torch.inference_mode(): embeddings,
blocks, final layer norm and logits over the full vocabulary, exactly the
stages bench_forward times. Reports the median tokens/s over --reps timed
repetitions after --warmup, and the mean next-token loss at θ, which must match
bench_forward's "check" line (same weights, same tokens).

--attn picks transformers' attn_implementation (sdpa by default, eager as in
the golden fixtures); it is printed and recorded in the RESULT line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "torch", "transformers")

from distzo_tools.references.mezo_reference import (  # noqa: E402
    causal_lm_inputs,
    fixed_tokens,
    load_model_h5,
    machine_banner,
    result_line,
    set_threads,
    stats,
)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="distzo model or checkpoint file (.h5)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--reps", type=int, default=5, help="timed repetitions")
    p.add_argument("--warmup", type=int, default=1, help="untimed repetitions first")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--seed", type=int, default=1, help="token pattern seed (as bench_forward --seed)")
    p.add_argument("--attn", choices=("eager", "sdpa"), default="sdpa")
    args = p.parse_args(argv)
    if min(args.batch, args.seq, args.reps, args.threads) < 1 or args.warmup < 0:
        p.error("--batch, --seq, --reps, --threads must be >= 1 and --warmup >= 0")

    import torch

    set_threads(args.threads)
    info = machine_banner("PyTorch forward baseline (tools/torch_forward_bench.py)", args.threads)
    t0 = time.perf_counter()
    model = load_model_h5(args.model, args.attn)
    cfg = model.config
    print(f"model          : {args.model} (L={cfg.num_hidden_layers} C={cfg.hidden_size} "
          f"V={cfg.vocab_size}, attn_implementation={model.config._attn_implementation}), "
          f"loaded in {time.perf_counter() - t0:.3g} s")
    if args.seq > cfg.max_position_embeddings:
        p.error(f"--seq {args.seq} exceeds max_position_embeddings {cfg.max_position_embeddings}")
    ids = torch.from_numpy(fixed_tokens(args.batch, args.seq, cfg.vocab_size, args.seed))
    inputs = causal_lm_inputs(ids)
    fwd_inputs = {"input_ids": inputs["input_ids"], "attention_mask": inputs["attention_mask"]}
    n_tokens = args.batch * args.seq
    print(f"workload       : batch {args.batch} x seq {args.seq} = {n_tokens} tokens per forward, "
          f"logits ({n_tokens}, {cfg.vocab_size}); {args.warmup} warm-up + {args.reps} timed repetitions")

    seconds = []
    with torch.inference_mode():
        for i in range(args.warmup + args.reps):
            t = time.perf_counter()
            logits = model(**fwd_inputs).logits
            dt = time.perf_counter() - t
            if i >= args.warmup:
                seconds.append(dt)
        # Sanity: the loss at θ, outside the timing (bench_forward prints the same).
        loss = float(model(**inputs).loss)
    assert logits.shape == (args.batch, args.seq, cfg.vocab_size)

    tps = stats([n_tokens / s for s in seconds])
    print(f"forward        : {tps['median']:.5g} tokens/s (median; min {tps['min']:.5g}, "
          f"max {tps['max']:.5g}), {statistics.median(seconds) * 1e3:.5g} ms per forward")
    print(f"  check          : mean next-token loss at theta = {loss:.8g} over "
          f"{args.batch * (args.seq - 1)} targets")
    result_line("torch_forward", "tokens_per_s", tps, model=args.model, batch=args.batch, seq=args.seq,
                attn=model.config._attn_implementation, threads=args.threads,
                ms_per_forward=f"{statistics.median(seconds) * 1e3:.6g}", loss=f"{loss:.8g}",
                torch=info["torch"], torch_threads=info["torch_threads"], cpu=info["cpu"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
