"""Tensors as a distzo model file stores them: float32, float16, or bfloat16
(docs/formats.md). numpy has no bfloat16, so a bf16 tensor is a Bf16Array
of its 16-bit words (an ml_dtypes.bfloat16 array is accepted too); h5py reads
a bf16 dataset as float32, so stored_dtype looks at the HDF5 type.
"""

from __future__ import annotations

import h5py
import numpy as np

from distzo_tools.formats.configs import FormatError


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
