#!/usr/bin/env python3
"""Self-tests for the Python tools (not part of CI: they need torch + transformers).

    python tools/test_tools.py          # or: python -m pytest tools/test_tools.py

1. hf_to_h5 round trips (safetensors, sharded safetensors, pytorch_model.bin,
   sharded .bin, `decoder.*` keys, a tied lm_head present, float16 weights):
   HF -> distzo -> HF gives bit-identical logits in transformers. The same for
   Llama, tied (lm_head absent or present) and untied, with and without
   biases, bf16 weights, and a model file without hf_config_json; likewise
   Llama's kin and Gemma 3 (tied and untied). The tokenizer's files go into
   the model file and come back byte for byte, AutoTokenizer loading them.
2. hf_to_h5 rejects what distzo does not support, with a clear message; the
   Llama and Gemma 3 config parsers read both transformers forms (4's flat
   rope_theta, Gemma's rope_local_base_freq and sliding_window_pattern; 5's
   rope_parameters and layer_types) and refuse each variant they do not
   implement, naming the key (numpy + h5py only).
3. An independent numpy OPT, Llama and Gemma 3 forward, reading only the
   distzo model file, reproduces every tests/data/*.ref.h5 (logits at real
   tokens, hidden states, losses), which checks both the fixtures and their
   documentation; mezo_reference.load_model_h5 reproduces the Llama and
   Gemma 3 fixtures' logits and loss.
4. demo_baselines' statistics on hand-made cases: AUC (with ties), the fitted
   threshold, and the logistic probe separating separable data; make_dataset
   reads each of the four rated vader corpora, with and without a neutral band.
5. The parameter digest of tools/digest_reference.py (numpy path and plain
   definition alike) equals `distzo inspect --digest` on every
   tests/data/*.model.h5 and on a model distzo writes (needs a built distzo:
   $DISTZO, default build/distzo; numpy + h5py only, runs first).
6. 2-byte weights keep their dtype (numpy + h5py only): a bf16 and an fp16
   Hugging Face safetensors checkpoint go HF -> distzo -> HF bit for bit,
   the model file holding bfloat16 / float16 datasets of the same words
   (float32 with --float32, exactly); the safetensors reader and writer agree
   with the `safetensors` package where it is installed; the digest of the
   2-byte files equals `distzo inspect --digest` (with a built distzo);
   gguf_to_h5 keeps a GGUF's F16 and BF16 tensors (needs gguf).
7. Missing packages (tools/test_requires.py, standard library only, also run
   by ctest as python_tools_requires): make_real_model.sh and the Python tools
   check theirs before any download or work, and print one pip line (exit 2).

Run as a script, each test runs in turn; one that needs a package that is
not installed (torch, transformers) is reported as skipped, not failed.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from distzo_tools import formats  # noqa: E402
from distzo_tools.convert import hf_to_h5  # noqa: E402
from distzo_tools.formats import FormatError  # noqa: E402
from test_requires import (  # noqa: E402,F401  (collected here too)
    test_checks_cover_imports,
    test_imported_check_raises,
    test_make_real_model_checks_first,
    test_python_tool_checks_first,
)

DATA = os.path.join(os.path.dirname(HERE), "tests", "data")


def _quiet_transformers():
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def _tiny_model(seed=0, **overrides):
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


def _tiny_llama(seed=0, **overrides):
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


def _logits(model):
    """Logits of a right- and a left-padded row; a Llama model gets distzo's
    positions (mezo_reference.position_ids_from_mask), as the fixtures do."""
    import torch

    from distzo_tools.references import mezo_reference

    ids = torch.tensor([[2, 5, 9, 11, 7, 3], [1, 1, 2, 8, 4, 6]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
    inputs = mezo_reference.with_positions(model, {"input_ids": ids, "attention_mask": mask})
    with torch.no_grad():
        return model(**inputs).logits.numpy()


def _state_dict(model, rename_decoder=False, with_head=False, dtype=None):
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


def _write_hf(model, out_dir, fmt, rename_decoder=False, with_head=False, shards=1, dtype=None):
    """Write config.json and weights in one of the layouts found on the hub."""
    import torch
    from safetensors.torch import save_file

    os.makedirs(out_dir, exist_ok=True)
    model.config.to_json_file(os.path.join(out_dir, "config.json"))
    sd = _state_dict(model, rename_decoder, with_head, dtype)
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


def _round_trip(model, tmp, **layout):
    hf_dir, h5, back = (os.path.join(tmp, n) for n in ("hf", "m.h5", "back"))
    _write_hf(model, hf_dir, **layout)
    hf_to_h5.hf_to_h5(hf_dir, h5, verbose=False)
    hf_to_h5.h5_to_hf(h5, back, verbose=False)
    # Loaded in float32 whatever the files hold: a float16 / bfloat16 export
    # (the tools keep a 2-byte dtype) then upcasts exactly, and the logits
    # compare with the float32 model's.
    import torch

    again = type(model).from_pretrained(back, attn_implementation="eager", torch_dtype=torch.float32).eval()
    return h5, again


def test_round_trips():
    _quiet_transformers()
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
        model = _tiny_model(seed=len(cases), do_layer_norm_before=not post_ln, word_embed_proj_dim=proj)
        ref = _logits(model)
        for label, layout in cases:
            with tempfile.TemporaryDirectory() as tmp:
                h5, again = _round_trip(model, tmp, **layout)
                got = _logits(again)
                assert np.array_equal(got, ref), f"{label}: logits differ by {np.abs(got - ref).max()}"
                cfg, tensors = formats.read_model(h5)
                sd = model.state_dict()
                for name, array in tensors.items():
                    assert np.array_equal(array, sd[name].numpy()), name
                assert "lm_head.weight" not in tensors
    # float16 weights (as the released OPT checkpoints are stored): exact upcast
    model = _tiny_model(seed=7)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    with tempfile.TemporaryDirectory() as tmp:
        _, again = _round_trip(model, tmp, fmt="safetensors", dtype=torch.float16)
        assert np.array_equal(_logits(again), _logits(model)), "float16 round trip"
    print("round trips: OK")


def test_llama_round_trips():
    """HF -> distzo -> HF for LlamaForCausalLM: the file holds exactly the HF
    tensors (lm_head only when untied) and transformers gives bit-identical
    logits from the converted-back directory."""
    _quiet_transformers()
    import torch

    from distzo_tools.references import mezo_reference

    models = {
        "tied": _tiny_llama(seed=1, tie_word_embeddings=True),
        "untied": _tiny_llama(seed=2, tie_word_embeddings=False, num_key_value_heads=1, rope_theta=500000.0),
        "biases, head_dim 8": _tiny_llama(seed=3, tie_word_embeddings=True, head_dim=8, attention_bias=True,
                                          mlp_bias=True, rms_norm_eps=1e-5),
    }
    cases = [
        ("safetensors", dict(fmt="safetensors")),
        ("safetensors, 3 shards", dict(fmt="safetensors", shards=3)),
        ("pytorch_model.bin", dict(fmt="bin")),
        ("pytorch_model.bin, 2 shards, tied lm_head present", dict(fmt="bin", shards=2, with_head=True)),
    ]
    for kind, model in models.items():
        ref = _logits(model)
        sd = model.state_dict()
        for label, layout in cases:
            with tempfile.TemporaryDirectory() as tmp:
                h5, again = _round_trip(model, tmp, **layout)
                got = _logits(again)
                assert np.array_equal(got, ref), f"{kind}, {label}: logits differ by {np.abs(got - ref).max()}"
                cfg, tensors = formats.read_model(h5)
                assert isinstance(cfg, formats.LlamaConfig) and cfg.tie_word_embeddings == (kind != "untied")
                assert set(tensors) == set(sd) - ({"lm_head.weight"} if cfg.tie_word_embeddings else set())
                for name, array in tensors.items():
                    assert np.array_equal(array, sd[name].numpy()), name
                # The PyTorch MeZO reference builds the same model from the file.
                loaded = mezo_reference.load_model_h5(h5, attn_implementation="eager")
                assert np.array_equal(_logits(loaded), ref), f"{kind}, {label}: load_model_h5"
        # A file without hf_config_json: the way back writes a config.json from the attributes.
        with tempfile.TemporaryDirectory() as tmp:
            h5, _ = _round_trip(model, tmp, fmt="safetensors")
            cfg, tensors = formats.read_model(h5)
            cfg.hf_config_json = ""
            bare, back = os.path.join(tmp, "bare.h5"), os.path.join(tmp, "bare")
            formats.write_model(bare, cfg, tensors)
            hf_to_h5.h5_to_hf(bare, back, verbose=False)
            again = type(model).from_pretrained(back, attn_implementation="eager").eval()
            assert np.array_equal(_logits(again), ref), f"{kind}: config.json from the attributes"
    # bfloat16 weights (as Llama checkpoints are usually stored): exact upcast
    model = _tiny_llama(seed=4)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.bfloat16().float())
    with tempfile.TemporaryDirectory() as tmp:
        _, again = _round_trip(model, tmp, fmt="safetensors", dtype=torch.bfloat16)
        assert np.array_equal(_logits(again), _logits(model)), "bfloat16 round trip"
    print("Llama round trips: OK")


def test_tokenizer_round_trip():
    """A model saved by transformers with its tokenizer: hf_to_h5 keeps the
    tokenizer's text files in the model file, --to-hf writes them back byte
    for byte with the usual mode, and AutoTokenizer.from_pretrained on the
    export encodes as the original does."""
    _quiet_transformers()
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    model = _tiny_llama(seed=5)
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


def test_vader_corpora():
    """sources.read_vader reads each of the four rated corpora of the
    hutto tarball (a directory here) by the sign of the mean rating,
    dropping the near-neutral band, and refuses an unknown corpus."""
    from distzo_tools.datasets import sources

    rows = {"movies": [0.0, 2.5, -1.2, 0.4], "amazon": [-0.5, 0.6, -3.0, 0.2],
            "tweets": [1.0, -1.0, 0.5, -0.51], "nyt": [0.45, -0.55, 0.0, 2.0]}
    with tempfile.TemporaryDirectory() as tmp:
        for corpus, ratings in rows.items():
            name = sources.VADER_CORPORA[corpus]
            with open(os.path.join(tmp, name), "w", encoding="utf-8", newline="") as fh:
                fh.write("\r\n".join(f"{i}\t{r}\t{corpus} snippet {i}" for i, r in enumerate(ratings)))
        for corpus, ratings in rows.items():
            for band in (0.0, 0.5):
                examples, dropped = sources.read_vader(tmp, corpus, band)
                kept = [r for r in ratings if abs(r) > band]
                assert dropped == len(ratings) - len(kept), (corpus, band, dropped)
                assert [e.label for e in examples] == [int(r > 0) for r in kept], (corpus, band)
                assert all(e.texts[0].startswith(corpus) for e in examples)
        try:
            sources.read_vader(tmp, "imdb")
            raise AssertionError("an unknown corpus was read")
        except sources.DatasetError as err:
            assert "one of movies, amazon, tweets, nyt" in str(err), err
    print("vader corpora: OK")


def test_llama_kin_round_trips():
    """HF -> distzo -> HF for Qwen2ForCausalLM, Qwen3ForCausalLM and
    MistralForCausalLM: the file holds exactly the HF tensors and the
    architecture's name, and transformers gives bit-identical logits from
    the converted-back directory and from mezo_reference.load_model_h5."""
    _quiet_transformers()
    import torch
    import transformers

    from distzo_tools.references import mezo_reference

    kw = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=24, max_position_embeddings=20, attn_implementation="eager")
    kin = {
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, dict(use_sliding_window=False)),
        "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM, dict(head_dim=6, tie_word_embeddings=True)),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM, dict(head_dim=4, sliding_window=16)),
    }
    for arch, (config_class, model_class, extra) in kin.items():
        torch.manual_seed(5)
        model = model_class(config_class(**kw, **extra)).eval()
        with torch.no_grad():  # unit norms and zero biases would hide a skipped one
            for name, p in model.named_parameters():
                p.add_(0.1 * torch.randn_like(p) if name.endswith(".bias") or "norm" in name else 3 * p)
        ref = _logits(model)
        sd = model.state_dict()
        with tempfile.TemporaryDirectory() as tmp:
            h5, again = _round_trip(model, tmp, fmt="safetensors")
            assert type(again) is model_class, type(again)
            assert np.array_equal(_logits(again), ref), f"{arch}: logits differ by {np.abs(_logits(again) - ref).max()}"
            cfg, tensors = formats.read_model(h5)
            assert cfg.architecture == arch and cfg.hf_class == model_class.__name__
            assert set(tensors) == set(sd) - ({"lm_head.weight"} if cfg.tie_word_embeddings else set()), arch
            assert list(tensors) == list(formats.expected_tensors(cfg)), f"{arch}: canonical order"
            for name, array in tensors.items():
                assert np.array_equal(array, sd[name].numpy()), name
            loaded = mezo_reference.load_model_h5(h5, attn_implementation="eager")
            assert np.array_equal(_logits(loaded), ref), f"{arch}: load_model_h5"
            # Without hf_config_json the way back writes a config.json from the attributes.
            cfg.hf_config_json = ""
            bare, back = os.path.join(tmp, "bare.h5"), os.path.join(tmp, "bare")
            formats.write_model(bare, cfg, tensors)
            hf_to_h5.h5_to_hf(bare, back, verbose=False)
            again = model_class.from_pretrained(back, attn_implementation="eager").eval()
            assert np.array_equal(_logits(again), ref), f"{arch}: config.json from the attributes"
    # No sliding_window key: MistralConfig's 4096; null: no window.
    assert formats.config_from_hf({"model_type": "mistral"}).sliding_window == 4096
    assert formats.config_from_hf({"model_type": "mistral", "sliding_window": None}).sliding_window == 0
    # What the kin do not share with Llama is refused, naming the key.
    for hf, needle in (
        ({"model_type": "qwen2", "use_sliding_window": True}, "use_sliding_window is true"),
        ({"model_type": "qwen3", "use_sliding_window": True}, "use_sliding_window is true"),
        ({"model_type": "qwen2", "attention_bias": True}, "biases on q, k and v only"),
        ({"model_type": "mistral", "sliding_window": 0}, "sliding_window is 0"),
        ({"model_type": "qwen2", "architectures": ["LlamaForCausalLM"]}, "means Qwen2ForCausalLM"),
        ({"model_type": "gemma2"}, "'gemma2'"),
    ):
        _expect_config_error(hf, needle)
    print("Qwen2 / Qwen3 / Mistral round trips: OK")


def _tiny_gemma3(seed=0, **overrides):
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


def test_gemma3_round_trips():
    """HF -> distzo -> HF for Gemma3ForCausalLM, tied and untied: the file
    holds exactly the HF tensors in canonical order (norm weights w as HF
    stores them), transformers gives bit-identical logits from the
    converted-back directory, from mezo_reference.load_model_h5, and from a
    config.json made from the attributes alone (no hf_config_json), which
    transformers reads as the same layer kinds and bases."""
    _quiet_transformers()
    import transformers

    from distzo_tools.references import mezo_reference

    models = {
        "tied": _tiny_gemma3(seed=1, tie_word_embeddings=True),
        "untied": _tiny_gemma3(seed=2, tie_word_embeddings=False, rms_norm_eps=1e-5),
    }
    cases = [
        ("safetensors", dict(fmt="safetensors")),
        ("safetensors, 3 shards", dict(fmt="safetensors", shards=3)),
        ("pytorch_model.bin, 2 shards, tied lm_head present", dict(fmt="bin", shards=2, with_head=True)),
    ]
    for kind, model in models.items():
        ref = _logits(model)
        sd = model.state_dict()
        for label, layout in cases:
            with tempfile.TemporaryDirectory() as tmp:
                h5, again = _round_trip(model, tmp, **layout)
                assert type(again) is transformers.Gemma3ForCausalLM, type(again)
                got = _logits(again)
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
                assert np.array_equal(_logits(loaded), ref), f"{kind}, {label}: load_model_h5"
        # A file without hf_config_json: the way back writes a config.json from the attributes.
        with tempfile.TemporaryDirectory() as tmp:
            h5, _ = _round_trip(model, tmp, fmt="safetensors")
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
            assert np.array_equal(_logits(again), ref), f"{kind}: config.json from the attributes"
    # transformers reads a transformers 4 config (flat bases, a pattern) as distzo does
    t4 = _gemma3_hf(layer_types=None, rope_parameters=None, sliding_window_pattern=3, rope_theta=5e5,
                    rope_local_base_freq=2e4, rope_scaling=None, num_hidden_layers=7)
    theirs = transformers.Gemma3TextConfig.from_dict(t4)
    ours = formats.config_from_hf(t4)
    assert theirs.layer_types == ours.layer_types, (theirs.layer_types, ours.layer_types)
    assert theirs.rope_parameters["full_attention"]["rope_theta"] == ours.rope_theta
    assert theirs.rope_parameters["sliding_attention"]["rope_theta"] == ours.rope_local_base_freq
    print("Gemma 3 round trips: OK")


def _gemma3_hf(**changes):
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


def test_gemma3_config():
    """config.json -> Gemma3Config: both transformers forms, defaults, the
    layer pattern, every refusal; the model file's attributes, their types,
    and the tensor list (numpy + h5py only)."""
    import dataclasses

    cfg = formats.config_from_hf(_gemma3_hf())
    assert isinstance(cfg, formats.Gemma3Config) and cfg.architecture == "gemma3_text"
    assert (cfg.sliding_window_pattern, cfg.sliding_window, cfg.query_pre_attn_scalar) == (3, 16, 24.0)
    assert (cfg.rope_theta, cfg.rope_local_base_freq, cfg.head_dim) == (5e5, 2e4, 12)
    assert cfg.layer_types == _gemma3_hf()["layer_types"]
    # transformers 4 form: flat bases, rope_scaling null, a pattern, no layer_types -> the same config
    for pattern_key in ("sliding_window_pattern", "_sliding_window_pattern"):
        changes = dict(layer_types=None, rope_parameters=None, rope_theta=5e5, rope_local_base_freq=2e4,
                       rope_scaling=None, _sliding_window_pattern=None)
        changes[pattern_key] = 3
        t4 = formats.config_from_hf(_gemma3_hf(**changes))
        assert dataclasses.replace(t4, hf_config_json="") == dataclasses.replace(cfg, hf_config_json=""), t4
    # rope_parameters' bases win over flat ones; a missing entry falls back to them, then to the defaults
    cfg = formats.config_from_hf(_gemma3_hf(
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
    assert formats.config_from_hf(dict(_gemma3_hf(), sliding_window=None)).sliding_window == 0
    assert formats.config_from_hf(_gemma3_hf(sliding_window=None)).sliding_window == 4096  # no key
    all_sliding = formats.config_from_hf(_gemma3_hf(layer_types=["sliding_attention"] * 6))
    assert all_sliding.sliding_window_pattern == 7 and not any(map(all_sliding.is_full_attention, range(6)))
    assert formats.config_from_hf(_gemma3_hf(layer_types=None, sliding_window_pattern=10)).sliding_window_pattern == 7
    all_full = formats.config_from_hf(_gemma3_hf(layer_types=["full_attention"] * 6))
    assert all_full.sliding_window_pattern == 1
    # transformers 4's hidden_act key, if that is the only one
    assert formats.config_from_hf(_gemma3_hf(hidden_activation=None, hidden_act="gelu_pytorch_tanh"))

    msgs = [
        _expect_config_error(_gemma3_hf(final_logit_softcapping=30.0), "final_logit_softcapping is 30.0"),
        _expect_config_error(_gemma3_hf(attn_logit_softcapping=50.0), "attn_logit_softcapping is 50.0"),
        _expect_config_error(_gemma3_hf(use_bidirectional_attention=True), "use_bidirectional_attention is true"),
        _expect_config_error(_gemma3_hf(attention_bias=True), "no released Gemma 3 has attention biases"),
        _expect_config_error(_gemma3_hf(rope_scaling={"rope_type": "linear", "factor": 8.0}), "rope_scaling"),
        _expect_config_error(
            _gemma3_hf(rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}),
            "rope_parameters.full_attention.rope_type is 'linear'"),
        _expect_config_error(
            _gemma3_hf(rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                              "factor": 2.0}}),
            "rope_parameters.sliding_attention.factor is set"),
        _expect_config_error(_gemma3_hf(rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
                             "one entry per layer type"),
        _expect_config_error(_gemma3_hf(layer_types=["full_attention", "sliding_attention", "full_attention",
                                                     "full_attention", "full_attention", "full_attention"]),
                             "layer 1 is sliding_attention"),
        _expect_config_error(
            _gemma3_hf(layer_types=["sliding_attention", "full_attention"] * 2 + ["sliding_attention"] * 2),
            "layer 5 is sliding_attention"),
        _expect_config_error(_gemma3_hf(layer_types=["sliding_attention"] * 5), "num_hidden_layers (6) entries"),
        _expect_config_error(_gemma3_hf(layer_types=["chunked_attention"] * 6), 'holds "chunked_attention"'),
        _expect_config_error(_gemma3_hf(layer_types=None, sliding_window_pattern=0), "sliding_window_pattern is 0"),
        _expect_config_error(_gemma3_hf(hidden_activation="gelu"), "hidden_activation is 'gelu'"),
        _expect_config_error(_gemma3_hf(hidden_activation=None, hidden_act="silu"), "hidden_act is 'silu'"),
        _expect_config_error(_gemma3_hf(sliding_window=0), "sliding_window is 0"),
        _expect_config_error(_gemma3_hf(num_key_value_heads=3), "not divisible by num_key_value_heads 3"),
        _expect_config_error(_gemma3_hf(head_dim=7), "head_dim 7: must be even"),
        _expect_config_error(_gemma3_hf(query_pre_attn_scalar=-1), "query_pre_attn_scalar -1.0"),
        _expect_config_error(_gemma3_hf(architectures=["Gemma3ForSequenceClassification"]),
                             "means Gemma3ForCausalLM"),
    ]
    for m in msgs:
        print("  rejected:", m)

    # The tensors: Gemma's list and shapes; lm_head only when untied.
    cfg = formats.config_from_hf(_gemma3_hf(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"]))
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


def test_gemma3_rejections():
    """hf_to_h5 on Gemma 3 checkpoints it must refuse, leaving no output: each
    config distzo does not implement, a tied head that differs from
    embed_tokens, a projection bias."""
    _quiet_transformers()
    import torch

    msgs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.h5")
        tied = _tiny_gemma3(seed=5)
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
            _write_hf(tied, bad, fmt="safetensors")
            cfg = json.load(open(os.path.join(bad, "config.json")))
            cfg[key] = value
            json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
            msgs.append(_expect_error(bad, out, needle))
        bad = os.path.join(tmp, "tied_differs")
        _write_hf(tied, bad, fmt="bin", with_head=True)
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["lm_head.weight"] = sd["lm_head.weight"] + 1e-3
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(_expect_error(bad, out, "lm_head.weight differs from model.embed_tokens.weight"))
        bad = os.path.join(tmp, "bias")
        _write_hf(tied, bad, fmt="bin")
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["model.layers.0.self_attn.q_proj.bias"] = torch.zeros(24)
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(_expect_error(bad, out,
                                  "model.layers.0.self_attn.q_proj.bias: not a parameter of Gemma3ForCausalLM"))
    for m in msgs:
        print("  rejected:", m)
    print("Gemma 3 rejections: OK")


def _expect_error(hf_dir, out, needle):
    try:
        hf_to_h5.hf_to_h5(hf_dir, out, verbose=False)
    except FormatError as err:
        assert needle in str(err), f"expected {needle!r} in {err}"
        assert not os.path.exists(out), "a failed conversion left its output behind"
        leftovers = glob.glob(os.path.join(os.path.dirname(out), ".*.tmp"))
        assert not leftovers, leftovers
        return str(err)
    raise AssertionError(f"no error (expected {needle!r})")


def test_rejections():
    _quiet_transformers()
    import torch

    model = _tiny_model()
    msgs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.h5")
        hf = os.path.join(tmp, "hf")
        msgs.append(_expect_error(os.path.join(tmp, "nope"), out, "not a directory"))
        os.makedirs(hf)
        msgs.append(_expect_error(hf, out, "config.json missing"))
        model.config.to_json_file(os.path.join(hf, "config.json"))
        msgs.append(_expect_error(hf, out, "no weights found"))
        _write_hf(model, hf, fmt="safetensors")
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
            _write_hf(model, bad, fmt="safetensors")
            json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
            msgs.append(_expect_error(bad, out, needle))
        # untied head that differs from embed_tokens
        bad = os.path.join(tmp, "untied")
        _write_hf(model, bad, fmt="bin", with_head=True)
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["lm_head.weight"] = sd["lm_head.weight"] + 1e-3
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(_expect_error(bad, out, "untied"))
        # a missing tensor, a wrong shape, an unknown key, a shard missing
        for what in ("missing", "shape", "unknown"):
            bad = os.path.join(tmp, what)
            _write_hf(model, bad, fmt="bin")
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
            msgs.append(_expect_error(bad, out, needle))
        bad = os.path.join(tmp, "shards")
        _write_hf(model, bad, fmt="safetensors", shards=2)
        os.unlink(os.path.join(bad, "model-00002-of-00002.safetensors"))
        msgs.append(_expect_error(bad, out, "shard file(s) missing"))
        # the CLI: exit status 1 and one line on stderr
        proc = subprocess.run(
            [sys.executable, os.path.join(HERE, "hf_to_h5.py"), os.path.join(tmp, "untied"), out],
            capture_output=True, text=True,
        )
        assert proc.returncode == 1 and proc.stderr.startswith("hf_to_h5: error:"), proc
    for m in msgs:
        print("  rejected:", m)
    print("rejections: OK")


def _llama_hf(**changes):
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


def _expect_config_error(hf, needle):
    try:
        formats.config_from_hf(hf)
    except FormatError as err:
        assert needle in str(err), f"expected {needle!r} in {err}"
        return str(err)
    raise AssertionError(f"no error (expected {needle!r})")


def test_llama_config():
    """config.json -> LlamaConfig: defaults, both RoPE forms, every refusal;
    the model file's attributes and their types (numpy + h5py only)."""
    cfg = formats.config_from_hf(_llama_hf())
    assert isinstance(cfg, formats.LlamaConfig)
    assert (cfg.head_dim, cfg.num_key_value_heads, cfg.rope_theta) == (8, 2, 500000.0)
    assert cfg.tie_word_embeddings and not cfg.attention_bias and not cfg.mlp_bias
    # transformers 4 form: rope_theta (+ rope_scaling null)
    cfg = formats.config_from_hf(_llama_hf(rope_parameters=None, rope_theta=123456.0, rope_scaling=None))
    assert cfg.rope_theta == 123456.0
    # legacy "type" key inside rope_parameters; rope_parameters' theta wins over a top-level one
    cfg = formats.config_from_hf(_llama_hf(rope_parameters={"type": "default", "rope_theta": 7.5e5}, rope_theta=1e4))
    assert cfg.rope_theta == 7.5e5
    # nothing about RoPE, num_key_value_heads, head_dim or the head: transformers' LlamaConfig defaults
    cfg = formats.config_from_hf(
        _llama_hf(rope_parameters=None, num_key_value_heads=None, head_dim=None, tie_word_embeddings=None,
                  rms_norm_eps=None)
    )
    assert cfg.rope_theta == formats.LLAMA_DEFAULT_ROPE_THETA == 10000.0
    assert (cfg.num_key_value_heads, cfg.head_dim, cfg.tie_word_embeddings, cfg.rms_norm_eps) == (4, 8, False, 1e-6)
    # an explicit head_dim with H * head_dim != hidden_size; biases
    cfg = formats.config_from_hf(_llama_hf(head_dim=16, attention_bias=True, mlp_bias=True))
    shapes = formats.expected_tensors(cfg)
    assert shapes["model.layers.1.self_attn.q_proj.weight"] == (64, 32)
    assert shapes["model.layers.1.self_attn.k_proj.bias"] == (32,)
    assert shapes["model.layers.1.self_attn.o_proj.weight"] == (32, 64)
    assert shapes["model.layers.1.mlp.down_proj.bias"] == (32,)
    assert "lm_head.weight" not in shapes and list(shapes)[-1] == "model.norm.weight"
    untied = formats.expected_tensors(formats.config_from_hf(_llama_hf(tie_word_embeddings=False)))
    assert list(untied)[-1] == "lm_head.weight" and untied["lm_head.weight"] == (64, 32)
    assert not any(n.endswith(".bias") for n in untied)

    msgs = [
        _expect_config_error(_llama_hf(rope_parameters={"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}),
                             "rope_parameters.rope_type is 'llama3'"),
        _expect_config_error(_llama_hf(rope_parameters={"rope_type": "yarn", "factor": 4.0}), "rope_type is 'yarn'"),
        _expect_config_error(_llama_hf(rope_parameters=None, rope_theta=1e4, rope_scaling={"type": "linear", "factor": 2.0}),
                             "rope_scaling"),
        _expect_config_error(_llama_hf(rope_scaling={"rope_type": "default"}), "rope_scaling"),
        _expect_config_error(_llama_hf(hidden_act="gelu"), "hidden_act is 'gelu'"),
        _expect_config_error(_llama_hf(pretraining_tp=2), "pretraining_tp is 2"),
        _expect_config_error(_llama_hf(num_key_value_heads=3),
                             "num_attention_heads 4 is not divisible by num_key_value_heads 3"),
        _expect_config_error(_llama_hf(head_dim=5), "head_dim 5: must be even"),
        _expect_config_error(_llama_hf(architectures=["LlamaForSequenceClassification"]),
                             "LlamaForSequenceClassification"),
        _expect_config_error(_llama_hf(model_type="gemma2"), "model_type is 'gemma2'"),
    ]
    assert "'llama' (LlamaForCausalLM)" in msgs[-1] and "'opt' (OPTForCausalLM)" in msgs[-1], msgs[-1]
    assert "'gemma3_text' (Gemma3ForCausalLM)" in msgs[-1], msgs[-1]
    for m in msgs:
        print("  rejected:", m)

    # The model file: attribute types and order as docs/formats.md says; read back equal.
    cfg = formats.config_from_hf(_llama_hf(head_dim=16, attention_bias=True))
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


def test_llama_rejections():
    """hf_to_h5 on Llama checkpoints it must refuse: a tied head that differs
    from embed_tokens, an untied head missing, a config it does not implement."""
    _quiet_transformers()
    import torch

    msgs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.h5")
        tied = _tiny_llama(seed=5, tie_word_embeddings=True)
        bad = os.path.join(tmp, "tied_differs")
        _write_hf(tied, bad, fmt="bin", with_head=True)
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["lm_head.weight"] = sd["lm_head.weight"] + 1e-3
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(_expect_error(bad, out, "lm_head.weight differs from model.embed_tokens.weight"))
        untied = _tiny_llama(seed=6, tie_word_embeddings=False)
        bad = os.path.join(tmp, "untied_no_head")
        _write_hf(untied, bad, fmt="bin")
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        del sd["lm_head.weight"]
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(_expect_error(bad, out, "missing: lm_head.weight"))
        for key, value, needle in (
            ("rope_parameters", {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}, "rope_type is 'dynamic'"),
            ("hidden_act", "gelu", "hidden_act"),
            ("pretraining_tp", 4, "pretraining_tp"),
            ("model_type", "gemma2", "model_type is 'gemma2'"),
        ):
            bad = os.path.join(tmp, "bad_" + key)
            _write_hf(tied, bad, fmt="safetensors")
            cfg = json.load(open(os.path.join(bad, "config.json")))
            cfg[key] = value
            json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
            msgs.append(_expect_error(bad, out, needle))
        bad = os.path.join(tmp, "unknown_key")
        _write_hf(tied, bad, fmt="bin")
        sd = torch.load(os.path.join(bad, "pytorch_model.bin"))
        sd["model.layers.0.self_attn.q_proj.bias"] = torch.zeros(16)
        torch.save(sd, os.path.join(bad, "pytorch_model.bin"))
        msgs.append(_expect_error(bad, out, "model.layers.0.self_attn.q_proj.bias: not a parameter of LlamaForCausalLM"))
    for m in msgs:
        print("  rejected:", m)
    print("Llama rejections: OK")


# ---------------------------------------------------------------------------
# Independent OPT and Llama forwards in numpy (float64), from the distzo model file only.


def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _attend(q, kk, v, allowed):
    """softmax(q kk^T) v per head, (B, heads, T, hd) each, over the allowed
    (B, Tq, Tk) pairs; a query with no allowed key gets zeros."""
    s = np.where(allowed[:, None], q @ kk.transpose(0, 1, 3, 2), -np.inf)
    m = np.max(np.where(np.isfinite(s), s, -1e300), -1, keepdims=True)
    w = np.where(allowed[:, None], np.exp(s - m), 0.0)
    w = w / np.maximum(w.sum(-1, keepdims=True), 1e-300)
    return w @ v


def numpy_forward(cfg, t, input_ids, mask):
    """Logits and hidden states at every position; pad queries attend to nothing
    (their rows are left at zero attention), so only real positions are compared."""
    d = "model.decoder."
    B, T = input_ids.shape
    H, nh = cfg.hidden_size, cfg.num_attention_heads
    hd = H // nh
    g = {k: v.astype(np.float64) for k, v in t.items()}
    pos = np.cumsum(mask, 1) * mask - 1
    x = g[d + "embed_tokens.weight"][input_ids]
    if cfg.has_projection:
        x = x @ g[d + "project_in.weight"].T
    x = x + g[d + "embed_positions.weight"][pos + formats.POSITION_OFFSET]
    hidden = [x]
    causal = np.tril(np.ones((T, T), bool))
    allowed = causal[None] & (mask[:, None, :] == 1) & (mask[:, :, None] == 1)  # (B, Tq, Tk)
    for k in range(cfg.num_hidden_layers):
        p = f"{d}layers.{k}."
        lin = lambda v, n: v @ g[p + n + ".weight"].T + g[p + n + ".bias"]  # noqa: E731
        res = x
        h = _layer_norm(x, g[p + "self_attn_layer_norm.weight"], g[p + "self_attn_layer_norm.bias"]) if cfg.do_layer_norm_before else x
        q = lin(h, "self_attn.q_proj").reshape(B, T, nh, hd).transpose(0, 2, 1, 3) * hd**-0.5
        kk = lin(h, "self_attn.k_proj").reshape(B, T, nh, hd).transpose(0, 2, 1, 3)
        v = lin(h, "self_attn.v_proj").reshape(B, T, nh, hd).transpose(0, 2, 1, 3)
        a = _attend(q, kk, v, allowed).transpose(0, 2, 1, 3).reshape(B, T, H)
        x = res + lin(a, "self_attn.out_proj")
        if not cfg.do_layer_norm_before:
            x = _layer_norm(x, g[p + "self_attn_layer_norm.weight"], g[p + "self_attn_layer_norm.bias"])
        res = x
        h = _layer_norm(x, g[p + "final_layer_norm.weight"], g[p + "final_layer_norm.bias"]) if cfg.do_layer_norm_before else x
        x = res + lin(np.maximum(lin(h, "fc1"), 0.0), "fc2")
        if not cfg.do_layer_norm_before:
            x = _layer_norm(x, g[p + "final_layer_norm.weight"], g[p + "final_layer_norm.bias"])
        hidden.append(x)
    layer_last = x
    if cfg.has_final_layer_norm:
        x = _layer_norm(x, g[d + "final_layer_norm.weight"], g[d + "final_layer_norm.bias"])
    if cfg.has_projection:
        x = x @ g[d + "project_out.weight"].T
    hidden[-1] = x
    logits = x @ g[d + "embed_tokens.weight"].T  # tied head
    return logits, hidden, layer_last


def llama_positions(mask):
    """distzo's positions: 0, 1, 2, ... over each row's real tokens, 1 at pads."""
    return np.where(mask == 1, np.cumsum(mask, 1) - 1, 1)


def _rope_angles(mask, base, hd):
    """(B, 1, T, hd/2) rotary angles p * base^(-2i/hd) at llama_positions."""
    return llama_positions(mask)[:, None, :, None] * base ** (-np.arange(0, hd, 2) / hd)


def _rotate_half(x, angle):
    """x (B, heads, T, hd) rotated by `angle`: channel i pairs with i + hd/2
    (transformers' rotate_half), not with its neighbour."""
    hd = x.shape[-1]
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def numpy_llama_forward(cfg, t, input_ids, mask):
    """LlamaForCausalLM as docs/formats.md describes it: RMSNorm, rotary
    embeddings at llama_positions (channel i pairs with i + hd/2), grouped-query
    attention (query head h reads key/value head h // (H / KV)), SwiGLU MLP
    down(silu(gate(x)) * up(x)), final RMSNorm, lm_head or the tied embedding;
    Llama's kin: Qwen2's q/k/v biases (cfg.qkv_bias), Qwen3's RMSNorm of each
    q and k head before the rotation (cfg.qk_norm), Mistral's window (every
    fixture's T is within it: checked)."""
    B, T = input_ids.shape
    nh, nkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    g = {k: v.astype(np.float64) for k, v in t.items()}

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.rms_norm_eps) * w

    def lin(v, name, bias):
        out = v @ g[name + ".weight"].T
        return out + g[name + ".bias"] if bias else out

    angle = _rope_angles(mask, cfg.rope_theta, hd)

    def rope(x):
        return _rotate_half(x, angle)

    def heads(x, n):
        return x.reshape(B, T, n, hd).transpose(0, 2, 1, 3)

    x = g["model.embed_tokens.weight"][input_ids]
    hidden = [x]
    causal = np.tril(np.ones((T, T), bool))
    allowed = causal[None] & (mask[:, None, :] == 1) & (mask[:, :, None] == 1)
    window = getattr(cfg, "sliding_window", 0)
    assert window == 0 or T <= window, f"T = {T} exceeds the sliding window {window}"

    def head_norm(x, name):  # Qwen3: over each head's hd channels
        return rms(x, g[name]) if cfg.qk_norm else x

    for k in range(cfg.num_hidden_layers):
        p = f"model.layers.{k}."
        h = rms(x, g[p + "input_layernorm.weight"])
        q = heads(lin(h, p + "self_attn.q_proj", cfg.qkv_bias), nh)
        kk = heads(lin(h, p + "self_attn.k_proj", cfg.qkv_bias), nkv)
        q = rope(head_norm(q, p + "self_attn.q_norm.weight")) * hd**-0.5
        kk = rope(head_norm(kk, p + "self_attn.k_norm.weight"))
        v = heads(lin(h, p + "self_attn.v_proj", cfg.qkv_bias), nkv)
        group = nh // nkv
        kk, v = np.repeat(kk, group, axis=1), np.repeat(v, group, axis=1)  # head h -> kv head h // group
        a = _attend(q, kk, v, allowed).transpose(0, 2, 1, 3).reshape(B, T, nh * hd)
        x = x + lin(a, p + "self_attn.o_proj", cfg.attention_bias)
        h = rms(x, g[p + "post_attention_layernorm.weight"])
        gate = lin(h, p + "mlp.gate_proj", cfg.mlp_bias)
        x = x + lin(gate / (1 + np.exp(-gate)) * lin(h, p + "mlp.up_proj", cfg.mlp_bias), p + "mlp.down_proj", cfg.mlp_bias)
        hidden.append(x)
    layer_last = x
    x = rms(x, g["model.norm.weight"])
    hidden[-1] = x
    head = g["model.embed_tokens.weight"] if cfg.tie_word_embeddings else g["lm_head.weight"]
    return x @ head.T, hidden, layer_last


def numpy_gemma3_forward(cfg, t, input_ids, mask):
    """Gemma3ForCausalLM as docs/formats.md describes it: embeddings
    embed_tokens[ids] * float32(sqrt(C)); per layer
    h += post_attention_layernorm(o_proj(attention(input_layernorm(h)))) and
    h += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h))), every
    RMSNorm x / sqrt(mean(x²) + eps) * (1 + w); q and k RMS-normalised per
    head (q_norm, k_norm) and then rotated as Llama's, with base rope_theta in
    the full-attention layers ((k + 1) % sliding_window_pattern == 0) and
    rope_local_base_freq in the others; scores scaled by
    query_pre_attn_scalar^-1/2; grouped-query attention; the GeGLU MLP
    down(gelu_tanh(gate(x)) * up(x)); the final norm; the head embed_tokens
    (unscaled) when tied, else lm_head. The sliding layers' window hides
    nothing within every fixture's T (checked)."""
    B, T = input_ids.shape
    nh, nkv, hd = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    g = {k: v.astype(np.float64) for k, v in t.items()}

    def rms(x, w):  # Gemma's: scales by 1 + w
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.rms_norm_eps) * (1.0 + w)

    def lin(v, name):
        return v @ g[name + ".weight"].T

    def heads(x, n):
        return x.reshape(B, T, n, hd).transpose(0, 2, 1, 3)

    def gelu_tanh(x):  # transformers' gelu_pytorch_tanh
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))

    angles = {True: _rope_angles(mask, cfg.rope_theta, hd), False: _rope_angles(mask, cfg.rope_local_base_freq, hd)}
    # the float32 factor of transformers' embed_scale buffer
    x = g["model.embed_tokens.weight"][input_ids] * float(np.float32(np.sqrt(cfg.hidden_size)))
    hidden = [x]
    causal = np.tril(np.ones((T, T), bool))
    allowed = causal[None] & (mask[:, None, :] == 1) & (mask[:, :, None] == 1)
    assert cfg.sliding_window == 0 or T <= cfg.sliding_window, f"T = {T} exceeds the sliding window"
    group = nh // nkv
    for k in range(cfg.num_hidden_layers):
        p = f"model.layers.{k}."
        angle = angles[cfg.is_full_attention(k)]
        h = rms(x, g[p + "input_layernorm.weight"])
        q = heads(lin(h, p + "self_attn.q_proj"), nh)
        kk = heads(lin(h, p + "self_attn.k_proj"), nkv)
        v = heads(lin(h, p + "self_attn.v_proj"), nkv)
        q = _rotate_half(rms(q, g[p + "self_attn.q_norm.weight"]), angle) * cfg.query_pre_attn_scalar**-0.5
        kk = _rotate_half(rms(kk, g[p + "self_attn.k_norm.weight"]), angle)
        kk, v = np.repeat(kk, group, axis=1), np.repeat(v, group, axis=1)  # head h -> kv head h // group
        a = _attend(q, kk, v, allowed).transpose(0, 2, 1, 3).reshape(B, T, nh * hd)
        x = x + rms(lin(a, p + "self_attn.o_proj"), g[p + "post_attention_layernorm.weight"])
        h = rms(x, g[p + "pre_feedforward_layernorm.weight"])
        m = lin(gelu_tanh(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        x = x + rms(m, g[p + "post_feedforward_layernorm.weight"])
        hidden.append(x)
    layer_last = x
    x = rms(x, g["model.norm.weight"])
    hidden[-1] = x
    head = g["model.embed_tokens.weight"] if cfg.tie_word_embeddings else g["lm_head.weight"]
    return x @ head.T, hidden, layer_last


def test_fixtures_against_numpy():
    refs = sorted(glob.glob(os.path.join(DATA, "*.ref.h5")))
    assert refs, f"no fixtures in {DATA}"
    for ref_path in refs:
        with h5py.File(ref_path, "r") as f:
            r = {k: f[k][()] for k in f}
            model_file = formats.read_string_attr(f.attrs, "model")
        cfg, t = formats.read_model(os.path.join(DATA, model_file))
        if isinstance(cfg, formats.Gemma3Config):
            forward = numpy_gemma3_forward
        elif isinstance(cfg, formats.LlamaConfig):
            forward = numpy_llama_forward
        else:
            forward = numpy_forward
        logits, hidden, layer_last = forward(cfg, t, r["input_ids"], r["attention_mask"])
        real = r["attention_mask"] == 1
        if not isinstance(cfg, formats.OptConfig):
            assert np.array_equal(r["position_ids"], llama_positions(r["attention_mask"])), ref_path
        errs = {"logits": np.abs(logits - r["logits"])[real].max()}
        for k, h in enumerate(hidden):
            errs[f"hidden_states_{k}"] = np.abs(h - r[f"hidden_states_{k}"])[real].max()
        L = cfg.num_hidden_layers
        errs[f"layer_output_{L - 1}"] = np.abs(layer_last - r[f"layer_output_{L - 1}"])[real].max()
        for k in range(L - 1):
            assert np.array_equal(r[f"layer_output_{k}"], r[f"hidden_states_{k + 1}"])
        # losses from the float64 logits
        lp = logits - logits.max(-1, keepdims=True)
        lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
        tgt = r["labels"][:, 1:]
        ok = tgt != -100
        bi, ti = np.nonzero(ok)
        nll = -lp[bi, ti, tgt[bi, ti]]
        assert int(ok.sum()) == int(r["lm_token_count"])
        assert ok[~real[:, :-1]].sum() == 0, "a pad position predicts a target"
        lm_rel = abs(nll.mean() - r["lm_loss"]) / r["lm_loss"]
        cl = logits[np.arange(len(r["cls_position"])), r["cls_position"]][:, r["candidates"]]
        cl = cl - cl.max(-1, keepdims=True)
        cl = cl - np.log(np.exp(cl).sum(-1, keepdims=True))
        cls = -cl[np.arange(len(cl)), r["cls_gold"]].mean()
        cls_rel = abs(cls - r["cls_loss"]) / r["cls_loss"]
        assert np.array_equal(np.argmax(cl, -1), r["cls_predictions"])
        assert np.array_equal(r["cls_position"], [np.nonzero(m)[0].max() for m in real])
        worst = max(errs.values())
        print(
            f"  {os.path.basename(ref_path)}: max|numpy - HF| at real tokens {worst:.2e} "
            f"({max(errs, key=errs.get)}); lm_loss rel {lm_rel:.1e}; cls_loss rel {cls_rel:.1e}"
        )
        assert worst < 2e-5, errs
        assert lm_rel < 1e-6 and cls_rel < 1e-6
    print("fixtures vs numpy forward: OK")


def test_mezo_reference_llama():
    """The PyTorch MeZO reference on the Llama and Gemma 3 fixtures:
    load_model_h5 gives the fixture's logits and loss (positions from the
    mask), the classification loss of mezo_finetune gives cls_logits, a
    MeZO step runs and restores, and keep_z changes no bit of a step."""
    _quiet_transformers()
    import torch

    from distzo_tools.references import mezo_finetune
    from distzo_tools.references import mezo_reference

    for model_path in sorted(glob.glob(os.path.join(DATA, "llama_*.model.h5"))
                             + glob.glob(os.path.join(DATA, "gemma3_*.model.h5"))):
        with h5py.File(model_path.replace(".model.h5", ".ref.h5"), "r") as f:
            r = {k: f[k][()] for k in f}
        model = mezo_reference.load_model_h5(model_path, attn_implementation="eager")
        real = r["attention_mask"] == 1
        inputs = mezo_reference.causal_lm_inputs(r["input_ids"], r["attention_mask"], r["labels"].astype(np.int64))
        with torch.no_grad():
            out = model(**mezo_reference.with_positions(model, inputs))
        err = np.abs(out.logits.numpy() - r["logits"])[real].max()
        assert err < 1e-5, (model_path, err)
        assert abs(float(out.loss) - r["lm_loss"]) < 1e-6 * r["lm_loss"], model_path
        batch = {
            "input_ids": torch.from_numpy(r["input_ids"]).long(),
            "attention_mask": torch.from_numpy(r["attention_mask"]).long(),
            "lengths": torch.from_numpy(r["cls_position"]).long() + 1,
        }
        right = r["attention_mask"][:, 0] == 1  # mezo_finetune's data is right-padded
        with torch.no_grad():
            cl = mezo_finetune.candidate_logits(model, batch, torch.from_numpy(r["candidates"]).long()).numpy()
        assert np.abs(cl - r["cls_logits"])[right].max() < 1e-5, model_path
        before = {n: p.clone() for n, p in model.named_parameters()}
        step = mezo_reference.mezo_step(model, inputs, seed=7, eps=1e-3, lr=0.0)
        assert np.isfinite([step.loss_plus, step.loss_minus]).all() and step.loss_plus != step.loss_minus
        for n, p in model.named_parameters():  # lr 0: θ is restored up to the rounding of ±εz
            assert torch.allclose(p, before[n], atol=1e-6), n
        # keep_z (z drawn once a step) gives MeZO's redrawn-z step bit for bit, weight decay included
        kept = copy.deepcopy(model)
        redrawn = mezo_reference.mezo_step(model, inputs, seed=11, eps=1e-3, lr=1e-3, wd=0.1)
        r = mezo_reference.mezo_step(kept, inputs, seed=11, eps=1e-3, lr=1e-3, wd=0.1, keep_z=True)
        assert (r.loss_plus, r.loss_minus) == (redrawn.loss_plus, redrawn.loss_minus), model_path
        for (n, p), (_, q) in zip(model.named_parameters(), kept.named_parameters()):
            assert torch.equal(p, q), n
        assert not mezo_reference.uses_weight_decay("model.norm.weight")
        assert not mezo_reference.uses_weight_decay("model.layers.0.post_attention_layernorm.weight")
        assert mezo_reference.uses_weight_decay("model.layers.0.mlp.up_proj.weight")
        print(f"  {os.path.basename(model_path)}: load_model_h5 logits within {err:.1e} of the fixture")
    print("MeZO reference on Llama and Gemma 3: OK")


def test_digest_matches_inspect():
    from distzo_tools.references import digest_reference as dr

    distzo = os.environ.get("DISTZO", os.path.join(os.path.dirname(HERE), "build", "distzo"))
    assert os.path.exists(distzo), f"no distzo binary at {distzo}: build it or set DISTZO"
    with tempfile.TemporaryDirectory() as tmp:
        made = os.path.join(tmp, "made.h5")  # written by distzo: project_in/out, pre-LN
        subprocess.run(
            [distzo, "make-model", made, "--layers", "2", "--hidden", "16", "--heads", "2", "--ffn", "24",
             "--vocab", "40", "--positions", "16", "--proj", "8", "--seed", "3"],
            check=True, capture_output=True,
        )
        for path in sorted(glob.glob(os.path.join(DATA, "*.model.h5"))) + [made]:
            ours = dr.file_digest(path)
            proc = subprocess.run([distzo, "inspect", path, "--digest"], capture_output=True, text=True)
            assert proc.returncode == 0, f"{path}: distzo inspect --digest failed: {proc.stderr.strip()}"
            theirs = proc.stdout.strip()
            assert ours == theirs, f"{path}: python {ours}, distzo {theirs}"
            # the numpy path agrees with the plain definition
            cfg, tensors = formats.read_model(path)
            plain = dr.fold(
                (n, tensors[n].shape, dr.element_sum(tensors[n].reshape(-1).view(np.uint32).tolist()))
                for n in dr.canonical_order(cfg)
            )
            assert dr.hex_digest(plain) == ours, path
        with h5py.File(made, "r") as f:
            # float32 tensors: version 2, the oldest whose digest is theirs (3 agrees on them)
            assert int(f.attrs["digest_version"]) == dr.FIRST_WORD == 2
    print("digest reference == distzo inspect --digest: OK")


def test_demo_baselines_statistics():
    import torch

    from distzo_tools.demo import demo_baselines as db

    labels = torch.tensor([0, 0, 1, 1])
    assert db.auc(torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64), labels) == 1.0
    assert db.auc(torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64), labels) == 0.0
    # one tie between a positive and a negative counts one half: (3 + 0.5) / 4
    assert db.auc(torch.tensor([0.1, 0.3, 0.3, 0.4], dtype=torch.float64), labels) == 0.875
    # the best cut separates {-2, -1, 3} (label 0) from {4, 5} (label 1): any cut in (3, 4)
    score = torch.tensor([-2.0, -1.0, 3.0, 4.0, 5.0], dtype=torch.float64)
    cut = db.best_threshold(score, torch.tensor([0, 0, 0, 1, 1]))
    assert 3.0 < cut < 4.0, cut
    assert db.accuracy((score > cut).long(), torch.tensor([0, 0, 0, 1, 1])) == 1.0
    # a probe on linearly separable 2-d points classifies them all
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 2, generator=gen, dtype=torch.float64)
    y = (x[:, 0] - 0.5 * x[:, 1] > 0.2).long()
    probe = db.fit_logistic(x, y, 1e-4)
    assert db.accuracy((probe(x) > 0).long(), y) >= 0.98


