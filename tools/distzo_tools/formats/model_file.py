"""Read and write distzo model files (HDF5), format version 1.

The format is specified in docs/formats.md. In short: one row-major dataset
per Hugging Face state-dict key at the root group — float32, or a 2-byte
type (float16, bfloat16: tensors.py) — the architecture config
(configs.py) as root attributes, strings as UTF-8 scalar attributes,
integers as int64 and reals as float64 scalar attributes; the tokenizer's
text files an import kept in one attribute.

write_model and ModelWriter validate every name, shape and dtype against
the config and commit atomically; read_model checks the same and also reads
the parameters of a distzo checkpoint. read_model gives float32 arrays
(exact) unless asked to keep the stored dtype.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Iterable, Iterator, Mapping

import h5py
import numpy as np

from distzo_tools.formats.configs import (
    CONFIG_TYPES,
    FormatError,
    LlamaConfig,
    ModelConfig,
    _QwenSlidingWindow,
    expected_tensors,
    supported_architectures,
)
from distzo_tools.formats import rope
from distzo_tools.formats.tensors import Bf16Array, as_stored, bf16_h5_type, read_tensor

FORMAT_VERSION = 1
# A scaled rotary embedding's rope_parameters entry, as JSON (formats/rope.py).
ROPE_SCALING_ATTR = "rope_scaling"
# Qwen2's and Qwen3's sliding window (int64), present only when it has one.
QWEN_WINDOW_ATTRS = ("sliding_window", "max_window_layers")

# String attributes are written as fixed-length UTF-8 scalars (H5T_STRING of
# the value's byte length, at least 1, null-padded, H5T_CSET_UTF8, scalar
# dataspace), as distzo writes them: variable-length strings live in the
# file's global heap, which HDF5 reads without checks (a damaged one crashes
# the reader). h5py reads them back as bytes; read_string_attr decodes.
# Readers still accept variable-length strings (files of earlier versions).
def string_dtype_for(value: bytes) -> np.dtype:
    return h5py.string_dtype(encoding="utf-8", length=max(len(value), 1))


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
    if isinstance(cfg, _QwenSlidingWindow) and cfg.sliding_window:  # absent: no window
        for name in QWEN_WINDOW_ATTRS:
            f.attrs.create(name, np.int64(getattr(cfg, name)), dtype=np.int64)
    if getattr(cfg, "rope_scaling", None) is not None:  # absent: plain RoPE
        write_string_attr(f.attrs, ROPE_SCALING_ATTR, rope.to_json(cfg.rope_scaling))
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
        raise FormatError(f"architecture {arch!r}: distzo supports {supported_architectures()}")
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
    if issubclass(cls, _QwenSlidingWindow) and QWEN_WINDOW_ATTRS[0] in f.attrs:
        values.update({name: _read_int_attr(f.attrs, name) for name in QWEN_WINDOW_ATTRS})
    if ROPE_SCALING_ATTR in f.attrs:
        if not issubclass(cls, LlamaConfig):
            raise FormatError(f"attribute {ROPE_SCALING_ATTR}: distzo scales no rotary embedding of {arch!r}")
        values["rope_scaling"] = rope.from_json(read_string_attr(f.attrs, ROPE_SCALING_ATTR),
                                                f"attribute {ROPE_SCALING_ATTR}")
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
