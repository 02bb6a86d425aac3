"""Read and write distzo model files (HDF5), format version 1.

The format is specified in docs/formats.md. In short: one row-major dataset
per Hugging Face state-dict key at the root group — float32, or a 2-byte
type (float16: HDF5's IEEE half, numpy float16; bfloat16: a 16-bit HDF5
float with 8 exponent bits, which h5py reads as float32) — the architecture
config as root attributes, strings as *variable-length UTF-8 scalar*
attributes, integers as int64 and reals as float64 scalar attributes.

numpy has no bfloat16: a bf16 tensor is a Bf16Array (its 16-bit words; an
ml_dtypes.bfloat16 array is accepted too). read_model gives float32 arrays
(exact) unless asked to keep the stored dtype.

One config type per architecture: OptConfig (OPTForCausalLM,
`architecture = "opt"`), LlamaConfig (LlamaForCausalLM, `"llama"`), with
Llama's kin as its subclasses: Qwen2Config (`"qwen2"`), Qwen3Config (`"qwen3"`)
and MistralConfig (`"mistral"`), and Gemma3Config (Gemma3ForCausalLM,
`"gemma3_text"`: a block of its own, not a Llama variant).
config_from_hf picks one by config.json's model_type, read_config by the
file's `architecture` attribute; expected_tensors, hf_config_dict,
write_model, ModelWriter and read_model take any of them.

Only numpy and h5py are needed here (no torch, no transformers), so the module
can be imported by any tool, notebook or test.

    from distzo_h5 import read_model, write_model
    cfg, tensors = read_model("tests/data/opt_tiny_preln.model.h5")  # OptConfig
    cfg, tensors = read_model("tests/data/llama_tiny_gqa.model.h5")  # LlamaConfig
    cfg, tensors = read_model("tests/data/gemma3_tiny.model.h5")     # Gemma3Config
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import ClassVar, Iterable, Iterator, Mapping, Union

import h5py
import numpy as np

FORMAT_VERSION = 1

# String attributes are written as fixed-length UTF-8 scalars (H5T_STRING of
# the value's byte length, at least 1, null-padded, H5T_CSET_UTF8, scalar
# dataspace), as distzo writes them: variable-length strings live in the
# file's global heap, which HDF5 reads without checks (a damaged one crashes
# the reader). h5py reads them back as bytes; read_string_attr decodes.
# Readers still accept variable-length strings (files of earlier versions).
def string_dtype_for(value: bytes) -> np.dtype:
    return h5py.string_dtype(encoding="utf-8", length=max(len(value), 1))

# Integer config attributes of an OPT model, in the order they are written.
OPT_INT_ATTRS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "ffn_dim",
    "vocab_size",
    "max_position_embeddings",
    "word_embed_proj_dim",
    "do_layer_norm_before",
    "tie_word_embeddings",
)

# Integer config attributes of a Llama model, in the order they are written
# (after them, LLAMA_FLOAT_ATTRS as float64).
LLAMA_INT_ATTRS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "tie_word_embeddings",
    "attention_bias",
    "mlp_bias",
)
LLAMA_FLOAT_ATTRS = ("rms_norm_eps", "rope_theta")

# Integer config attributes of a Gemma 3 text model, in the order they are
# written (after them, GEMMA3_FLOAT_ATTRS as float64, then hidden_activation).
GEMMA3_INT_ATTRS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "tie_word_embeddings",
    "attention_bias",
    "sliding_window",
    "sliding_window_pattern",
)
GEMMA3_FLOAT_ATTRS = ("rms_norm_eps", "rope_theta", "rope_local_base_freq", "query_pre_attn_scalar")
# The only MLP activation of Gemma 3 (the tanh approximation of GELU, GeGLU).
GEMMA3_ACTIVATION = "gelu_pytorch_tanh"

# OPT learned positions are offset by 2 (fairseq's padding_idx hack): the table
# has max_position_embeddings + 2 rows.
POSITION_OFFSET = 2


class FormatError(ValueError):
    """A file or config that does not follow docs/formats.md."""


# ---------------------------------------------------------------------------
# 2-byte tensors


class Bf16Array:
    """A bfloat16 tensor as its 16-bit words (the high half of each float32):
    numpy has no bfloat16. `words` is a uint16 array of the tensor's shape."""

    dtype = "bfloat16"

    def __init__(self, words):
        self.words = np.ascontiguousarray(words, dtype=np.uint16)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.words.shape)

    @property
    def size(self) -> int:
        return int(self.words.size)

    def to_float32(self) -> np.ndarray:
        """The values, exactly (every bf16 value is a float32)."""
        return (self.words.astype(np.uint32) << np.uint32(16)).view(np.float32)

    @classmethod
    def from_float32(cls, values) -> "Bf16Array":
        """Round float32 values to the nearest bf16 (ties to even; NaN stays NaN)."""
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
        nan = np.isnan(np.asarray(values, dtype=np.float32))
        words = np.where(nan, (bits >> np.uint64(16)) | np.uint64(0x0040), rounded)
        return cls(words.astype(np.uint16))

    def __repr__(self) -> str:
        return f"Bf16Array(shape={self.shape})"


def bf16_h5_type() -> h5py.h5t.TypeFloatID:
    """The HDF5 type of a bf16 dataset: IEEE binary32 with its fields moved to
    sign bit 15, 8 exponent bits at 7 (bias 127), 7 mantissa bits at 0, 2 bytes
    (built the way h5py builds its float16; distzo writes the same)."""
    t = h5py.h5t.IEEE_F32LE.copy()
    t.set_fields(15, 7, 8, 0, 7)
    t.set_size(2)
    t.set_precision(16)
    t.set_ebias(127)
    return t


def stored_dtype(ds: h5py.Dataset) -> str:
    """"fp32", "fp16" or "bf16": how a tensor dataset holds its elements (h5py
    reports a bf16 dataset as float32, so this looks at the HDF5 type)."""
    t = ds.id.get_type()
    if t.get_class() == h5py.h5t.FLOAT and t.get_size() == 4 and ds.dtype == np.float32:
        return "fp32"
    if t.get_class() == h5py.h5t.FLOAT and t.get_size() == 2:
        fields, bias = t.get_fields(), t.get_ebias()
        if fields == (15, 10, 5, 0, 10) and bias == 15:
            return "fp16"
        if fields == (15, 7, 8, 0, 7) and bias == 127:
            return "bf16"
    raise FormatError(f"{ds.name.lstrip('/')}: dtype {ds.dtype} ({t.get_size()} bytes) is not float32, float16 or bfloat16")


def read_tensor(ds: h5py.Dataset, keep_dtype: bool = False):
    """A tensor dataset's elements: float32 (2-byte ones decoded exactly), or
    with keep_dtype as stored (float32, float16, or a Bf16Array of the words)."""
    kind = stored_dtype(ds)
    if kind == "bf16":
        words = np.empty(ds.shape, dtype=np.uint16)
        if words.size:
            ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, words, mtype=bf16_h5_type())  # no conversion
        array = Bf16Array(words)
        return array if keep_dtype else array.to_float32()
    data = ds[()]
    return data if keep_dtype or kind == "fp32" else data.astype(np.float32)


