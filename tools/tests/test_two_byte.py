"""2-byte weights keep their dtype (numpy + h5py only): a bf16 and an fp16
Hugging Face safetensors checkpoint go HF -> distzo -> HF bit for bit, the
model file holding bfloat16 / float16 datasets of the same words (float32
with --float32, exactly); the safetensors reader and writer agree with the
`safetensors` package where it is installed; the digest of the 2-byte files
equals `distzo inspect --digest` (with a built distzo).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import pytest

np = pytest.importorskip("numpy")
h5py = pytest.importorskip("h5py")

from distzo_tools import REPO, formats  # noqa: E402
from distzo_tools.convert import hf_to_h5  # noqa: E402


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
    distzo = os.environ.get("DISTZO", os.path.join(REPO, "build", "distzo"))
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
