#pragma once
// A weight matrix as the kernels read it: float32 values, or the 2-byte
// words (bf16 / fp16) of θ's storage dtype with precision.gemm_inputs:
// storage. Dense layers hand the words to a 2-byte GEMM (kernels/linear.hpp);
// gathers and dot products read elements through MatrixReader.

#include <cstddef>

#include "core/storage_dtype.hpp"
#include "core/stored_view.hpp"
#include "core/types.hpp"

namespace distzo::kernels {

/// Element (i, j) as float32: the value, or the word decoded (exact). A
/// plain struct copied into kernels; the format is the same for every
/// element, so the branch is uniform.
struct MatrixReader {
  ConstMat values;
  ConstHalfMat words;
  StorageDtype dtype = StorageDtype::fp32;

  KOKKOS_INLINE_FUNCTION float operator()(std::int64_t i, std::int64_t j) const {
    return dtype == StorageDtype::fp32 ? values(i, j) : storage::load(words(i, j), dtype);
  }
};

/// A weight matrix (out, in) as a dense layer reads it: float32 values, or —
/// with `precision.gemm_inputs: storage` — the 2-byte words (bf16 / fp16) of
/// θ's storage dtype, which the GEMM multiplies without a float copy.
struct WeightMatrix {
  ConstMat values;     // float32 (dtype fp32)
  ConstHalfMat words;  // 2-byte words (dtype bf16 / fp16)
  StorageDtype dtype = StorageDtype::fp32;

  WeightMatrix() = default;
  WeightMatrix(const ConstMat& v) : values(v) {}  // NOLINT(google-explicit-constructor)
  WeightMatrix(const Mat& v) : values(v) {}       // NOLINT(google-explicit-constructor)
  WeightMatrix(StorageDtype words_dtype, const ConstHalfMat& w) : words(w), dtype(words_dtype) {}
  bool is_words() const { return dtype != StorageDtype::fp32; }
  std::size_t rows() const { return is_words() ? words.extent(0) : values.extent(0); }
  std::size_t cols() const { return is_words() ? words.extent(1) : values.extent(1); }
  MatrixReader reader() const { return MatrixReader{values, words, dtype}; }
};

/// The (rows, cols) matrix held by w: its floats, or its 2-byte words.
inline WeightMatrix weight_matrix(const StoredVec& w, std::size_t rows, std::size_t cols) {
  if (w.dtype() == StorageDtype::fp32) return ConstMat(w.as<real>().data(), rows, cols);
  return WeightMatrix(w.dtype(), ConstHalfMat(w.as<std::uint16_t>().data(), rows, cols));
}

}  // namespace distzo::kernels
