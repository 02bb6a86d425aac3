"""Tiny random Hugging Face models and checkpoints for the tests, and the
helpers that expect a refusal. torch and transformers are imported where a
helper needs them, so a test that calls one is skipped without them."""

from __future__ import annotations

import glob
import json
import os

from distzo_tools import formats
from distzo_tools.convert import hf_to_h5
from distzo_tools.formats import FormatError


def quiet_transformers():
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def tiny_opt(seed=0, **overrides):
    import torch
    from transformers import OPTConfig, OPTForCausalLM

    kw = dict(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, ffn_dim=32,
        max_position_embeddings=20, attn_implementation="eager",
    )
    kw.update(overrides)
    torch.manual_seed(seed)
    model = OPTForCausalLM(OPTConfig(**kw)).eval()
    with torch.no_grad():  # make biases and layer norms non-trivial
        for name, p in model.named_parameters():
            if name.endswith(".bias") or "layer_norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def tiny_llama(seed=0, **overrides):
    """A LlamaForCausalLM with 4 heads over 2 key/value heads, norms and biases randomised."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    kw = dict(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=24, max_position_embeddings=20, attn_implementation="eager",
    )
    kw.update(overrides)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**kw)).eval()
    with torch.no_grad():  # the default init has unit norms, zero biases and std 0.02
        for name, p in model.named_parameters():
            p.add_(0.1 * torch.randn_like(p) if name.endswith(".bias") or "norm" in name else 3 * p)
    return model


def tiny_gemma3(seed=0, **overrides):
    """A Gemma3ForCausalLM with 4 heads over 2 key/value heads of head_dim 6
    (H * hd = 24 != 16), a sliding, a full and a sliding layer with distinct
    RoPE bases, query_pre_attn_scalar 10 != head_dim, a window wider than the
    test rows; norm weights (which scale by 1 + w) and matrices randomised."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    kw = dict(
        vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
        head_dim=6, intermediate_size=24, max_position_embeddings=20, sliding_window=16, query_pre_attn_scalar=10,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}},
        attn_implementation="eager",
    )
    kw.update(overrides)
    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(Gemma3TextConfig(**kw)).eval()
    with torch.no_grad():  # the default init has w = 0 norms (scale 1) and std 0.02
        for name, p in model.named_parameters():
            p.add_(0.1 * torch.randn_like(p) if "norm" in name else 3 * p)
    return model