def _fake_run(out, task, name, eval_rows=None, result=None, run_log=None, metrics=None):
    """A run directory as tools/quality_runs.py leaves it (run.json last)."""
    d = os.path.join(out, task, name)
    os.makedirs(d, exist_ok=True)
    if eval_rows is not None:
        with open(os.path.join(d, "eval.csv"), "w") as fh:
            fh.write("step,eval_loss,accuracy,examples\n" + "".join(f"{s},{l},{a},500\n" for s, l, a in eval_rows))
    if result is not None:
        with open(os.path.join(d, "result.json"), "w") as fh:
            json.dump(result, fh)
    if run_log is not None:
        with open(os.path.join(d, "run.log"), "w") as fh:
            fh.write(run_log)
    if metrics is not None:
        with open(os.path.join(d, "metrics.csv"), "w") as fh:
            fh.write("step,loss,g,tokens,step_seconds\n" + "".join(metrics))
    with open(os.path.join(d, "run.json"), "w") as fh:
        json.dump({"seconds": 60.0, "digest": "0123456789abcdef"}, fh)
    return d


def test_quality_choices_and_resume_check():
    """quality_table refuses a declared choice that a made run beats on dev and
    joins a longer run's curve to its parent's; quality_runs' resume check fails
    on one differing metrics value."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    with tempfile.TemporaryDirectory() as out:
        res = qt.Results(out)
        chosen, other = qr.PROMPTS["movies"]
        _fake_run(out, "movies", f"zeroshot-{chosen}-dev", [(0, 0.5, 0.77)])
        _fake_run(out, "movies", f"zeroshot-{other}-dev", [(0, 0.8, 0.58)])
        lines = qt.check_choices(res)
        assert f"**{chosen} 77.0 %**" in lines[0] and f"{other} 58.0 %" in lines[0], lines[0]
        _fake_run(out, "movies", f"zeroshot-{other}-dev", [(0, 0.8, 0.78)])  # now the other prompt is better
        try:
            qt.check_choices(res)
            raise AssertionError("a prompt that dev does not back was accepted")
        except SystemExit as e:
            assert f"prompt {chosen} declared, {other} is better" in str(e), e
        _fake_run(out, "movies", f"zeroshot-{other}-dev", [(0, 0.8, 0.58)])
        # the lr choice: the final dev accuracy, ties to the lower dev loss
        lr, alt = qr.LR["movies"], [c for c in qr.LR_CANDIDATES["movies"] if c != qr.LR["movies"]][0]
        _fake_run(out, "movies", qr.distzo_name(lr, 1), [(0, 0.5, 0.77), (1000, 0.43, 0.81)])
        _fake_run(out, "movies", qr.distzo_name(alt, 1), [(0, 0.5, 0.77), (1000, 0.42, 0.81)])
        try:
            qt.check_choices(res)
            raise AssertionError("an lr tied on accuracy and worse on loss was accepted")
        except SystemExit as e:
            assert "lr" in str(e), e

        _fake_run(out, "movies", qr.distzo_name(alt, 1), [(0, 0.5, 0.77), (1000, 0.44, 0.80)])
        assert "**0.001 81.0 %**" in qt.check_choices(res)[0]  # ε: MeZO's, and only it made so far
        other_eps = [e for e in qr.EPS_CANDIDATES if e != qr.EPS][0]
        _fake_run(out, "movies", qr.distzo_name(lr, 1, eps=other_eps), [(0, 0.5, 0.77), (1000, 0.42, 0.82)])
        try:
            qt.check_choices(res)
            raise AssertionError("an ε that dev does not back was accepted")
        except SystemExit as e:
            assert f"ε {qr.EPS:g} declared, {other_eps:g} is better" in str(e), e

        # a longer run's curve: its parent's up to where it carries on (distzo), or its own (MeZO)
        long = qr.distzo_name(lr, 1) + f"-to{qr.LONG_STEPS['movies']}"
        assert res.longest("movies", qr.distzo_name(lr, 1)) == qr.distzo_name(lr, 1)
        _fake_run(out, "movies", long, [(1100, 0.42, 0.82), (qr.LONG_STEPS["movies"], 0.41, 0.83)])
        assert res.longest("movies", qr.distzo_name(lr, 1)) == long
        assert [p[0] for p in res.curve("movies", long)] == [0, 1000, 1100, qr.LONG_STEPS["movies"]]
        mezo_long = qr.mezo_name(lr, 1) + "-to2000"
        _fake_run(out, "movies", mezo_long, [(0, 0.5, 0.77), (2000, 0.4, 0.84)])
        assert [p[0] for p in res.curve("movies", mezo_long)] == [0, 2000]

        # the resume check: the straight run's last 100 steps against the resumed run's
        model_dir = os.path.join(out, "model")
        os.makedirs(model_dir)
        open(os.path.join(model_dir, "m.h5"), "w").close()
        paths = qr.Paths(model_dir, out)
        rows = [f"{s},0.5,{s * 0.001:.3f},{500 + s},1.5\n" for s in range(1, qr.STEPS + 1)]
        done = ("2026-12-06T22:41:07.123Z eval end    step 1000: loss 0.4300\n"
                "2026-12-06T22:41:07.125Z done: 1000 steps in 30:00 (0 skipped), digest 00ff00ff00ff00ff\n")
        _fake_run(out, "movies", qr.distzo_name(lr, 1), [(0, 0.5, 0.77), (1000, 0.43, 0.81)], run_log=done,
                  metrics=rows)
        resumed = [r.replace(",1.5\n", ",2.5\n") for r in rows[-100:]]  # step_seconds may differ
        run = qr.Run("movies", "resume", qr.distzo_name(lr, 1) + "-resume", chosen, lr=lr)
        _fake_run(out, "movies", run.name, [(1000, 0.43, 0.81)], run_log=done, metrics=resumed)
        assert qr.check_resume(paths, run) == {"digest": "00ff00ff00ff00ff", "steps_compared": 100}
        resumed[50] = resumed[50].replace(",0.5,", ",0.50000001,")
        _fake_run(out, "movies", run.name, [(1000, 0.43, 0.81)], run_log=done, metrics=resumed)
        try:
            qr.check_resume(paths, run)
            raise AssertionError("a resumed trajectory with another loss was accepted")
        except SystemExit as e:
            assert "differs at steps ['951']" in str(e), e
    print("quality table: choices backed by dev, the resume check: OK")


def test_quality_long_runs():
    """A run carried on past step 1000: the table gives its dev-loss trend and the steps at which
    each fit reaches first-order fine-tuning's dev loss after one epoch, and the figure is drawn."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    with tempfile.TemporaryDirectory() as out:
        res = qt.Results(out)
        name = qr.distzo_name(qr.LR["movies"], 1)
        assert "movies/" not in qt.long_runs_table(res) and not qt.figure_long(res, os.path.join(out, "x.png"))
        _fake_run(out, "movies", name, [(0, 0.49, 0.77), (1000, 0.44, 0.81)])
        # from step 1000 the dev loss falls 0.002 per 100 steps: a line reaches 0.36 at step 5000
        _fake_run(out, "movies", qr.longer_name("movies", name),
                  [(s, 0.44 - 0.002 * (s - 1000) / 100, 0.82) for s in range(1100, qr.LONG_STEPS["movies"] + 1, 100)])
        ft = f"finetune-lr{qr.lr_tag(qr.FT_LR['movies'])}"
        _fake_run(out, "movies", ft, [(0, 0.49, 0.77), (63, 0.36, 0.84), (126, 0.33, 0.86)])
        with open(os.path.join(out, "movies", ft, "result.json"), "w") as fh:
            json.dump({"dev_accuracy": 0.86, "test_accuracy": 0.88, "test_loss": 0.3}, fh)
        row = [r for r in qt.long_runs_table(res).splitlines() if r.startswith("| movies/")]
        assert len(row) == 1, row
        cells = [c.strip() for c in row[0].split("|")[1:-1]]
        assert cells[1:5] == ["81.0 → 82.0", "0.440 → 0.400", "-0.0020", "0.360"], cells
        at_line, at_log = (float(x.replace(",", "")) for x in cells[5].split(" / "))
        assert at_line == 5000 and at_log > at_line, cells  # a ln(step) fit slows down: later
        png = os.path.join(out, "long.png")
        assert qt.figure_long(res, png) and os.path.getsize(png) > 10000
    print("quality long runs: trend, crossing steps, figure: OK")


