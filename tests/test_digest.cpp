// The parameter digest, version 3 (core/digest.hpp, docs/formats.md): known
// answers from the Python reference (tools/digest_reference.py
// --known-answers), the element-sum kernels against a plain sequential loop
// of the definition, and the properties the definition is chosen for: any
// one changed bit changes the sum, moved elements do too, and the sums of
// any split of a tensor add up to the whole (so no thread count, chunking
// or reduction order can change it). Placements: tests/test_placement.cpp.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/digest.hpp"
#include "core/fp.hpp"
#include "kernels/digest.hpp"

namespace {

using namespace distzo;

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

/// The definition as a plain loop, element after element.
std::uint64_t sequential_sum(const std::vector<float>& x, std::uint64_t first = 0) {
  std::uint64_t s = 0;
  for (std::size_t k = 0; k < x.size(); ++k)
    s += digest::element_term(first + k, distzo::fp::to_bits(x[k]));
  return s;
}

std::uint64_t device_sum(const std::vector<float>& x, std::uint64_t first = 0) {
  Vec v("distzo::test::digest_tensor", x.size());
  Kokkos::deep_copy(v, HostVec(const_cast<float*>(x.data()), x.size()));
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, PinnedSpace> sums("distzo::test::sums", 2);
  const ExecSpace space;
  kernels::tensor_element_sum(space, v, first, Kokkos::subview(sums, 1));
  space.fence();
  return sums(1);
}

std::uint64_t host_sum(const std::vector<float>& x, std::uint64_t first = 0) {
  return kernels::host_tensor_element_sum(Kokkos::DefaultHostExecutionSpace(),
                                          StoredElements(x.data()), x.size(), first);
}

std::vector<float> random_tensor(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(gen);
  return x;
}

/// tools/digest_reference.py known_answer_tensors().
struct KnownTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

std::vector<KnownTensor> known_answer_tensors() {
  const std::uint32_t special[] = {0x00000000, 0x80000000, 0x3F800000, 0xBFC00000,
                                   0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC00001,
                                   0x00000001, 0x7F7FFFFF, 0xFFFFFFFF, 0x12345678};
  KnownTensor a{"model.decoder.layers.0.fc1.weight", {3, 4}, {}};
  for (std::uint32_t b : special) a.values.push_back(from_bits(b));
  KnownTensor ramp{"model.decoder.layers.0.fc1.bias", {200}, {}};
  for (int k = 0; k < 200; ++k) ramp.values.push_back(static_cast<float>(k - 100) / 64.0f);
  return {a, ramp, KnownTensor{"empty", {0, 5}, {}}};
}

TEST(Digest, KnownAnswersOfThePythonReference) {
  EXPECT_EQ(digest::mix(digest::kGamma), 0xe220a8397b1dcdafULL)
      << "splitmix64's first output for seed 0";
  EXPECT_EQ(digest::element_term(0, 0), 0x48218226ff3cd4bfULL);
  EXPECT_EQ(digest::element_term(1, 0x3f800000u), 0x1272525fb9c47f08ULL);
  EXPECT_EQ(digest::element_term(~std::uint64_t(0), 0xffffffffu), 0x8b32c408e8c2c97cULL);

  const std::vector<KnownTensor> tensors = known_answer_tensors();
  const std::uint64_t expected[] = {0xdf2e00cde026c139ULL, 0x79593e74dc80fbacULL, 0};
  ParameterDigest d;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const std::vector<float>& x = tensors[t].values;
    EXPECT_EQ(sequential_sum(x), expected[t]) << tensors[t].name;
    EXPECT_EQ(host_sum(x), expected[t]) << tensors[t].name;
    EXPECT_EQ(device_sum(x), expected[t]) << tensors[t].name;
    d.add_tensor(tensors[t].name, tensors[t].shape, expected[t]);
  }
  const std::vector<float>& ramp = tensors[1].values;
  EXPECT_EQ(device_sum(std::vector<float>(ramp.begin() + 50, ramp.end()), 50),
            0xe0dfbc72dd1503cfULL);
  EXPECT_EQ(d.hex(), "f99a1729ecdb20c0");
  EXPECT_EQ(ParameterDigest().hex(), "52ead7e36ea7fea8");
}

