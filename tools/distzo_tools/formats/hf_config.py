"""Hugging Face config.json <-> a distzo config: config_from_hf picks the
config type by model_type, fills transformers' defaults (both the
transformers 4 and 5 forms of the rotary settings) and refuses what distzo
does not implement, naming the key; hf_config_dict is the config.json of the
way back. Standard library only.
"""

from __future__ import annotations

import json
from typing import Mapping

from distzo_tools.formats import rope
from distzo_tools.formats.configs import (
    CONFIG_TYPES,
    GEMMA3_ACTIVATION,
    FormatError,
    Gemma3Config,
    LlamaConfig,
    MistralConfig,
    ModelConfig,
    Phi3Config,
    OptConfig,
    Qwen2Config,
    Qwen3Config,
    supported_architectures,
)


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
# transformers' Phi3Config.original_max_position_embeddings default
PHI3_DEFAULT_ORIGINAL_MAX_POSITIONS = 4096
# transformers' Qwen2Config / Qwen3Config sliding_window and max_window_layers defaults
QWEN_DEFAULT_SLIDING_WINDOW = 4096
QWEN_DEFAULT_MAX_WINDOW_LAYERS = 28
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
        raise FormatError(f"config.json model_type is {model_type!r}: distzo supports {supported_architectures()}")
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


def _llama_rope(hf: Mapping, max_positions: int, phi3: bool = False) -> tuple[float, dict | None]:
    """(rope_theta, rope_scaling) of a Llama-family config.json, in either
    transformers form (formats/rope.py says what each type reads).

    transformers 4 writes `rope_theta` and `rope_scaling` (null for plain
    RoPE); transformers 5 writes `rope_parameters` {"rope_type": ...,
    "rope_theta": ..., and the type's parameters}. As in transformers 5.25,
    the entry is `rope_scaling` when that is set, else `rope_parameters`,
    and the base the entry names wins over the flat `rope_theta`.
    """
    theta = hf.get("rope_theta")
    for key in ("rope_scaling", "rope_parameters"):
        if hf.get(key) is not None:
            entry = hf[key]
            if phi3 and isinstance(entry, Mapping) and (entry.get("rope_type") or entry.get("type")) in ("su", "yarn"):
                entry = {**entry, "rope_type": "longrope", "type": None}  # Phi3Config's older names
            scaling, entry_theta = rope.rope_entry(entry, key, max_positions)
            if phi3 and scaling is not None and "original_max_position_embeddings" in scaling:
                # Phi3Config's own key (default 4096) wins over the entry's.
                scaling["original_max_position_embeddings"] = int(
                    hf.get("original_max_position_embeddings") or PHI3_DEFAULT_ORIGINAL_MAX_POSITIONS)
            if entry_theta is not None:
                theta = entry_theta
            return (LLAMA_DEFAULT_ROPE_THETA if theta is None else float(theta)), scaling
    return (LLAMA_DEFAULT_ROPE_THETA if theta is None else float(theta)), None


def _qwen_sliding_window(hf: Mapping, num_layers: int) -> dict:
    """sliding_window and max_window_layers of a Qwen2/Qwen3 config.json, as
    Qwen2Config makes its layer_types: with use_sliding_window, the layers
    from max_window_layers (default 28) on see the last sliding_window (4096)
    keys. A layer_types list must be that pattern, and says where it starts.
    No layer in the window: full attention (both 0)."""
    sliding = bool(hf.get("use_sliding_window"))
    window = (QWEN_DEFAULT_SLIDING_WINDOW if hf.get("sliding_window") is None else int(hf["sliding_window"])) if sliding else 0
    first = (QWEN_DEFAULT_MAX_WINDOW_LAYERS if hf.get("max_window_layers") is None
             else int(hf["max_window_layers"])) if sliding else 0
    if sliding and window < 1:
        raise FormatError(f"config.json sliding_window is {window}: must be >= 1 with use_sliding_window")
    types = hf.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != num_layers:
            raise FormatError(f"config.json layer_types must be a list of num_hidden_layers ({num_layers}) entries")
        bad = [t for t in types if t not in ("full_attention", "sliding_attention")]
        if bad:
            raise FormatError(f"config.json layer_types holds {bad[0]!r}: Qwen's layers are full_attention or sliding_attention")
        start = next((k for k in range(num_layers) if all(t == "sliding_attention" for t in types[k:])), num_layers)
        if any(t == "sliding_attention" for t in types[:start]):
            k = types.index("sliding_attention")
            raise FormatError(
                f"config.json layer_types: layer {k} is sliding_attention before a full_attention one; Qwen's "
                "sliding layers are the last ones (from max_window_layers)"
            )
        if sliding:
            first = start
    first = min(first, num_layers)
    if not sliding or first == num_layers:
        return {"sliding_window": 0, "max_window_layers": 0}
    return {"sliding_window": window, "max_window_layers": first}


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
    if cls is Phi3Config:
        # Phi3Config: null (its default) or a window, in every layer.
        window = hf.get("sliding_window")
        if window is not None and int(window) < 1:
            raise FormatError(f"config.json sliding_window is {window}: must be null or >= 1")
        extra["sliding_window"] = 0 if window is None else int(window)
        if hf.get("partial_rotary_factor", 1.0) != 1.0:
            raise FormatError(
                f"config.json partial_rotary_factor is {hf['partial_rotary_factor']}: distzo rotates every "
                "channel of a head (Phi-4-mini's 0.75 is not supported)"
            )
    elif cls is MistralConfig:
        # null: no window; no key: MistralConfig's default, 4096 positions.
        window = hf.get("sliding_window") if "sliding_window" in hf else MISTRAL_DEFAULT_SLIDING_WINDOW
        if window is not None and int(window) < 1:
            raise FormatError(f"config.json sliding_window is {window}: must be null or >= 1")
        extra["sliding_window"] = 0 if window is None else int(window)
    elif cls in (Qwen2Config, Qwen3Config):
        extra.update(_qwen_sliding_window(hf, int(get("num_hidden_layers"))))
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
    rope_theta, rope_scaling = _llama_rope(hf, int(get("max_position_embeddings")), phi3=cls is Phi3Config)
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
        rope_scaling=rope_scaling,
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
        optional = ("rope_scaling",) * isinstance(cfg, LlamaConfig) + (
            ("sliding_window", "max_window_layers") * isinstance(cfg, (Qwen2Config, Qwen3Config)))
        for name in cfg.float_attrs + cfg.string_attrs + optional:
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
        extra_keys = {}
        if isinstance(cfg, Phi3Config):
            # Phi3Config's pad default (32000) may lie past a small vocabulary: the file keeps none.
            extra_keys["pad_token_id"] = None
            if cfg.rope_scaling and "original_max_position_embeddings" in cfg.rope_scaling:
                extra_keys["original_max_position_embeddings"] = cfg.rope_scaling["original_max_position_embeddings"]
        base = {
            **extra_keys,
            "model_type": cfg.architecture,
            "architectures": [cfg.hf_class],
            "hidden_act": cfg.hidden_act,
            "rms_norm_eps": float(cfg.rms_norm_eps),
            "rope_parameters": {"rope_type": "default", **(cfg.rope_scaling or {}),
                                "rope_theta": float(cfg.rope_theta)},
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
        base["use_sliding_window"] = cfg.sliding_window > 0
        base["sliding_window"] = cfg.sliding_window or QWEN_DEFAULT_SLIDING_WINDOW
        base["max_window_layers"] = cfg.max_window_layers
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
