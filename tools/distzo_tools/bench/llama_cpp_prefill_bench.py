"""Prefill tokens/s of llama.cpp (llama-cpp-python) with logits at every
position: the llama.cpp baseline next to perf/bench_forward.

    python3 tools/llama_cpp_prefill_bench.py MODEL.gguf --batch 1 --seq 512 --reps 5 --threads 1
    python3 tools/llama_cpp_prefill_bench.py MODEL.gguf --seq 64 --check-h5 MODEL.h5   # + logits vs transformers

What is timed: one llama_decode of a llama_batch holding all B*T tokens
(sequence b at positions 0..T-1, seq_id b) with the logits flag set on every
token, then llama_synchronize, on a fresh context state (the memory / KV cache
is cleared before each repetition, outside the timing). The context is made
with n_ctx = n_batch = n_ubatch = B*T, n_seq_max = B (one KV stream per
sequence unless --kv-unified), n_threads = n_threads_batch = --threads, so the whole prefill is one ubatch: embeddings,
blocks, final norm and logits over the full vocabulary for every token, the
stages bench_forward times. By default in float32 throughout, as distzo and
transformers: K/V cache f32 and flash attention off (llama.cpp's CPU flash
attention rounds through fp16: ~3e-2 max logit difference on SmolLM2, against
~1e-4 without). `--kv-type f16 --flash-attn auto` is llama.cpp's own default. The tokens are the fixed pattern of
perf/bench_common.hpp (tools/mezo_reference.fixed_tokens, same --seed), no BOS.
Median tokens/s over --reps timed repetitions after --warmup.

Checks, outside the timing: the mean next-token loss at θ over B*(T-1)
targets from the logits of the last repetition (bench_forward and
tools/torch_forward_bench.py print the same number for the same weights and
tokens); with --check-h5 MODEL.h5 (a distzo model file of the same weights,
e.g. tools/gguf_to_f32.py's input converted by gguf_to_h5.py), the max
|llama.cpp - transformers| logit over every position of sequence 0 (first
--check-tokens tokens) and of "The capital of France is" (llama.cpp's own
tokenizer, no BOS), with the argmax agreement.

Output: a human-readable report and one `RESULT {json}` line in
perf/bench_common.hpp's format (bench "llama_cpp_prefill", metric
"tokens_per_s"). Needs llama-cpp-python, numpy and h5py (and torch,
transformers for --check-h5). OMP_NUM_THREADS is set to --threads unless already set
(ggml's CPU backend may use OpenMP).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "llama_cpp")

import numpy as np  # noqa: E402

PARIS_PROMPT = "The capital of France is"


def fixed_tokens(batch: int, seq: int, vocab: int, seed: int) -> np.ndarray:
    """mezo_reference.fixed_tokens (imported when first needed)."""
    from distzo_tools.references.mezo_reference import fixed_tokens as ft

    return ft(batch, seq, vocab, seed)


def cpu_model() -> str:
    """mezo_reference.cpu_model (imported when first needed)."""
    from distzo_tools.references.mezo_reference import cpu_model as cm

    return cm()


class Prefill:
    """A llama.cpp model and context sized for one B*T-token ubatch."""

    def __init__(self, path: str, batch: int, seq: int, threads: int, flash_attn: str,
                 kv_unified: bool, kv_type: str, verbose: bool):
        import llama_cpp as L

        self.L = L
        if not verbose:  # keep the callback alive on self: llama.cpp calls it later
            self._log_cb = L.llama_log_callback(lambda level, text, user: None)
            L.llama_log_set(self._log_cb, ctypes.c_void_p())
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise SystemExit(f"llama_cpp_prefill_bench: {path}: llama.cpp could not load the model")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = int(L.llama_vocab_n_tokens(self.vocab))
        n = batch * seq
        cp = L.llama_context_default_params()
        cp.n_ctx = n
        cp.n_batch = n
        cp.n_ubatch = n
        cp.n_seq_max = batch
        cp.kv_unified = kv_unified
        cp.n_threads = threads
        cp.n_threads_batch = threads
        cp.flash_attn_type = {"auto": L.LLAMA_FLASH_ATTN_TYPE_AUTO, "on": L.LLAMA_FLASH_ATTN_TYPE_ENABLED,
                              "off": L.LLAMA_FLASH_ATTN_TYPE_DISABLED}[flash_attn]
        cp.type_k = cp.type_v = {"f32": L.GGML_TYPE_F32, "f16": L.GGML_TYPE_F16}[kv_type]
        cp.no_perf = True
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise SystemExit("llama_cpp_prefill_bench: llama_init_from_model failed")
        self.capacity = n
        self.lbatch = L.llama_batch_init(n, 0, 1)
        buf = ctypes.create_string_buffer(256)
        L.llama_model_desc(self.model, buf, len(buf))
        self.desc = buf.value.decode(errors="replace")
        self.n_params = int(L.llama_model_n_params(self.model))

    def close(self) -> None:
        L = self.L
        L.llama_batch_free(self.lbatch)
        L.llama_free(self.ctx)
        L.llama_model_free(self.model)

    def tokenize(self, text: str) -> list[int]:
        L = self.L
        raw = text.encode()
        out = (L.llama_token * (len(raw) + 8))()
        n = L.llama_tokenize(self.vocab, raw, len(raw), out, len(out), False, False)
        if n < 0:
            raise RuntimeError(f"llama_tokenize: {n}")
        return list(out[:n])

    def decode(self, ids: np.ndarray) -> float:
        """Seconds of llama_decode + llama_synchronize for (B, T) ids, all logits on."""
        L = self.L
        B, T = ids.shape
        n = B * T
        if n > self.capacity:
            raise ValueError(f"{n} tokens > context {self.capacity}")
        L.llama_memory_clear(L.llama_get_memory(self.ctx), True)
        b = self.lbatch
        flat = ids.reshape(-1)
        for i in range(n):
            b.token[i] = int(flat[i])
            b.pos[i] = i % T
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = i // T
            b.logits[i] = 1
        b.n_tokens = n
        t0 = time.perf_counter()
        rc = L.llama_decode(self.ctx, b)
        L.llama_synchronize(self.ctx)
        dt = time.perf_counter() - t0
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        return dt

    def logits(self, n: int) -> np.ndarray:
        """(n, V) float32 copy of the last decode's logits (batch order)."""
        ptr = self.L.llama_get_logits(self.ctx)
        return np.ctypeslib.as_array(ptr, shape=(n * self.n_vocab,)).reshape(n, self.n_vocab).copy()