/// S of 16-bit words in `dtype`, on the device and on the host.
std::uint64_t device_word_sum(const std::vector<std::uint16_t>& w, StorageDtype dtype) {
  HalfVec v("distzo::test::digest_words", w.size());
  Kokkos::deep_copy(v, Kokkos::View<const std::uint16_t*, Kokkos::HostSpace,
                                    Kokkos::MemoryTraits<Kokkos::Unmanaged>>(w.data(), w.size()));
  Kokkos::View<std::uint64_t*, Kokkos::LayoutRight, PinnedSpace> sums("distzo::test::sums", 1);
  const ExecSpace space;
  kernels::tensor_element_sum(space, StoredVec(dtype, v.data(), v.extent(0)), 0,
                              Kokkos::subview(sums, 0));
  space.fence();
  return sums(0);
}

std::uint64_t host_word_sum(const std::vector<std::uint16_t>& w, StorageDtype dtype,
                            std::uint64_t first = 0) {
  return kernels::host_tensor_element_sum(Kokkos::DefaultHostExecutionSpace(),
                                          StoredElements(dtype, w.data()), w.size(), first);
}

TEST(Digest, TwoByteKnownAnswersOfThePythonReference) {
  // tools/digest_reference.py known_answer_words(): ±0, 1, inf, NaN, the
  // smallest subnormal, all bits (bf16 readings).
  const std::vector<std::uint16_t> words = {0x0000, 0x8000, 0x3F80, 0x7F80, 0x7FC0, 0x0001, 0xFFFF};
  EXPECT_EQ(device_word_sum(words, StorageDtype::bf16), 0xae2de7631662a5a3ULL);
  EXPECT_EQ(host_word_sum(words, StorageDtype::bf16), 0xae2de7631662a5a3ULL);
  EXPECT_EQ(device_word_sum(words, StorageDtype::fp16), 0xb5199199d7582becULL);
  EXPECT_EQ(host_word_sum(words, StorageDtype::fp16), 0xb5199199d7582becULL);
  // The tag: a word's term is not a float32's with the same low bits, and
  // bf16 and fp16 words differ.
  std::uint64_t f32 = 0;
  for (std::size_t k = 0; k < words.size(); ++k) f32 += digest::element_term(k, words[k]);
  EXPECT_NE(f32, 0xae2de7631662a5a3ULL);
  // Slices of words add up, as floats do.
  const std::vector<std::uint16_t> head(words.begin(), words.begin() + 3),
      tail(words.begin() + 3, words.end());
  EXPECT_EQ(host_word_sum(head, StorageDtype::bf16) + host_word_sum(tail, StorageDtype::bf16, 3),
            0xae2de7631662a5a3ULL);
  std::vector<std::uint16_t> fc1 = words;
  fc1.resize(12, 0);
  ParameterDigest d;
  d.add_tensor("model.decoder.layers.0.fc1.weight", {3, 4}, host_word_sum(fc1, StorageDtype::bf16));
  EXPECT_EQ(d.hex(), "9bf9ebf10b2c06bc");
  EXPECT_EQ(digest_version_of(StorageDtype::fp32), 2);
  EXPECT_EQ(digest_version_of(StorageDtype::bf16), kDigestVersion);
}

TEST(Digest, KernelsEqualTheSequentialLoop) {
  // Lengths around the host kernel's run of 1024 elements per work item.
  for (std::size_t n : {0u, 1u, 7u, 1023u, 1024u, 1025u, 4096u, 100003u}) {
    const std::vector<float> x = random_tensor(n, static_cast<std::uint32_t>(n) + 1);
    const std::uint64_t want = sequential_sum(x);
    EXPECT_EQ(device_sum(x), want) << n << " elements";
    EXPECT_EQ(host_sum(x), want) << n << " elements";
    // A slice starting anywhere in a tensor: indices are first + k.
    EXPECT_EQ(device_sum(x, 123456789), sequential_sum(x, 123456789)) << n << " elements";
  }
}

