#pragma once
// θ stored in 2 bytes, read as float32: the forward pass reads float
// tensors, so a group of a bf16 / fp16 θ is decoded into float scratch right
// before it is used (the digest reads the words themselves) (storage::load, exact: every bf16 and fp16 value
// is a float).

#include "core/storage_dtype.hpp"
#include "core/types.hpp"

namespace distzo::kernels {

/// out(i) = storage::load(words(i), dtype) for every i of `words` (bf16 or
/// fp16); out has at least words.extent(0) elements. Enqueued on `space`.
void decode_storage(const ExecSpace& space, const HalfVec& words, StorageDtype dtype, const Vec& out);

}  // namespace distzo::kernels