def mean_next_token_loss(logits: np.ndarray, ids: np.ndarray) -> tuple[float, int]:
    """Mean cross-entropy of token t+1 given logits at t, per row, over B*(T-1) targets."""
    B, T = ids.shape
    lg = logits.reshape(B, T, -1)[:, :-1].astype(np.float64)
    tgt = ids[:, 1:]
    m = lg.max(-1, keepdims=True)
    lse = (m[..., 0] + np.log(np.exp(lg - m).sum(-1)))
    picked = np.take_along_axis(lg, tgt[..., None], -1)[..., 0]
    return float((lse - picked).mean()), int(tgt.size)


def check_h5(pf: Prefill, h5: str, ids0: np.ndarray, threads: int) -> dict:
    """max |llama.cpp - transformers| logit on sequence ids0 and on the Paris prompt."""
    import torch

    from distzo_tools.references import mezo_reference

    mezo_reference.set_threads(threads)
    model = mezo_reference.load_model_h5(h5)
    out = {}
    for label, toks in (("fixed tokens", [int(t) for t in ids0]), ("paris", pf.tokenize(PARIS_PROMPT))):
        arr = np.asarray(toks, dtype=np.int64)[None, :]
        pf.decode(arr)
        got = pf.logits(arr.shape[1])
        with torch.inference_mode():
            ref = model(input_ids=torch.from_numpy(arr), use_cache=False).logits[0].float().numpy()
        d = float(np.abs(got - ref).max())
        m = float(np.abs(ref).max())
        agree = float((got.argmax(-1) == ref.argmax(-1)).mean())
        out[label] = {"tokens": len(toks), "max_abs_diff": d, "max_abs_logit": m, "argmax_agree": agree,
                      "next_llama": int(got[-1].argmax()), "next_transformers": int(ref[-1].argmax())}
        print(f"  check logits   : {label:<12} {len(toks):>4} tokens: max |llama.cpp - transformers| = {d:.3e} "
              f"(max |logit| {m:.3f}, ratio {d / m:.1e}); argmax agrees at {agree:.1%} of positions; "
              f"last next token {out[label]['next_llama']} / {out[label]['next_transformers']}")
    return out


