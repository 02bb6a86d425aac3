"""hf_to_h5 (needs torch and transformers, safetensors to write checkpoints).

Round trips in every checkpoint layout (safetensors, sharded safetensors,
pytorch_model.bin, sharded .bin, `decoder.*` keys, a tied lm_head present,
float16 weights): HF -> distzo -> HF gives bit-identical logits in
transformers. The same for Llama, tied (lm_head absent or present) and
untied, with and without biases, bf16 weights, and a model file without
hf_config_json; likewise Llama's kin and Gemma 3 (tied and untied). The
tokenizer's files go into the model file and come back byte for byte,
AutoTokenizer loading them. And hf_to_h5 rejects what distzo does not
support, with a clear message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

np = pytest.importorskip("numpy")
h5py = pytest.importorskip("h5py")

from distzo_tools import TOOLS, formats  # noqa: E402
from distzo_tools.convert import hf_to_h5  # noqa: E402
from distzo_tools.formats import FormatError  # noqa: E402
from tests.hf_models import expect_config_error, expect_error, gemma3_hf, padded_logits, quiet_transformers, round_trip, tiny_gemma3, tiny_llama, tiny_opt, write_hf  # noqa: E402


def test_round_trips():
    quiet_transformers()
    import torch

    cases = [
        ("safetensors", dict(fmt="safetensors")),
        ("safetensors, 3 shards", dict(fmt="safetensors", shards=3)),
        ("pytorch_model.bin", dict(fmt="bin")),
        ("pytorch_model.bin, 2 shards, tied lm_head present", dict(fmt="bin", shards=2, with_head=True)),
        ("decoder.* keys, safetensors", dict(fmt="safetensors", rename_decoder=True)),
        ("decoder.* keys, .bin, lm_head present", dict(fmt="bin", rename_decoder=True, with_head=True)),
    ]
    for post_ln, proj in ((False, None), (True, None), (True, 8), (False, 8)):
        model = tiny_opt(seed=len(cases), do_layer_norm_before=not post_ln, word_embed_proj_dim=proj)
        ref = padded_logits(model)
        for label, layout in cases:
            with tempfile.TemporaryDirectory() as tmp:
                h5, again = round_trip(model, tmp, **layout)
                got = padded_logits(again)
                assert np.array_equal(got, ref), f"{label}: logits differ by {np.abs(got - ref).max()}"
                cfg, tensors = formats.read_model(h5)
                sd = model.state_dict()
                for name, array in tensors.items():
                    assert np.array_equal(array, sd[name].numpy()), name
                assert "lm_head.weight" not in tensors
    # float16 weights (as the released OPT checkpoints are stored): exact upcast
    model = tiny_opt(seed=7)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    with tempfile.TemporaryDirectory() as tmp:
        _, again = round_trip(model, tmp, fmt="safetensors", dtype=torch.float16)
        assert np.array_equal(padded_logits(again), padded_logits(model)), "float16 round trip"
    print("round trips: OK")


def test_llama_round_trips():
    """HF -> distzo -> HF for LlamaForCausalLM: the file holds exactly the HF
    tensors (lm_head only when untied) and transformers gives bit-identical
    logits from the converted-back directory."""
    quiet_transformers()
    import torch

    from distzo_tools.references import mezo_reference

    models = {
        "tied": tiny_llama(seed=1, tie_word_embeddings=True),
        "untied": tiny_llama(seed=2, tie_word_embeddings=False, num_key_value_heads=1, rope_theta=500000.0),
        "biases, head_dim 8": tiny_llama(seed=3, tie_word_embeddings=True, head_dim=8, attention_bias=True,
                                          mlp_bias=True, rms_norm_eps=1e-5),
    }
    cases = [
        ("safetensors", dict(fmt="safetensors")),
        ("safetensors, 3 shards", dict(fmt="safetensors", shards=3)),
        ("pytorch_model.bin", dict(fmt="bin")),
        ("pytorch_model.bin, 2 shards, tied lm_head present", dict(fmt="bin", shards=2, with_head=True)),
    ]
    for kind, model in models.items():
        ref = padded_logits(model)
        sd = model.state_dict()
        for label, layout in cases:
            with tempfile.TemporaryDirectory() as tmp:
                h5, again = round_trip(model, tmp, **layout)
                got = padded_logits(again)
                assert np.array_equal(got, ref), f"{kind}, {label}: logits differ by {np.abs(got - ref).max()}"
                cfg, tensors = formats.read_model(h5)
                assert isinstance(cfg, formats.LlamaConfig) and cfg.tie_word_embeddings == (kind != "untied")
                assert set(tensors) == set(sd) - ({"lm_head.weight"} if cfg.tie_word_embeddings else set())
                for name, array in tensors.items():
                    assert np.array_equal(array, sd[name].numpy()), name
                # The PyTorch MeZO reference builds the same model from the file.
                loaded = mezo_reference.load_model_h5(h5, attn_implementation="eager")
                assert np.array_equal(padded_logits(loaded), ref), f"{kind}, {label}: load_model_h5"
        # A file without hf_config_json: the way back writes a config.json from the attributes.
        with tempfile.TemporaryDirectory() as tmp:
            h5, _ = round_trip(model, tmp, fmt="safetensors")
            cfg, tensors = formats.read_model(h5)
            cfg.hf_config_json = ""
            bare, back = os.path.join(tmp, "bare.h5"), os.path.join(tmp, "bare")
            formats.write_model(bare, cfg, tensors)
            hf_to_h5.h5_to_hf(bare, back, verbose=False)
            again = type(model).from_pretrained(back, attn_implementation="eager").eval()
            assert np.array_equal(padded_logits(again), ref), f"{kind}: config.json from the attributes"
    # bfloat16 weights (as Llama checkpoints are usually stored): exact upcast
    model = tiny_llama(seed=4)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.bfloat16().float())
    with tempfile.TemporaryDirectory() as tmp:
        _, again = round_trip(model, tmp, fmt="safetensors", dtype=torch.bfloat16)
        assert np.array_equal(padded_logits(again), padded_logits(model)), "bfloat16 round trip"
    print("Llama round trips: OK")


def test_tokenizer_round_trip():
    """A model saved by transformers with its tokenizer: hf_to_h5 keeps the
    tokenizer's text files in the model file, --to-hf writes them back byte
    for byte with the usual mode, and AutoTokenizer.from_pretrained on the
    export encodes as the original does."""
    quiet_transformers()
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    model = tiny_llama(seed=5)
    text = ["the film was great", "the film was terrible", "un film très réussi", "12345 tokens"] * 20
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(text, trainers.BpeTrainer(vocab_size=50, special_tokens=["<unk>", "<s>"]))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", bos_token="<s>")
    with tempfile.TemporaryDirectory() as tmp:
        hf, h5, out = (os.path.join(tmp, n) for n in ("hf", "m.h5", "out"))
        model.save_pretrained(hf)
        tok.save_pretrained(hf)
        kept = formats.read_tokenizer_dir(hf)
        assert "tokenizer.json" in kept and "tokenizer_config.json" in kept, sorted(kept)
        hf_to_h5.hf_to_h5(hf, h5, verbose=False)
        with h5py.File(h5, "r") as f:
            assert formats.read_tokenizer_files(f) == kept
        old_umask = os.umask(0o022)
        try:
            hf_to_h5.h5_to_hf(h5, out, verbose=False)
        finally:
            os.umask(old_umask)
        for name in kept:
            with open(os.path.join(hf, name), "rb") as a, open(os.path.join(out, name), "rb") as b:
                assert a.read() == b.read(), f"{name} did not come back byte for byte"
        for name in os.listdir(out):
            assert os.stat(os.path.join(out, name)).st_mode & 0o777 == 0o644, name
        again = AutoTokenizer.from_pretrained(out)
        for line in ("the film was great", "un film très réussi 42"):
            assert again(line).input_ids == tok(line).input_ids, line
        # A name that would leave the export directory is refused on the way back.
        with h5py.File(h5, "r+") as f:
            formats.write_string_attr(f.attrs, formats.TOKENIZER_ATTR, json.dumps({"../x.json": "{}"}))
        try:
            hf_to_h5.h5_to_hf(h5, os.path.join(tmp, "bad"), verbose=False)
            raise AssertionError("a tokenizer file named ../x.json was written")
        except FormatError as err:
            assert "not a plain file name" in str(err), err
    print("tokenizer round trip: OK")


def test_llama_kin_round_trips():
    """HF -> distzo -> HF for Qwen2ForCausalLM, Qwen3ForCausalLM and
    MistralForCausalLM: the file holds exactly the HF tensors and the
    architecture's name, and transformers gives bit-identical logits from
    the converted-back directory and from mezo_reference.load_model_h5."""
    quiet_transformers()
    import torch
    import transformers

    from distzo_tools.references import mezo_reference

    kw = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=24, max_position_embeddings=20, attn_implementation="eager")
    kin = {
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, dict(use_sliding_window=False)),
        "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM, dict(head_dim=6, tie_word_embeddings=True)),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM, dict(head_dim=4, sliding_window=16)),
        "olmo2": (transformers.Olmo2Config, transformers.Olmo2ForCausalLM, dict(tie_word_embeddings=True)),
        # fused qkv_proj and gate_up_proj, split at import and fused on the way back
        "phi3": (transformers.Phi3Config, transformers.Phi3ForCausalLM, dict(sliding_window=6, pad_token_id=0)),
    }
    for arch, (config_class, model_class, extra) in kin.items():
        torch.manual_seed(5)
        model = model_class(config_class(**kw, **extra)).eval()
        with torch.no_grad():  # unit norms and zero biases would hide a skipped one
            for name, p in model.named_parameters():
                p.add_(0.1 * torch.randn_like(p) if name.endswith(".bias") or "norm" in name else 3 * p)
        ref = padded_logits(model)
        sd = model.state_dict()
        with tempfile.TemporaryDirectory() as tmp:
            h5, again = round_trip(model, tmp, fmt="safetensors")
            assert type(again) is model_class, type(again)
            assert np.array_equal(padded_logits(again), ref), f"{arch}: logits differ by {np.abs(padded_logits(again) - ref).max()}"
            cfg, tensors = formats.read_model(h5)
            assert cfg.architecture == arch and cfg.hf_class == model_class.__name__
            split = dict(kv for name, t in sd.items() for kv in hf_to_h5.split_fused(cfg, name, t.numpy()))
            assert set(tensors) == set(split) - ({"lm_head.weight"} if cfg.tie_word_embeddings else set()), arch
            assert list(tensors) == list(formats.expected_tensors(cfg)), f"{arch}: canonical order"
            for name, array in tensors.items():
                assert np.array_equal(array, split[name]), name
            loaded = mezo_reference.load_model_h5(h5, attn_implementation="eager")
            assert np.array_equal(padded_logits(loaded), ref), f"{arch}: load_model_h5"
            # Without hf_config_json the way back writes a config.json from the attributes.
            cfg.hf_config_json = ""
            bare, back = os.path.join(tmp, "bare.h5"), os.path.join(tmp, "bare")
            formats.write_model(bare, cfg, tensors)
            hf_to_h5.h5_to_hf(bare, back, verbose=False)
            again = model_class.from_pretrained(back, attn_implementation="eager").eval()
            assert np.array_equal(padded_logits(again), ref), f"{arch}: config.json from the attributes"
    # No sliding_window key: MistralConfig's 4096; null: no window.
    assert formats.config_from_hf({"model_type": "mistral"}).sliding_window == 4096
    assert formats.config_from_hf({"model_type": "mistral", "sliding_window": None}).sliding_window == 0
    # Qwen's use_sliding_window: the layers from max_window_layers on see the window.
    windowed = formats.config_from_hf({"model_type": "qwen3", "num_hidden_layers": 4, "use_sliding_window": True,
                                       "sliding_window": 64, "max_window_layers": 2})
    assert (windowed.sliding_window, windowed.max_window_layers) == (64, 2)
    assert formats.config_from_hf({"model_type": "qwen2", "num_hidden_layers": 4,
                                   "use_sliding_window": True}).sliding_window == 0  # 28 >= 4 layers
    # What the kin do not share with Llama is refused, naming the key.
    for hf, needle in (
        ({"model_type": "qwen2", "num_hidden_layers": 2, "use_sliding_window": True,
          "layer_types": ["sliding_attention", "full_attention"]}, "layer 0 is sliding_attention before"),
        ({"model_type": "qwen2", "attention_bias": True}, "biases on q, k and v only"),
        ({"model_type": "mistral", "sliding_window": 0}, "sliding_window is 0"),
        ({"model_type": "qwen2", "architectures": ["LlamaForCausalLM"]}, "means Qwen2ForCausalLM"),
        ({"model_type": "gemma2"}, "'gemma2'"),
    ):
        expect_config_error(hf, needle)
    print("Qwen2 / Qwen3 / Mistral round trips: OK")


def test_gemma3_round_trips():
    """HF -> distzo -> HF for Gemma3ForCausalLM, tied and untied: the file
    holds exactly the HF tensors in canonical order (norm weights w as HF
    stores them), transformers gives bit-identical logits from the
    converted-back directory, from mezo_reference.load_model_h5, and from a
    config.json made from the attributes alone (no hf_config_json), which
    transformers reads as the same layer kinds and bases."""
    quiet_transformers()
    import transformers

    from distzo_tools.references import mezo_reference

    models = {
        "tied": tiny_gemma3(seed=1, tie_word_embeddings=True),
        "untied": tiny_gemma3(seed=2, tie_word_embeddings=False, rms_norm_eps=1e-5),
    }
    cases = [
        ("safetensors", dict(fmt="safetensors")),
        ("safetensors, 3 shards", dict(fmt="safetensors", shards=3)),
        ("pytorch_model.bin, 2 shards, tied lm_head present", dict(fmt="bin", shards=2, with_head=True)),
    ]
    for kind, model in models.items():
        ref = padded_logits(model)
        sd = model.state_dict()
        for label, layout in cases:
            with tempfile.TemporaryDirectory() as tmp:
                h5, again = round_trip(model, tmp, **layout)
                assert type(again) is transformers.Gemma3ForCausalLM, type(again)
                got = padded_logits(again)
                assert np.array_equal(got, ref), f"{kind}, {label}: logits differ by {np.abs(got - ref).max()}"
                cfg, tensors = formats.read_model(h5)
                assert isinstance(cfg, formats.Gemma3Config) and cfg.tie_word_embeddings == (kind == "tied")
                assert (cfg.sliding_window_pattern, cfg.sliding_window, cfg.query_pre_attn_scalar) == (2, 16, 10.0)
                assert (cfg.rope_theta, cfg.rope_local_base_freq) == (500000.0, 20000.0)
                assert set(tensors) == set(sd) - ({"lm_head.weight"} if cfg.tie_word_embeddings else set())
                assert list(tensors) == list(formats.expected_tensors(cfg)), f"{kind}: canonical order"
                for name, array in tensors.items():
                    assert np.array_equal(array, sd[name].numpy()), name
                loaded = mezo_reference.load_model_h5(h5, attn_implementation="eager")
                assert np.array_equal(padded_logits(loaded), ref), f"{kind}, {label}: load_model_h5"
        # A file without hf_config_json: the way back writes a config.json from the attributes.
        with tempfile.TemporaryDirectory() as tmp:
            h5, _ = round_trip(model, tmp, fmt="safetensors")
            cfg, tensors = formats.read_model(h5)
            cfg.hf_config_json = ""
            bare, back = os.path.join(tmp, "bare.h5"), os.path.join(tmp, "bare")
            formats.write_model(bare, cfg, tensors)
            hf_to_h5.h5_to_hf(bare, back, verbose=False)
            with open(os.path.join(back, "config.json")) as fh:
                written = json.load(fh)
            assert "sliding_window_pattern" not in written and written["layer_types"] == model.config.layer_types
            again = type(model).from_pretrained(back, attn_implementation="eager").eval()
            assert again.config.layer_types == model.config.layer_types
            assert again.config.rope_parameters == model.config.rope_parameters, again.config.rope_parameters
            assert np.array_equal(padded_logits(again), ref), f"{kind}: config.json from the attributes"
    # transformers reads a transformers 4 config (flat bases, a pattern) as distzo does
    t4 = gemma3_hf(layer_types=None, rope_parameters=None, sliding_window_pattern=3, rope_theta=5e5,
                    rope_local_base_freq=2e4, rope_scaling=None, num_hidden_layers=7)
    theirs = transformers.Gemma3TextConfig.from_dict(t4)
    ours = formats.config_from_hf(t4)
    assert theirs.layer_types == ours.layer_types, (theirs.layer_types, ours.layer_types)
    assert theirs.rope_parameters["full_attention"]["rope_theta"] == ours.rope_theta
    assert theirs.rope_parameters["sliding_attention"]["rope_theta"] == ours.rope_local_base_freq
    print("Gemma 3 round trips: OK")


def test_rejections():
    quiet_transformers()
    import torch

    model = tiny_opt()
    msgs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.h5")
        hf = os.path.join(tmp, "hf")
        msgs.append(expect_error(os.path.join(tmp, "nope"), out, "not a directory"))
        os.makedirs(hf)
        msgs.append(expect_error(hf, out, "config.json missing"))
        model.config.to_json_file(os.path.join(hf, "config.json"))
        msgs.append(expect_error(hf, out, "no weights found"))
        write_hf(model, hf, fmt="safetensors")
        for key, value, needle in (
            ("activation_function", "gelu", "only 'relu'"),
            ("enable_bias", False, "enable_bias"),
            ("layer_norm_elementwise_affine", False, "layer_norm_elementwise_affine"),
            ("_remove_final_layer_norm", True, "_remove_final_layer_norm"),
            ("tie_word_embeddings", False, "config.json tie_word_embeddings is false"),
            ("model_type", "gpt2", "model_type"),
        ):
            cfg = json.load(open(os.path.join(hf, "config.json")))
            cfg[key] = value
            bad = os.path.join(tmp, "bad_" + key)
            write_hf(model, bad, fmt="safetensors")
            json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
            msgs.append(expect_error(bad, out, needle))
        # untied head that differs from embed_tokens
        bad = os.path.join(tmp, "untied")
        write_hf(model, bad, fmt="bin", with_head=True)
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["lm_head.weight"] = sd["lm_head.weight"] + 1e-3
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(expect_error(bad, out, "untied"))
        # a missing tensor, a wrong shape, an unknown key, a shard missing
        for what in ("missing", "shape", "unknown"):
            bad = os.path.join(tmp, what)
            write_hf(model, bad, fmt="bin")
            path = os.path.join(bad, "pytorch_model.bin")
            sd = torch.load(path)
            if what == "missing":
                del sd["model.decoder.layers.1.fc2.bias"]
            elif what == "shape":
                sd["model.decoder.layers.0.fc1.weight"] = sd["model.decoder.layers.0.fc1.weight"].t().contiguous()
            else:
                sd["model.decoder.layers.2.fc1.bias"] = torch.zeros(3)
            torch.save(sd, path)
            needle = {"missing": "missing: model.decoder.layers.1.fc2.bias", "shape": "expected (32, 16)", "unknown": "layers.2.fc1.bias"}[what]
            msgs.append(expect_error(bad, out, needle))
        bad = os.path.join(tmp, "shards")
        write_hf(model, bad, fmt="safetensors", shards=2)
        os.unlink(os.path.join(bad, "model-00002-of-00002.safetensors"))
        msgs.append(expect_error(bad, out, "shard file(s) missing"))
        # the CLI: exit status 1 and one line on stderr
        proc = subprocess.run(
            [sys.executable, os.path.join(TOOLS, "hf_to_h5.py"), os.path.join(tmp, "untied"), out],
            capture_output=True, text=True,
        )
        assert proc.returncode == 1 and proc.stderr.startswith("hf_to_h5: error:"), proc
    for m in msgs:
        print("  rejected:", m)
    print("rejections: OK")


def test_llama_rejections():
    """hf_to_h5 on Llama checkpoints it must refuse: a tied head that differs
    from embed_tokens, an untied head missing, a config it does not implement."""
    quiet_transformers()
    import torch

    msgs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.h5")
        tied = tiny_llama(seed=5, tie_word_embeddings=True)
        bad = os.path.join(tmp, "tied_differs")
        write_hf(tied, bad, fmt="bin", with_head=True)
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["lm_head.weight"] = sd["lm_head.weight"] + 1e-3
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(expect_error(bad, out, "lm_head.weight differs from model.embed_tokens.weight"))
        untied = tiny_llama(seed=6, tie_word_embeddings=False)
        bad = os.path.join(tmp, "untied_no_head")
        write_hf(untied, bad, fmt="bin")
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        del sd["lm_head.weight"]
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(expect_error(bad, out, "missing: lm_head.weight"))
        for key, value, needle in (
            ("rope_parameters", {"rope_type": "longrope", "rope_theta": 1e4, "factor": 2.0},
             "short_factor must be a list"),
            ("hidden_act", "gelu", "hidden_act"),
            ("pretraining_tp", 4, "pretraining_tp"),
            ("model_type", "gemma2", "model_type is 'gemma2'"),
        ):
            bad = os.path.join(tmp, "bad_" + key)
            write_hf(tied, bad, fmt="safetensors")
            cfg = json.load(open(os.path.join(bad, "config.json")))
            cfg[key] = value
            json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
            msgs.append(expect_error(bad, out, needle))
        bad = os.path.join(tmp, "unknown_key")
        write_hf(tied, bad, fmt="bin")
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["model.layers.0.self_attn.q_proj.bias"] = torch.zeros(16)
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(expect_error(bad, out, "model.layers.0.self_attn.q_proj.bias: not a parameter of LlamaForCausalLM"))
    for m in msgs:
        print("  rejected:", m)
    print("Llama rejections: OK")


def test_gemma3_rejections():
    """hf_to_h5 on Gemma 3 checkpoints it must refuse, leaving no output: each
    config distzo does not implement, a tied head that differs from
    embed_tokens, a projection bias."""
    quiet_transformers()
    import torch

    msgs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.h5")
        tied = tiny_gemma3(seed=5)
        for key, value, needle in (
            ("final_logit_softcapping", 30.0, "final_logit_softcapping is 30.0"),
            ("attn_logit_softcapping", 50.0, "attn_logit_softcapping is 50.0"),
            ("use_bidirectional_attention", True, "use_bidirectional_attention is true"),
            ("attention_bias", True, "attention_bias is true"),
            ("rope_parameters", {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                 "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}},
             "rope_type is 'linear'"),
            ("rope_scaling", {"rope_type": "linear", "factor": 8.0}, "rope_scaling"),
            ("layer_types", ["full_attention", "sliding_attention", "sliding_attention"],
             "layer 1 is sliding_attention"),
            ("hidden_activation", "gelu", "hidden_activation is 'gelu'"),
        ):
            bad = os.path.join(tmp, "bad_" + key)
            write_hf(tied, bad, fmt="safetensors")
            cfg = json.load(open(os.path.join(bad, "config.json")))
            cfg[key] = value
            json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
            msgs.append(expect_error(bad, out, needle))
        bad = os.path.join(tmp, "tied_differs")
        write_hf(tied, bad, fmt="bin", with_head=True)
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["lm_head.weight"] = sd["lm_head.weight"] + 1e-3
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(expect_error(bad, out, "lm_head.weight differs from model.embed_tokens.weight"))
        bad = os.path.join(tmp, "bias")
        write_hf(tied, bad, fmt="bin")
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["model.layers.0.self_attn.q_proj.bias"] = torch.zeros(24)
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(expect_error(bad, out,
                                  "model.layers.0.self_attn.q_proj.bias: not a parameter of Gemma3ForCausalLM"))
    for m in msgs:
        print("  rejected:", m)
    print("Gemma 3 rejections: OK")