def test_quality_cut_off_run_seconds():
    """A run made in two invocations (the first cut off) records the wall seconds of both."""
    from distzo_tools.quality import quality_runs as qr

    with tempfile.TemporaryDirectory() as tmp:
        out, records = os.path.join(tmp, "out"), os.path.join(tmp, "records")
        run = qr.Run("movies", "probe", "probe", qr.PROMPTS["movies"][0])
        d = os.path.join(out, run.task, run.name)
        os.makedirs(d)
        os.makedirs(os.path.join(tmp, "model"))
        open(os.path.join(tmp, "model", "m.h5"), "w").close()
        paths = qr.Paths(os.path.join(tmp, "model"), out)
        marker = os.path.join(tmp, "second")  # the command fails (cut off) until it exists
        step = [sys.executable, "-c", f"import os, sys, time; time.sleep(0.3); sys.exit(0 if os.path.exists({marker!r}) else 75)"]
        made = qr.commands
        qr.commands = lambda *a: [step]
        try:
            try:
                qr.make(paths, run, "distzo", sys.executable, False, records)
                raise AssertionError("a failed command made the run")
            except SystemExit as e:
                assert "exit status 75" in str(e), e
            assert not os.path.exists(os.path.join(d, "run.json"))
            spent = qr.read_spent(os.path.join(d, qr.SPENT))
            assert spent["invocations"] == 1 and spent["seconds"] >= 0.3, spent
            open(marker, "w").close()
            qr.make(paths, run, "distzo", sys.executable, False, records)
        finally:
            qr.commands = made
        with open(os.path.join(d, "run.json")) as fh:
            record = json.load(fh)
        assert record["invocations"] == 2 and record["seconds"] >= spent["seconds"] + 0.3, record
        assert not os.path.exists(os.path.join(d, qr.SPENT))
        with open(os.path.join(records, run.task, run.name, "run.json")) as fh:
            assert json.load(fh)["seconds"] == record["seconds"]
    print("quality runner: a cut-off run's seconds add up over its invocations: OK")