def as_stored(array, float32: bool = False):
    """A tensor as a file holds it: float16 and bf16 (a Bf16Array, an
    ml_dtypes bfloat16 array) kept, any other float as float32; everything
    float32 with float32=True (exact for 2-byte values)."""
    if getattr(array, "dtype", None) is not None and str(array.dtype) == "bfloat16" and not isinstance(array, Bf16Array):
        array = Bf16Array(np.asarray(array).view(np.uint16))
    if isinstance(array, Bf16Array):
        return array.to_float32() if float32 else array
    array = np.asarray(array)
    if not np.issubdtype(array.dtype, np.floating):
        raise FormatError(f"dtype {array.dtype} is not floating point")
    if array.dtype == np.float16 and not float32:
        return array
    return array.astype(np.float32)


def _check_ints(cfg) -> None:
    """Every integer attribute >= 1, the 0/1 flags >= 0."""
    for name in cfg.int_attrs:
        value = int(getattr(cfg, name))
        low = 0 if name in cfg.flag_attrs or name in cfg.zero_means_none else 1
        if value < low:
            raise FormatError(f"config {name} = {value}: must be >= {low}")


@dataclass
class OptConfig:
    """The subset of a Hugging Face OPTConfig that defines the tensors."""

    # How the file spells it, what transformers builds, and the root
    # attributes (int64 attributes, those of them that are 0/1 flags, float64
    # attributes, string attributes besides hf_config_json), in write order.
    architecture: ClassVar[str] = "opt"
    hf_class: ClassVar[str] = "OPTForCausalLM"
    int_attrs: ClassVar[tuple[str, ...]] = OPT_INT_ATTRS
    flag_attrs: ClassVar[tuple[str, ...]] = ("do_layer_norm_before", "tie_word_embeddings")
    zero_means_none: ClassVar[tuple[str, ...]] = ()
    float_attrs: ClassVar[tuple[str, ...]] = ()
    string_attrs: ClassVar[tuple[str, ...]] = ("activation_function",)

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    ffn_dim: int
    vocab_size: int
    max_position_embeddings: int
    word_embed_proj_dim: int
    do_layer_norm_before: bool = True
    tie_word_embeddings: bool = True
    activation_function: str = "relu"
    hf_config_json: str = field(default="", repr=False)

    def validate(self) -> None:
        _check_ints(self)
        if self.hidden_size % self.num_attention_heads != 0:
            raise FormatError(
                f"hidden_size {self.hidden_size} is not divisible by "
                f"num_attention_heads {self.num_attention_heads}"
            )
        if self.activation_function != "relu":
            raise FormatError(
                f"activation_function {self.activation_function!r}: only 'relu' is supported"
            )
        if not self.tie_word_embeddings:
            raise FormatError(
                "tie_word_embeddings = 0: distzo stores OPT with lm_head tied to "
                "embed_tokens (one parameter); an untied head is not supported"
            )

    @property
    def has_projection(self) -> bool:
        return self.word_embed_proj_dim != self.hidden_size

    @property
    def has_final_layer_norm(self) -> bool:
        return bool(self.do_layer_norm_before)


class _RotaryAttention:
    """What LlamaConfig (and its kin) and Gemma3Config share: H query heads
    over KV key/value heads of head_dim channels, RMSNorm with rms_norm_eps,
    rotary embeddings with base rope_theta."""

    @property
    def q_width(self) -> int:
        """H * hd: rows of q_proj, columns of o_proj."""
        return self.num_attention_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """KV * hd: rows of k_proj and v_proj."""
        return self.num_key_value_heads * self.head_dim

    def _check_attention(self) -> None:
        """The integer attributes, the head grouping, an even head_dim (rotary
        pairs), a positive epsilon and a rotary base above 1."""
        _check_ints(self)
        if self.num_attention_heads % self.num_key_value_heads != 0:
            raise FormatError(
                f"num_attention_heads {self.num_attention_heads} is not divisible by "
                f"num_key_value_heads {self.num_key_value_heads}"
            )
        if self.head_dim % 2 != 0:
            raise FormatError(f"head_dim {self.head_dim}: must be even (rotary embeddings rotate pairs)")
        if not (math.isfinite(self.rms_norm_eps) and self.rms_norm_eps > 0):
            raise FormatError(f"rms_norm_eps {self.rms_norm_eps!r}: must be positive")
        if not (math.isfinite(self.rope_theta) and self.rope_theta > 1):
            raise FormatError(f"rope_theta {self.rope_theta!r}: must be greater than 1")


@dataclass
class LlamaConfig(_RotaryAttention):
    """The subset of a Hugging Face LlamaConfig that defines the tensors and the forward.

    C = hidden_size, H = num_attention_heads, KV = num_key_value_heads (grouped
    query attention: query head h reads key/value head h // (H / KV)),
    hd = head_dim (H * hd may differ from C), F = intermediate_size. RMSNorm
    with rms_norm_eps; plain rotary embeddings with base rope_theta; SwiGLU MLP
    (hidden_act "silu"); lm_head is embed_tokens when tie_word_embeddings.
    """

    architecture: ClassVar[str] = "llama"
    hf_class: ClassVar[str] = "LlamaForCausalLM"
    int_attrs: ClassVar[tuple[str, ...]] = LLAMA_INT_ATTRS
    flag_attrs: ClassVar[tuple[str, ...]] = ("tie_word_embeddings", "attention_bias", "mlp_bias")
    zero_means_none: ClassVar[tuple[str, ...]] = ()
    # The Llama family's variants (distzo's ModelConfig::qkv_bias, qk_norm,
    # sliding_window): Qwen2 has biases on q, k, v only (qkv_bias below);
    # Qwen3 an RMSNorm over each head of q and k; Mistral a sliding window
    # (MistralConfig.sliding_window).
    qk_norm: ClassVar[bool] = False
    float_attrs: ClassVar[tuple[str, ...]] = LLAMA_FLOAT_ATTRS
    string_attrs: ClassVar[tuple[str, ...]] = ("hidden_act",)

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    hidden_act: str = "silu"
    hf_config_json: str = field(default="", repr=False)

    def validate(self) -> None:
        self._check_attention()
        if self.hidden_act != "silu":
            raise FormatError(f"hidden_act {self.hidden_act!r}: only 'silu' is supported")

    @property
    def qkv_bias(self) -> bool:
        """Biases on q_proj, k_proj and v_proj."""
        return bool(self.attention_bias)


@dataclass
class Qwen2Config(LlamaConfig):
    """Qwen2ForCausalLM: Llama's block with biases on q, k and v (none on o)."""

    architecture: ClassVar[str] = "qwen2"
    hf_class: ClassVar[str] = "Qwen2ForCausalLM"

    @property
    def qkv_bias(self) -> bool:
        return True


@dataclass
class Qwen3Config(LlamaConfig):
    """Qwen3ForCausalLM: Llama's block with an RMSNorm (weights q_norm, k_norm
    of shape (hd)) over each head of q and k before the rotary embedding."""

    architecture: ClassVar[str] = "qwen3"
    hf_class: ClassVar[str] = "Qwen3ForCausalLM"
    qk_norm: ClassVar[bool] = True


