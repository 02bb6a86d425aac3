#pragma once
// θ's tensors by parameter id as they are stored: float32 Views, or 2-byte
// words (bf16 / fp16, core/storage_dtype.hpp). The walk hands θ to a pass in
// this one type whatever the storage; the kernels that write θ pick their
// overload from it in one place each (zo::PerturbedWeights::materialise, the
// engine's flush), and a forward pass reads float tensors through
// zo::FloatTheta, which decodes 2-byte words into scratch.

#include "core/storage_dtype.hpp"
#include "core/types.hpp"
#include "model/weights.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace distzo::runtime {

/// One tensor of θ, or elements [first, first + count) of one.
struct ThetaTensor {
  StorageDtype dtype = StorageDtype::fp32;
  Vec f32;        // fp32 storage
  HalfVec words;  // bf16 / fp16 storage

  std::size_t extent() const { return dtype == StorageDtype::fp32 ? f32.extent(0) : words.extent(0); }
  ThetaTensor piece(std::size_t first, std::size_t count) const {
    const auto range = std::make_pair(first, first + count);
    ThetaTensor p;
    p.dtype = dtype;
    if (dtype == StorageDtype::fp32)
      p.f32 = Kokkos::subview(f32, range);
    else
      p.words = Kokkos::subview(words, range);
    return p;
  }
};

/// θ's tensors by id; an entry of a group that is not here is empty.
struct ThetaTable {
  StorageDtype dtype = StorageDtype::fp32;
  model::TensorTable f32;       // by id, fp32 storage (else empty)
  std::vector<HalfVec> words;   // by id, bf16 / fp16 storage (else empty)

  ThetaTable() = default;
  ThetaTable(StorageDtype d, std::size_t parameters) : dtype(d) {
    if (d == StorageDtype::fp32)
      f32.resize(parameters);
    else
      words.resize(parameters);
  }

  ThetaTensor operator[](std::uint32_t id) const {
    ThetaTensor t;
    t.dtype = dtype;
    if (dtype == StorageDtype::fp32)
      t.f32 = f32.at(id);
    else
      t.words = words.at(id);
    return t;
  }
};

}  // namespace distzo::runtime