def test_quality_records():
    """quality_runs copies what the table reads (and only that) out of a made run's
    directory, and the table reads the copy as the run; quality_table --write finds
    each number a regenerated table would lose; listing the runs and reading the
    records need neither the model nor the tasks."""
    from distzo_tools.quality import quality_runs as qr
    from distzo_tools.quality import quality_table as qt

    with tempfile.TemporaryDirectory() as tmp:
        out, records = os.path.join(tmp, "out"), os.path.join(tmp, "records")
        name = qr.distzo_name(qr.LR["nyt"], 1)
        d = _fake_run(out, "nyt", name, [(0, 0.48, 0.80), (1000, 0.25, 0.90)], run_log="done: digest 0\n",
                      metrics=["1,0.5,0.1,500,1.5\n"])
        os.makedirs(os.path.join(d, "test"))
        with open(os.path.join(d, "test", "eval.csv"), "w") as fh:
            fh.write("step,eval_loss,accuracy,examples\n1000,0.26,0.897,1000\n")
        open(os.path.join(d, "ckpt-001000.h5"), "w").close()
        with open(os.path.join(d, "run.json"), "w") as fh:  # the commands as make() writes them: this machine's paths
            json.dump({"seconds": 60.0, "commands": [f"{sys.executable} {qr.REPO}/tools/mezo_finetune.py "
                                                     f"{qr.REPO}/out/quality/nyt/{name}/deck.yaml"]}, fh)
        copied = qr.archive(d, os.path.join(records, "nyt", name))
        assert copied == ["eval.csv", os.path.join("test", "eval.csv"), "run.json"], copied
        assert sorted(os.listdir(os.path.join(records, "nyt", name))) == ["eval.csv", "run.json", "test"]
        run = qr.distzo_run("nyt", qr.LR["nyt"], 1)
        assert qr.made_in(records, run) and qr.made_in(out, run) and not qr.made_in(tmp, run)
        a, b = qt.Results(out), qt.Results(records)
        assert b.done("nyt", name) and b.curve("nyt", name) == a.curve("nyt", name)
        assert b.test_of("nyt", name) == (0.897, 0.26) and b.seconds("nyt", name) == 60.0
        assert b.record("nyt", name)["commands"] == [
            f"python3 tools/mezo_finetune.py out/quality/nyt/{name}/deck.yaml"]

        # A fresh clone has the records but no model or tasks: `list` and the table still work.
        no_model = os.path.join(tmp, "no-model")
        listing = subprocess.run([sys.executable, os.path.join(qr.REPO, "tools", "quality_runs.py"), "list",
                                  "--model-dir", no_model, "--out", os.path.join(tmp, "elsewhere"),
                                  "--records", records, "--only", f"nyt/{name}"],
                                 capture_output=True, text=True, check=True).stdout
        assert listing.startswith(f"record nyt/{name}") and "1 of 1 done" in listing, listing
        try:
            qr.main(["list", "--model-dir", no_model, "--records", records, "--only", "nosuch/run"])
            raise AssertionError("a name no run has was accepted")
        except SystemExit as e:
            assert "nosuch/run" in str(e) and "list" in str(e), e
        assert qt.majority(qr.Paths(no_model, records)) == {t: qt.DASH for t in qt.TASKS}

    old = ("| method | movies | nyt |\n|---|---|---|\n| distzo | 82.7 ± 0.4 | 89.7 |\n| probe | 82.3 | — |\n"
           "\n| run | digest | dev |\n|---|---|---|\n| plain | `e03df70264217341` | 81.0 |\n")
    assert qt.dropped(old, old) == []
    assert qt.dropped(old, old.replace("| 89.7 |", "| — |").replace("| — |\n\n", "| 88.6 |\n\n")) == \
        ["'distzo' / 'nyt' (89.7)"]  # a new number is no loss
    assert qt.dropped(old, old.replace("| plain | `e03df70264217341` | 81.0 |\n", "")) == ["the row 'plain'"]
    print("quality records: archived, read back, lost numbers found: OK")