@dataclass
class MistralConfig(LlamaConfig):
    """MistralForCausalLM: Llama's block; a query sees the keys of the last
    sliding_window positions (0: no window, HF's null). distzo runs sequences
    of at most sliding_window tokens, where the window hides nothing."""

    architecture: ClassVar[str] = "mistral"
    hf_class: ClassVar[str] = "MistralForCausalLM"
    int_attrs: ClassVar[tuple[str, ...]] = LLAMA_INT_ATTRS + ("sliding_window",)
    zero_means_none: ClassVar[tuple[str, ...]] = ("sliding_window",)
    sliding_window: int = 0


@dataclass
class Gemma3Config(_RotaryAttention):
    """The subset of a Hugging Face Gemma3TextConfig that defines the tensors
    and the forward of Gemma3ForCausalLM (model_type gemma3_text).

    Shapes as LlamaConfig's (C, H, KV, hd, F; no biases). What Gemma 3
    computes differently: embeddings embed_tokens[ids] * float32(sqrt(C)) (the
    tied head reads embed_tokens unscaled); every RMSNorm scales by (1 + w),
    the file storing w as Hugging Face does; four norms per layer (input,
    post-attention, pre- and post-feedforward), the post norms applied to the
    sublayer's output before the residual add; q and k RMS-normalised per
    head (q_norm, k_norm) before the rotation; scores scaled by
    query_pre_attn_scalar**-0.5, not hd**-0.5; GeGLU MLP
    down(gelu_tanh(gate(x)) * up(x)) (hidden_activation gelu_pytorch_tanh).
    Layer k attends fully and rotates with rope_theta when
    (k + 1) % sliding_window_pattern == 0; every other layer is a sliding one,
    rotating with rope_local_base_freq and seeing the last sliding_window keys
    (0: no window, HF's null; distzo runs sequences of at most the window,
    where it hides nothing). sliding_window_pattern = num_hidden_layers + 1
    makes every layer a sliding one.
    """

    architecture: ClassVar[str] = "gemma3_text"
    hf_class: ClassVar[str] = "Gemma3ForCausalLM"
    int_attrs: ClassVar[tuple[str, ...]] = GEMMA3_INT_ATTRS
    flag_attrs: ClassVar[tuple[str, ...]] = ("tie_word_embeddings", "attention_bias")
    zero_means_none: ClassVar[tuple[str, ...]] = ("sliding_window",)
    float_attrs: ClassVar[tuple[str, ...]] = GEMMA3_FLOAT_ATTRS
    string_attrs: ClassVar[tuple[str, ...]] = ("hidden_activation",)

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    tie_word_embeddings: bool = True
    attention_bias: bool = False
    sliding_window: int = 0
    sliding_window_pattern: int = 6
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1e6
    rope_local_base_freq: float = 1e4
    query_pre_attn_scalar: float = 256.0
    hidden_activation: str = GEMMA3_ACTIVATION
    hf_config_json: str = field(default="", repr=False)

    def validate(self) -> None:
        self._check_attention()
        if self.sliding_window_pattern > self.num_hidden_layers + 1:
            raise FormatError(
                f"sliding_window_pattern {self.sliding_window_pattern}: must be at most num_hidden_layers + 1 "
                f"= {self.num_hidden_layers + 1} (which already makes every layer a sliding one)"
            )
        if self.attention_bias:
            raise FormatError(
                "attention_bias = 1: no released Gemma 3 has attention biases, and distzo implements none"
            )
        if self.hidden_activation != GEMMA3_ACTIVATION:
            raise FormatError(
                f"hidden_activation {self.hidden_activation!r}: only {GEMMA3_ACTIVATION!r} is supported"
            )
        if not (math.isfinite(self.rope_local_base_freq) and self.rope_local_base_freq > 1):
            raise FormatError(f"rope_local_base_freq {self.rope_local_base_freq!r}: must be greater than 1")
        if not (math.isfinite(self.query_pre_attn_scalar) and self.query_pre_attn_scalar > 0):
            raise FormatError(f"query_pre_attn_scalar {self.query_pre_attn_scalar!r}: must be positive")

    def is_full_attention(self, layer: int) -> bool:
        """Whether layer `layer` (0-based) attends fully (base rope_theta)
        rather than in the window (base rope_local_base_freq)."""
        return (layer + 1) % self.sliding_window_pattern == 0

    @property
    def layer_types(self) -> list[str]:
        """Gemma3TextConfig's layer_types: "full_attention" or "sliding_attention" per layer."""
        return ["full_attention" if self.is_full_attention(k) else "sliding_attention"
                for k in range(self.num_hidden_layers)]


ModelConfig = Union[OptConfig, LlamaConfig, Gemma3Config]

# The config type of each `architecture` attribute value (= HF model_type).
CONFIG_TYPES: dict[str, type] = {
    c.architecture: c for c in (OptConfig, LlamaConfig, Qwen2Config, Qwen3Config, MistralConfig, Gemma3Config)
}


def _supported() -> str:
    names = [f"{a!r} ({c.hf_class})" for a, c in CONFIG_TYPES.items()]
    return ", ".join(names[:-1]) + " and " + names[-1]


# Defaults of transformers' OPTConfig, used for keys a config.json omits.
_HF_DEFAULTS = {
    "vocab_size": 50272,
    "hidden_size": 768,
    "num_hidden_layers": 12,
    "ffn_dim": 3072,
    "max_position_embeddings": 2048,
    "do_layer_norm_before": True,
    "_remove_final_layer_norm": False,
    "word_embed_proj_dim": None,
    "num_attention_heads": 12,
    "activation_function": "relu",
    "enable_bias": True,
    "layer_norm_elementwise_affine": True,
    "tie_word_embeddings": True,
}

# Defaults of transformers' LlamaConfig (5.x; the same in 4.x), used for keys
# a config.json omits or sets to null. head_dim and num_key_value_heads
# default to values derived from the others (None here).
_LLAMA_HF_DEFAULTS = {
    "vocab_size": 32000,
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": None,
    "head_dim": None,
    "hidden_act": "silu",
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-6,
    "pretraining_tp": 1,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
}
# transformers' MistralConfig.sliding_window default
MISTRAL_DEFAULT_SLIDING_WINDOW = 4096
# transformers' RotaryEmbeddingConfigMixin.default_theta
LLAMA_DEFAULT_ROPE_THETA = 10000.0

# Defaults of transformers' Gemma3TextConfig (5.x; the same in 4.x), used for
# keys a config.json omits or sets to null (sliding_window and the rotary
# bases are read apart: null there has a meaning of its own).
_GEMMA3_HF_DEFAULTS = {
    "vocab_size": 262208,
    "hidden_size": 2304,
    "intermediate_size": 9216,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "query_pre_attn_scalar": 256,
}
# Gemma3TextConfig's sliding_window when the key is absent (null: no window)
# and its sliding_window_pattern (every 6th layer full) when neither
# layer_types nor a pattern is given.
GEMMA3_DEFAULT_SLIDING_WINDOW = 4096
GEMMA3_DEFAULT_SLIDING_WINDOW_PATTERN = 6
# Gemma3TextConfig.default_theta: the full-attention ("global") and the
# sliding ("local") layers' RoPE bases.
GEMMA3_DEFAULT_ROPE_THETA = 1_000_000.0
GEMMA3_DEFAULT_ROPE_LOCAL_BASE_FREQ = 10_000.0
GEMMA3_LAYER_TYPES = ("full_attention", "sliding_attention")


