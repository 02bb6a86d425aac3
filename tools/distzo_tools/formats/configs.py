"""The config of each architecture a distzo model file holds (docs/formats.md):
the attributes, their checks and the tensors they define.

One config type per architecture: OptConfig (OPTForCausalLM,
`architecture = "opt"`), LlamaConfig (LlamaForCausalLM, `"llama"`), with
Llama's kin as its subclasses: Qwen2Config (`"qwen2"`), Qwen3Config (`"qwen3"`)
and MistralConfig (`"mistral"`), and Gemma3Config (Gemma3ForCausalLM,
`"gemma3_text"`: a block of its own, not a Llama variant). expected_tensors
gives the tensors of any of them, in write order. Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Union

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
    qk_norm_full_width: ClassVar[bool] = False  # OLMo 2: q/k norms over the whole projection
    norms_after_sublayers: ClassVar[bool] = False  # OLMo 2: norms after attention and MLP
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
    # The rotary scaling (formats/rope.py): a rope_parameters entry's keys
    # without rope_theta, or None for plain RoPE; the file's optional
    # `rope_scaling` attribute.
    rope_scaling: dict | None = None

    def validate(self) -> None:
        from distzo_tools.formats import rope  # rope.py raises this module's FormatError

        self._check_attention()
        if self.hidden_act != "silu":
            raise FormatError(f"hidden_act {self.hidden_act!r}: only 'silu' is supported")
        rope.validate(self.rope_scaling, self.head_dim)

    @property
    def qkv_bias(self) -> bool:
        """Biases on q_proj, k_proj and v_proj."""
        return bool(self.attention_bias)


@dataclass
class _QwenSlidingWindow:
    """Qwen2Config's and Qwen3Config's use_sliding_window: the layers from
    max_window_layers on see the last sliding_window keys (0: full attention
    in every layer). The file keeps both as optional attributes, present only
    with a window. (Listed first among a config's bases, so its defaulted
    fields follow LlamaConfig's.)"""

    sliding_window: int = 0
    max_window_layers: int = 0

    def validate(self) -> None:
        super().validate()
        if self.sliding_window < 0 or not (
            0 <= self.max_window_layers < self.num_hidden_layers if self.sliding_window
            else self.max_window_layers == 0
        ):
            raise FormatError(
                f"sliding_window {self.sliding_window}, max_window_layers {self.max_window_layers}: the window "
                "must start at a layer of the model (0: no window, max_window_layers 0)"
            )


@dataclass
class Qwen2Config(_QwenSlidingWindow, LlamaConfig):
    """Qwen2ForCausalLM: Llama's block with biases on q, k and v (none on o)."""

    architecture: ClassVar[str] = "qwen2"
    hf_class: ClassVar[str] = "Qwen2ForCausalLM"

    @property
    def qkv_bias(self) -> bool:
        return True


@dataclass
class Qwen3Config(_QwenSlidingWindow, LlamaConfig):
    """Qwen3ForCausalLM: Llama's block with an RMSNorm (weights q_norm, k_norm
    of shape (hd)) over each head of q and k before the rotary embedding."""

    architecture: ClassVar[str] = "qwen3"
    hf_class: ClassVar[str] = "Qwen3ForCausalLM"
    qk_norm: ClassVar[bool] = True


@dataclass
class Olmo2Config(LlamaConfig):
    """Olmo2ForCausalLM: Llama's tensors and SwiGLU MLP with the norms moved:
    each sub-layer reads h itself and its output is RMS-normed before the
    residual add (post_attention_layernorm, post_feedforward_layernorm; no
    input_layernorm), and q and k are RMS-normed over the whole projection
    (q_norm (H*hd), k_norm (KV*hd)) before the split into heads. No biases."""

    architecture: ClassVar[str] = "olmo2"
    hf_class: ClassVar[str] = "Olmo2ForCausalLM"
    qk_norm: ClassVar[bool] = True
    qk_norm_full_width: ClassVar[bool] = True
    norms_after_sublayers: ClassVar[bool] = True

    def validate(self) -> None:
        super().validate()
        if self.attention_bias or self.mlp_bias:
            raise FormatError(
                "attention_bias / mlp_bias = 1: OLMo 2 normalises o_proj's output, so its bias would have to "
                "come before the norm; no released OLMo 2 has biases, and distzo implements none"
            )


@dataclass
class MistralConfig(LlamaConfig):
    """MistralForCausalLM: Llama's block; a query sees the keys of the last
    sliding_window positions, itself included (0: no window, HF's null), in
    every layer."""

    architecture: ClassVar[str] = "mistral"
    hf_class: ClassVar[str] = "MistralForCausalLM"
    int_attrs: ClassVar[tuple[str, ...]] = LLAMA_INT_ATTRS + ("sliding_window",)
    zero_means_none: ClassVar[tuple[str, ...]] = ("sliding_window",)
    sliding_window: int = 0


@dataclass
class Phi3Config(MistralConfig):
    """Phi3ForCausalLM: Llama's block, its fused self_attn.qkv_proj (rows q,
    then k, then v) and mlp.gate_up_proj (rows gate, then up) split into
    Llama's tensors at import (tools/hf_to_h5.py) and fused again on export;
    a sliding window in every layer as Mistral's (0: none, Phi3Config's
    null default); LongRoPE with Phi3Config's own original context. No
    biases."""

    architecture: ClassVar[str] = "phi3"
    hf_class: ClassVar[str] = "Phi3ForCausalLM"

    def validate(self) -> None:
        super().validate()
        if self.attention_bias or self.mlp_bias:
            raise FormatError("attention_bias / mlp_bias = 1: Phi-3's projections have no biases")


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
    (0: no window, HF's null). sliding_window_pattern = num_hidden_layers + 1
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
    c.architecture: c
    for c in (OptConfig, LlamaConfig, Qwen2Config, Qwen3Config, MistralConfig, Gemma3Config, Olmo2Config,
              Phi3Config)
}


def supported_architectures() -> str:
    """The architectures distzo reads, for messages: 'opt' (OPTForCausalLM), ..."""
    names = [f"{a!r} ({c.hf_class})" for a, c in CONFIG_TYPES.items()]
    return ", ".join(names[:-1]) + " and " + names[-1]


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
            full = cfg.qk_norm_full_width
            out[lk + "self_attn.q_norm.weight"] = (cfg.q_width if full else cfg.head_dim,)
            out[lk + "self_attn.k_norm.weight"] = (cfg.kv_width if full else cfg.head_dim,)
        for name, rows, cols, bias in mlp:
            out[f"{lk}{name}.weight"] = (rows, cols)
            if bias:
                out[f"{lk}{name}.bias"] = (rows,)
        if not cfg.norms_after_sublayers:
            out[lk + "input_layernorm.weight"] = (c,)
        out[lk + "post_attention_layernorm.weight"] = (c,)
        if cfg.norms_after_sublayers:
            out[lk + "post_feedforward_layernorm.weight"] = (c,)
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