def test_mezo_finetune_resume():
    """tools/mezo_finetune.py cut off after a checkpoint (a stray row past it)
    and resumed, in place or into another directory, and extended to more
    steps (constant lr), ends with the straight run's CSVs and θ, bit for bit;
    other settings are refused."""
    _quiet_transformers()
    import yaml

    from distzo_tools.references import mezo_finetune

    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(5)
        for split, n in (("train", 12), ("dev", 6)):
            lengths = rng.integers(3, 9, n)
            ids = rng.integers(4, 96, (n, 8)) * (np.arange(8)[None, :] < lengths[:, None])
            with h5py.File(os.path.join(tmp, f"{split}.h5"), "w") as f:
                f.attrs["task"] = "classification"
                f["input_ids"], f["lengths"] = ids.astype(np.int32), lengths.astype(np.int32)
                f["labels"], f["candidates"] = (np.arange(n) % 2).astype(np.int32), np.array([5, 7], np.int32)
        deck = os.path.join(tmp, "deck.yaml")
        with open(deck, "w", encoding="utf-8") as fh:
            yaml.safe_dump({"model": {"path": os.path.join(DATA, "opt_tiny_preln.model.h5")},
                            "data": {"train": os.path.join(tmp, "train.h5"), "eval": os.path.join(tmp, "dev.h5"),
                                     "micro_batch": 4, "shuffle_seed": 1},
                            "optim": {"steps": 7, "lr": 1e-2, "eps": 1e-3, "seed": 3},
                            "eval": {"interval": 2}}, fh)

        def run(out, *extra):
            model = os.path.join(out, "model.h5")
            assert mezo_finetune.main([deck, "--out", out, "--checkpoint-interval", "2", "--save", model,
                                       "--log-interval", "100", *extra]) == 0
            with open(os.path.join(out, "eval.csv"), encoding="utf-8") as fh:
                ev = fh.read()
            with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as fh:
                met = [line.rsplit(",", 1)[0] for line in fh]  # all but step_seconds
            with h5py.File(model, "r") as f:
                theta = {k: f[k][()] for k in formats.expected_tensors(formats.read_model(model)[0])}
            return ev, met, theta

        straight = run(os.path.join(tmp, "straight"))
        assert straight[0].count("\n") == 1 + 1 + 3 + 1  # header, step 0, 2 4 6, end 7

        cut = os.path.join(tmp, "cut")  # 4 steps, then a row past its checkpoint, as if cut at step 5
        run(cut, "--set", "optim.steps=4")
        with open(os.path.join(cut, "metrics.csv"), "a", encoding="utf-8") as fh:
            fh.write("5,0.1,0.1,0.1,0,0.01,1\n")
        other = os.path.join(tmp, "other")  # another directory carries on from cut's checkpoint
        for resumed in (run(other, "--resume-from", os.path.join(cut, mezo_finetune.CHECKPOINT)),
                        run(cut, "--resume")):  # constant lr: extended to 7 steps from step 4
            assert resumed[:2] == straight[:2], "the resumed CSVs differ from the straight run's"
            for k, v in straight[2].items():
                assert np.array_equal(v, resumed[2][k]), k
        assert run(cut, "--resume")[:2] == straight[:2]  # at the end already: nothing made again

        for extra, why in ((["--set", "optim.lr=0.02"], "lr 0.01 there, 0.02 here"),
                           (["--threads", "1"], "threads 2 there, 1 here"),
                           (["--set", "optim.steps=6"], "past optim.steps 6")):
            try:
                mezo_finetune.main([deck, "--out", cut, "--resume", *extra])
                raise AssertionError(f"a resume with {extra} was accepted")
            except SystemExit as e:
                assert why in str(e), e
        lin = os.path.join(tmp, "linear")
        mezo_finetune.main([deck, "--out", lin, "--checkpoint-interval", "2", "--set", "optim.schedule=linear",
                            "--set", "optim.steps=4"])
        try:
            mezo_finetune.main([deck, "--out", lin, "--resume", "--set", "optim.schedule=linear"])
            raise AssertionError("a linear schedule extended to more steps was accepted")
        except SystemExit as e:
            assert "whose lr depends on the total" in str(e), e
    print("mezo_finetune: cut and resumed, extended, refusals: OK")