def config_from_hf(hf: Mapping, hf_config_json: str | None = None) -> ModelConfig:
    """Build and validate an OptConfig, LlamaConfig (or kin) or Gemma3Config
    from a parsed Hugging Face config.json, chosen by its model_type.

    Rejects the variants distzo does not implement, naming the key.
    """
    model_type = hf.get("model_type")
    if model_type not in CONFIG_TYPES:
        raise FormatError(f"config.json model_type is {model_type!r}: distzo supports {_supported()}")
    text = hf_config_json if hf_config_json is not None else json.dumps(dict(hf), indent=2, sort_keys=True)
    if model_type == "opt":
        cfg = _opt_config_from_hf(hf, text)
    elif model_type == Gemma3Config.architecture:
        cfg = _gemma3_config_from_hf(hf, text)
    else:
        cfg = _llama_config_from_hf(hf, text, CONFIG_TYPES[model_type])
    cfg.validate()
    return cfg


def _opt_config_from_hf(hf: Mapping, hf_config_json: str) -> OptConfig:
    def get(key):
        value = hf.get(key, _HF_DEFAULTS[key])
        return _HF_DEFAULTS[key] if value is None and key != "word_embed_proj_dim" else value

    if get("activation_function") != "relu":
        raise FormatError(
            f"config.json activation_function is {get('activation_function')!r}: only 'relu' is supported"
        )
    if not get("enable_bias"):
        raise FormatError("config.json enable_bias is false: distzo needs the linear biases")
    if not get("layer_norm_elementwise_affine"):
        raise FormatError(
            "config.json layer_norm_elementwise_affine is false: distzo needs layer-norm weights and biases"
        )
    if get("do_layer_norm_before") and get("_remove_final_layer_norm"):
        raise FormatError(
            "config.json _remove_final_layer_norm is true: models without the final layer norm "
            "(pre-v4.20 fine-tunes) are not supported"
        )
    if not get("tie_word_embeddings"):
        raise FormatError(
            "config.json tie_word_embeddings is false: distzo keeps OPT's lm_head tied to "
            "embed_tokens (one parameter); an untied head is not supported"
        )
    hidden = int(get("hidden_size"))
    proj = get("word_embed_proj_dim")
    return OptConfig(
        hidden_size=hidden,
        num_hidden_layers=int(get("num_hidden_layers")),
        num_attention_heads=int(get("num_attention_heads")),
        ffn_dim=int(get("ffn_dim")),
        vocab_size=int(get("vocab_size")),
        max_position_embeddings=int(get("max_position_embeddings")),
        word_embed_proj_dim=hidden if proj is None else int(proj),
        do_layer_norm_before=bool(get("do_layer_norm_before")),
        tie_word_embeddings=bool(get("tie_word_embeddings")),
        activation_function=str(get("activation_function")),
        hf_config_json=hf_config_json,
    )


def _llama_rope_theta(hf: Mapping) -> float:
    """The RoPE base of a Llama config.json, in either transformers form.

    transformers 4 writes `rope_theta` and `rope_scaling` (null for plain
    RoPE); transformers 5 writes `rope_parameters` {"rope_type": "default",
    "rope_theta": ...}. When both name a base, rope_parameters wins, as in
    transformers. Every scaled variant (linear, dynamic, yarn, llama3, ...)
    changes the rotation angles and is refused.
    """
    scaling = hf.get("rope_scaling")
    if scaling is not None:
        raise FormatError(
            f"config.json rope_scaling is {json.dumps(scaling)}: distzo implements plain RoPE only "
            "(rope_scaling null)"
        )
    theta = hf.get("rope_theta")
    params = hf.get("rope_parameters")
    if params is not None:
        if not isinstance(params, Mapping):
            raise FormatError(f"config.json rope_parameters is {json.dumps(params)}: expected an object")
        rope_type = params.get("rope_type", params.get("type", "default"))
        if rope_type != "default":
            raise FormatError(
                f"config.json rope_parameters.rope_type is {rope_type!r}: distzo implements plain RoPE "
                "only (rope_type 'default')"
            )
        if params.get("rope_theta") is not None:
            theta = params["rope_theta"]
    return LLAMA_DEFAULT_ROPE_THETA if theta is None else float(theta)


def _check_architectures(hf: Mapping, cls: type) -> None:
    """An `architectures` list, if any, must name the class distzo implements
    (not, say, a sequence-classification head on the same model_type)."""
    architectures = hf.get("architectures") or []
    if architectures and cls.hf_class not in architectures:
        raise FormatError(
            f"config.json architectures is {architectures}: model_type {cls.architecture!r} "
            f"means {cls.hf_class} checkpoints"
        )


def _llama_config_from_hf(hf: Mapping, hf_config_json: str, cls: type = LlamaConfig) -> LlamaConfig:
    """A LlamaConfig or one of its kin (`cls`): the same keys; keys a
    config.json omits take LlamaConfig's defaults (transformers writes them all)."""

    def get(key):
        value = hf.get(key)
        return _LLAMA_HF_DEFAULTS[key] if value is None else value

    _check_architectures(hf, cls)
    extra = {}
    if cls is Qwen2Config and hf.get("attention_bias"):
        raise FormatError("config.json attention_bias is true: Qwen2 has biases on q, k and v only")
    if cls is MistralConfig:
        # null: no window; no key: MistralConfig's default, 4096 positions.
        window = hf.get("sliding_window") if "sliding_window" in hf else MISTRAL_DEFAULT_SLIDING_WINDOW
        if window is not None and int(window) < 1:
            raise FormatError(f"config.json sliding_window is {window}: must be null or >= 1")
        extra["sliding_window"] = 0 if window is None else int(window)
    elif cls is not LlamaConfig and hf.get("use_sliding_window"):
        raise FormatError(
            "config.json use_sliding_window is true: distzo has no sliding-window attention "
            "(Qwen2/Qwen3 checkpoints released with full attention say false)"
        )
    if get("hidden_act") != "silu":
        raise FormatError(
            f"config.json hidden_act is {get('hidden_act')!r}: only 'silu' (the SwiGLU MLP) is supported"
        )
    if int(get("pretraining_tp")) > 1:
        raise FormatError(
            f"config.json pretraining_tp is {get('pretraining_tp')}: only 1 is supported "
            "(tensor-parallel slicing of the projections)"
        )
    hidden = int(get("hidden_size"))
    heads = int(get("num_attention_heads"))
    kv_heads = heads if get("num_key_value_heads") is None else int(get("num_key_value_heads"))
    if kv_heads >= 1 and heads % kv_heads != 0:
        raise FormatError(
            f"config.json num_attention_heads {heads} is not divisible by num_key_value_heads {kv_heads}"
        )
    rope_theta = _llama_rope_theta(hf)
    return cls(
        hidden_size=hidden,
        num_hidden_layers=int(get("num_hidden_layers")),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads if get("head_dim") is None else int(get("head_dim")),
        intermediate_size=int(get("intermediate_size")),
        vocab_size=int(get("vocab_size")),
        max_position_embeddings=int(get("max_position_embeddings")),
        tie_word_embeddings=bool(get("tie_word_embeddings")),
        attention_bias=bool(get("attention_bias")),
        mlp_bias=bool(get("mlp_bias")),
        rms_norm_eps=float(get("rms_norm_eps")),
        rope_theta=rope_theta,
        hidden_act=str(get("hidden_act")),
        hf_config_json=hf_config_json,
        **extra,
    )


