"""Read and write distzo model files (HDF5), format version 1.

The format is specified in docs/formats.md. In short: one float32 row-major
dataset per Hugging Face state-dict key at the root group, the architecture
config as root attributes, strings as *variable-length UTF-8 scalar*
attributes, integers as int64 scalar attributes.

Only numpy and h5py are needed here (no torch, no transformers), so the module
can be imported by any tool, notebook or test.

    from distzo_h5 import OptConfig, read_model, write_model
    cfg, tensors = read_model("tests/data/opt_tiny_preln.model.h5")
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

import h5py
import numpy as np

FORMAT_VERSION = 1
ARCHITECTURE = "opt"

# String attributes are written as variable-length UTF-8 scalars (H5T_STRING,
# H5T_VARIABLE, H5T_CSET_UTF8, scalar dataspace). The C++ reader reads them
# with a variable-length memory type.
STRING_DTYPE = h5py.string_dtype(encoding="utf-8", length=None)

# Integer config attributes, in the order they are written.
INT_ATTRS = (
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

# OPT learned positions are offset by 2 (fairseq's padding_idx hack): the table
# has max_position_embeddings + 2 rows.
POSITION_OFFSET = 2


class FormatError(ValueError):
    """A file or config that does not follow docs/formats.md."""


@dataclass
class OptConfig:
    """The subset of a Hugging Face OPTConfig that defines the tensors."""

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
        for name in INT_ATTRS:
            value = int(getattr(self, name))
            low = 0 if name in ("do_layer_norm_before", "tie_word_embeddings") else 1
            if value < low:
                raise FormatError(f"config {name} = {value}: must be >= {low}")
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


def config_from_hf(hf: Mapping, hf_config_json: str | None = None) -> OptConfig:
    """Build and validate an OptConfig from a parsed Hugging Face config.json.

    Rejects the OPT variants distzo does not implement, naming the key.
    """
    model_type = hf.get("model_type")
    if model_type != "opt":
        raise FormatError(f"config.json model_type is {model_type!r}: only 'opt' is supported")

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
    cfg = OptConfig(
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
        hf_config_json=hf_config_json if hf_config_json is not None else json.dumps(dict(hf), indent=2, sort_keys=True),
    )
    cfg.validate()
    return cfg


def expected_tensors(cfg: OptConfig) -> dict[str, tuple[int, ...]]:
    """Canonical tensor names and shapes, in canonical (write) order."""
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


def hf_config_dict(cfg: OptConfig) -> dict:
    """The config.json for the way back to Hugging Face.

    Starts from the stored original and checks that it agrees with the
    attributes (the attributes define the tensors, so they win on conflict
    only if the original is absent).
    """
    base = json.loads(cfg.hf_config_json) if cfg.hf_config_json else {}
    if base:
        checked = config_from_hf(base)
        for name in INT_ATTRS:
            if int(getattr(checked, name)) != int(getattr(cfg, name)):
                raise FormatError(
                    f"attribute {name} = {int(getattr(cfg, name))} disagrees with hf_config_json "
                    f"({int(getattr(checked, name))})"
                )
        return base
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
    for name in INT_ATTRS:
        value = getattr(cfg, name)
        base[name] = bool(value) if name in ("do_layer_norm_before", "tie_word_embeddings") else int(value)
    return base


# ---------------------------------------------------------------------------
# writing


def _write_string_attr(attrs: h5py.AttributeManager, name: str, value: str) -> None:
    attrs.create(name, value, dtype=STRING_DTYPE)


def _write_config_attrs(f: h5py.File, cfg: OptConfig, distzo_format: str) -> None:
    _write_string_attr(f.attrs, "distzo_format", distzo_format)
    f.attrs.create("format_version", np.int64(FORMAT_VERSION), dtype=np.int64)
    _write_string_attr(f.attrs, "architecture", ARCHITECTURE)
    for name in INT_ATTRS:
        f.attrs.create(name, np.int64(int(getattr(cfg, name))), dtype=np.int64)
    _write_string_attr(f.attrs, "activation_function", cfg.activation_function)
    _write_string_attr(f.attrs, "hf_config_json", cfg.hf_config_json)


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
        # libver ('earliest', 'v110'): readable by HDF5 1.10+, and the root group
        # then carries no timestamps either.
        with h5py.File(tmp, "w", libver=("earliest", "v110"), track_order=False) as f:
            yield f
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_dataset(f: h5py.File | h5py.Group, name: str, array, dtype=None) -> None:
    """A contiguous, uncompressed, little-endian dataset without timestamps."""
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

    def __init__(self, path: str | os.PathLike, cfg: OptConfig, distzo_format: str = "model"):
        cfg.validate()
        self.path = path
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
        return self

    def add(self, name: str, array) -> None:
        if name not in self.expected:
            raise FormatError(f"tensor {name}: not a parameter of this OPT config")
        if name in self.written:
            raise FormatError(f"tensor {name}: written twice")
        array = np.asarray(array)
        if tuple(array.shape) != self.expected[name]:
            raise FormatError(f"tensor {name}: got {tuple(array.shape)}, expected {self.expected[name]}")
        if not np.issubdtype(array.dtype, np.floating):
            raise FormatError(f"tensor {name}: dtype {array.dtype} is not floating point")
        write_dataset(self._file, name, array, dtype=np.float32)
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


def write_model(path: str | os.PathLike, cfg: OptConfig, tensors: Mapping | Iterable) -> None:
    """Write a complete model file atomically, tensors in canonical order."""
    items = dict(tensors.items() if isinstance(tensors, Mapping) else tensors)
    with ModelWriter(path, cfg) as w:
        for name in w.expected:
            if name not in items:
                raise FormatError(f"tensor {name}: missing")
            w.add(name, items.pop(name))
        if items:
            raise FormatError(f"unexpected tensor(s): {sorted(items)[:5]}")


# ---------------------------------------------------------------------------
# reading


def _read_string_attr(attrs, name: str) -> str:
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


def read_config(f: h5py.File) -> tuple[OptConfig, str]:
    """(config, distzo_format) from an open model or checkpoint file."""
    fmt = _read_string_attr(f.attrs, "distzo_format")
    if fmt not in ("model", "checkpoint"):
        raise FormatError(f"attribute distzo_format = {fmt!r}: expected 'model' or 'checkpoint'")
    version = _read_int_attr(f.attrs, "format_version")
    if version != FORMAT_VERSION:
        raise FormatError(f"format_version {version}: this reader knows version {FORMAT_VERSION}")
    arch = _read_string_attr(f.attrs, "architecture")
    if arch != ARCHITECTURE:
        raise FormatError(f"architecture {arch!r}: only {ARCHITECTURE!r} is supported")
    ints = {name: _read_int_attr(f.attrs, name) for name in INT_ATTRS}
    cfg = OptConfig(
        **{k: (bool(v) if k in ("do_layer_norm_before", "tie_word_embeddings") else v) for k, v in ints.items()},
        activation_function=_read_string_attr(f.attrs, "activation_function"),
        hf_config_json=_read_string_attr(f.attrs, "hf_config_json") if "hf_config_json" in f.attrs else "",
    )
    cfg.validate()
    return cfg, fmt


def read_model(path: str | os.PathLike) -> tuple[OptConfig, dict[str, np.ndarray]]:
    """Config and float32 tensors (canonical order) of a model or checkpoint file.

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
            if ds.dtype != np.float32:
                raise FormatError(f"{path}: tensor {name}: dtype {ds.dtype}, expected float32")
            tensors[name] = ds[()]
        if fmt == "model":
            extra = sorted(set(f.keys()) - set(expected))
            if extra:
                raise FormatError(f"{path}: unexpected object(s) in a model file: {extra[:5]}")
    return cfg, tensors
