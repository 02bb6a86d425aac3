// Philox-4x32 against the Random123 known-answer vectors, on the host and in a
// kernel on the default execution space.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

#include "core/fence.hpp"
#include "core/philox.hpp"
#include "core/types.hpp"

namespace distzo_test_philox {

using distzo::fence;

using distzo::PhiloxBlock;
using distzo::PhiloxKey;

struct Kat {
  int rounds;
  PhiloxBlock ctr;
  PhiloxKey key;
  PhiloxBlock expected;
};

// Random123 tests/kat_vectors, the "philox4x32 7" and "philox4x32 10" lines:
// name rounds ctr[4] key[2] expected[4], all hex words.
constexpr Kat kKats[] = {
    {7,
     {{0x00000000, 0x00000000, 0x00000000, 0x00000000}},
     {{0x00000000, 0x00000000}},
     {{0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}}},
    {7,
     {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
     {{0xffffffff, 0xffffffff}},
     {{0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}}},
    {7,
     {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
     {{0xa4093822, 0x299f31d0}},
     {{0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}}},
    {10,
     {{0x00000000, 0x00000000, 0x00000000, 0x00000000}},
     {{0x00000000, 0x00000000}},
     {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
    {10,
     {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
     {{0xffffffff, 0xffffffff}},
     {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
    {10,
     {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
     {{0xa4093822, 0x299f31d0}},
     {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
};
constexpr int kNumKats = sizeof(kKats) / sizeof(kKats[0]);

KOKKOS_INLINE_FUNCTION PhiloxBlock run_kat(const Kat& kat) {
  return kat.rounds == 7 ? distzo::philox4x32<7>(kat.ctr, kat.key)
                         : distzo::philox4x32_10(kat.ctr, kat.key);
}

// Evaluates every known-answer case in a kernel; returns the outputs on the host.
// Both Views say LayoutRight: a View without a layout is LayoutLeft under CUDA,
// and its host mirror would not convert to the return type.
using KatResults = Kokkos::View<std::uint32_t* [4], Kokkos::LayoutRight, Kokkos::HostSpace>;
KatResults run_kats_on_device() {
  Kokkos::View<std::uint32_t* [4], Kokkos::LayoutRight, distzo::MemSpace> out(
      "distzo::test::philox_kat", kNumKats);
  Kokkos::View<Kat*, distzo::MemSpace> kats("distzo::test::philox_kat_in", kNumKats);
  auto kats_host = Kokkos::create_mirror_view(kats);
  for (int i = 0; i < kNumKats; ++i) kats_host(i) = kKats[i];
  Kokkos::deep_copy(kats, kats_host);
  distzo::ExecSpace space;
  Kokkos::parallel_for(
      "distzo::test::philox_kat", Kokkos::RangePolicy<distzo::ExecSpace>(space, 0, kNumKats),
      KOKKOS_LAMBDA(const int i) {
        const PhiloxBlock r = run_kat(kats(i));
        for (int j = 0; j < 4; ++j) out(i, j) = r.v[j];
      });
  fence(space, "distzo::test: philox KAT results ready for the host");
  auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), out);
  Kokkos::deep_copy(host, out);
  return host;
}

}  // namespace distzo_test_philox

using namespace distzo_test_philox;

TEST(Philox, PlainDeviceCopyableStructs) {
  static_assert(std::is_trivially_copyable<PhiloxKey>::value, "");
  static_assert(std::is_trivially_copyable<PhiloxBlock>::value, "");
  static_assert(sizeof(PhiloxKey) == 8 && sizeof(PhiloxBlock) == 16, "");
}

TEST(Philox, Random123KnownAnswersOnHost) {
  for (const Kat& kat : kKats) {
    const PhiloxBlock r = run_kat(kat);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(r.v[j], kat.expected.v[j])
          << "philox4x32_" << kat.rounds << " ctr " << std::hex << kat.ctr.v[0] << " key "
          << kat.key.k[0] << " word " << j;
    }
  }
}

TEST(Philox, Random123KnownAnswersInKernel) {
  const auto out = run_kats_on_device();
  for (int i = 0; i < kNumKats; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(out(i, j), kKats[i].expected.v[j]) << "case " << i << " word " << j;
    }
  }
}

TEST(Philox, MulHiLoIsExactAtTheExtremes) {
  std::uint32_t hi = 0, lo = 0;
  distzo::philox_detail::mulhilo(0xffffffffu, 0xffffffffu, hi, lo);
  EXPECT_EQ(hi, 0xfffffffeu);
  EXPECT_EQ(lo, 0x00000001u);
  distzo::philox_detail::mulhilo(0xD2511F53u, 0x243f6a88u, hi, lo);
  const std::uint64_t p = 0xD2511F53ull * 0x243f6a88ull;
  EXPECT_EQ(hi, static_cast<std::uint32_t>(p >> 32));
  EXPECT_EQ(lo, static_cast<std::uint32_t>(p));
}

TEST(Philox, EveryCounterWordAndKeyWordMatters) {
  const PhiloxBlock c0{{1, 2, 3, 4}};
  const PhiloxKey k0{{5, 6}};
  const PhiloxBlock r0 = distzo::philox4x32_10(c0, k0);
  for (int w = 0; w < 4; ++w) {
    PhiloxBlock c = c0;
    c.v[w] ^= 0x80000000u;
    const PhiloxBlock r = distzo::philox4x32_10(c, k0);
    int same = 0;
    for (int j = 0; j < 4; ++j) same += r.v[j] == r0.v[j];
    EXPECT_EQ(same, 0) << "flipping the top bit of counter word " << w;
  }
  for (int w = 0; w < 2; ++w) {
    PhiloxKey k = k0;
    k.k[w] ^= 1u;
    const PhiloxBlock r = distzo::philox4x32_10(c0, k);
    int same = 0;
    for (int j = 0; j < 4; ++j) same += r.v[j] == r0.v[j];
    EXPECT_EQ(same, 0) << "flipping the low bit of key word " << w;
  }
}

/// The bulk form against one philox4x32_10 call per counter, for chunks that
/// cross a 2^32 boundary of the block index (the carry into counter word 1)
/// and the end of the 64-bit range.
template <int N, int K, class Bulk>
void expect_bulk_matches_single_calls(Bulk bulk, const char* what) {
  const PhiloxKey keys[2] = {{{0x27cac5a1u, 0xbf36e5ecu}}, {{0x76d3886cu, 0x667a1eb2u}}};
  PhiloxKey k[K];
  for (int i = 0; i < K; ++i) k[i] = keys[i];
  for (const std::uint64_t first :
       {0ull, 5ull, 0xFFFFFFF7ull, 0x1FFFFFFF0ull, 0xFFFFFFFFFFFFFFFFull - N + 1}) {
    std::uint32_t out[K][4][N];
    bulk(first, 17u, 0x5A56414Cu, k, out);
    for (int key = 0; key < K; ++key)
      for (int i = 0; i < N; ++i) {
        const std::uint64_t b = first + static_cast<std::uint64_t>(i);
        const PhiloxBlock want =
            distzo::philox4x32_10({{static_cast<std::uint32_t>(b),
                                    static_cast<std::uint32_t>(b >> 32), 17u, 0x5A56414Cu}},
                                  k[key]);
        for (int w = 0; w < 4; ++w)
          ASSERT_EQ(out[key][w][i], want.v[w])
              << what << " N=" << N << " K=" << K << ": first " << first << ", block " << i
              << ", key " << key << ", word " << w;
      }
  }
}

TEST(Philox, BulkFormMatchesSingleCalls) {
  // The dispatching form (AVX-512 intrinsics where the build has them, for
  // N a multiple of 16, else AVX2 for N a multiple of 8) and each form by
  // itself, for every shape kernels use.
  expect_bulk_matches_single_calls<32, 2>(distzo::philox4x32_10_n<32, 2>, "dispatched");
  expect_bulk_matches_single_calls<32, 1>(distzo::philox4x32_10_n<32, 1>, "dispatched");
  expect_bulk_matches_single_calls<1, 1>(distzo::philox4x32_10_n<1, 1>, "dispatched");
  expect_bulk_matches_single_calls<3, 2>(distzo::philox4x32_10_n<3, 2>, "dispatched");
  expect_bulk_matches_single_calls<32, 2>(distzo::philox_detail::philox4x32_10_n_portable<32, 2>,
                                          "portable");
#if defined(DISTZO_PHILOX_AVX512)
  expect_bulk_matches_single_calls<64, 2>(distzo::philox_detail::philox4x32_10_n_avx512<64, 2>,
                                          "avx512");
#endif
#if defined(DISTZO_PHILOX_AVX2)
  expect_bulk_matches_single_calls<64, 2>(distzo::philox_detail::philox4x32_10_n_avx2<64, 2>,
                                          "avx2");
  expect_bulk_matches_single_calls<8, 1>(distzo::philox_detail::philox4x32_10_n_avx2<8, 1>, "avx2");
  expect_bulk_matches_single_calls<24, 2>(distzo::philox_detail::philox4x32_10_n_avx2<24, 2>,
                                          "avx2");
#endif
}