def _gemma3_rope_bases(hf: Mapping) -> tuple[float, float]:
    """(rope_theta, rope_local_base_freq): the RoPE bases of a Gemma 3
    config.json's full-attention and sliding layers, in either transformers form.

    transformers 5 writes `rope_parameters` {"full_attention": {"rope_type":
    "default", "rope_theta": G}, "sliding_attention": {... L}}; transformers 4
    writes flat `rope_theta` (G), `rope_local_base_freq` (L) and `rope_scaling`
    (null for plain RoPE). A base rope_parameters names wins over a flat one,
    as in Gemma3TextConfig; neither gives 1e6 and 1e4. Scaled variants (the
    multimodal Gemma 3 4B-27B scale their full layers linearly) change the
    rotation angles and are refused, as is any scaling parameter.
    """
    scaling = hf.get("rope_scaling")
    if scaling is not None:
        raise FormatError(
            f"config.json rope_scaling is {json.dumps(scaling)}: distzo implements plain RoPE only "
            "(rope_scaling null; Gemma 3 270M and 1B have none)"
        )
    bases = {"full_attention": hf.get("rope_theta"), "sliding_attention": hf.get("rope_local_base_freq")}
    params = hf.get("rope_parameters")
    if params is not None:
        if not isinstance(params, Mapping) or set(params) - set(GEMMA3_LAYER_TYPES):
            raise FormatError(
                f"config.json rope_parameters is {json.dumps(params)}: Gemma 3's has one entry per layer "
                'type, {"full_attention": {"rope_type": "default", "rope_theta": ...}, "sliding_attention": '
                "{...}}"
            )
        for layer_type, entry in params.items():
            if entry is None:
                continue
            key = f"rope_parameters.{layer_type}"
            if not isinstance(entry, Mapping):
                raise FormatError(f"config.json {key} is {json.dumps(entry)}: expected an object")
            rope_type = entry.get("rope_type", entry.get("type", "default"))
            if rope_type != "default":
                raise FormatError(
                    f"config.json {key}.rope_type is {rope_type!r}: distzo implements plain RoPE only "
                    "(rope_type 'default')"
                )
            extra = sorted(set(entry) - {"rope_type", "type", "rope_theta"})
            if extra:
                raise FormatError(
                    f"config.json {key}.{extra[0]} is set: distzo implements plain RoPE only, without "
                    "scaling parameters"
                )
            if entry.get("rope_theta") is not None:
                bases[layer_type] = entry["rope_theta"]
    full, sliding = bases["full_attention"], bases["sliding_attention"]
    return (GEMMA3_DEFAULT_ROPE_THETA if full is None else float(full),
            GEMMA3_DEFAULT_ROPE_LOCAL_BASE_FREQ if sliding is None else float(sliding))


def _gemma3_sliding_window_pattern(hf: Mapping, num_layers: int) -> int:
    """sliding_window_pattern P of a Gemma 3 config.json: layer k attends fully
    iff (k + 1) % P == 0.

    transformers writes `layer_types` ("sliding_attention" or
    "full_attention" per layer; 4.50, which the first Gemma 3 configs came
    from, wrote `sliding_window_pattern` instead). Without layer_types,
    Gemma3TextConfig makes the list from `sliding_window_pattern` (default 6);
    `_sliding_window_pattern` is read too, as distzo's C++ reader does
    (transformers 5.24 writes that key, always 6, next to layer_types, which
    then decides). P is the first full layer's index + 1 (num_layers + 1 when
    every layer is a sliding one), and the list must be exactly that pattern:
    distzo keeps the layer kinds as one number.
    """
    types = hf.get("layer_types")
    if types is None:
        key = "sliding_window_pattern" if hf.get("sliding_window_pattern") is not None else "_sliding_window_pattern"
        pattern = hf.get(key)
        if pattern is None:
            pattern = GEMMA3_DEFAULT_SLIDING_WINDOW_PATTERN
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            raise FormatError(f"config.json {key} is {json.dumps(pattern)}: must be an integer >= 1")
        types = ["full_attention" if (k + 1) % pattern == 0 else "sliding_attention" for k in range(num_layers)]
    elif not isinstance(types, list) or len(types) != num_layers:
        raise FormatError(
            f"config.json layer_types is {json.dumps(types)}: expected a list of num_hidden_layers "
            f"({num_layers}) entries"
        )
    unknown = [t for t in types if t not in GEMMA3_LAYER_TYPES]
    if unknown:
        raise FormatError(
            f"config.json layer_types holds {json.dumps(unknown[0])}: Gemma 3's layers are "
            "'full_attention' or 'sliding_attention'"
        )
    full = [t == "full_attention" for t in types]
    pattern = full.index(True) + 1 if any(full) else num_layers + 1
    for k, is_full in enumerate(full):
        if is_full != ((k + 1) % pattern == 0):
            raise FormatError(
                f"config.json layer_types: layer {k} is {types[k]}, but distzo keeps Gemma 3's layer kinds "
                f"as one repeating pattern: layer k full iff (k + 1) % P == 0, here P = {pattern} (the first "
                f"full layer is {pattern - 1})"
            )
    return pattern


def _gemma3_config_from_hf(hf: Mapping, hf_config_json: str) -> Gemma3Config:
    """A Gemma3Config: Gemma3TextConfig's keys; keys a config.json omits take
    its defaults (transformers writes them all). Refused, naming the key: what
    Gemma 2 and the embedding models have and Gemma 3's causal LM has not
    (soft-capping, bidirectional attention), biases, another activation."""

    def get(key):
        value = hf.get(key)
        return _GEMMA3_HF_DEFAULTS[key] if value is None else value

    _check_architectures(hf, Gemma3Config)
    if hf.get("attention_bias"):
        raise FormatError(
            "config.json attention_bias is true: no released Gemma 3 has attention biases, and distzo "
            "implements none"
        )
    for key in ("final_logit_softcapping", "attn_logit_softcapping"):
        if hf.get(key) is not None:
            raise FormatError(
                f"config.json {key} is {json.dumps(hf[key])}: distzo implements no soft-capping "
                "(Gemma 2 had it; Gemma 3 says null)"
            )
    if hf.get("use_bidirectional_attention"):
        raise FormatError(
            "config.json use_bidirectional_attention is true: distzo's attention is causal "
            "(bidirectional Gemma 3 models are embedding models)"
        )
    act_key = "hidden_activation"  # Gemma3TextConfig's key; hidden_act (Gemma 1 had both) if it is absent
    if hf.get(act_key) is None and hf.get("hidden_act") is not None:
        act_key = "hidden_act"
    activation = hf.get(act_key)
    if activation is None:
        activation = GEMMA3_ACTIVATION
    if activation != GEMMA3_ACTIVATION:
        raise FormatError(
            f"config.json {act_key} is {activation!r}: only {GEMMA3_ACTIVATION!r} (Gemma 3's GeGLU MLP, "
            "the tanh approximation of GELU) is supported"
        )
    # null: no window; no key: Gemma3TextConfig's default, 4096 positions.
    window = hf.get("sliding_window") if "sliding_window" in hf else GEMMA3_DEFAULT_SLIDING_WINDOW
    if window is not None and int(window) < 1:
        raise FormatError(f"config.json sliding_window is {window}: must be null or >= 1")
    layers = int(get("num_hidden_layers"))
    rope_theta, rope_local_base_freq = _gemma3_rope_bases(hf)
    return Gemma3Config(
        hidden_size=int(get("hidden_size")),
        num_hidden_layers=layers,
        num_attention_heads=int(get("num_attention_heads")),
        num_key_value_heads=int(get("num_key_value_heads")),
        head_dim=int(get("head_dim")),
        intermediate_size=int(get("intermediate_size")),
        vocab_size=int(get("vocab_size")),
        max_position_embeddings=int(get("max_position_embeddings")),
        tie_word_embeddings=bool(get("tie_word_embeddings")),
        attention_bias=bool(get("attention_bias")),
        sliding_window=0 if window is None else int(window),
        sliding_window_pattern=_gemma3_sliding_window_pattern(hf, layers),
        rms_norm_eps=float(get("rms_norm_eps")),
        rope_theta=rope_theta,
        rope_local_base_freq=rope_local_base_freq,
        query_pre_attn_scalar=float(get("query_pre_attn_scalar")),
        hidden_activation=activation,
        hf_config_json=hf_config_json,
    )


