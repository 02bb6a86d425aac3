"""Generate the golden-reference fixtures in tests/data from Hugging Face transformers.

THE FILES THIS WRITES ARE GENERATED. NEVER EDIT THEM BY HAND. Regenerate with

    python3 tools/make_reference.py --out tests/data

and check that the committed fixtures still match what this script produces with

    python3 tools/make_reference.py --out tests/data --check

For each tiny random OPT, Llama(-like) and Gemma 3 model below it writes

    tests/data/<name>.model.h5   the model, in the distzo model format (docs/formats.md)
    tests/data/<name>.ref.h5     a fixed padded batch and what transformers computes for it

The ref file layout is documented in docs/formats.md ("Golden reference file") and
on every dataset's `description` attribute. Everything is seeded and written
without HDF5 timestamps, so two runs with the same transformers/torch give
byte-identical files. Needs torch, transformers, safetensors, numpy, h5py.

Positions. distzo numbers each row's real tokens 0, 1, 2, ... from the
attention mask, whether the row is right- or left-padded. OPTForCausalLM does
the same by itself (cumsum(mask) * mask - 1; embed_positions row = that + 2).
LlamaForCausalLM does not: without position_ids it uses arange(T), which
starts a left-padded row's real tokens at its pad count. So the Llama batch is
run with position_ids = cumsum(attention_mask) - 1, set to 1 where
attention_mask == 0 (what transformers' generate() passes), given explicitly to
forward(), and the ref file stores them. (Rotary attention depends only on
position differences, and a row's real tokens see only each other, so
arange(T) would change the real-token logits by float rounding only, ~3e-6
here; the explicit positions make the reference the very computation distzo
does. For the same reason a constant offset of a row's positions is harmless
up to rounding and shows in no fixture; wrong frequencies, theta or channel
pairing change the logits, and the fixtures catch them.) Gemma3ForCausalLM is
run the same way.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "torch", "transformers")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from distzo_tools import formats  # noqa: E402
from distzo_tools.convert import hf_to_h5  # noqa: E402

IGNORE_INDEX = -100
BATCH = 4
SEQ = 10

# Special token ids per architecture: (pad_token_id, bos_token_id). Every text
# starts with BOS; the other tokens are drawn from 3 .. vocab_size - 1.
# OPT: pad 1, and its tokenizer starts every text with </s> (id 2).
# Llama (Llama 2's tokenizer): <unk> 0, <s> 1, </s> 2, no pad token of its
# own; the fixtures pad with 0, an id every vocabulary has.
# Gemma 3's tokenizer: <pad> 0, <eos> 1, <bos> 2.
SPECIAL_IDS = {"opt": (1, 2), "llama": (0, 1), "qwen2": (0, 1), "qwen3": (0, 1), "mistral": (0, 1),
               "gemma3_text": (0, 2), "olmo2": (0, 1), "phi3": (0, 1)}

# Gemma 3's tiny shape (its fixtures add the vocabulary and the window): 4 heads over 2 KV heads,
# a sliding, a full and a sliding layer, head_dim 12 and query_pre_attn_scalar 24, a tied head.
GEMMA3_TINY = dict(
    hidden_size=32, num_key_value_heads=2, head_dim=12, intermediate_size=40, tie_word_embeddings=True,
    query_pre_attn_scalar=24, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
    rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
                     "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}},
    rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
)

# name -> (architecture, seed, config overrides). All: max_position_embeddings
# 32 (the rope-scaled ones: their own); 2 layers (Gemma 3: 3).
MODELS = {
    # OPT, 2 heads each.
    # pre-LN with final layer norm, like opt-125m / opt-1.3b / ...
    "opt_tiny_preln": ("opt", 1001, dict(vocab_size=96, hidden_size=32, ffn_dim=64, do_layer_norm_before=True)),
    # post-LN, no final layer norm (the opt-350m block), no projection
    "opt_tiny_postln": ("opt", 1002, dict(vocab_size=64, hidden_size=16, ffn_dim=32, do_layer_norm_before=False)),
    # opt-350m shape: post-LN and word_embed_proj_dim != hidden_size (project_in / project_out)
    "opt_tiny_proj": (
        "opt",
        1003,
        dict(vocab_size=72, hidden_size=32, word_embed_proj_dim=16, ffn_dim=48, do_layer_norm_before=False),
    ),
    # pre-LN with projection: final layer norm, then project_out (covers that order)
    "opt_tiny_preln_proj": (
        "opt",
        1004,
        dict(vocab_size=80, hidden_size=24, word_embed_proj_dim=16, ffn_dim=40, do_layer_norm_before=True),
    ),
    # Llama, 4 heads each.
    # grouped-query attention (2 query heads per key/value head), tied head, default RoPE base
    "llama_tiny_gqa": (
        "llama",
        2001,
        dict(vocab_size=96, hidden_size=32, num_key_value_heads=2, intermediate_size=48,
             tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-6),
    ),
    # multi-query attention (one key/value head), its own lm_head, Llama-3's RoPE base
    "llama_tiny_untied": (
        "llama",
        2002,
        dict(vocab_size=80, hidden_size=32, num_key_value_heads=1, intermediate_size=40,
             tie_word_embeddings=False, rope_theta=500000.0, rms_norm_eps=1e-5),
    ),
    # head_dim 16 with 4 heads: H * head_dim = 64 != hidden_size 32; every projection has a bias
    "llama_tiny_bias": (
        "llama",
        2003,
        dict(vocab_size=72, hidden_size=32, num_key_value_heads=2, head_dim=16, intermediate_size=48,
             tie_word_embeddings=True, attention_bias=True, mlp_bias=True),
    ),
    # Llama 3.1's rope scaling ("llama3"), head_dim 16 with base 10000 and an original context of
    # 64: frequency 0 is kept (wavelength 2π < 64/4), 1 and 2 blended, 3..7 divided by the factor
    "llama_tiny_llama3": (
        "llama",
        2004,
        dict(vocab_size=64, hidden_size=32, num_key_value_heads=2, head_dim=16, intermediate_size=40,
             tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-5, max_position_embeddings=256,
             rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                           "original_max_position_embeddings": 64}),
    ),
    # Llama's kin, 4 heads each.
    # Qwen2: biases on q, k and v only; GQA; untied head; Qwen's RoPE base
    "qwen2_tiny": (
        "qwen2",
        3001,
        dict(vocab_size=88, hidden_size=32, num_key_value_heads=2, intermediate_size=56,
             tie_word_embeddings=False, rope_theta=1000000.0, rms_norm_eps=1e-6, use_sliding_window=False),
    ),
    # Qwen3: per-head RMSNorm of q and k, explicit head_dim (H * hd = 48 != 32), tied head
    "qwen3_tiny": (
        "qwen3",
        3002,
        dict(vocab_size=80, hidden_size=32, num_key_value_heads=2, head_dim=12, intermediate_size=40,
             tie_word_embeddings=True, rope_theta=1000000.0, rms_norm_eps=1e-6, attention_bias=False,
             use_sliding_window=False),
    ),
    # Qwen2.5's long-context YaRN (factor 4 over an original context of 256, transformers 4's
    # "type" key): with head_dim 16 and base 10000 the ramp runs over frequencies 0..4, and
    # cos and sin carry the attention factor 0.1 ln 4 + 1
    "qwen2_tiny_yarn": (
        "qwen2",
        3004,
        dict(vocab_size=64, hidden_size=32, num_key_value_heads=2, head_dim=16, intermediate_size=40,
             tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-6, use_sliding_window=False,
             max_position_embeddings=1024,
             rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256}),
    ),
    # Mistral: a sliding window as long as the batch (it hides nothing: distzo's case), MQA
    "mistral_tiny": (
        "mistral",
        3003,
        dict(vocab_size=72, hidden_size=32, num_key_value_heads=1, head_dim=8, intermediate_size=48,
             tie_word_embeddings=False, sliding_window=SEQ, rms_norm_eps=1e-5),
    ),
    # Qwen2 with use_sliding_window: layer 0 attends fully, layer 1 (from max_window_layers) within
    # 4 keys (the chunked path)
    "qwen2_tiny_window": (
        "qwen2",
        3006,
        dict(vocab_size=64, hidden_size=32, num_key_value_heads=2, intermediate_size=40,
             tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-6, use_sliding_window=True,
             sliding_window=4, max_window_layers=1),
    ),
    # OLMo 2: norms after attention and MLP, q/k norms over the whole projection (GQA: 32 and 16
    # channels), an untied head
    "olmo2_tiny": (
        "olmo2",
        3007,
        dict(vocab_size=64, hidden_size=32, num_key_value_heads=2, intermediate_size=40,
             tie_word_embeddings=False, rope_theta=500000.0, rms_norm_eps=1e-6),
    ),
    # Phi-3: fused qkv_proj and gate_up_proj (split at import), GQA, a sliding window of 6 (the
    # masked path), an untied head
    "phi3_tiny": (
        "phi3",
        3008,
        dict(vocab_size=64, hidden_size=32, num_key_value_heads=2, intermediate_size=40,
             tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-5, sliding_window=6),
    ),
    # Phi-3's LongRoPE (transformers 4's "type" key, Phi3Config's own original context of 3, so
    # every row of the batch is past it and transformers' per-call choice of the long factors
    # is distzo's per-row one); the attention factor from max_position_embeddings / 3
    "phi3_tiny_longrope": (
        "phi3",
        3009,
        dict(vocab_size=64, hidden_size=32, num_key_value_heads=2, intermediate_size=40,
             tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-5,
             original_max_position_embeddings=3,
             rope_scaling={"type": "longrope", "short_factor": [1.0, 1.25, 1.5, 2.0],
                           "long_factor": [1.0, 2.0, 4.0, 8.0]}),
    ),
    # Mistral past its window: 4 keys on sequences of up to 10 (distzo's chunked path: keys past
    # the window skipped), left- and right-padded rows
    "mistral_tiny_window": (
        "mistral",
        3005,
        dict(vocab_size=64, hidden_size=32, num_key_value_heads=2, head_dim=8, intermediate_size=40,
             tie_word_embeddings=True, sliding_window=4, rms_norm_eps=1e-5),
    ),
    # Gemma 3, 4 heads over 2 KV heads: a sliding, a full and a sliding layer (pattern 2), whose
    # distinct RoPE bases catch a swap; head_dim 12 (H * hd = 48 != 32) and query_pre_attn_scalar
    # 24 != head_dim, so a 1/sqrt(head_dim) score scale fails; the window as long as the batch
    # (distzo's case); a tied head
    "gemma3_tiny": ("gemma3_text", 4001, dict(GEMMA3_TINY, vocab_size=80, sliding_window=SEQ)),
    # Gemma 3 past its window: the sliding layers see 6 keys of up to 10 (distzo's masked path,
    # the window over T/2), the full layer every key
    "gemma3_tiny_window": ("gemma3_text", 4002, dict(GEMMA3_TINY, vocab_size=64, sliding_window=6)),
}
COMMON = {
    "opt": dict(
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=32,
        dropout=0.0,
        attention_dropout=0.0,
        pad_token_id=SPECIAL_IDS["opt"][0],
        bos_token_id=SPECIAL_IDS["opt"][1],
        eos_token_id=SPECIAL_IDS["opt"][1],
    ),
    "llama": dict(
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=32,
        attention_dropout=0.0,
        pad_token_id=SPECIAL_IDS["llama"][0],
        bos_token_id=SPECIAL_IDS["llama"][1],
        eos_token_id=2,
    ),
}
COMMON.update({arch: COMMON["llama"] for arch in ("qwen2", "qwen3", "mistral", "olmo2", "phi3")})
COMMON["gemma3_text"] = dict(
    num_hidden_layers=3,
    num_attention_heads=4,
    max_position_embeddings=32,
    attention_dropout=0.0,
    pad_token_id=SPECIAL_IDS["gemma3_text"][0],
    bos_token_id=SPECIAL_IDS["gemma3_text"][1],
    eos_token_id=1,
)


def hf_classes(arch: str):
    """(config class, model class) of transformers for an architecture."""
    import transformers

    return transformers.CONFIG_MAPPING[arch], getattr(transformers, formats.CONFIG_TYPES[arch].hf_class)


def build_model(arch: str, seed: int, overrides: dict):
    """A float32 eager OPTForCausalLM / LlamaForCausalLM / ... / Gemma3ForCausalLM
    with every parameter drawn from a seeded generator.

    The default init (std 0.02, zero biases, unit norms) would make the logits
    tiny and leave biases and norm weights untested (a kernel that skipped
    them would still pass), so every tensor is redrawn at a scale that keeps
    activations O(1): norm weights 1 + 0.2 N(0, 1) (Gemma 3's, which scale by
    1 + w, 0.2 N(0, 1): the same effective scale), biases 0.1 N(0, 1), token
    (and OPT position) embeddings 0.3 N(0, 1) (Gemma's pad row included: its
    padding_idx only zeroes the row at init), every other matrix, an untied
    lm_head included, N(0, 1) / sqrt(fan-in).
    """
    import torch

    config_class, model_class = hf_classes(arch)
    torch.manual_seed(seed)
    config = config_class(**{**COMMON[arch], **overrides}, attn_implementation="eager")
    model = model_class(config).to(torch.float32).eval()
    gen = torch.Generator().manual_seed(seed)
    tied = config.tie_word_embeddings
    norm_offset = 0.0 if arch == "gemma3_text" else 1.0  # Gemma's RMSNorm scales by 1 + w
    with torch.no_grad():
        for name, param in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if name == "lm_head.weight" and tied:
                continue  # the same tensor as embed_tokens
            if "norm" in name and name.endswith(".weight"):  # OPT layer_norm, Llama RMSNorm
                value = norm_offset + 0.2 * torch.randn(param.shape, generator=gen)
            elif name.endswith(".bias"):
                value = 0.1 * torch.randn(param.shape, generator=gen)
            elif "embed_tokens" in name or "embed_positions" in name:
                value = 0.3 * torch.randn(param.shape, generator=gen)
            else:  # Linear weight (out, in): keep the activation scale
                value = torch.randn(param.shape, generator=gen) / np.sqrt(param.shape[1])
            param.copy_(value.to(torch.float32))
    embed = model.get_input_embeddings().weight
    assert (model.lm_head.weight.data_ptr() == embed.data_ptr()) == tied
    return model


def position_ids(arch: str, mask: np.ndarray) -> np.ndarray:
    """(B, T) int32 positions of the batch (see the module docstring).

    OPT: HF's own, cumsum(mask) * mask - 1 (-1 at pads; the embed_positions
    row is this + 2). Llama: distzo's, cumsum(mask) - 1 with 1 at pads, passed
    to LlamaForCausalLM explicitly. Both are 0, 1, 2, ... over the real tokens.
    """
    if arch == "opt":
        return (np.cumsum(mask, axis=1) * mask - 1).astype(np.int32)
    return np.where(mask == 1, np.cumsum(mask, axis=1) - 1, 1).astype(np.int32)


def forward_inputs(arch: str, input_ids: np.ndarray, mask: np.ndarray) -> dict:
    """The keyword arguments of model(...) for the batch: OPT derives its
    positions from the mask; Llama is given them."""
    import torch

    inputs = {"input_ids": torch.from_numpy(input_ids).long(), "attention_mask": torch.from_numpy(mask).long()}
    if arch != "opt":
        inputs["position_ids"] = torch.from_numpy(position_ids(arch, mask)).long()
        inputs["use_cache"] = False
    return inputs


def make_batch(seed: int, vocab_size: int, pad_id: int, bos_id: int):
    """input_ids and attention_mask (B=4, T=10): one full row, two right-padded
    rows of different lengths, one left-padded row. Every text starts with BOS."""
    rng = np.random.RandomState(seed)
    lengths = [SEQ, 7, 4, 6]
    left_padded = [False, False, False, True]
    input_ids = np.full((BATCH, SEQ), pad_id, dtype=np.int32)
    mask = np.zeros((BATCH, SEQ), dtype=np.int32)
    for b, (n, left) in enumerate(zip(lengths, left_padded)):
        tokens = np.concatenate([[bos_id], rng.randint(3, vocab_size, size=n - 1)]).astype(np.int32)
        span = slice(SEQ - n, SEQ) if left else slice(0, n)
        input_ids[b, span] = tokens
        mask[b, span] = 1
    return input_ids, mask


def make_labels(input_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """input_ids, with IGNORE_INDEX at pads and at each row's first real token.

    The first real token has no real predecessor. In a right-padded row it sits
    at t=0 and HF's shift drops it anyway; in a left-padded row HF would score
    it from the logits of the pad just before it, which are meaningless (that
    query attends to nothing real). Ignoring it makes the loss a function of
    real-token logits only: the mean over t of -log p(x[t+1] | x[<=t]) for all
    t where both t and t+1 are real tokens.
    """
    labels = np.where(mask == 1, input_ids, IGNORE_INDEX).astype(np.int32)
    first_real = mask.argmax(axis=1)
    labels[np.arange(labels.shape[0]), first_real] = IGNORE_INDEX
    return labels


def log_softmax64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def compute_reference(arch: str, model, seed: int):
    """Run transformers on the fixed batch; return {dataset: (array, description)}."""
    import torch

    cfg = model.config
    pad_id, bos_id = SPECIAL_IDS[arch]
    input_ids, mask = make_batch(seed, cfg.vocab_size, pad_id, bos_id)
    labels = make_labels(input_ids, mask)
    positions = position_ids(arch, mask)
    L = cfg.num_hidden_layers
    layers = model.model.decoder.layers if arch == "opt" else model.model.layers

    layer_out = {}
    hooks = [
        layer.register_forward_hook(lambda mod, args, out, k=k: layer_out.__setitem__(k, out))
        for k, layer in enumerate(layers)
    ]
    with torch.no_grad():
        out = model(
            **forward_inputs(arch, input_ids, mask),
            labels=torch.from_numpy(labels).long(),
            output_hidden_states=True,
        )
    for h in hooks:
        h.remove()
    logits = out.logits.numpy().astype(np.float32)
    hidden = [h.numpy().astype(np.float32) for h in out.hidden_states]
    assert len(hidden) == L + 1, len(hidden)
    # LM loss in float64 from HF's logits, as sums and counts.
    logp = log_softmax64(logits)
    targets = labels[:, 1:]
    valid = targets != IGNORE_INDEX
    nll = np.zeros(targets.shape, dtype=np.float64)
    bi, ti = np.nonzero(valid)
    nll[bi, ti] = -logp[bi, ti, targets[bi, ti]]
    row_sum = nll.sum(axis=1)
    row_count = valid.sum(axis=1).astype(np.int64)
    lm_sum = float(row_sum.sum())
    lm_count = int(row_count.sum())
    lm_loss = float(out.loss.item())
    assert abs(lm_loss - lm_sum / lm_count) <= 1e-6 * abs(lm_loss), (lm_loss, lm_sum / lm_count)

    # Classification over candidate tokens at each row's last real token.
    rng = np.random.RandomState(seed + 1)
    candidates = rng.choice(np.arange(3, cfg.vocab_size), size=3, replace=False).astype(np.int32)
    cls_position = (SEQ - 1 - np.argmax(mask[:, ::-1], axis=1)).astype(np.int32)
    cls_gold = rng.randint(0, len(candidates), size=BATCH).astype(np.int32)
    cls_logits = logits[np.arange(BATCH), cls_position][:, candidates]  # (B, K) float32
    cls_logp = log_softmax64(cls_logits)
    cls_loss = float(-cls_logp[np.arange(BATCH), cls_gold].mean())
    cls_pred = np.argmax(cls_logits, axis=1).astype(np.int32)
    top2 = np.sort(cls_logits.astype(np.float64), axis=1)[:, -2:]
    assert np.all(top2[:, 1] - top2[:, 0] > 1e-2), "argmax too close to a tie; pick another seed"

    if arch == "opt":
        position_description = (
            "(B, T) int32 HF position ids: cumsum(attention_mask) * attention_mask - 1, i.e. 0,1,2.. "
            "over the real tokens of each row (left padding included), -1 at pads; the row read from "
            "model.decoder.embed_positions.weight is position_ids + 2"
        )
    elif arch == "gemma3_text":
        position_description = (
            "(B, T) int32 distzo positions: cumsum(attention_mask) - 1, set to 1 where attention_mask = 0 "
            "(as transformers' generate()), i.e. 0,1,2.. over the real tokens of each row (left padding "
            "included); passed explicitly as position_ids to Gemma3ForCausalLM.forward (its default, "
            "arange(T), would number the left-padded row's real tokens from its pad count). The rotary "
            "embedding of position p rotates channel pair (i, i + head_dim/2) of every (q_norm- / "
            "k_norm-normalised) query and key head by the angle p * base^(-2i/head_dim), 0 <= i < "
            "head_dim/2, with base rope_theta in the full-attention layers (k + 1) % sliding_window_pattern "
            "== 0 and rope_local_base_freq in the sliding ones"
        )
    else:
        position_description = (
            "(B, T) int32 distzo positions: cumsum(attention_mask) - 1, set to 1 where attention_mask = 0 "
            "(as transformers' generate()), i.e. 0,1,2.. over the real tokens of each row (left padding "
            "included); passed explicitly as position_ids to LlamaForCausalLM.forward (its default, "
            "arange(T), would number the left-padded row's real tokens from its pad count). The rotary "
            "embedding of position p rotates channel pair (i, i + head_dim/2) of every query and key head "
            "by the angle p * rope_theta^(-2i/head_dim), 0 <= i < head_dim/2"
        )
    data = {
        "input_ids": (input_ids, f"(B, T) int32 token ids; pad_token_id {pad_id} at padded positions"),
        "attention_mask": (mask, "(B, T) int32, 1 = real token, 0 = pad"),
        "position_ids": (positions, position_description),
        "logits": (
            logits,
            "(B, T, vocab_size) float32 HF logits; only positions with attention_mask = 1 are meaningful",
        ),
        "labels": (
            labels,
            "(B, T) int32 input_ids with -100 at pads and at each row's first real token "
            "(it has no real predecessor); HF shifts them: logits[:, t] predicts labels[:, t+1]",
        ),
        "lm_loss": (
            np.float64(lm_loss),
            f"scalar float64: HF {type(model).__name__} loss for labels= (float32 compute): mean over "
            "t in [0, T-1) with labels[:, t+1] != -100 of -log softmax(logits[:, t])[labels[:, t+1]]",
        ),
        "lm_loss_sum": (np.float64(lm_sum), "scalar float64: the sum behind lm_loss, from logits in float64"),
        "lm_token_count": (np.int64(lm_count), "scalar int64: the number of targets behind lm_loss"),
        "lm_loss_row_sum": (row_sum, "(B,) float64: lm_loss_sum per row (for micro-batch splits)"),
        "lm_row_token_count": (row_count, "(B,) int64: lm_token_count per row"),
        "candidates": (candidates, "(K,) int32 candidate token ids (vocabulary columns) of the classification"),
        "cls_position": (cls_position, "(B,) int32 index of each row's last real token"),
        "cls_gold": (cls_gold, "(B,) int32 gold answer, an index into candidates"),
        "cls_logits": (cls_logits, "(B, K) float32 logits[b, cls_position[b], candidates]"),
        "cls_loss": (
            np.float64(cls_loss),
            "scalar float64: mean over rows of cross-entropy of cls_logits (softmax over the K "
            "candidate columns only) against cls_gold, computed in float64",
        ),
        "cls_predictions": (cls_pred, "(B,) int32 argmax of cls_logits (index into candidates)"),
    }
    for k, h in enumerate(hidden):
        if k == 0 and arch == "opt":
            what = (
                "embeddings: (project_in(embed_tokens[input_ids]) if present) + embed_positions[position_ids + 2], "
                "the input of layer 0"
            )
        elif k == 0 and arch == "gemma3_text":
            what = (
                "embeddings: embed_tokens[input_ids] * float32(sqrt(hidden_size)) (Gemma's scaled embeddings; "
                "the tied lm_head reads embed_tokens unscaled; positions enter each layer's rotary "
                "embeddings), the input of layer 0"
            )
        elif k == 0:
            what = (
                "embeddings: embed_tokens[input_ids] (positions enter each layer's rotary embeddings), "
                "the input of layer 0"
            )
        elif k < L:
            what = f"output of decoder layer {k - 1} (input of layer {k})"
        elif arch == "opt":
            what = (
                f"output of the decoder: layer {L - 1} output, then final_layer_norm (pre-LN models only), "
                "then project_out (if present); the lm_head input"
            )
        elif arch == "gemma3_text":
            what = (
                f"output of the decoder: layer {L - 1} output, then the final RMSNorm model.norm (scaling by "
                "1 + model.norm.weight); the lm_head input"
            )
        else:
            what = f"output of the decoder: layer {L - 1} output, then the final RMSNorm model.norm; the lm_head input"
        data[f"hidden_states_{k}"] = (h, f"({'B, T, ' + str(h.shape[-1])}) float32 HF hidden_states[{k}]: {what}")
    final = "the final layer norm and project_out" if arch == "opt" else "the final RMSNorm"
    # What a decoder layer computes, said for Gemma 3, whose block is not the Llama one.
    block = (
        ": h + post_attention_layernorm(attention(input_layernorm(h))), then that + "
        "post_feedforward_layernorm(mlp(pre_feedforward_layernorm(that))) with mlp = "
        "down_proj(gelu_tanh(gate_proj(x)) * up_proj(x)), every RMSNorm scaling by 1 + weight"
        if arch == "gemma3_text"
        else ""
    )
    for k in range(L):
        h = layer_out[k].numpy().astype(np.float32)
        data[f"layer_output_{k}"] = (
            h,
            f"(B, T, hidden_size) float32 raw output of decoder layer {k} (forward hook){block}"
            + (
                f"; equal to hidden_states_{k + 1}"
                if k < L - 1
                else f"; before {final}, so unlike hidden_states_" + str(L)
            ),
        )
    return data


def write_reference(path: str, name: str, arch: str, seed: int, model, data: dict) -> None:
    import torch
    import transformers

    with formats.atomic_h5(path) as f:
        formats.write_string_attr(f.attrs, "distzo_format", "reference")
        formats.write_string_attr(f.attrs, "model", name + ".model.h5")
        formats.write_string_attr(f.attrs, "generator", "tools/make_reference.py (generated, never edit by hand)")
        formats.write_string_attr(f.attrs, "regenerate", "python3 tools/make_reference.py --out tests/data")
        formats.write_string_attr(f.attrs, "transformers_version", transformers.__version__)
        formats.write_string_attr(f.attrs, "torch_version", torch.__version__)
        formats.write_string_attr(f.attrs, "attn_implementation", "eager")
        f.attrs.create("seed", np.int64(seed), dtype=np.int64)
        f.attrs.create("pad_token_id", np.int64(SPECIAL_IDS[arch][0]), dtype=np.int64)
        f.attrs.create("ignore_index", np.int64(IGNORE_INDEX), dtype=np.int64)
        f.attrs.create("num_hidden_states", np.int64(model.config.num_hidden_layers + 1), dtype=np.int64)
        for key, (array, description) in data.items():
            formats.write_dataset(f, key, array)
            formats.write_string_attr(f[key].attrs, "description", description)


def generate(out_dir: str, names=None, verbose=True) -> list[str]:
    """Write <name>.model.h5 and <name>.ref.h5 for each model; return the paths."""
    import torch

    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # the same float summation order on every machine
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name in names or MODELS:
        arch, seed, overrides = MODELS[name]
        model = build_model(arch, seed, overrides)
        data = compute_reference(arch, model, seed)
        model_path = os.path.join(out_dir, name + ".model.h5")
        ref_path = os.path.join(out_dir, name + ".ref.h5")
        with tempfile.TemporaryDirectory() as tmp:
            hf_dir = os.path.join(tmp, "hf")
            model.save_pretrained(hf_dir)
            hf_to_h5.hf_to_h5(hf_dir, model_path, verbose=False)
            # The way back must give bit-identical logits.
            back = os.path.join(tmp, "back")
            hf_to_h5.h5_to_hf(model_path, back, verbose=False)
            again = hf_classes(arch)[1].from_pretrained(back, attn_implementation="eager").eval()
            with torch.no_grad():
                logits = again(**forward_inputs(arch, data["input_ids"][0], data["attention_mask"][0])).logits.numpy()
            if not np.array_equal(logits, data["logits"][0]):
                raise RuntimeError(f"{name}: logits after the HF -> distzo -> HF round trip differ")
        write_reference(ref_path, name, arch, seed, model, data)
        written += [model_path, ref_path]
        if verbose:
            real = data["attention_mask"][0] == 1
            lg = data["logits"][0][real]
            print(
                f"{name}: {os.path.getsize(model_path)} + {os.path.getsize(ref_path)} bytes; "
                f"lm_loss {data['lm_loss'][0]:.6f} over {int(data['lm_token_count'][0])} targets; "
                f"cls_loss {data['cls_loss'][0]:.6f}; real-token logits in [{lg.min():.2f}, {lg.max():.2f}]"
            )
    return written


def h5_equal(a: str, b: str) -> list[str]:
    """Differences between two HDF5 files (names, attributes, dtypes, shapes, values)."""
    diffs = []

    def attrs(obj):
        return {k: (v.tobytes() if isinstance(v, np.ndarray) else v) for k, v in obj.attrs.items()}

    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        if attrs(fa) != attrs(fb):
            diffs.append("root attributes")
        if sorted(fa.keys()) != sorted(fb.keys()):
            diffs.append(f"dataset names: {sorted(set(fa) ^ set(fb))}")
        for key in sorted(set(fa) & set(fb)):
            da, db = fa[key], fb[key]
            if da.dtype != db.dtype or da.shape != db.shape:
                diffs.append(f"{key}: {da.dtype}{da.shape} vs {db.dtype}{db.shape}")
            elif da[()].tobytes() != db[()].tobytes():
                diffs.append(f"{key}: values differ")
            elif attrs(da) != attrs(db):
                diffs.append(f"{key}: attributes differ")
    return diffs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="tests/data", help="output directory (default tests/data)")
    parser.add_argument("--only", nargs="*", choices=sorted(MODELS), help="generate only these models")
    parser.add_argument(
        "--check", action="store_true", help="regenerate into a temporary directory and compare with --out"
    )
    args = parser.parse_args(argv)
    if not args.check:
        generate(args.out, args.only)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(tmp, args.only, verbose=False)
        bad = 0
        for path in fresh:
            old = os.path.join(args.out, os.path.basename(path))
            if not os.path.exists(old):
                print(f"MISSING {old}")
                bad += 1
                continue
            diffs = h5_equal(path, old)
            same_bytes = open(path, "rb").read() == open(old, "rb").read()
            print(f"{'OK     ' if not diffs else 'DIFFERS'} {old}{'' if same_bytes else ' (content equal, bytes differ)' if not diffs else ': ' + '; '.join(diffs)}")
            bad += bool(diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
