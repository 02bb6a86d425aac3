#pragma once
// θ as float32 for a forward pass, which reads float tensors: a float32 θ's
// own values (nothing copied), or a bf16 / fp16 θ decoded into float scratch
// right before it is used (storage::load, exact: every bf16 and fp16 value is
// a float). The digest reads the stored words themselves.

#include "core/stored_view.hpp"
#include "core/types.hpp"

namespace distzo::kernels {

/// Whether a θ stored as `dtype` is decoded into float scratch to be read
/// as float32 (else it is read in place and needs none).
inline bool decodes_to_scratch(StorageDtype dtype) { return dtype != StorageDtype::fp32; }

/// x as float32: x's own values if θ is float32; else storage::load of each
/// element into `scratch` (at least x.extent() elements), enqueued on
/// `space`, and the first x.extent() elements of scratch returned.
Vec as_float32(const ExecSpace& space, const StoredVec& x, const Vec& scratch);

}  // namespace distzo::kernels
