"""A PyTorch MeZO reference: Algorithm 1 of Malladi et al., "Fine-Tuning
Language Models with Just Forward Passes" (MeZO, arXiv 2305.17333), on a
distzo model file loaded into transformers' OPTForCausalLM, LlamaForCausalLM
(or a kin's class) or Gemma3ForCausalLM (by the file's architecture attribute;
float32).

One step, for a batch and a fresh seed s (MeZO-SGD, one query):

    torch.manual_seed(s); θ += ε z          (in place, every trainable tensor)
    ℓ+ = L(θ; batch)
    torch.manual_seed(s); θ -= 2ε z
    ℓ- = L(θ; batch)
    torch.manual_seed(s); θ += ε z          (restore)
    g  = (ℓ+ − ℓ−) / (2ε)                   (the projected gradient, a scalar)
    torch.manual_seed(s); θ ← θ − lr·(g·z + wd·θ)   (no wd on biases / LayerNorm)

z is regenerated from the seed every time (never stored), drawn tensor by tensor
in named_parameters() order with torch.normal(0, 1) in each tensor's dtype and
device, as the MeZO code does. named_parameters() lists the tied lm_head /
embed_tokens tensor once, so it is perturbed and updated once (an untied Llama
lm_head is a parameter of its own).

one_sided_step is FZOO (Dang et al., 2025, Algorithm 1, as the code of
github DKmiyan/FZOO, trainer.py zo_step / zo_update, does it), distzo's
`optim.estimator: one_sided`: N directions u_i (seeds from
direction_seed(run_seed, step, i); rademacher as FZOO, or gaussian), each in
place θ += εu_i, L_i = L(θ), θ −= εu_i; then L0 = L(θ); σ = population std
of the L_i; θ ← θ − lr·Σ_i (L_i − L0)/(Nσ)·u_i (− lr·wd·θ, distzo's weight
decay; FZOO has none). See one_sided_step.

This is the baseline for distzo's ZO step (perf/bench_step) and a reference
trainer. It does NOT reproduce distzo's z (distzo uses counter-based Philox,
docs/perturbation.md); compare losses and speed, not parameters.

Library use (with tools/ on the module path: run from tools/, or PYTHONPATH=tools):

    from distzo_tools.references.mezo_reference import load_model_h5, causal_lm_inputs, mezo_step, fixed_tokens
    model = load_model_h5("model.h5")
    inputs = causal_lm_inputs(torch.tensor(fixed_tokens(8, 128, model.config.vocab_size)))
    out = mezo_step(model, inputs, seed=1234, eps=1e-3, lr=1e-6, wd=0.0)
    print(out.loss_plus, out.loss_minus, out.projected_grad)

`train(model, batches, ...)` runs steps over any iterable of batch_inputs
(dicts passed to model(**inputs), with `labels`), with per-step seeds from
`step_seed(run_seed, step)`. Reading distzo dataset files is not done here yet:
build the batch dicts from them and call train().

Positions: distzo numbers each row's real tokens 0, 1, 2, ... from the
attention mask (position_ids_from_mask). OPT derives the same numbers from the
mask itself; LlamaForCausalLM would use arange(T), which numbers a left-padded
row's real tokens from its pad count (the same logits up to rounding, RoPE
being relative, but not distzo's computation), so for Llama the loss passes
position_ids_from_mask explicitly (with_positions).

Benchmark (what perf/run_benchmarks.sh runs):

    python3 tools/mezo_reference.py --bench --model MODEL.h5 --batch 8 --seq 128 \\
        --steps 3 --threads 1

prints steps/s and tokens/s (tokens = batch*seq per step; each step is two
forward passes), median and min/max over the timed steps after --warmup steps.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "torch", "transformers")

from distzo_tools import formats  # noqa: E402

import h5py  # noqa: E402
import numpy as np  # noqa: E402

# ---------------------------------------------------------------------------
# model and inputs


def load_model_h5(path: str, attn_implementation: str = "sdpa"):
    """OPTForCausalLM, LlamaForCausalLM (or a kin's class) or Gemma3ForCausalLM,
    as the file's architecture says (float32, eval mode, requires_grad off),
    with the weights of a distzo model or checkpoint file; lm_head tied to
    embed_tokens unless the file holds its own (an untied head).

    The config comes from the file's hf_config_json attribute (or, if absent,
    its config attributes). The module is built on the meta device and the
    file's tensors are assigned, so no random init is paid for; the buffers
    that are not in the file (the rotary tables; Gemma's embedding scale
    sqrt(C), a float32 scalar) are then computed from the config on the CPU,
    as transformers computes them.
    """
    import torch
    import transformers

    cfg, tensors = formats.read_model(path)
    config_class = transformers.CONFIG_MAPPING[cfg.architecture]  # model_type -> config class
    model_class = getattr(transformers, cfg.hf_class)
    config = config_class.from_dict(formats.hf_config_dict(cfg))
    with torch.device("meta"):
        model = model_class._from_config(config, attn_implementation=attn_implementation, dtype=torch.float32)
    from distzo_tools.convert.hf_to_h5 import fuse_split  # Phi-3: its fused tensors again

    state = {name: torch.from_numpy(array) for name, array in fuse_split(cfg, tensors).items()}
    result = model.load_state_dict(state, strict=False, assign=True)
    if result.unexpected_keys or set(result.missing_keys) - {"lm_head.weight"}:
        raise formats.FormatError(
            f"{path}: state dict does not fit {cfg.hf_class}: missing {result.missing_keys[:5]}, "
            f"unexpected {result.unexpected_keys[:5]}"
        )
    if cfg.tie_word_embeddings:
        model.tie_weights()
        if model.lm_head.weight.data_ptr() != model.get_input_embeddings().weight.data_ptr():
            raise RuntimeError("lm_head is not tied to embed_tokens after loading")
    if cfg.architecture != "opt":  # rotary: its inverse frequencies are a buffer, computed here
        model.model.rotary_emb = type(model.model.rotary_emb)(config=model.config)
    if cfg.architecture == "gemma3_text":  # as Gemma3TextScaledWordEmbedding makes it
        embed = model.model.embed_tokens
        embed.embed_scale = torch.tensor(embed.scalar_embed_scale)
    for name, p in model.named_parameters():
        if p.device.type == "meta":
            raise RuntimeError(f"{name} was not loaded (still on the meta device)")
        p.requires_grad_(False)
    for name, b in model.named_buffers():
        if b.device.type == "meta":
            raise RuntimeError(f"buffer {name} was not computed (still on the meta device)")
    model.eval()
    return model


def load_opt_h5(path: str, attn_implementation: str = "sdpa"):
    """load_model_h5 for callers that use OPT's module layout (model.model.decoder):
    refuses a file of another architecture, naming it."""
    with h5py.File(path, "r") as f:
        cfg, _ = formats.read_config(f)
    if cfg.architecture != "opt":
        raise formats.FormatError(f"{path}: architecture {cfg.architecture!r}; this tool needs an OPT model")
    return load_model_h5(path, attn_implementation)


def position_ids_from_mask(attention_mask):
    """distzo's positions (B, T) int64 from a 0/1 mask: 0, 1, 2, ... over each
    row's real tokens (right- or left-padded), 1 at pads (as transformers'
    generate()). Pads never reach a real token, so their value is immaterial."""
    import torch

    mask = torch.as_tensor(attention_mask, dtype=torch.long)
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)


def with_positions(model, batch_inputs: Mapping) -> Mapping:
    """batch_inputs for model(**...): for Llama, position_ids_from_mask added
    (when there is a mask and no position_ids yet); OPT's own positions already
    follow the mask, so its inputs pass unchanged."""
    if model.config.model_type == "opt" or "position_ids" in batch_inputs or "attention_mask" not in batch_inputs:
        return batch_inputs
    return {**batch_inputs, "position_ids": position_ids_from_mask(batch_inputs["attention_mask"])}


def fixed_tokens(batch: int, seq: int, vocab: int, seed: int = 1) -> np.ndarray:
    """(batch, seq) int64 token ids from the 64-bit LCG that perf/bench_common.hpp
    uses (fixed_tokens there), so the C++ and Python benchmarks see the same ids."""
    mask = (1 << 64) - 1
    x = seed & mask
    out = np.empty(batch * seq, dtype=np.int64)
    for i in range(batch * seq):
        x = (6364136223846793005 * x + 1442695040888963407) & mask
        out[i] = (x >> 33) % vocab
    return out.reshape(batch, seq)


def causal_lm_inputs(input_ids, attention_mask=None, labels=None) -> dict:
    """The dict mezo_step passes to model(**inputs): next-token loss on every
    real position (labels = input_ids, -100 at pads; transformers shifts them)."""
    import torch

    input_ids = torch.as_tensor(input_ids, dtype=torch.long)
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    attention_mask = torch.as_tensor(attention_mask, dtype=torch.long)
    if labels is None:
        labels = input_ids.masked_fill(attention_mask == 0, -100)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": torch.as_tensor(labels)}


# ---------------------------------------------------------------------------
# MeZO


def trainable_parameters(model) -> list:
    """(name, tensor) in named_parameters() order, tied tensors once. MeZO
    perturbs every parameter that would be trained; we train all of them."""
    return list(model.named_parameters())


def uses_weight_decay(name: str) -> bool:
    """MeZO's rule: no weight decay on biases and norm parameters. MeZO tests
    for "layer_norm"/"layernorm" in the name, which would decay Llama's final
    model.norm.weight; distzo exempts every norm (src/model/parameter_registry),
    so this tests for "norm" (the same set for OPT, where every norm name
    contains "layer_norm")."""
    return "bias" not in name and "norm" not in name


DISTRIBUTIONS = ("gaussian", "rademacher")


def draw_z(params, seed: int, distribution: str = "gaussian"):
    """z(seed) for every tensor of `params`, in order: torch.manual_seed(seed),
    then per tensor, in its dtype and device, torch.normal(0, 1) (gaussian,
    MeZO's draw) or torch.randint(0, 2) * 2 - 1 (rademacher, FZOO's draw)."""
    import torch

    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution {distribution!r}: expected one of {', '.join(DISTRIBUTIONS)}")
    torch.manual_seed(seed)
    for _, p in params:
        if distribution == "rademacher":
            yield torch.randint(0, 2, size=p.size(), device=p.device, dtype=p.dtype) * 2 - 1
        else:
            yield torch.normal(mean=0.0, std=1.0, size=p.size(), device=p.device, dtype=p.dtype)


def perturb_parameters(params, seed: int, scale: float, z=None, distribution: str = "gaussian") -> None:
    """θ += scale · z(seed), in place; z drawn in the order of `params`, or
    the list `z` already drawn by draw_z(params, seed, distribution)."""
    for (_, p), zt in zip(params, draw_z(params, seed, distribution) if z is None else z):
        p.data.add_(zt, alpha=scale)


@dataclass
class MezoStepResult:
    loss_plus: float       # L(θ + εz)
    loss_minus: float      # L(θ − εz)
    projected_grad: float  # (ℓ+ − ℓ−) / (2ε)

    @property
    def loss(self) -> float:
        """What MeZO logs as the step's training loss: the mean of ℓ+ and ℓ−."""
        return 0.5 * (self.loss_plus + self.loss_minus)