def _llama_hf_config() -> dict:
    return {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 50, "hidden_size": 16,
        "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 20, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None,
        "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    }


def test_two_byte_round_trips():
    """bf16 and fp16 HF checkpoints: HF -> distzo -> HF bit for bit (numpy + h5py only)."""
    rng = np.random.default_rng(5)
    config = _llama_hf_config()
    cfg = formats.config_from_hf(config)
    shapes = formats.expected_tensors(cfg)
    distzo = os.environ.get("DISTZO", os.path.join(os.path.dirname(HERE), "build", "distzo"))
    from distzo_tools.references import digest_reference as dr

    for dtype in ("bf16", "fp16"):
        def make(shape):
            values = rng.standard_normal(shape).astype(np.float32)
            return formats.Bf16Array.from_float32(values) if dtype == "bf16" else values.astype(np.float16)

        weights = {name: make(shape) for name, shape in shapes.items()}
        with tempfile.TemporaryDirectory() as tmp:
            hf_dir, h5, back, wide = (os.path.join(tmp, n) for n in ("hf", "m.h5", "back", "wide.h5"))
            os.makedirs(hf_dir)
            with open(os.path.join(hf_dir, "config.json"), "w") as fh:
                json.dump(config, fh)
            hf_to_h5.write_safetensors(os.path.join(hf_dir, "model.safetensors"), weights, {"format": "pt"})
            hf_to_h5.hf_to_h5(hf_dir, h5, verbose=False)
            with h5py.File(h5, "r") as f:
                for name in shapes:
                    assert formats.stored_dtype(f[name]) == dtype, (name, formats.stored_dtype(f[name]))
                    if dtype == "fp16":
                        assert f[name].dtype == np.float16  # h5py's own float16
                    else:
                        assert f[name].dtype == np.float32  # h5py widens bfloat16, exactly
                        assert np.array_equal(f[name][()], weights[name].to_float32()), name
            _, kept = formats.read_model(h5, keep_dtype=True)
            for name, w in weights.items():
                got = kept[name]
                assert (np.array_equal(got.words, w.words) if dtype == "bf16"
                        else np.array_equal(got.view(np.uint16), w.view(np.uint16))), name
            hf_to_h5.h5_to_hf(h5, back, verbose=False)
            again = dict(hf_to_h5.read_safetensors(os.path.join(back, "model.safetensors")))
            assert set(again) == set(weights)
            for name, w in weights.items():
                a, b = again[name], w
                if dtype == "bf16":
                    assert isinstance(a, formats.Bf16Array) and np.array_equal(a.words, b.words), name
                else:
                    assert a.dtype == np.float16 and np.array_equal(a.view(np.uint16), b.view(np.uint16)), name
            with open(os.path.join(back, "config.json")) as fh:
                assert json.load(fh) == config
            umask = os.umask(0)
            os.umask(umask)
            for exported in ("config.json", "model.safetensors"):  # not mkstemp's 0600
                mode = os.stat(os.path.join(back, exported)).st_mode & 0o777
                assert mode == 0o666 & ~umask, f"{exported}: mode {mode:o}"
            # --float32: float32 datasets holding the same values.
            hf_to_h5.hf_to_h5(hf_dir, wide, verbose=False, float32=True)
            with h5py.File(wide, "r") as f:
                for name, w in weights.items():
                    assert formats.stored_dtype(f[name]) == "fp32"
                    ref = w.to_float32() if dtype == "bf16" else w.astype(np.float32)
                    assert np.array_equal(f[name][()], ref), name
            # The safetensors package, where installed, reads what we write:
            # the header (names, dtypes, shapes, metadata) always, the data
            # where numpy has the dtype (bf16 needs ml_dtypes).
            try:
                from safetensors import safe_open
                from safetensors.numpy import load_file
            except ImportError:
                load_file = None
            if load_file is not None:
                with safe_open(os.path.join(back, "model.safetensors"), framework="np") as fh:
                    assert fh.metadata() == {"format": "pt"} and set(fh.keys()) == set(weights)
                    for name, w in weights.items():
                        assert fh.get_slice(name).get_dtype() == ("BF16" if dtype == "bf16" else "F16"), name
                        assert tuple(fh.get_slice(name).get_shape()) == w.shape, name
                try:
                    theirs = load_file(os.path.join(back, "model.safetensors"))
                except (TypeError, ValueError):  # bf16 without ml_dtypes
                    theirs = None
                if theirs is not None:
                    for name, w in weights.items():
                        bits = w.words if dtype == "bf16" else w.view(np.uint16)
                        assert np.array_equal(np.asarray(theirs[name]).view(np.uint16), bits), name
            if os.path.exists(distzo):
                for path in (h5, wide):
                    proc = subprocess.run([distzo, "inspect", path, "--digest"], capture_output=True, text=True)
                    assert proc.returncode == 0, proc.stderr
                    assert proc.stdout.strip() == dr.file_digest(path), (path, proc.stdout, dr.file_digest(path))
                assert dr.file_digest(h5) != dr.file_digest(wide), "2-byte words digest as words"
    print("bf16 / fp16 round trips (HF -> distzo -> HF): OK")


def test_gguf_keeps_two_byte():
    """gguf_to_h5 keeps F16 and BF16 tensors bit for bit (float32 norms stay
    float32), q/k rows un-permuted alike; --float32 upcasts exactly (numpy,
    h5py, gguf)."""
    import gguf

    from distzo_tools.convert import gguf_to_h5

    rng = np.random.default_rng(3)
    V, C, F, L, H, KV = 32, 16, 24, 2, 4, 2
    hd = C // H
    for kind in ("F16", "BF16"):
        with tempfile.TemporaryDirectory() as tmp:
            path, h5, wide = (os.path.join(tmp, n) for n in ("t.gguf", "t.h5", "wide.h5"))
            w = gguf.GGUFWriter(path, "llama")
            w.add_context_length(20)
            w.add_embedding_length(C)
            w.add_block_count(L)
            w.add_feed_forward_length(F)
            w.add_head_count(H)
            w.add_head_count_kv(KV)
            w.add_layer_norm_rms_eps(1e-5)
            w.add_rope_freq_base(10000.0)
            w.add_vocab_size(V)
            src = {}

            def add(name, shape, two_byte=True):
                values = rng.standard_normal(shape).astype(np.float32)
                if not two_byte:
                    w.add_tensor(name, values)
                    src[name] = values
                elif kind == "F16":
                    src[name] = values.astype(np.float16)
                    w.add_tensor(name, src[name])
                else:
                    words = formats.Bf16Array.from_float32(values).words
                    raw = words.view(np.uint8).reshape(shape[0], -1)
                    w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=gguf.GGMLQuantizationType.BF16)
                    src[name] = formats.Bf16Array(words)

            add("token_embd.weight", (V, C))
            for k in range(L):
                for n, shape in (("attn_q", (H * hd, C)), ("attn_k", (KV * hd, C)), ("attn_v", (KV * hd, C)),
                                 ("attn_output", (C, H * hd)), ("ffn_gate", (F, C)), ("ffn_up", (F, C)),
                                 ("ffn_down", (C, F))):
                    add(f"blk.{k}.{n}.weight", shape)
                add(f"blk.{k}.attn_norm.weight", (C,), two_byte=False)
                add(f"blk.{k}.ffn_norm.weight", (C,), two_byte=False)
            add("output_norm.weight", (C,), two_byte=False)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()

            gguf_to_h5.gguf_to_h5(path, h5, verbose=False)
            gguf_to_h5.gguf_to_h5(path, wide, verbose=False, float32=True)
            want = "fp16" if kind == "F16" else "bf16"

            def bits(a):
                return a.words if isinstance(a, formats.Bf16Array) else np.asarray(a).view(np.uint16 if a.dtype == np.float16 else np.uint32)

            _, kept = formats.read_model(h5, keep_dtype=True)
            _, upcast = formats.read_model(wide, keep_dtype=True)
            with h5py.File(h5, "r") as f, h5py.File(wide, "r") as g:
                for name in kept:
                    expected = "fp32" if name.endswith("norm.weight") else want
                    assert formats.stored_dtype(f[name]) == expected, (name, formats.stored_dtype(f[name]))
                    assert formats.stored_dtype(g[name]) == "fp32", name
            for gguf_name, hf_name in (("blk.1.ffn_up.weight", "model.layers.1.mlp.up_proj.weight"),
                                       ("token_embd.weight", "model.embed_tokens.weight"),
                                       ("blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight")):
                assert np.array_equal(bits(kept[hf_name]), bits(src[gguf_name])), hf_name
            # q is un-permuted the same way in both dtypes: the upcast file is the same values.
            for name, a in kept.items():
                values = a.to_float32() if isinstance(a, formats.Bf16Array) else np.asarray(a, dtype=np.float32)
                assert np.array_equal(values, upcast[name]), name
    print("gguf_to_h5 keeps F16 / BF16: OK")


