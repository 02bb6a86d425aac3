"""The Llama and Gemma 3 config.json parsers (numpy + h5py only): both
transformers forms (4's flat rope_theta, Gemma's rope_local_base_freq and
sliding_window_pattern; 5's rope_parameters and layer_types) are read, and
each variant distzo does not implement is refused, naming the key.
"""

from __future__ import annotations

import json
import os
import tempfile

import pytest

np = pytest.importorskip("numpy")
h5py = pytest.importorskip("h5py")

from distzo_tools import formats  # noqa: E402
from distzo_tools.formats import FormatError  # noqa: E402
from tests.hf_models import expect_config_error, gemma3_hf, llama_hf  # noqa: E402


def test_llama_config():
    """config.json -> LlamaConfig: defaults, both RoPE forms, every refusal;
    the model file's attributes and their types (numpy + h5py only)."""
    cfg = formats.config_from_hf(llama_hf())
    assert isinstance(cfg, formats.LlamaConfig)
    assert (cfg.head_dim, cfg.num_key_value_heads, cfg.rope_theta) == (8, 2, 500000.0)
    assert cfg.tie_word_embeddings and not cfg.attention_bias and not cfg.mlp_bias
    # transformers 4 form: rope_theta (+ rope_scaling null)
    cfg = formats.config_from_hf(llama_hf(rope_parameters=None, rope_theta=123456.0, rope_scaling=None))
    assert cfg.rope_theta == 123456.0
    # legacy "type" key inside rope_parameters; rope_parameters' theta wins over a top-level one
    cfg = formats.config_from_hf(llama_hf(rope_parameters={"type": "default", "rope_theta": 7.5e5}, rope_theta=1e4))
    assert cfg.rope_theta == 7.5e5
    # nothing about RoPE, num_key_value_heads, head_dim or the head: transformers' LlamaConfig defaults
    cfg = formats.config_from_hf(
        llama_hf(rope_parameters=None, num_key_value_heads=None, head_dim=None, tie_word_embeddings=None,
                  rms_norm_eps=None)
    )
    assert cfg.rope_theta == formats.LLAMA_DEFAULT_ROPE_THETA == 10000.0
    assert (cfg.num_key_value_heads, cfg.head_dim, cfg.tie_word_embeddings, cfg.rms_norm_eps) == (4, 8, False, 1e-6)
    # an explicit head_dim with H * head_dim != hidden_size; biases
    cfg = formats.config_from_hf(llama_hf(head_dim=16, attention_bias=True, mlp_bias=True))
    shapes = formats.expected_tensors(cfg)
    assert shapes["model.layers.1.self_attn.q_proj.weight"] == (64, 32)
    assert shapes["model.layers.1.self_attn.k_proj.bias"] == (32,)
    assert shapes["model.layers.1.self_attn.o_proj.weight"] == (32, 64)
    assert shapes["model.layers.1.mlp.down_proj.bias"] == (32,)
    assert "lm_head.weight" not in shapes and list(shapes)[-1] == "model.norm.weight"
    untied = formats.expected_tensors(formats.config_from_hf(llama_hf(tie_word_embeddings=False)))
    assert list(untied)[-1] == "lm_head.weight" and untied["lm_head.weight"] == (64, 32)
    assert not any(n.endswith(".bias") for n in untied)

    msgs = [
        expect_config_error(llama_hf(rope_parameters={"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}),
                             "low_freq_factor is missing: give a positive number"),
        expect_config_error(llama_hf(rope_parameters={"rope_type": "yarn", "factor": 4.0, "low_freq_factor": 1.0}),
                             "rope_parameters.low_freq_factor is set, but rope_type 'yarn' has no such parameter"),
        expect_config_error(llama_hf(rope_parameters=None, rope_theta=1e4,
                                     rope_scaling={"type": "proportional", "factor": 2.0}),
                             "rope_scaling has rope_type 'proportional'"),
        expect_config_error(llama_hf(rope_scaling={"rope_type": "default", "partial_rotary_factor": 0.5}),
                             "partial_rotary_factor is 0.5"),
        expect_config_error(llama_hf(hidden_act="gelu"), "hidden_act is 'gelu'"),
        expect_config_error(llama_hf(pretraining_tp=2), "pretraining_tp is 2"),
        expect_config_error(llama_hf(num_key_value_heads=3),
                             "num_attention_heads 4 is not divisible by num_key_value_heads 3"),
        expect_config_error(llama_hf(head_dim=5), "head_dim 5: must be even"),
        expect_config_error(llama_hf(architectures=["LlamaForSequenceClassification"]),
                             "LlamaForSequenceClassification"),
        expect_config_error(llama_hf(model_type="gemma2"), "model_type is 'gemma2'"),
    ]
    assert "'llama' (LlamaForCausalLM)" in msgs[-1] and "'opt' (OPTForCausalLM)" in msgs[-1], msgs[-1]
    assert "'gemma3_text' (Gemma3ForCausalLM)" in msgs[-1], msgs[-1]
    for m in msgs:
        print("  rejected:", m)

    # The model file: attribute types and order as docs/formats.md says; read back equal.
    cfg = formats.config_from_hf(llama_hf(head_dim=16, attention_bias=True))
    rng = np.random.RandomState(0)
    tensors = {n: rng.randn(*s).astype(np.float32) for n, s in formats.expected_tensors(cfg).items()}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.h5")
        formats.write_model(path, cfg, tensors)
        with h5py.File(path, "r") as f:
            attrs = f.attrs
            # Fixed-length strings (no global heap), read back as bytes.
            assert h5py.check_string_dtype(attrs.get_id("architecture").dtype).length is not None
            assert formats.read_string_attr(attrs, "architecture") == "llama"
            assert int(attrs["format_version"]) == 1
            for name in formats.LLAMA_INT_ATTRS:
                assert attrs[name].dtype == np.int64, name
            for name in formats.LLAMA_FLOAT_ATTRS:
                assert attrs[name].dtype == np.float64, name
            assert formats.read_string_attr(attrs, "hidden_act") == "silu"
            assert json.loads(formats.read_string_attr(attrs, "hf_config_json"))["model_type"] == "llama"
            assert (int(attrs["head_dim"]), int(attrs["attention_bias"]), int(attrs["mlp_bias"])) == (16, 1, 0)
            assert float(attrs["rope_theta"]) == 500000.0 and float(attrs["rms_norm_eps"]) == 1e-5
            assert all(f[n].dtype == np.float32 for n in tensors)
        back, got = formats.read_model(path)
        assert back == cfg and all(np.array_equal(got[n], tensors[n]) for n in tensors)
        assert formats.hf_config_dict(back) == json.loads(cfg.hf_config_json)
        # an attribute that disagrees with hf_config_json is caught on the way back
        with h5py.File(path, "r+") as f:
            f.attrs.create("rope_theta", np.float64(1e4), dtype=np.float64)
        try:
            formats.hf_config_dict(formats.read_model(path)[0])
        except FormatError as err:
            assert "rope_theta" in str(err), err
        else:
            raise AssertionError("rope_theta disagreeing with hf_config_json was not caught")
        with h5py.File(path, "r+") as f:
            formats.write_string_attr(f.attrs, "architecture", "gpt2")
        try:
            formats.read_model(path)
        except FormatError as err:
            assert "architecture 'gpt2'" in str(err), err
        else:
            raise AssertionError("an unknown architecture was read")
    print("Llama config: OK")


def test_rope_scaling():
    """Each rope type is read in both transformers forms (transformers 5.25's
    precedence: rope_scaling over rope_parameters), its original context
    defaulted, kept in the model file's rope_scaling attribute (absent for
    plain RoPE) and written back into a config.json transformers reads to the
    same parameters."""
    llama31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}
    cfg = formats.config_from_hf(llama_hf(rope_parameters=None, rope_theta=5e5, rope_scaling=llama31,
                                          max_position_embeddings=131072))
    assert cfg.rope_scaling == llama31 and cfg.rope_theta == 5e5
    # transformers 5's form, the base inside; YaRN without an original context takes max_position_embeddings.
    cfg = formats.config_from_hf(llama_hf(rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0},
                                          max_position_embeddings=4096))
    assert cfg.rope_scaling == {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
    assert cfg.rope_theta == 1e6
    both = formats.config_from_hf(llama_hf(rope_theta=5e5, rope_scaling={"type": "linear", "factor": 2.0},
                                           rope_parameters={"rope_type": "default", "rope_theta": 1e4}))
    assert both.rope_scaling == {"rope_type": "linear", "factor": 2.0} and both.rope_theta == 5e5
    longrope = {"rope_type": "longrope", "short_factor": [1.0, 1.5, 2.0, 3.0], "long_factor": [1.0, 2.0, 4.0, 8.0],
                "original_max_position_embeddings": 16}
    for scaling in (llama31, longrope, {"rope_type": "dynamic", "factor": 2.0}, None):
        cfg = formats.config_from_hf(llama_hf(rope_parameters=None, rope_theta=1e4, rope_scaling=scaling,
                                              max_position_embeddings=32768))
        assert cfg.rope_scaling == scaling
        tensors = {n: np.zeros(s, np.float32) for n, s in formats.expected_tensors(cfg).items()}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.h5")
            formats.write_model(path, cfg, tensors)
            with h5py.File(path, "r") as f:
                assert ("rope_scaling" in f.attrs) == (scaling is not None)
            back, _ = formats.read_model(path)
            assert back == cfg and back.rope_scaling == scaling
            back.hf_config_json = ""  # the config.json made from the attributes
            again = formats.config_from_hf(formats.hf_config_dict(back))
            assert again.rope_scaling == scaling and again.rope_theta == 1e4
    expect_config_error(llama_hf(rope_parameters={"rope_type": "longrope", "short_factor": [1.0],
                                                  "long_factor": [1.0]}),
                        "short_factor must be a list of head_dim / 2 = 4 positive numbers")
    print("rope scaling: OK")


def test_gemma3_config():
    """config.json -> Gemma3Config: both transformers forms, defaults, the
    layer pattern, every refusal; the model file's attributes, their types,
    and the tensor list (numpy + h5py only)."""
    import dataclasses

    cfg = formats.config_from_hf(gemma3_hf())
    assert isinstance(cfg, formats.Gemma3Config) and cfg.architecture == "gemma3_text"
    assert (cfg.sliding_window_pattern, cfg.sliding_window, cfg.query_pre_attn_scalar) == (3, 16, 24.0)
    assert (cfg.rope_theta, cfg.rope_local_base_freq, cfg.head_dim) == (5e5, 2e4, 12)
    assert cfg.layer_types == gemma3_hf()["layer_types"]
    # transformers 4 form: flat bases, rope_scaling null, a pattern, no layer_types -> the same config
    for pattern_key in ("sliding_window_pattern", "_sliding_window_pattern"):
        changes = dict(layer_types=None, rope_parameters=None, rope_theta=5e5, rope_local_base_freq=2e4,
                       rope_scaling=None, _sliding_window_pattern=None)
        changes[pattern_key] = 3
        t4 = formats.config_from_hf(gemma3_hf(**changes))
        assert dataclasses.replace(t4, hf_config_json="") == dataclasses.replace(cfg, hf_config_json=""), t4
    # rope_parameters' bases win over flat ones; a missing entry falls back to them, then to the defaults
    cfg = formats.config_from_hf(gemma3_hf(
        rope_theta=1.0, rope_local_base_freq=3e4,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 7e5}, "sliding_attention": None}))
    assert (cfg.rope_theta, cfg.rope_local_base_freq) == (7e5, 3e4)
    # Gemma3TextConfig's defaults: window 4096, every 6th layer full, bases 1e6 / 1e4, scalar 256, tied
    cfg = formats.config_from_hf({"model_type": "gemma3_text"})
    assert (cfg.num_hidden_layers, cfg.sliding_window, cfg.sliding_window_pattern) == (26, 4096, 6)
    assert (cfg.rope_theta, cfg.rope_local_base_freq) == (1e6, 1e4) and cfg.tie_word_embeddings
    assert (cfg.query_pre_attn_scalar, cfg.head_dim, cfg.num_key_value_heads) == (256.0, 256, 4)
    assert [k for k in range(26) if cfg.is_full_attention(k)] == [5, 11, 17, 23]
    # null window: none; every layer sliding (from the list, or a pattern beyond L): pattern L + 1
    assert formats.config_from_hf(dict(gemma3_hf(), sliding_window=None)).sliding_window == 0
    assert formats.config_from_hf(gemma3_hf(sliding_window=None)).sliding_window == 4096  # no key
    all_sliding = formats.config_from_hf(gemma3_hf(layer_types=["sliding_attention"] * 6))
    assert all_sliding.sliding_window_pattern == 7 and not any(map(all_sliding.is_full_attention, range(6)))
    assert formats.config_from_hf(gemma3_hf(layer_types=None, sliding_window_pattern=10)).sliding_window_pattern == 7
    all_full = formats.config_from_hf(gemma3_hf(layer_types=["full_attention"] * 6))
    assert all_full.sliding_window_pattern == 1
    # transformers 4's hidden_act key, if that is the only one
    assert formats.config_from_hf(gemma3_hf(hidden_activation=None, hidden_act="gelu_pytorch_tanh"))

    msgs = [
        expect_config_error(gemma3_hf(final_logit_softcapping=30.0), "final_logit_softcapping is 30.0"),
        expect_config_error(gemma3_hf(attn_logit_softcapping=50.0), "attn_logit_softcapping is 50.0"),
        expect_config_error(gemma3_hf(use_bidirectional_attention=True), "use_bidirectional_attention is true"),
        expect_config_error(gemma3_hf(attention_bias=True), "no released Gemma 3 has attention biases"),
        expect_config_error(gemma3_hf(rope_scaling={"rope_type": "linear", "factor": 8.0}), "rope_scaling"),
        expect_config_error(
            gemma3_hf(rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}),
            "rope_parameters.full_attention.rope_type is 'linear'"),
        expect_config_error(
            gemma3_hf(rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                              "factor": 2.0}}),
            "rope_parameters.sliding_attention.factor is set"),
        expect_config_error(gemma3_hf(rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
                             "one entry per layer type"),
        expect_config_error(gemma3_hf(layer_types=["full_attention", "sliding_attention", "full_attention",
                                                     "full_attention", "full_attention", "full_attention"]),
                             "layer 1 is sliding_attention"),
        expect_config_error(
            gemma3_hf(layer_types=["sliding_attention", "full_attention"] * 2 + ["sliding_attention"] * 2),
            "layer 5 is sliding_attention"),
        expect_config_error(gemma3_hf(layer_types=["sliding_attention"] * 5), "num_hidden_layers (6) entries"),
        expect_config_error(gemma3_hf(layer_types=["chunked_attention"] * 6), 'holds "chunked_attention"'),
        expect_config_error(gemma3_hf(layer_types=None, sliding_window_pattern=0), "sliding_window_pattern is 0"),
        expect_config_error(gemma3_hf(hidden_activation="gelu"), "hidden_activation is 'gelu'"),
        expect_config_error(gemma3_hf(hidden_activation=None, hidden_act="silu"), "hidden_act is 'silu'"),
        expect_config_error(gemma3_hf(sliding_window=0), "sliding_window is 0"),
        expect_config_error(gemma3_hf(num_key_value_heads=3), "not divisible by num_key_value_heads 3"),
        expect_config_error(gemma3_hf(head_dim=7), "head_dim 7: must be even"),
        expect_config_error(gemma3_hf(query_pre_attn_scalar=-1), "query_pre_attn_scalar -1.0"),
        expect_config_error(gemma3_hf(architectures=["Gemma3ForSequenceClassification"]),
                             "means Gemma3ForCausalLM"),
    ]
    for m in msgs:
        print("  rejected:", m)

    # The tensors: Gemma's list and shapes; lm_head only when untied.
    cfg = formats.config_from_hf(gemma3_hf(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"]))
    shapes = formats.expected_tensors(cfg)
    layer = [n[len("model.layers.1."):] for n in shapes if n.startswith("model.layers.1.")]
    assert layer == [
        "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
        "self_attn.q_norm.weight", "self_attn.k_norm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
        "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight",
        "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight"], layer
    assert shapes["model.layers.0.self_attn.q_proj.weight"] == (48, 32)
    assert shapes["model.layers.0.self_attn.k_proj.weight"] == (24, 32)
    assert shapes["model.layers.0.self_attn.o_proj.weight"] == (32, 48)
    assert shapes["model.layers.0.self_attn.q_norm.weight"] == (12,)
    assert shapes["model.layers.0.mlp.down_proj.weight"] == (32, 48)
    assert list(shapes)[0] == "model.embed_tokens.weight" and list(shapes)[-1] == "model.norm.weight"
    assert len(shapes) == 2 + 2 * 13
    untied = formats.expected_tensors(dataclasses.replace(cfg, tie_word_embeddings=False))
    assert list(untied)[-1] == "lm_head.weight" and untied["lm_head.weight"] == (64, 32)

    # The model file: attribute types as docs/formats.md says; read back equal.
    rng = np.random.RandomState(0)
    tensors = {n: rng.randn(*s).astype(np.float32) for n, s in shapes.items()}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.h5")
        formats.write_model(path, cfg, tensors)
        with h5py.File(path, "r") as f:
            attrs = f.attrs
            assert formats.read_string_attr(attrs, "architecture") == "gemma3_text"
            for name in formats.GEMMA3_INT_ATTRS:
                assert attrs[name].dtype == np.int64, name
            for name in formats.GEMMA3_FLOAT_ATTRS:
                assert attrs[name].dtype == np.float64, name
            assert formats.read_string_attr(attrs, "hidden_activation") == "gelu_pytorch_tanh"
            assert "mlp_bias" not in attrs and "hidden_act" not in attrs
            assert (int(attrs["sliding_window"]), int(attrs["sliding_window_pattern"]), int(attrs["attention_bias"])) \
                == (16, 2, 0)
            assert (float(attrs["rope_theta"]), float(attrs["rope_local_base_freq"]),
                    float(attrs["query_pre_attn_scalar"])) == (5e5, 2e4, 24.0)
        back, got = formats.read_model(path)
        assert back == cfg and all(np.array_equal(got[n], tensors[n]) for n in tensors)
        assert formats.hf_config_dict(back) == json.loads(cfg.hf_config_json)
        # the way back from the attributes alone: transformers 5's form, integral scalar as an int
        bare = formats.hf_config_dict(dataclasses.replace(back, hf_config_json=""))
        assert bare["layer_types"] == ["sliding_attention", "full_attention"] and "sliding_window_pattern" not in bare
        assert bare["query_pre_attn_scalar"] == 24 and isinstance(bare["query_pre_attn_scalar"], int)
        assert dataclasses.replace(formats.config_from_hf(bare), hf_config_json="") == \
            dataclasses.replace(back, hf_config_json="")
        # an attribute that disagrees with hf_config_json is caught on the way back
        with h5py.File(path, "r+") as f:
            f.attrs.create("rope_local_base_freq", np.float64(1e4), dtype=np.float64)
        try:
            formats.hf_config_dict(formats.read_model(path)[0])
        except FormatError as err:
            assert "rope_local_base_freq" in str(err), err
        else:
            raise AssertionError("rope_local_base_freq disagreeing with hf_config_json was not caught")
        # a file's own refusals: a pattern beyond L + 1, biases
        for name, value, needle in (("sliding_window_pattern", 4, "at most num_hidden_layers + 1"),
                                    ("attention_bias", 1, "attention_bias = 1")):
            with h5py.File(path, "r+") as f:
                original = int(f.attrs[name])
                f.attrs.create(name, np.int64(value), dtype=np.int64)
            try:
                formats.read_model(path)
            except FormatError as err:
                assert needle in str(err), err
            else:
                raise AssertionError(f"{name} = {value} was read")
            with h5py.File(path, "r+") as f:
                f.attrs.create(name, np.int64(original), dtype=np.int64)
    print("Gemma 3 config: OK")
