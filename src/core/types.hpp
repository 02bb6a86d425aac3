#pragma once
// View and precision aliases shared by every layer.
//
// Tensors are row-major (LayoutRight) so that a (rows, cols) View has the same
// element order as a Hugging Face / PyTorch tensor of that shape, and so the
// HDF5 datasets can be copied without transposition.

#include <Kokkos_Core.hpp>
#include <cstdint>

namespace distzo {

/// Storage and compute precision of weights and activations.
using real = float;

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = ExecSpace::memory_space;
using HostSpace = Kokkos::HostSpace;

/// Whether host code can read and write the execution space's memory (host
/// backends): then a "device" arena can live in node-shared host memory.
constexpr bool kHostAccessibleMemory = Kokkos::SpaceAccessibility<HostSpace, MemSpace>::accessible;

/// Device tensors.
using Vec = Kokkos::View<real*, Kokkos::LayoutRight, MemSpace>;
using Mat = Kokkos::View<real**, Kokkos::LayoutRight, MemSpace>;
using ConstVec = Kokkos::View<const real*, Kokkos::LayoutRight, MemSpace>;
using ConstMat = Kokkos::View<const real**, Kokkos::LayoutRight, MemSpace>;
using IntVec = Kokkos::View<int*, Kokkos::LayoutRight, MemSpace>;
using IntMat = Kokkos::View<int**, Kokkos::LayoutRight, MemSpace>;
/// θ stored in 2 bytes per element (bf16 or fp16 words, core/storage_dtype.hpp).
using HalfVec = Kokkos::View<std::uint16_t*, Kokkos::LayoutRight, MemSpace>;
using ConstHalfMat = Kokkos::View<const std::uint16_t**, Kokkos::LayoutRight, MemSpace>;
using ConstIntVec = Kokkos::View<const int*, Kokkos::LayoutRight, MemSpace>;
using ConstIntMat = Kokkos::View<const int**, Kokkos::LayoutRight, MemSpace>;

/// θ's master copy in host memory when blocks are offloaded (and the staging
/// buffers of batches): pinned under CUDA, so uploads and write-backs are
/// asynchronous DMA at full PCIe bandwidth; plain host memory otherwise.
#ifdef KOKKOS_ENABLE_CUDA
using PinnedSpace = Kokkos::CudaHostPinnedSpace;
#else
using PinnedSpace = Kokkos::HostSpace;
#endif
using PinnedVec = Kokkos::View<real*, Kokkos::LayoutRight, PinnedSpace>;
/// The same for θ stored in 2 bytes per element (bf16 or fp16 words).
using PinnedHalfVec = Kokkos::View<std::uint16_t*, Kokkos::LayoutRight, PinnedSpace>;

/// Host tensors with the same layout (staging for IO and tests).
using HostVec = Kokkos::View<real*, Kokkos::LayoutRight, HostSpace>;
using HostMat = Kokkos::View<real**, Kokkos::LayoutRight, HostSpace>;
using HostIntVec = Kokkos::View<int*, Kokkos::LayoutRight, HostSpace>;
using HostIntMat = Kokkos::View<int**, Kokkos::LayoutRight, HostSpace>;

}  // namespace distzo
