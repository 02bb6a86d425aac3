#pragma once
// θ as stored, one type whatever its format: a run of elements of one
// storage dtype (core/storage_dtype.hpp) in one memory space — an arena of
// the parameter store, a streamer slot, a tensor or a piece of one, the w±
// a kernel writes. It holds bytes and its dtype; code that moves, slices or
// binds θ never asks which format it is. The element type is chosen from the
// dtype in one place, with_elements(), where a kernel is called.
//
// Adding a storage format (fp8, say) touches: StorageDtype and its spelling,
// bytes_per_element, store/load and the rounding rules in storage_dtype.hpp,
// the word type in with_elements() below and in StoredElements::decode_into,
// and one instantiation per kernel that reads or writes θ (kernels/
// perturb_update.cpp, digest.cpp, decode_storage.cpp, linear.cpp's 2-byte
// GEMM if the format is to be a GEMM input).

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/storage_dtype.hpp"
#include "core/types.hpp"

namespace distzo {

template <class Space>
class StoredView {
 public:
  using Bytes = Kokkos::View<unsigned char*, Kokkos::LayoutRight, Space>;
  template <class Word>
  using Words = Kokkos::View<Word*, Kokkos::LayoutRight, Space>;

  StoredView() = default;
  /// `elements` zeroed elements of `dtype`, allocated under `label`.
  StoredView(const std::string& label, StorageDtype dtype, std::size_t elements)
      : dtype_(dtype), bytes_(label, elements * bytes_per_element(dtype)) {}
  /// Elements in memory owned elsewhere (the node-shared master, a wrapped
  /// View): the caller keeps it alive.
  StoredView(StorageDtype dtype, void* memory, std::size_t elements)
      : dtype_(dtype),
        bytes_(static_cast<unsigned char*>(memory), elements * bytes_per_element(dtype)) {}
  /// float32 values as a stored run of fp32 (float w±, a float32 θ); the
  /// View is not kept alive by this one.
  StoredView(const Words<real>& values)  // NOLINT(google-explicit-constructor)
      : StoredView(StorageDtype::fp32, values.data(), values.extent(0)) {}

  StorageDtype dtype() const { return dtype_; }
  std::size_t extent() const { return bytes_.extent(0) / bytes_per_element(dtype_); }
  std::size_t bytes() const { return bytes_.extent(0); }
  bool empty() const { return bytes_.extent(0) == 0; }
  void* data() const { return bytes_.data(); }
  const Bytes& raw() const { return bytes_; }

  /// Elements [first, first + count).
  StoredView piece(std::size_t first, std::size_t count) const {
    const std::size_t b = bytes_per_element(dtype_);
    DISTZO_REQUIRE(first + count <= extent(), "stored view: elements [" << first << ", "
                                                                        << first + count << ") of "
                                                                        << extent());
    StoredView p;
    p.dtype_ = dtype_;
    p.bytes_ = Kokkos::subview(bytes_, std::make_pair(first * b, (first + count) * b));
    return p;
  }

  /// The elements as `Word`s: float for fp32, std::uint16_t for bf16 / fp16.
  template <class Word>
  Words<Word> as() const {
    DISTZO_REQUIRE(sizeof(Word) == bytes_per_element(dtype_),
                   "stored view: " << to_string(dtype_) << " elements read as " << sizeof(Word)
                                   << "-byte words");
    return Words<Word>(reinterpret_cast<Word*>(bytes_.data()), extent());
  }

 private:
  StorageDtype dtype_ = StorageDtype::fp32;
  Bytes bytes_;
};

/// θ in the execution space's memory, and in (pinned) host memory.
using StoredVec = StoredView<MemSpace>;
using PinnedStoredVec = StoredView<PinnedSpace>;

/// f(words) with the elements of x as their word type: a View of float
/// (fp32) or of std::uint16_t (bf16, fp16). The one dispatch from a storage
/// dtype to a word type.
template <class Space, class F>
decltype(auto) with_elements(const StoredView<Space>& x, F&& f) {
  if (x.dtype() == StorageDtype::fp32) return f(x.template as<real>());
  return f(x.template as<std::uint16_t>());
}

/// f(words) with n elements of host memory as their word type: a View of
/// const float (fp32) or const std::uint16_t (bf16, fp16).
template <class F>
decltype(auto) with_elements(const StoredElements& x, std::size_t n, F&& f) {
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  if (x.dtype == StorageDtype::fp32)
    return f(Kokkos::View<const real*, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged>(
        x.values(), n));
  return f(Kokkos::View<const std::uint16_t*, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged>(
      x.words(), n));
}

/// Copies src's bytes into dst (same dtype and extent), enqueued on `space`.
template <class Exec, class DstSpace, class SrcSpace>
void deep_copy_stored(const Exec& space, const StoredView<DstSpace>& dst,
                      const StoredView<SrcSpace>& src) {
  DISTZO_REQUIRE(dst.dtype() == src.dtype() && dst.bytes() == src.bytes(),
                 "stored copy: " << src.extent() << " " << to_string(src.dtype()) << " into "
                                 << dst.extent() << " " << to_string(dst.dtype()));
  Kokkos::deep_copy(space, dst.raw(), src.raw());
}

/// The same, synchronously (host copies of θ for files).
template <class DstSpace, class SrcSpace>
void deep_copy_stored(const StoredView<DstSpace>& dst, const StoredView<SrcSpace>& src) {
  DISTZO_REQUIRE(dst.dtype() == src.dtype() && dst.bytes() == src.bytes(),
                 "stored copy: " << src.extent() << " " << to_string(src.dtype()) << " into "
                                 << dst.extent() << " " << to_string(dst.dtype()));
  Kokkos::deep_copy(dst.raw(), src.raw());
}

}  // namespace distzo