def _numpy_dequantize(raw: np.ndarray, kind: str) -> np.ndarray:
    """float32 values of GGUF blocks, from llama.cpp's dequantize_row_* (ggml-quants.c),
    written out here independently of the gguf package: Q5_0, Q5_1 (32 weights
    a block) and the K-quants Q4_K, Q5_K, Q6_K (256: 8 or 16 sub-blocks with
    6- or 8-bit scales), each operation in float32 as there."""
    f32 = np.float32
    half = lambda b: b[..., :2].copy().view(np.float16).astype(f32)[..., 0]  # noqa: E731
    size = {"Q5_0": 22, "Q5_1": 24, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210}[kind]
    blocks = raw.reshape(-1, size)
    out = []
    for b in blocks:
        if kind in ("Q5_0", "Q5_1"):
            d = half(b[0:2])
            m = half(b[2:4]) if kind == "Q5_1" else None
            o = 4 if kind == "Q5_1" else 2
            qh = int.from_bytes(bytes(b[o:o + 4]), "little")
            qs = b[o + 4:o + 20].astype(np.int32)
            hi = np.array([(qh >> j) & 1 for j in range(32)], dtype=np.int32) << 4
            q = np.concatenate([qs & 0xF, qs >> 4]) | hi
            out.append(q.astype(f32) * d + m if kind == "Q5_1" else (q - 16).astype(f32) * d)
            continue
        if kind == "Q6_K":
            ql, qh, sc, d = b[0:128].astype(np.int32), b[128:192].astype(np.int32), b[192:208].view(np.int8), half(b[208:210])
            y = np.empty(256, f32)
            for n in range(2):
                l_, h_, s_ = ql[64 * n:], qh[32 * n:], sc[8 * n:].astype(f32)
                for l in range(32):
                    i = l // 16
                    q1 = ((l_[l] & 0xF) | (((h_[l] >> 0) & 3) << 4)) - 32
                    q2 = ((l_[l + 32] & 0xF) | (((h_[l] >> 2) & 3) << 4)) - 32
                    q3 = ((l_[l] >> 4) | (((h_[l] >> 4) & 3) << 4)) - 32
                    q4 = ((l_[l + 32] >> 4) | (((h_[l] >> 6) & 3) << 4)) - 32
                    for off, sidx, q in ((0, 0, q1), (32, 2, q2), (64, 4, q3), (96, 6, q4)):
                        y[128 * n + l + off] = d * s_[i + sidx] * f32(q)
            out.append(y)
            continue
        d, dmin, scales = half(b[0:2]), half(b[2:4]), b[4:16].astype(np.int32)

        def scale_min(j):
            if j < 4:
                return scales[j] & 63, scales[j + 4] & 63
            return ((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4),
                    (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))

        qh = b[16:48].astype(np.int32) if kind == "Q5_K" else None
        qs = b[48:176].astype(np.int32) if kind == "Q5_K" else b[16:144].astype(np.int32)
        y = np.empty(256, f32)
        for j in range(4):  # 64 weights: two sub-blocks of 32, low then high nibbles
            (s1, m1), (s2, m2) = scale_min(2 * j), scale_min(2 * j + 1)
            q = qs[32 * j:32 * j + 32]
            lo, hi = q & 0xF, q >> 4
            if kind == "Q5_K":
                lo = lo + (((qh >> (2 * j)) & 1) << 4)
                hi = hi + (((qh >> (2 * j + 1)) & 1) << 4)
            y[64 * j:64 * j + 32] = (d * f32(s1)) * lo.astype(f32) - dmin * f32(m1)
            y[64 * j + 32:64 * j + 64] = (d * f32(s2)) * hi.astype(f32) - dmin * f32(m2)
        out.append(y)
    return np.concatenate(out)