def expected_tensors(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Canonical tensor names and shapes, in canonical (write) order."""
    if isinstance(cfg, Gemma3Config):
        return _gemma3_expected_tensors(cfg)
    if isinstance(cfg, LlamaConfig):
        return _llama_expected_tensors(cfg)
    h, f, v, p = cfg.hidden_size, cfg.ffn_dim, cfg.vocab_size, cfg.word_embed_proj_dim
    d = "model.decoder."
    out: dict[str, tuple[int, ...]] = {
        d + "embed_tokens.weight": (v, p),
        d + "embed_positions.weight": (cfg.max_position_embeddings + POSITION_OFFSET, h),
    }
    if cfg.has_projection:
        out[d + "project_in.weight"] = (h, p)
        out[d + "project_out.weight"] = (p, h)
    for k in range(cfg.num_hidden_layers):
        lk = f"{d}layers.{k}."
        for proj_name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out[f"{lk}self_attn.{proj_name}.weight"] = (h, h)
            out[f"{lk}self_attn.{proj_name}.bias"] = (h,)
        out[lk + "self_attn_layer_norm.weight"] = (h,)
        out[lk + "self_attn_layer_norm.bias"] = (h,)
        out[lk + "fc1.weight"] = (f, h)
        out[lk + "fc1.bias"] = (f,)
        out[lk + "fc2.weight"] = (h, f)
        out[lk + "fc2.bias"] = (h,)
        out[lk + "final_layer_norm.weight"] = (h,)
        out[lk + "final_layer_norm.bias"] = (h,)
    if cfg.has_final_layer_norm:
        out[d + "final_layer_norm.weight"] = (h,)
        out[d + "final_layer_norm.bias"] = (h,)
    return out


def _llama_expected_tensors(cfg: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """Llama: embeddings; per layer the projections in the order LlamaForCausalLM
    lists them (each weight followed by its bias, if any), then the two
    RMSNorm weights; the final norm; lm_head last, only when untied."""
    c, f, v = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (v, c)}
    for k in range(cfg.num_hidden_layers):
        lk = f"model.layers.{k}."
        attention = (
            ("self_attn.q_proj", cfg.q_width, c, cfg.qkv_bias),
            ("self_attn.k_proj", cfg.kv_width, c, cfg.qkv_bias),
            ("self_attn.v_proj", cfg.kv_width, c, cfg.qkv_bias),
            ("self_attn.o_proj", c, cfg.q_width, cfg.attention_bias),
        )
        mlp = (
            ("mlp.gate_proj", f, c, cfg.mlp_bias),
            ("mlp.up_proj", f, c, cfg.mlp_bias),
            ("mlp.down_proj", c, f, cfg.mlp_bias),
        )
        for name, rows, cols, bias in attention:
            out[f"{lk}{name}.weight"] = (rows, cols)
            if bias:
                out[f"{lk}{name}.bias"] = (rows,)
        if cfg.qk_norm:
            out[lk + "self_attn.q_norm.weight"] = (cfg.head_dim,)
            out[lk + "self_attn.k_norm.weight"] = (cfg.head_dim,)
        for name, rows, cols, bias in mlp:
            out[f"{lk}{name}.weight"] = (rows, cols)
            if bias:
                out[f"{lk}{name}.bias"] = (rows,)
        out[lk + "input_layernorm.weight"] = (c,)
        out[lk + "post_attention_layernorm.weight"] = (c,)
    out["model.norm.weight"] = (c,)
    if not cfg.tie_word_embeddings:
        out["lm_head.weight"] = (v, c)
    return out


def _gemma3_expected_tensors(cfg: Gemma3Config) -> dict[str, tuple[int, ...]]:
    """Gemma 3: embeddings; per layer the projections, the per-head q/k norms,
    the MLP and the four RMSNorm weights, in the order Gemma3ForCausalLM lists
    them (no biases); the final norm; lm_head last, only when untied."""
    c, f, v, hd = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size, cfg.head_dim
    out: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (v, c)}
    for k in range(cfg.num_hidden_layers):
        lk = f"model.layers.{k}."
        out[lk + "self_attn.q_proj.weight"] = (cfg.q_width, c)
        out[lk + "self_attn.k_proj.weight"] = (cfg.kv_width, c)
        out[lk + "self_attn.v_proj.weight"] = (cfg.kv_width, c)
        out[lk + "self_attn.o_proj.weight"] = (c, cfg.q_width)
        out[lk + "self_attn.q_norm.weight"] = (hd,)
        out[lk + "self_attn.k_norm.weight"] = (hd,)
        out[lk + "mlp.gate_proj.weight"] = (f, c)
        out[lk + "mlp.up_proj.weight"] = (f, c)
        out[lk + "mlp.down_proj.weight"] = (c, f)
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            out[f"{lk}{norm}.weight"] = (c,)
    out["model.norm.weight"] = (c,)
    if not cfg.tie_word_embeddings:
        out["lm_head.weight"] = (v, c)
    return out


def hf_config_dict(cfg: ModelConfig) -> dict:
    """The config.json for the way back to Hugging Face.

    Starts from the stored original and checks that it agrees with the
    attributes (the attributes define the tensors, so they win on conflict
    only if the original is absent).
    """
    base = json.loads(cfg.hf_config_json) if cfg.hf_config_json else {}
    if base:
        checked = config_from_hf(base)
        if checked.architecture != cfg.architecture:
            raise FormatError(
                f"attribute architecture = {cfg.architecture!r} disagrees with hf_config_json "
                f"(model_type {checked.architecture!r})"
            )
        for name in cfg.int_attrs:
            if int(getattr(checked, name)) != int(getattr(cfg, name)):
                raise FormatError(
                    f"attribute {name} = {int(getattr(cfg, name))} disagrees with hf_config_json "
                    f"({int(getattr(checked, name))})"
                )
        for name in cfg.float_attrs + cfg.string_attrs:
            if getattr(checked, name) != getattr(cfg, name):
                raise FormatError(
                    f"attribute {name} = {getattr(cfg, name)!r} disagrees with hf_config_json "
                    f"({getattr(checked, name)!r})"
                )
        return base
    if isinstance(cfg, Gemma3Config):
        # transformers 5's form: rope_parameters per layer type and the layer
        # kinds spelt out in layer_types (no sliding_window_pattern key, the
        # transformers 4 spelling it supersedes). Gemma3TextConfig types
        # query_pre_attn_scalar as an int and refuses 256.0, so an integral
        # value is written as one.
        scalar = float(cfg.query_pre_attn_scalar)
        base = {
            "model_type": cfg.architecture,
            "architectures": [cfg.hf_class],
            "hidden_activation": cfg.hidden_activation,
            "rms_norm_eps": float(cfg.rms_norm_eps),
            "query_pre_attn_scalar": int(scalar) if scalar.is_integer() else scalar,
            "rope_parameters": {
                "full_attention": {"rope_type": "default", "rope_theta": float(cfg.rope_theta)},
                "sliding_attention": {"rope_type": "default", "rope_theta": float(cfg.rope_local_base_freq)},
            },
            "layer_types": cfg.layer_types,
            "final_logit_softcapping": None,
            "attn_logit_softcapping": None,
            "use_bidirectional_attention": False,
            "dtype": "float32",
        }
    elif isinstance(cfg, LlamaConfig):
        base = {
            "model_type": cfg.architecture,
            "architectures": [cfg.hf_class],
            "hidden_act": cfg.hidden_act,
            "rms_norm_eps": float(cfg.rms_norm_eps),
            "rope_parameters": {"rope_type": "default", "rope_theta": float(cfg.rope_theta)},
            "pretraining_tp": 1,
            "dtype": "float32",
        }
    else:
        base = {
            "model_type": "opt",
            "architectures": ["OPTForCausalLM"],
            "activation_function": cfg.activation_function,
            "enable_bias": True,
            "layer_norm_elementwise_affine": True,
            "_remove_final_layer_norm": False,
            "pad_token_id": 1,
            "bos_token_id": 2,
            "eos_token_id": 2,
            "dtype": "float32",
        }
    if isinstance(cfg, (Qwen2Config, Qwen3Config)):
        base["use_sliding_window"] = False
    for name in cfg.int_attrs:
        value = getattr(cfg, name)
        if name in cfg.flag_attrs:
            base[name] = bool(value)
        elif name in cfg.zero_means_none and int(value) == 0:
            base[name] = None
        else:
            base[name] = int(value)
    if isinstance(cfg, Qwen2Config):
        del base["attention_bias"]  # Qwen2Config has no such key; its q, k, v biases are fixed
    if isinstance(cfg, Gemma3Config):
        del base["sliding_window_pattern"]  # layer_types says it
    return base


# ---------------------------------------------------------------------------
# writing


def write_string_attr(attrs: h5py.AttributeManager, name: str, value: str) -> None:
    encoded = value.encode("utf-8")
    attrs.create(name, np.bytes_(encoded), dtype=string_dtype_for(encoded))


def _write_config_attrs(f: h5py.File, cfg: ModelConfig, distzo_format: str) -> None:
    write_string_attr(f.attrs, "distzo_format", distzo_format)
    f.attrs.create("format_version", np.int64(FORMAT_VERSION), dtype=np.int64)
    write_string_attr(f.attrs, "architecture", cfg.architecture)
    for name in cfg.int_attrs:
        f.attrs.create(name, np.int64(int(getattr(cfg, name))), dtype=np.int64)
    for name in cfg.float_attrs:
        f.attrs.create(name, np.float64(getattr(cfg, name)), dtype=np.float64)
    for name in cfg.string_attrs:
        write_string_attr(f.attrs, name, getattr(cfg, name))
    write_string_attr(f.attrs, "hf_config_json", cfg.hf_config_json)


# The Hugging Face tokenizer files an import keeps (text files, the ones
# AutoTokenizer.from_pretrained reads; tokenizer.json alone makes a fast
# tokenizer). A sentencepiece tokenizer.model is binary and not kept: a
# directory with it but no tokenizer.json exports no tokenizer.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "chat_template.jinja",
    "chat_template.json",
)
# The root attribute that holds them: a JSON object of file name -> text.
TOKENIZER_ATTR = "hf_tokenizer_files"


def read_text(path: str) -> str:
    """The UTF-8 text of a file; FormatError naming it when it is not UTF-8."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FormatError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None


def read_tokenizer_dir(directory: str) -> dict[str, str]:
    """The TOKENIZER_FILES present in `directory`, name -> text (UTF-8)."""
    return {name: read_text(os.path.join(directory, name))
            for name in TOKENIZER_FILES if os.path.isfile(os.path.join(directory, name))}


def read_tokenizer_files(f: h5py.File) -> dict[str, str]:
    """The tokenizer files a model or checkpoint carries ({} when none),
    each name checked to be a plain file name."""
    if TOKENIZER_ATTR not in f.attrs:
        return {}
    try:
        files = json.loads(read_string_attr(f.attrs, TOKENIZER_ATTR))
    except json.JSONDecodeError as err:
        raise FormatError(f"attribute {TOKENIZER_ATTR}: not JSON ({err})") from None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise FormatError(f"attribute {TOKENIZER_ATTR}: expected a JSON object of file name -> text")
    for name in files:
        if name != os.path.basename(name) or name.startswith(".") or not name:
            raise FormatError(f"attribute {TOKENIZER_ATTR}: {name!r} is not a plain file name")
    return files


def give_usual_permissions(path: str) -> None:
    """The mode a new file gets (0666 less the umask): tempfile.mkstemp makes
    0600, which colleagues on a shared cluster cannot read."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


@contextlib.contextmanager
def atomic_h5(path: str | os.PathLike) -> Iterator[h5py.File]:
    """Open a new HDF5 file for writing that appears at `path` only when complete.

    Writes to a temporary file in the same directory, then os.replace()s it;
    on any exception the temporary file is removed and `path` is untouched.
    Object modification times are not recorded, so identical content gives
    identical bytes.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        # libver ('v108', 'v110'): the HDF5 1.8 format distzo itself writes,
        # readable by HDF5 1.8+; it stores attributes over 64 KiB (the
        # tokenizer files), and with track_order off the root group carries
        # no timestamps.
        with h5py.File(tmp, "w", libver=("v108", "v110"), track_order=False) as f:
            yield f
        give_usual_permissions(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_dataset(f: h5py.File | h5py.Group, name: str, array, dtype=None) -> None:
    """A contiguous, uncompressed, little-endian dataset without timestamps (a
    Bf16Array becomes a bfloat16 dataset of its words)."""
    if isinstance(array, Bf16Array):
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_obj_track_times(False)
        space = h5py.h5s.create_simple(array.shape) if array.shape else h5py.h5s.create(h5py.h5s.SCALAR)
        t = bf16_h5_type()
        ds = h5py.h5d.create(f.id, name.encode("utf-8"), t, space, dcpl=dcpl)
        if array.size:
            ds.write(h5py.h5s.ALL, h5py.h5s.ALL, array.words, mtype=t)
        return
    # np.asarray (not ascontiguousarray, which turns a scalar into shape (1,)):
    # a 0-d array becomes a scalar dataspace.
    array = np.asarray(array, dtype=dtype, order="C")
    f.create_dataset(name, data=array, track_times=False)


class ModelWriter:
    """Streams tensors into a model file; checks names and shapes on close.

        with ModelWriter(path, cfg) as w:
            for name, array in tensors:
                w.add(name, array)
    """

    def __init__(self, path: str | os.PathLike, cfg: ModelConfig, distzo_format: str = "model",
                 float32: bool = False, tokenizer_files: Mapping[str, str] | None = None):
        """float32=True writes every tensor as float32; otherwise float16 and
        bfloat16 tensors keep their dtype (docs/formats.md). tokenizer_files
        (name -> text, read_tokenizer_dir) are kept for the way back."""
        cfg.validate()
        self.tokenizer_files = dict(tokenizer_files or {})
        self.path = path
        self.float32 = float32
        self.cfg = cfg
        self.expected = expected_tensors(cfg)
        self.distzo_format = distzo_format
        self.written: set[str] = set()
        self._ctx = None
        self._file: h5py.File | None = None

    def __enter__(self) -> "ModelWriter":
        self._ctx = atomic_h5(self.path)
        self._file = self._ctx.__enter__()
        _write_config_attrs(self._file, self.cfg, self.distzo_format)
        if self.tokenizer_files:
            write_string_attr(self._file.attrs, TOKENIZER_ATTR,
                              json.dumps(self.tokenizer_files, ensure_ascii=False, sort_keys=True))
        return self

    def add(self, name: str, array) -> None:
        if name not in self.expected:
            raise FormatError(f"tensor {name}: not a parameter of this {self.cfg.hf_class} config")
        if name in self.written:
            raise FormatError(f"tensor {name}: written twice")
        try:
            array = as_stored(array, self.float32)
        except FormatError as err:
            raise FormatError(f"tensor {name}: {err}") from None
        if tuple(array.shape) != self.expected[name]:
            raise FormatError(f"tensor {name}: got {tuple(array.shape)}, expected {self.expected[name]}")
        write_dataset(self._file, name, array)
        self.written.add(name)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            missing = [n for n in self.expected if n not in self.written]
            if missing:
                more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
                exc = FormatError(f"tensor(s) missing: {', '.join(missing[:3])}{more}")
                self._ctx.__exit__(type(exc), exc, None)
                raise exc
        return self._ctx.__exit__(exc_type, exc, tb)


def write_model(path: str | os.PathLike, cfg: ModelConfig, tensors: Mapping | Iterable,
                float32: bool = False, tokenizer_files: Mapping[str, str] | None = None) -> None:
    """Write a complete model file atomically, tensors in canonical order, each
    in its own dtype (float16 and bf16 kept) unless float32; with the
    tokenizer files given (name -> text)."""
    items = dict(tensors.items() if isinstance(tensors, Mapping) else tensors)
    with ModelWriter(path, cfg, float32=float32, tokenizer_files=tokenizer_files) as w:
        for name in w.expected:
            if name not in items:
                raise FormatError(f"tensor {name}: missing")
            w.add(name, items.pop(name))
        if items:
            raise FormatError(f"unexpected tensor(s): {sorted(items)[:5]}")


# ---------------------------------------------------------------------------
# reading


def read_string_attr(attrs, name: str) -> str:
    if name not in attrs:
        raise FormatError(f"attribute {name}: missing")
    value = attrs[name]
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
        value = value.decode("utf-8") if isinstance(value, bytes) else value
    if not isinstance(value, str):
        raise FormatError(f"attribute {name}: expected a string, got {type(value).__name__}")
    return value


def _read_int_attr(attrs, name: str) -> int:
    if name not in attrs:
        raise FormatError(f"attribute {name}: missing")
    value = np.asarray(attrs[name])
    if value.shape not in ((), (1,)) or not np.issubdtype(value.dtype, np.integer):
        raise FormatError(f"attribute {name}: expected an integer scalar, got {value.dtype} {value.shape}")
    return int(value.reshape(()))


def _read_float_attr(attrs, name: str) -> float:
    if name not in attrs:
        raise FormatError(f"attribute {name}: missing")
    value = np.asarray(attrs[name])
    if value.shape not in ((), (1,)) or not np.issubdtype(value.dtype, np.floating):
        raise FormatError(f"attribute {name}: expected a float scalar, got {value.dtype} {value.shape}")
    return float(value.reshape(()))


def read_config(f: h5py.File) -> tuple[ModelConfig, str]:
    """(config, distzo_format) from an open model or checkpoint file; the
    config type (OptConfig, LlamaConfig or kin, Gemma3Config) follows the
    `architecture` attribute."""
    fmt = read_string_attr(f.attrs, "distzo_format")
    if fmt not in ("model", "checkpoint"):
        raise FormatError(f"attribute distzo_format = {fmt!r}: expected 'model' or 'checkpoint'")
    version = _read_int_attr(f.attrs, "format_version")
    if version != FORMAT_VERSION:
        raise FormatError(f"format_version {version}: this reader knows version {FORMAT_VERSION}")
    arch = read_string_attr(f.attrs, "architecture")
    if arch not in CONFIG_TYPES:
        raise FormatError(f"architecture {arch!r}: distzo supports {_supported()}")
    cls = CONFIG_TYPES[arch]
    values: dict = {}
    for name in cls.int_attrs:
        value = _read_int_attr(f.attrs, name)
        if name in cls.flag_attrs:
            if value not in (0, 1):
                raise FormatError(f"attribute {name} = {value}: must be 0 or 1")
            value = bool(value)
        values[name] = value
    values.update({name: _read_float_attr(f.attrs, name) for name in cls.float_attrs})
    values.update({name: read_string_attr(f.attrs, name) for name in cls.string_attrs})
    cfg = cls(
        **values,
        hf_config_json=read_string_attr(f.attrs, "hf_config_json") if "hf_config_json" in f.attrs else "",
    )
    cfg.validate()
    return cfg, fmt


def read_model(path: str | os.PathLike, keep_dtype: bool = False) -> tuple[ModelConfig, dict]:
    """Config and tensors (canonical order) of a model or checkpoint file:
    float32 arrays (float16 and bfloat16 tensors decoded exactly), or with
    keep_dtype as stored (float32, float16 arrays, Bf16Array words).

    Shapes are checked against the config. A model file must hold exactly the
    expected tensors; a checkpoint may hold other root datasets, which are
    ignored here.
    """
    with h5py.File(path, "r") as f:
        cfg, fmt = read_config(f)
        expected = expected_tensors(cfg)
        tensors = {}
        for name, shape in expected.items():
            if name not in f:
                raise FormatError(f"{path}: tensor {name} missing")
            ds = f[name]
            if not isinstance(ds, h5py.Dataset):
                raise FormatError(f"{path}: {name} is not a dataset")
            if tuple(ds.shape) != shape:
                raise FormatError(f"{path}: tensor {name}: got {tuple(ds.shape)}, expected {shape}")
            try:
                tensors[name] = read_tensor(ds, keep_dtype)
            except FormatError as err:
                raise FormatError(f"{path}: tensor {err}") from None
        if fmt == "model":
            extra = sorted(set(f.keys()) - set(expected))
            if extra:
                raise FormatError(f"{path}: unexpected object(s) in a model file: {extra[:5]}")
    return cfg, tensors