def _loss(model, batch_inputs: Mapping) -> float:
    return float(model(**with_positions(model, batch_inputs)).loss)


def _timer(timings):
    """timed(key, fn, *args): fn(*args), its wall seconds added to timings[key] (when timings is a dict)."""
    def timed(key, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        if timings is not None:
            timings[key] = timings.get(key, 0.0) + time.perf_counter() - t0
        return out
    return timed


def mezo_step(
    model,
    batch_inputs: Mapping,
    seed: int,
    eps: float,
    lr: float,
    wd: float = 0.0,
    params=None,
    loss_fn: Callable | None = None,
    timings: dict | None = None,
    keep_z: bool = False,
) -> MezoStepResult:
    """One MeZO-SGD step (Algorithm 1) in place on `model`.

    batch_inputs: passed as model(**batch_inputs); the default loss is its
    `.loss` (give `labels`, e.g. from causal_lm_inputs). loss_fn(model, inputs)
    replaces that (e.g. a classification loss over candidate tokens).
    params: list of (name, tensor), default trainable_parameters(model).
    timings: if a dict, "forward_s" and "perturb_s" are accumulated into it.
    keep_z: draw z once and keep it for the step's four uses (4 bytes a
    parameter more memory, three draws fewer) instead of redrawing it from the
    seed each time as MeZO does to save memory; torch's generator gives the
    same z for the same seed, so the step's bits are the same either way
    (tools/tests/test_references.py checks it).
    """
    import torch

    params = trainable_parameters(model) if params is None else params
    loss_fn = _loss if loss_fn is None else loss_fn
    timed = _timer(timings)

    with torch.no_grad():
        z = timed("perturb_s", lambda: list(draw_z(params, seed))) if keep_z else None
        timed("perturb_s", perturb_parameters, params, seed, eps, z)
        loss_plus = timed("forward_s", loss_fn, model, batch_inputs)
        timed("perturb_s", perturb_parameters, params, seed, -2.0 * eps, z)
        loss_minus = timed("forward_s", loss_fn, model, batch_inputs)
        timed("perturb_s", perturb_parameters, params, seed, eps, z)
        projected_grad = (loss_plus - loss_minus) / (2.0 * eps)

        def update():
            for (name, p), zt in zip(params, draw_z(params, seed) if z is None else z):
                if wd != 0.0 and uses_weight_decay(name):
                    # θ − lr·(g·z + wd·θ), with z as the scratch for g·z + wd·θ
                    p.data.add_(zt.mul_(projected_grad).add_(p.data, alpha=wd), alpha=-lr)
                else:
                    p.data.add_(zt, alpha=-lr * projected_grad)

        timed("perturb_s", update)
    return MezoStepResult(loss_plus, loss_minus, projected_grad)


def step_seed(run_seed: int, step: int) -> int:
    """The seed of step `step` of a run: a pure function of (run_seed, step),
    so a run restarted at any step reproduces its z (MeZO draws a fresh random
    seed per step instead)."""
    return int(np.random.SeedSequence([run_seed, step]).generate_state(1, dtype=np.uint32)[0])


def direction_seed(run_seed: int, step: int, direction: int) -> int:
    """The seed of direction `direction` of step `step` (one_sided_step): a
    pure function of the three, as step_seed is of two (FZOO draws a fresh
    np.random.randint(10**9) per direction instead)."""
    return int(np.random.SeedSequence([run_seed, step, direction]).generate_state(1, dtype=np.uint32)[0])


# ---------------------------------------------------------------------------
# FZOO (the one-sided estimator)


@dataclass
class OneSidedStepResult:
    loss: float          # L(θ), FZOO's `loss` (evaluated after the N directions, as its code does)
    losses: list         # L(θ + εu_i), i = 0 .. N-1
    spread: float        # σ, the population standard deviation of `losses`
    g: list              # (L_i − L(θ)) / σ per direction (nan where σ = 0)
    updated: bool        # False when a loss or g was not finite: θ left as it was

    loss_minus = None    # no L(θ − εu): metrics.csv leaves loss_minus empty

    @property
    def loss_plus(self) -> float:
        """The mean over directions of L(θ + εu_i) (distzo's loss_plus)."""
        return sum(self.losses) / len(self.losses)

    @property
    def projected_grad(self) -> float:
        """The mean over directions of g_i (distzo's g column)."""
        return sum(self.g) / len(self.g)


def one_sided_step(
    model,
    batch_inputs: Mapping,
    seeds: list,
    eps: float,
    lr: float,
    wd: float = 0.0,
    params=None,
    loss_fn: Callable | None = None,
    distribution: str = "rademacher",
    timings: dict | None = None,
    keep_z: bool = False,
) -> OneSidedStepResult:
    """One FZOO step (Dang et al. 2025, Algorithm 1, as DKmiyan/FZOO
    trainer.py zo_step / zo_update do it) in place on `model`, with N =
    len(seeds) directions u_i drawn by draw_z(params, seeds[i], distribution):

        for i: θ += εu_i;  L_i = L(θ; batch);  θ −= εu_i      (in place)
        L0 = L(θ; batch)                                      (after the N directions)
        σ  = sqrt(mean_i (L_i − mean L)²)                     (torch.std(unbiased=False))
        g_i = (L_i − L0) / σ
        for i: θ ← θ − lr · (g_i / N) · u_i,  and with direction 0 also − lr·wd·θ
               (θ before the update; wd on what uses_weight_decay names)

    FZOO's code has no weight decay; the wd term is distzo's decoupled
    θ' = θ − lr·(Σ g_i u_i / N + wd·θ), applied as mezo_step applies it. The
    losses and σ are Python floats (double), FZOO's σ a float32 tensor. A
    step whose losses or g are not finite (σ = 0: every L_i equal) leaves θ
    as the N round trips left it, as distzo skips such a step (FZOO's code
    would divide by zero). keep_z draws each u_i once and keeps it (N times 4
    bytes a parameter) instead of redrawing it for the perturbation, the
    restore and the update: the same bits either way, as for mezo_step.
    """
    import math

    import torch

    params = trainable_parameters(model) if params is None else params
    loss_fn = _loss if loss_fn is None else loss_fn
    n = len(seeds)
    if n < 1:
        raise ValueError("one_sided_step: no directions")
    timed = _timer(timings)

    with torch.no_grad():
        draw = lambda s: list(draw_z(params, s, distribution))  # noqa: E731
        zs = [timed("perturb_s", draw, s) for s in seeds] if keep_z else [None] * n
        losses = []
        for seed, z in zip(seeds, zs):
            timed("perturb_s", perturb_parameters, params, seed, eps, z, distribution)
            losses.append(timed("forward_s", loss_fn, model, batch_inputs))
            timed("perturb_s", perturb_parameters, params, seed, -eps, z, distribution)
        base = timed("forward_s", loss_fn, model, batch_inputs)
        mean = sum(losses) / n
        spread = math.sqrt(sum((x - mean) ** 2 for x in losses) / n)
        g = [(x - base) / spread if spread > 0 else math.nan for x in losses]
        finite = all(math.isfinite(v) for v in [base, *losses, *g])

        def update():
            for i, (seed, z) in enumerate(zip(seeds, zs)):
                coeff = g[i] / n
                for (name, p), zt in zip(params, draw_z(params, seed, distribution) if z is None else z):
                    if i == 0 and wd != 0.0 and uses_weight_decay(name):
                        # θ − lr·(g_0/N·u_0 + wd·θ), with u_0 as the scratch
                        p.data.add_(zt.mul_(coeff).add_(p.data, alpha=wd), alpha=-lr)
                    else:
                        p.data.add_(zt, alpha=-lr * coeff)

        if finite:
            timed("perturb_s", update)
    return OneSidedStepResult(base, losses, spread, g, finite)


def train(
    model,
    batches: Iterable[Mapping],
    steps: int,
    run_seed: int,
    eps: float,
    lr: float | Callable[[int], float],
    wd: float = 0.0,
    log: Callable[[int, MezoStepResult], None] | None = None,
    loss_fn: Callable | None = None,
) -> Iterator[MezoStepResult]:
    """MeZO-SGD over `steps` batches from `batches`; yields each step's result.
    lr may be a constant or a function of the step."""
    params = trainable_parameters(model)
    it = iter(batches)
    for step in range(steps):
        batch = next(it)
        step_lr = lr(step) if callable(lr) else lr
        result = mezo_step(model, batch, step_seed(run_seed, step), eps, step_lr, wd,
                           params=params, loss_fn=loss_fn)
        if log is not None:
            log(step, result)
        yield result


# ---------------------------------------------------------------------------
# benchmark


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_banner(name: str, threads: int) -> dict:
    import torch
    import transformers

    info = {
        "cpu": cpu_model(),
        "cpus": str(os.cpu_count()),
        "affinity": str(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else "?",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "torch_threads": str(torch.get_num_threads()),
        "blas": "MKL" if torch.backends.mkl.is_available() else "non-MKL",
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    print(f"== {name} ==")
    print(f"cpu            : {info['cpu']}")
    print(f"logical cpus   : {info['cpus']} online, {info['affinity']} in this process's affinity mask")
    print(f"torch          : {info['torch']} ({info['blas']}, {info['cpu_capability']}), "
          f"transformers {info['transformers']}")
    print(f"threads        : torch.set_num_threads({threads}) -> {info['torch_threads']} intra-op; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')} "
          f"MKL_NUM_THREADS={os.environ.get('MKL_NUM_THREADS', '(unset)')}")
    return info


def stats(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "reps": len(values)}


def result_line(bench: str, metric: str, st: dict, **fields) -> None:
    """The RESULT line format of perf/bench_common.hpp: one JSON object."""
    obj = {"bench": bench, "metric": metric, **st, **{k: str(v) for k, v in fields.items()}}
    print("RESULT " + json.dumps(obj), flush=True)


def set_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set (only possible once per process)


def bench(args) -> int:
    import torch

    set_threads(args.threads)
    info = machine_banner("PyTorch MeZO reference (tools/mezo_reference.py)", args.threads)
    t0 = time.perf_counter()
    model = load_model_h5(args.model, args.attn)
    cfg = model.config
    n_params = sum(p.numel() for _, p in trainable_parameters(model))
    print(f"model          : {args.model} (L={cfg.num_hidden_layers} C={cfg.hidden_size} "
          f"V={cfg.vocab_size}, {n_params} parameters, attn_implementation={args.attn}), "
          f"loaded in {time.perf_counter() - t0:.3g} s")
    inputs = causal_lm_inputs(torch.from_numpy(fixed_tokens(args.batch, args.seq, cfg.vocab_size, args.seed)))
    params = trainable_parameters(model)
    print(f"workload       : batch {args.batch} x seq {args.seq}, 2 forward passes per step, "
          f"eps {args.eps}, lr {args.lr}, wd {args.wd}; {args.warmup} warm-up + {args.steps} timed steps")

    seconds, results, fwd, pert = [], [], [], []
    for step in range(args.warmup + args.steps):
        timings: dict = {}
        t = time.perf_counter()
        r = mezo_step(model, inputs, step_seed(args.seed, step), args.eps, args.lr, args.wd,
                      params=params, timings=timings)
        dt = time.perf_counter() - t
        results.append(r)
        if step >= args.warmup:
            seconds.append(dt)
            fwd.append(timings["forward_s"])
            pert.append(timings["perturb_s"])
    tokens = args.batch * args.seq
    sps = stats([1.0 / s for s in seconds])
    tps = stats([tokens / s for s in seconds])
    finite = all(np.isfinite([r.loss_plus, r.loss_minus, r.projected_grad]).all() for r in results)
    print(f"mezo step      : {sps['median']:.5g} steps/s (median; min {sps['min']:.5g}, max {sps['max']:.5g}), "
          f"{statistics.median(seconds):.5g} s per step")
    print(f"  tokens/s       : {tps['median']:.5g} (B*T per step; min {tps['min']:.5g}, max {tps['max']:.5g}); "
          f"forward tokens/s {2 * tps['median']:.5g}")
    print(f"  split (median s): 2 forwards {statistics.median(fwd):.4g}, "
          f"4 z passes (perturb x3 + update) {statistics.median(pert):.4g}")
    print(f"  check          : loss step 0 = {results[0].loss:.8g}, last = {results[-1].loss:.8g}, "
          f"last g = {results[-1].projected_grad:.5g}" + ("" if finite else "  (NON-FINITE!)"))
    result_line("mezo_reference", "steps_per_s", sps, model=args.model, batch=args.batch, seq=args.seq,
                attn=args.attn, threads=args.threads, s_per_step=f"{statistics.median(seconds):.6g}",
                tokens_per_s_median=f"{tps['median']:.6g}", tokens_per_s_min=f"{tps['min']:.6g}",
                tokens_per_s_max=f"{tps['max']:.6g}", forward_s=f"{statistics.median(fwd):.6g}",
                perturb_s=f"{statistics.median(pert):.6g}", loss_first=f"{results[0].loss:.8g}",
                finite="yes" if finite else "no", torch=info["torch"],
                torch_threads=info["torch_threads"], cpu=info["cpu"])
    return 0 if finite else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="PyTorch MeZO reference (MeZO paper, Algorithm 1) on a distzo model file.",
        epilog="Training on distzo datasets: use load_model_h5 / train() from Python.",
    )
    p.add_argument("--bench", action="store_true", help="time MeZO steps on the fixed token pattern")
    p.add_argument("--model", required=True, help="distzo model or checkpoint file (.h5)")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=3, help="timed steps")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--eps", type=float, default=1e-3)
    p.add_argument("--lr", type=float, default=1e-6)
    p.add_argument("--wd", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1, help="token pattern seed and run seed")
    p.add_argument("--attn", choices=("eager", "sdpa"), default="sdpa",
                   help="transformers attn_implementation (default sdpa, transformers' own default)")
    args = p.parse_args(argv)
    if not args.bench:
        p.error("only --bench is available from the command line; train with train() from Python")
    if args.batch < 1 or args.seq < 1 or args.steps < 1 or args.warmup < 0 or args.threads < 1:
        p.error("--batch, --seq, --steps, --threads must be >= 1 and --warmup >= 0")
    return bench(args)


if __name__ == "__main__":
    sys.exit(main())