TEST(Digest, SlicesAddUpToTheWhole) {
  // Any split, reduced in any order, gives the tensor's sum: what makes the
  // result independent of threads, chunking and backend.
  const std::vector<float> x = random_tensor(50000, 3);
  const std::uint64_t whole = device_sum(x);
  for (const std::vector<std::size_t>& cuts : {std::vector<std::size_t>{0, 50000},
                                               {0, 1, 50000},
                                               {0, 1000, 1024, 49999, 50000},
                                               {0, 333, 12345, 25000, 37777, 50000}}) {
    std::uint64_t device_parts = 0, host_parts = 0;
    for (std::size_t c = cuts.size() - 1; c > 0; --c) {  // last slice first
      const std::vector<float> slice(x.begin() + cuts[c - 1], x.begin() + cuts[c]);
      device_parts += device_sum(slice, cuts[c - 1]);
      host_parts += host_sum(slice, cuts[c - 1]);
    }
    EXPECT_EQ(device_parts, whole) << cuts.size() - 1 << " slices";
    EXPECT_EQ(host_parts, whole) << cuts.size() - 1 << " slices";
  }
}

TEST(Digest, EverySingleBitChangeIsSeen) {
  // One element's term is a bijection of its bits: a change anywhere always
  // changes the sum. The long tensor spans many work items on every backend.
  for (std::size_t n : {5u, 3000017u}) {
    const std::vector<float> x = random_tensor(n, 11);
    const std::uint64_t base = device_sum(x);
    for (std::size_t pos : {std::size_t(0), std::size_t(1), n / 2, n - 1}) {
      for (int bit : {0, 22, 23, 31}) {
        std::vector<float> y = x;
        std::uint32_t b = distzo::fp::to_bits(y[pos]);
        b ^= std::uint32_t(1) << bit;
        y[pos] = from_bits(b);
        EXPECT_NE(device_sum(y), base) << "element " << pos << " of " << n << ", bit " << bit;
        EXPECT_NE(host_sum(y), base) << "element " << pos << " of " << n << ", bit " << bit;
      }
    }
  }
  // -0 and +0 are different bits, hence a different θ for the digest.
  EXPECT_NE(host_sum({0.0f}), host_sum({-0.0f}));
}

TEST(Digest, MovedElementsAreSeen) {
  // Each index has its own key, so a permutation changes the sum too.
  const std::vector<float> x = random_tensor(1000, 5);
  const std::uint64_t base = device_sum(x);
  std::vector<float> swapped = x;
  std::swap(swapped[3], swapped[997]);
  EXPECT_NE(device_sum(swapped), base);
  std::vector<float> shifted(x.begin() + 1, x.end());
  shifted.push_back(x.front());
  EXPECT_NE(device_sum(shifted), base);
}

TEST(Digest, FoldSeesNamesShapesAndOrder) {
  const std::uint64_t s = 0x0123456789abcdefULL;
  auto one = [&](const std::string& name, const std::vector<std::int64_t>& shape) {
    ParameterDigest d;
    d.add_tensor(name, shape, s);
    return d.value();
  };
  const std::uint64_t base = one("w", {2, 3});
  EXPECT_NE(one("v", {2, 3}), base);
  EXPECT_NE(one("w", {3, 2}), base);
  EXPECT_NE(one("w", {6}), base);
  ParameterDigest ab, ba, a;
  ab.add_tensor("a", {1}, 1);
  ab.add_tensor("b", {1}, 2);
  ba.add_tensor("b", {1}, 2);
  ba.add_tensor("a", {1}, 1);
  a.add_tensor("a", {1}, 1);
  EXPECT_NE(ab.value(), ba.value());
  EXPECT_NE(ab.value(), a.value());
  EXPECT_EQ(ab.hex().size(), 16u);
  EXPECT_EQ(ab.hex().find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