def padded_logits(model):
    """Logits of a right- and a left-padded row; a Llama model gets distzo's
    positions (mezo_reference.position_ids_from_mask), as the fixtures do."""
    import torch

    from distzo_tools.references import mezo_reference

    ids = torch.tensor([[2, 5, 9, 11, 7, 3], [1, 1, 2, 8, 4, 6]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
    inputs = mezo_reference.with_positions(model, {"input_ids": ids, "attention_mask": mask})
    with torch.no_grad():
        return model(**inputs).logits.numpy()


def checkpoint_state_dict(model, rename_decoder=False, with_head=False, dtype=None):
    """The weights as a checkpoint holds them. A tied head is left out unless
    with_head (then it is a copy of embed_tokens); an untied one is always in."""
    sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    embed = "model.decoder.embed_tokens.weight" if model.config.model_type == "opt" else "model.embed_tokens.weight"
    if model.config.tie_word_embeddings:
        if not with_head:
            sd.pop("lm_head.weight", None)
        elif "lm_head.weight" not in sd:
            sd["lm_head.weight"] = sd[embed].clone()
    if rename_decoder:
        sd = {(k[len("model."):] if k.startswith("model.decoder.") else k): v for k, v in sd.items()}
    if dtype is not None:
        sd = {k: v.to(dtype) for k, v in sd.items()}
    return sd


def write_hf(model, out_dir, fmt, rename_decoder=False, with_head=False, shards=1, dtype=None):
    """Write config.json and weights in one of the layouts found on the hub."""
    import torch
    from safetensors.torch import save_file

    os.makedirs(out_dir, exist_ok=True)
    model.config.to_json_file(os.path.join(out_dir, "config.json"))
    sd = checkpoint_state_dict(model, rename_decoder, with_head, dtype)
    keys = sorted(sd)
    parts = [keys[i::shards] for i in range(shards)]
    ext = "safetensors" if fmt == "safetensors" else "bin"
    stem = "model" if fmt == "safetensors" else "pytorch_model"
    weight_map = {}
    for i, part in enumerate(parts):
        name = f"{stem}.{ext}" if shards == 1 else f"{stem}-{i + 1:05d}-of-{shards:05d}.{ext}"
        piece = {k: sd[k] for k in part}
        if fmt == "safetensors":
            save_file(piece, os.path.join(out_dir, name), metadata={"format": "pt"})
        else:
            torch.save(piece, os.path.join(out_dir, name))
        weight_map.update({k: name for k in part})
    if shards > 1:
        with open(os.path.join(out_dir, f"{stem}.{ext}.index.json"), "w") as fh:
            json.dump({"metadata": {}, "weight_map": weight_map}, fh)


def round_trip(model, tmp, **layout):
    hf_dir, h5, back = (os.path.join(tmp, n) for n in ("hf", "m.h5", "back"))
    write_hf(model, hf_dir, **layout)
    hf_to_h5.hf_to_h5(hf_dir, h5, verbose=False)
    hf_to_h5.h5_to_hf(h5, back, verbose=False)
    # Loaded in float32 whatever the files hold: a float16 / bfloat16 export
    # (the tools keep a 2-byte dtype) then upcasts exactly, and the logits
    # compare with the float32 model's.
    import torch

    again = type(model).from_pretrained(back, attn_implementation="eager", torch_dtype=torch.float32).eval()
    return h5, again


def llama_hf(**changes):
    """A Llama config.json (transformers 5 form) with `changes` applied; None deletes a key."""
    hf = {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 64, "hidden_size": 32,
        "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": None, "hidden_act": "silu", "max_position_embeddings": 32, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True, "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
    }
    for key, value in changes.items():
        if value is None:
            hf.pop(key, None)
        else:
            hf[key] = value
    return hf


def gemma3_hf(**changes):
    """A Gemma 3 config.json (transformers 5 form: layer_types, rope_parameters
    per layer type) with `changes` applied; None deletes a key."""
    hf = {
        "model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "vocab_size": 64, "hidden_size": 32,
        "intermediate_size": 48, "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 12, "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 32,
        "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "attention_bias": False, "query_pre_attn_scalar": 24,
        "sliding_window": 16, "final_logit_softcapping": None, "attn_logit_softcapping": None,
        "use_bidirectional_attention": False, "_sliding_window_pattern": 6,  # as transformers 5.24 writes it
        "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
        "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 5e5},
                            "sliding_attention": {"rope_type": "default", "rope_theta": 2e4}},
    }
    for key, value in changes.items():
        if value is None:
            hf.pop(key, None)
        else:
            hf[key] = value
    return hf


def expect_error(hf_dir, out, needle):
    try:
        hf_to_h5.hf_to_h5(hf_dir, out, verbose=False)
    except FormatError as err:
        assert needle in str(err), f"expected {needle!r} in {err}"
        assert not os.path.exists(out), "a failed conversion left its output behind"
        leftovers = glob.glob(os.path.join(os.path.dirname(out), ".*.tmp"))
        assert not leftovers, leftovers
        return str(err)
    raise AssertionError(f"no error (expected {needle!r})")


def expect_config_error(hf, needle):
    try:
        formats.config_from_hf(hf)
    except FormatError as err:
        assert needle in str(err), f"expected {needle!r} in {err}"
        return str(err)
    raise AssertionError(f"no error (expected {needle!r})")
