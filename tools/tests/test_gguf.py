"""gguf_to_h5 (needs gguf): F16 and BF16 tensors kept; the K-quants
dequantised as a numpy dequantiser written from llama.cpp's layout does;
qwen2, qwen3 and gemma3 files read as transformers' GGUF loader reads them
(torch, transformers), and a gemma3 file of irregular layer kinds refused.
"""

from __future__ import annotations

import os
import tempfile

import pytest

np = pytest.importorskip("numpy")
h5py = pytest.importorskip("h5py")

from distzo_tools import formats  # noqa: E402
from distzo_tools.formats import FormatError  # noqa: E402
from tests.hf_models import padded_logits, quiet_transformers  # noqa: E402


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

    quiet_transformers()
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
            assert np.array_equal(padded_logits(loaded), padded_logits(theirs)), f"{arch}: logits"
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

    quiet_transformers()
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
            assert np.array_equal(padded_logits(loaded), padded_logits(theirs)), f"{label}: logits"
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