def ggml_build() -> str:
    """ggml's version and commit as the bundled libggml-base reports them ('' if it cannot)."""
    import llama_cpp

    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so"))
        out = []
        for name in ("ggml_version", "ggml_commit"):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_char_p
            out.append(fn().decode())
        return f"ggml {out[0]}, llama.cpp commit {out[1]}"
    except (OSError, AttributeError):
        return ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("model", help="GGUF file (e.g. tools/gguf_to_f32.py's F32 output)")
    p.add_argument("--batch", type=int, default=1, help="sequences in the one batch (default 1)")
    p.add_argument("--seq", type=int, default=512, help="tokens per sequence (default 512)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions")
    p.add_argument("--warmup", type=int, default=1, help="untimed repetitions first")
    p.add_argument("--threads", type=int, default=1, help="n_threads = n_threads_batch")
    p.add_argument("--seed", type=int, default=1, help="token pattern seed (as bench_forward --seed)")
    p.add_argument("--flash-attn", choices=("auto", "on", "off"), default="off",
                   help="llama.cpp's flash_attn_type (default off: its CPU flash attention rounds through "
                        "fp16, ~1e-2 on the logits; llama.cpp's own default is auto = on)")
    p.add_argument("--kv-type", choices=("f32", "f16"), default="f32",
                   help="type of the K and V cache (default f32, as distzo and transformers; llama.cpp's own default is f16)")
    p.add_argument("--kv-unified", action="store_true",
                   help="kv_unified = true: one KV buffer that every sequence attends over, masked (default false: "
                        "one KV stream per sequence, llama.cpp's advice for independent sequences; 2.8x faster "
                        "at 16 x 64 here; the same at batch 1)")
    p.add_argument("--check-h5", metavar="MODEL.h5", help="also compare logits with transformers on this file")
    p.add_argument("--check-tokens", type=int, default=64, help="tokens of sequence 0 in the --check-h5 comparison")
    p.add_argument("--verbose", action="store_true", help="keep llama.cpp's own log on stderr")
    args = p.parse_args(argv)
    if min(args.batch, args.seq, args.reps, args.threads, args.check_tokens) < 1 or args.warmup < 0:
        p.error("--batch, --seq, --reps, --threads, --check-tokens must be >= 1 and --warmup >= 0")
    if args.check_h5:
        requires.check(__file__, "torch", "transformers")
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    import llama_cpp

    pf = Prefill(args.model, args.batch, args.seq, args.threads, args.flash_attn, args.kv_unified, args.kv_type, args.verbose)
    system = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
    print("== llama.cpp prefill baseline (tools/llama_cpp_prefill_bench.py) ==")
    print(f"cpu            : {cpu_model()}")
    build = ggml_build()
    print(f"llama.cpp      : llama-cpp-python {llama_cpp.__version__}" + (f" ({build})" if build else "") + f"; {system}")
    print(f"threads        : n_threads = n_threads_batch = {args.threads}; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"model          : {args.model} ({pf.desc}, {pf.n_params} parameters, vocab {pf.n_vocab})")
    ids = fixed_tokens(args.batch, args.seq, pf.n_vocab, args.seed)
    n = args.batch * args.seq
    print(f"workload       : batch {args.batch} x seq {args.seq} = {n} tokens in one llama_decode "
          f"(n_ubatch {n}, KV cache {args.kv_type}, kv_unified {args.kv_unified}, flash_attn {args.flash_attn}), logits ({n}, {pf.n_vocab}); "
          f"{args.warmup} warm-up + {args.reps} timed repetitions")
    seconds = []
    for i in range(args.warmup + args.reps):
        dt = pf.decode(ids)
        if i >= args.warmup:
            seconds.append(dt)
    loss, targets = mean_next_token_loss(pf.logits(n), ids)
    tps = [n / s for s in seconds]
    st = {"median": statistics.median(tps), "min": min(tps), "max": max(tps), "reps": len(tps)}
    ms = statistics.median(seconds) * 1e3
    print(f"prefill        : {st['median']:.5g} tokens/s (median; min {st['min']:.5g}, max {st['max']:.5g}), "
          f"{ms:.5g} ms per prefill")
    print(f"  check          : mean next-token loss at theta = {loss:.8g} over {targets} targets")
    checks = {}
    if args.check_h5:
        checks = check_h5(pf, args.check_h5, ids[0, : args.check_tokens], args.threads)
    pf.close()
    fields = {"model": args.model, "batch": args.batch, "seq": args.seq, "threads": args.threads,
              "ms_per_forward": f"{ms:.6g}", "loss": f"{loss:.8g}", "flash_attn": args.flash_attn, "kv_type": args.kv_type,
              "kv_unified": str(args.kv_unified).lower(), "llama_cpp_python": llama_cpp.__version__, "ggml": build,
              "cpu": cpu_model()}
    for label, c in checks.items():
        fields[f"check_{label.replace(' ', '_')}_max_abs_diff"] = f"{c['max_abs_diff']:.4g}"
    print("RESULT " + json.dumps({"bench": "llama_cpp_prefill", "metric": "tokens_per_s", **st,
                                 **{k: str(v) for k, v in fields.items()}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