def test_gguf_dequantises_k_quants():
    """gguf_to_h5 reads Q5_0, Q5_1, Q4_K, Q5_K and Q6_K tensors (random blocks
    with finite scales, as a Q4_K_M file mixes them): every value equals an
    independent numpy dequantiser of llama.cpp's layout, q/k rows un-permuted."""
    import gguf

    from distzo_tools.convert import gguf_to_h5

    rng = np.random.default_rng(11)
    V, C, F, L, H, KV = 32, 256, 256, 1, 4, 2
    hd = C // H
    kinds = ("Q4_K", "Q5_K", "Q6_K", "Q5_0", "Q5_1")
    with tempfile.TemporaryDirectory() as tmp:
        path, h5 = os.path.join(tmp, "k.gguf"), os.path.join(tmp, "k.h5")
        w = gguf.GGUFWriter(path, "llama")
        for add_meta, value in ((w.add_context_length, 20), (w.add_embedding_length, C), (w.add_block_count, L),
                                (w.add_feed_forward_length, F), (w.add_head_count, H), (w.add_head_count_kv, KV),
                                (w.add_layer_norm_rms_eps, 1e-5), (w.add_rope_freq_base, 10000.0),
                                (w.add_vocab_size, V)):
            add_meta(value)
        want = {}
        names = [("token_embd.weight", (V, C))] + [
            (f"blk.0.{n}.weight", shape)
            for n, shape in (("attn_q", (H * hd, C)), ("attn_k", (KV * hd, C)), ("attn_v", (KV * hd, C)),
                             ("attn_output", (C, H * hd)), ("ffn_gate", (F, C)), ("ffn_up", (F, C)),
                             ("ffn_down", (C, F)))
        ]
        for i, (name, shape) in enumerate(names):
            kind = kinds[i % len(kinds)]
            qtype = gguf.GGMLQuantizationType[kind]
            block, size = gguf.GGML_QUANT_SIZES[qtype]
            raw = rng.integers(0, 256, size=(shape[0], shape[1] // block * size), dtype=np.uint8)
            blocks = raw.reshape(-1, size)
            small = lambda n: np.float16(rng.uniform(0.01, 0.1, n)).view(np.uint8).reshape(n, 2)  # noqa: E731
            if kind == "Q6_K":
                blocks[:, 208:210] = small(len(blocks))  # d
            else:
                blocks[:, 0:2] = small(len(blocks))  # d
                if kind != "Q5_0":
                    blocks[:, 2:4] = small(len(blocks))  # dmin / m
            w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qtype)
            want[name] = _numpy_dequantize(raw, kind).reshape(shape)
        for name in ("blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "output_norm.weight"):
            want[name] = rng.standard_normal(C).astype(np.float32)
            w.add_tensor(name, want[name])
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

        gguf_to_h5.gguf_to_h5(path, h5, verbose=False)
        _, got = formats.read_model(h5)
        for name, values in want.items():
            hf = gguf_to_h5.hf_name(name, L)
            if name.endswith("attn_q.weight"):
                values = gguf_to_h5.unpermute_rows(values, H)
            elif name.endswith("attn_k.weight"):
                values = gguf_to_h5.unpermute_rows(values, KV)
            assert got[hf].dtype == np.float32 and np.all(np.isfinite(got[hf])), hf
            assert np.array_equal(got[hf], values), f"{name}: max |difference| {np.abs(got[hf] - values).max()}"
    print("gguf_to_h5 dequantises Q5_0, Q5_1, Q4_K, Q5_K, Q6_K: OK")


def test_gguf_reads_qwen():
    """gguf_to_h5 reads qwen2 and qwen3 GGUF files (biases, q/k norms, rows in
    Hugging Face's order): the tensors equal what transformers' own GGUF
    loader builds from the same file, and so do the logits."""
    import gguf
    import torch
    import transformers

    from distzo_tools.convert import gguf_to_h5
    from distzo_tools.references import mezo_reference

    _quiet_transformers()
    rng = np.random.default_rng(5)
    V, C, F, L, H, KV, hd = 40, 32, 48, 2, 4, 2, 8
    for arch in ("qwen2", "qwen3"):
        with tempfile.TemporaryDirectory() as tmp:
            path, h5 = os.path.join(tmp, "q.gguf"), os.path.join(tmp, "q.h5")
            w = gguf.GGUFWriter(path, arch)
            w.add_context_length(32)
            w.add_embedding_length(C)
            w.add_block_count(L)
            w.add_feed_forward_length(F)
            w.add_head_count(H)
            w.add_head_count_kv(KV)
            w.add_key_length(hd)
            w.add_value_length(hd)
            w.add_layer_norm_rms_eps(1e-6)
            w.add_rope_freq_base(1000000.0)
            w.add_vocab_size(V)
            # transformers' GGUF loader reads a tokenizer: a tiny byte-level BPE one
            w.add_tokenizer_model("gpt2")
            w.add_tokenizer_pre("qwen2")
            w.add_token_list([f"t{i}" for i in range(V)])
            w.add_token_types([1] * V)
            w.add_token_merges([])
            w.add_bos_token_id(1)
            w.add_eos_token_id(2)

            def add(name, shape, scale=1.0, offset=0.0):
                w.add_tensor(name, (offset + scale * rng.standard_normal(shape)).astype(np.float32))

            add("token_embd.weight", (V, C), 0.3)
            for k in range(L):
                b = f"blk.{k}."
                for n, shape in (("attn_q", (H * hd, C)), ("attn_k", (KV * hd, C)), ("attn_v", (KV * hd, C)),
                                 ("attn_output", (C, H * hd)), ("ffn_gate", (F, C)), ("ffn_up", (F, C)),
                                 ("ffn_down", (C, F))):
                    add(b + n + ".weight", shape, 1 / np.sqrt(shape[1]))
                if arch == "qwen2":
                    for n, rows in (("attn_q", H * hd), ("attn_k", KV * hd), ("attn_v", KV * hd)):
                        add(b + n + ".bias", (rows,), 0.1)
                else:
                    add(b + "attn_q_norm.weight", (hd,), 0.2, 1.0)
                    add(b + "attn_k_norm.weight", (hd,), 0.2, 1.0)
                add(b + "attn_norm.weight", (C,), 0.2, 1.0)
                add(b + "ffn_norm.weight", (C,), 0.2, 1.0)
            add("output_norm.weight", (C,), 0.2, 1.0)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()

            cfg = gguf_to_h5.gguf_to_h5(path, h5, verbose=False)
            assert cfg.architecture == arch, cfg
            _, ours = formats.read_model(h5)
            # What from_pretrained(gguf_file=...) loads, without accelerate.
            from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

            meta = load_gguf_checkpoint(path)["config"]
            assert meta["model_type"] == arch, meta
            hf_cfg = {k: v for k, v in meta.items() if k not in ("model_type", "architectures")}
            hf_cfg["head_dim"] = hd  # transformers 5.24's GGUF config drops attention.key_length
            theirs = getattr(transformers, cfg.hf_class)(
                transformers.CONFIG_MAPPING[arch](**hf_cfg, attn_implementation="eager"))
            parsed = load_gguf_checkpoint(path, return_tensors=True, model_to_load=theirs)
            sd = {k: np.asarray(v, dtype=np.float32) for k, v in parsed["tensors"].items()}
            tied = cfg.tie_word_embeddings
            assert set(ours) == set(sd) - ({"lm_head.weight"} if tied else set()), (arch, set(ours) ^ set(sd))
            for name, array in ours.items():
                assert np.array_equal(array, sd[name]), f"{arch}: {name}"
            # ... and the model transformers builds from those tensors gives distzo's file's logits.
            theirs.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=False)
            if tied:
                theirs.tie_weights()
            theirs.eval()
            loaded = mezo_reference.load_model_h5(h5, attn_implementation="eager")
            assert np.array_equal(_logits(loaded), _logits(theirs)), f"{arch}: logits"
    print("gguf_to_h5 reads qwen2 / qwen3 as transformers does: OK")


def test_gguf_reads_gemma3():
    """gguf_to_h5 reads gemma3 GGUF files (llama.cpp's norm weights 1 + w,
    Gemma's four norms and q/k norms, no permutation): every tensor equals
    what transformers' own GGUF loader builds from the same file, F16 norms
    included (shifted in float32, as there), and so do the logits; the layer
    kinds and bases llama.cpp assumes (period 6, sliding base 10000) or
    reads (attention.sliding_window_pattern, rope.freq_base_swa) arrive in
    the config."""
    import gguf
    import torch
    import transformers
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    from distzo_tools.convert import gguf_to_h5
    from distzo_tools.references import mezo_reference

    _quiet_transformers()
    rng = np.random.default_rng(7)
    V, C, F, L, H, KV, hd = 40, 32, 48, 6, 4, 2, 12
    # (tensor type, extra metadata, expected sliding_window_pattern and sliding base)
    variants = {
        "F32, llama.cpp's defaults": (gguf.GGMLQuantizationType.F32, {}, 6, 10000.0),
        "F16, pattern flags, freq_base_swa": (
            gguf.GGMLQuantizationType.F16,
            {"add_sliding_window_pattern": [True, False] * 3, "add_rope_freq_base_swa": 20000.0}, 2, 20000.0),
    }
    for label, (qtype, extra, pattern, local_base) in variants.items():
        with tempfile.TemporaryDirectory() as tmp:
            path, h5 = os.path.join(tmp, "g.gguf"), os.path.join(tmp, "g.h5")
            w = gguf.GGUFWriter(path, "gemma3")
            for add_meta, value in ((w.add_context_length, 32), (w.add_embedding_length, C), (w.add_block_count, L),
                                    (w.add_feed_forward_length, F), (w.add_head_count, H), (w.add_head_count_kv, KV),
                                    (w.add_key_length, hd), (w.add_value_length, hd),
                                    (w.add_layer_norm_rms_eps, 1e-6), (w.add_rope_freq_base, 1000000.0),
                                    (w.add_sliding_window, 16), (w.add_vocab_size, V)):
                add_meta(value)
            for method, value in extra.items():
                getattr(w, method)(value)
            # transformers' GGUF loader reads a tokenizer: a tiny SentencePiece one, as Gemma's
            w.add_tokenizer_model("llama")
            w.add_token_list([f"t{i}" for i in range(V)])
            w.add_token_scores([0.0] * V)
            w.add_token_types([1] * V)
            w.add_pad_token_id(0)
            w.add_eos_token_id(1)
            w.add_bos_token_id(2)
            stored = {}

            def add(name, shape, scale=1.0, offset=0.0):
                values = (offset + scale * rng.standard_normal(shape)).astype(np.float32)
                if qtype == gguf.GGMLQuantizationType.F16:
                    values = values.astype(np.float16)
                w.add_tensor(name, values)
                stored[name] = values

            add("token_embd.weight", (V, C), 0.3)
            for k in range(L):
                b = f"blk.{k}."
                for n, shape in (("attn_q", (H * hd, C)), ("attn_k", (KV * hd, C)), ("attn_v", (KV * hd, C)),
                                 ("attn_output", (C, H * hd)), ("ffn_gate", (F, C)), ("ffn_up", (F, C)),
                                 ("ffn_down", (C, F))):
                    add(b + n + ".weight", shape, 1 / np.sqrt(shape[1]))
                # llama.cpp stores Gemma's norm weights as 1 + w
                for n, size in (("attn_norm", C), ("post_attention_norm", C), ("ffn_norm", C),
                                ("post_ffw_norm", C), ("attn_q_norm", hd), ("attn_k_norm", hd)):
                    add(b + n + ".weight", (size,), 0.2, 1.0)
            add("output_norm.weight", (C,), 0.2, 1.0)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()

            cfg = gguf_to_h5.gguf_to_h5(path, h5, verbose=False)
            assert isinstance(cfg, formats.Gemma3Config) and cfg.tie_word_embeddings, cfg
            assert (cfg.sliding_window_pattern, cfg.rope_local_base_freq) == (pattern, local_base), (label, cfg)
            assert (cfg.rope_theta, cfg.sliding_window, cfg.query_pre_attn_scalar) == (1e6, 16, float(hd))
            _, ours = formats.read_model(h5)
            _, kept = formats.read_model(h5, keep_dtype=True)
            want = np.float16 if qtype == gguf.GGMLQuantizationType.F16 else np.float32
            for name, array in kept.items():  # shifted norms are float32 whatever the file holds
                assert array.dtype == (np.float32 if name.endswith("norm.weight") else want), (name, array.dtype)
            assert np.array_equal(ours["model.layers.3.pre_feedforward_layernorm.weight"],
                                  stored["blk.3.ffn_norm.weight"].astype(np.float32) - np.float32(1))

            meta = load_gguf_checkpoint(path)["config"]
            assert meta["model_type"] == "gemma3_text", meta
            hf_cfg = {k: v for k, v in meta.items() if k not in ("model_type", "architectures")}
            # What transformers 5.24's GGUF config leaves at Gemma3TextConfig's defaults, as llama.cpp
            # reads the file: scores scaled by 1/sqrt(head_dim) (transformers: 256), and the layer
            # kinds and sliding base when the file gives them.
            hf_cfg.update(query_pre_attn_scalar=hd, layer_types=cfg.layer_types, rope_local_base_freq=local_base)
            theirs = transformers.Gemma3ForCausalLM(
                transformers.Gemma3TextConfig(**hf_cfg, attn_implementation="eager"))
            parsed = load_gguf_checkpoint(path, return_tensors=True, model_to_load=theirs)
            sd = {k: np.asarray(v, dtype=np.float32) for k, v in parsed["tensors"].items()}
            assert set(ours) == set(sd) - {"lm_head.weight"}, (label, set(ours) ^ set(sd))
            for name, array in ours.items():
                assert np.array_equal(array, sd[name]), f"{label}: {name}"
            theirs.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()}, strict=False)
            theirs.tie_weights()
            theirs.eval()
            assert theirs.config.rope_parameters["sliding_attention"]["rope_theta"] == local_base
            loaded = mezo_reference.load_model_h5(h5, attn_implementation="eager")
            assert np.array_equal(_logits(loaded), _logits(theirs)), f"{label}: logits"
    # A file whose layer kinds are no single period is refused, naming the layer.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bad.gguf")
        w = gguf.GGUFWriter(path, "gemma3")
        for add_meta, value in ((w.add_context_length, 32), (w.add_embedding_length, C), (w.add_block_count, 3),
                                (w.add_feed_forward_length, F), (w.add_head_count, H), (w.add_head_count_kv, KV),
                                (w.add_key_length, hd), (w.add_layer_norm_rms_eps, 1e-6),
                                (w.add_rope_freq_base, 1e6), (w.add_sliding_window, 16),
                                (w.add_sliding_window_pattern, [False, True, False])):
            add_meta(value)
        w.add_tensor("token_embd.weight", np.zeros((V, C), np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        try:
            gguf_to_h5.gguf_to_h5(path, os.path.join(tmp, "bad.h5"), verbose=False)
        except FormatError as err:
            assert "layer 1 is sliding_attention" in str(err), err
            print("  rejected:", err)
        else:
            raise AssertionError("irregular layer kinds were read")
    print("gguf_to_h5 reads gemma3 as transformers (and llama.cpp) do: OK")


def _run_all(tests) -> int:
    """Each test in turn; a missing optional package skips a test, not the run."""
    failed = skipped = 0
    for test in tests:
        try:
            test()
        except ModuleNotFoundError as err:
            if err.name not in ("torch", "transformers", "safetensors", "gguf", "tokenizers"):
                raise
            skipped += 1
            print(f"SKIP {test.__name__}: needs {err.name}")
        except Exception:  # noqa: BLE001 - report and go on
            import traceback

            failed += 1
            traceback.print_exc()
            print(f"FAIL {test.__name__}")
    passed = len(tests) - failed - skipped
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_run_all([
        test_make_real_model_checks_first,
        test_python_tool_checks_first,
        test_imported_check_raises,
        test_checks_cover_imports,
        test_digest_matches_inspect,
        test_two_byte_round_trips,
        test_gguf_keeps_two_byte,
        test_gguf_dequantises_k_quants,
        test_gguf_reads_qwen,
        test_gguf_reads_gemma3,
        test_demo_baselines_statistics,
        test_vader_corpora,
        test_llama_config,
        test_fixtures_against_numpy,
        test_rejections,
        test_llama_rejections,
        test_round_trips,
        test_llama_round_trips,
        test_tokenizer_round_trip,
        test_llama_kin_round_trips,
        test_gemma3_config,
        test_gemma3_rejections,
        test_gemma3_round_trips,
        test_mezo_reference_llama,
        test_quality_choices_and_resume_check,
        test_quality_records,
        test_quality_cut_off_run_seconds,
        test_quality_long_runs,
        test_mezo_finetune_resume,
    ]))
