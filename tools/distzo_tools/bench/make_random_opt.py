"""Write a seeded random OPT model as a distzo model file (for the benchmarks).

    python3 tools/make_random_opt.py OUT.h5                    # OPT-125m shape, ~500 MB
    python3 tools/make_random_opt.py OUT.h5 --preset small     # a few MB, for smoke tests
    python3 tools/make_random_opt.py OUT.h5 --layers 2         # any field overridden

The weights are transformers' own OPT initialisation (OPTForCausalLM(config)
after torch.manual_seed(seed): N(0, init_std=0.02) matrices and embeddings,
zero biases, unit LayerNorm), so the forward pass sees realistic magnitudes;
the tensors go through distzo_tools.formats.ModelWriter (validated, atomic),
with the config's JSON as hf_config_json. Speed does not depend on the values,
but the losses the benchmarks print do, and they are reproducible.

Write it outside the repository (perf/run_benchmarks.sh uses a temp dir).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "torch", "transformers")

from distzo_tools import formats  # noqa: E402

PRESETS = {
    # facebook/opt-125m: pre-LN, no projection
    "opt-125m": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, ffn_dim=3072,
                     vocab_size=50272, max_position_embeddings=2048, word_embed_proj_dim=768),
    # the same block structure, small enough for a smoke test in seconds
    "small": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, ffn_dim=512,
                  vocab_size=2048, max_position_embeddings=256, word_embed_proj_dim=128),
}


def make_random_opt(path: str, preset: str = "opt-125m", seed: int = 1234, **overrides) -> formats.OptConfig:
    import torch
    from transformers import OPTConfig, OPTForCausalLM

    fields = dict(PRESETS[preset])
    fields.update({k: v for k, v in overrides.items() if v is not None})
    config = OPTConfig(
        **fields,
        do_layer_norm_before=True,
        activation_function="relu",
        dropout=0.0,
        attention_dropout=0.0,
        pad_token_id=1,
        bos_token_id=2,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    model = OPTForCausalLM(config).to(torch.float32)
    config_json = config.to_json_string()
    cfg = formats.config_from_hf(json.loads(config_json), hf_config_json=config_json)
    state = model.state_dict()
    with formats.ModelWriter(path, cfg) as writer:
        for name in writer.expected:
            writer.add(name, state[name].detach().cpu().numpy())
    return cfg


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="seeded random OPT model -> distzo .h5")
    p.add_argument("out", help="output .h5 (written atomically)")
    p.add_argument("--preset", choices=sorted(PRESETS), default="opt-125m")
    p.add_argument("--seed", type=int, default=1234)
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "ffn_dim", "vocab_size",
                "max_position_embeddings"):
        p.add_argument("--" + key.replace("_", "-"), dest=key, type=int, default=None)
    p.add_argument("--layers", dest="num_hidden_layers", type=int, help="alias of --num-hidden-layers")
    args = p.parse_args(argv)
    overrides = {k: getattr(args, k) for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                                "ffn_dim", "vocab_size", "max_position_embeddings")}
    if overrides["hidden_size"] is not None:
        overrides["word_embed_proj_dim"] = overrides["hidden_size"]
    t0 = time.perf_counter()
    cfg = make_random_opt(args.out, args.preset, args.seed, **overrides)
    n = sum(int(__import__("numpy").prod(s)) for s in formats.expected_tensors(cfg).values())
    print(f"wrote {args.out}: preset {args.preset}, seed {args.seed}, L={cfg.num_hidden_layers} "
          f"C={cfg.hidden_size} H={cfg.num_attention_heads} F={cfg.ffn_dim} V={cfg.vocab_size}, "
          f"{n} parameters, {os.path.getsize(args.out) / 2**20:.1f} MiB, {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
