// The fused perturb/update kernel against a plain host loop over the scalar
// generator and, bit for bit, against the Python reference's update
// (tools/z_reference.py); and the properties the engine relies on: θ is never
// perturbed in place; a slice is perturbed exactly like the whole; a fused
// update and a flushed update give bit-identical θ.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/host_gemm.hpp"
#include "kernels/perturb_update.hpp"

namespace {

using namespace distzo;

Vec make_theta(std::size_t n, float offset) {
  Vec v("theta", n);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < n; ++i) h(i) = offset + 0.001f * static_cast<float>(i % 97) - 0.05f;
  Kokkos::deep_copy(v, h);
  return v;
}

std::vector<float> to_host(const Vec& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<float>(h.data(), h.data() + h.extent(0));
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The pending update of tools/z_reference.py's update rows: seed 7, step 41,
/// two queries, coefficients 0.25e-2 and -0.5e-2, decay 1e-3.
kernels::UpdateTerms two_query_update(Distribution d = Distribution::gaussian,
                                      ZRecipe recipe = ZRecipe::v2) {
  kernels::UpdateTerms u;
  u.count = 2;
  u.decay = 1e-3f;
  for (int q = 0; q < 2; ++q) {
    u.stream[q] = PerturbationStream::make(7, 41, static_cast<std::uint32_t>(q), d, recipe);
    u.coefficient[q] = q == 0 ? 0.25e-2f : -0.5e-2f;
  }
  return u;
}

PerturbationStream stream(std::uint64_t seed, std::uint64_t step, std::uint32_t query,
                          Distribution d = Distribution::gaussian, ZRecipe recipe = ZRecipe::v2) {
  return PerturbationStream::make(seed, step, query, d, recipe);
}

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(PerturbUpdate, MatchesThePythonReferenceBitForBit) {
  // tests/data/z_recipe2.kat's update rows: θ of element e, and θ', w+, w-
  // after the pending update of step 41 fused with step 42's perturbation.
  std::ifstream in(std::string(DISTZO_TEST_DATA) + "/z_recipe2.kat");
  ASSERT_TRUE(in.good());
  std::string line;
  int rows = 0;
  const kernels::UpdateTerms u = two_query_update();
  const PerturbationStream now = stream(7, 42, 0);
  ExecSpace space;
  while (std::getline(in, line)) {
    std::istringstream is(line);
    std::string kind;
    is >> kind;
    if (kind != "update") continue;
    std::uint64_t element;
    std::uint32_t theta_bits, new_bits, plus_bits, minus_bits;
    is >> std::dec >> element >> std::hex >> theta_bits >> new_bits >> plus_bits >> minus_bits;
    ASSERT_FALSE(is.fail()) << line;
    // The element alone, as a one-element slice at its offset; and inside a
    // larger range, so the kernel's chunked path is the one exercised.
    for (std::uint64_t before : {std::uint64_t(0), std::uint64_t(5)}) {
      if (before > element) continue;
      const std::size_t n = static_cast<std::size_t>(before) + 1 + 200;
      Vec theta("theta", n), plus("plus", n), minus("minus", n);
      auto h = Kokkos::create_mirror_view(theta);
      for (std::size_t i = 0; i < n; ++i) h(i) = 0.5f;
      h(before) = from_bits(theta_bits);
      Kokkos::deep_copy(theta, h);
      kernels::update_and_perturb(space, theta, 5, element - before, u, now, 1e-3f, plus, minus);
      EXPECT_EQ(bits_of(to_host(theta)[before]), new_bits) << "θ' of element " << element;
      EXPECT_EQ(bits_of(to_host(plus)[before]), plus_bits) << "w+ of element " << element;
      EXPECT_EQ(bits_of(to_host(minus)[before]), minus_bits) << "w- of element " << element;
    }
    ++rows;
  }
  EXPECT_GE(rows, 8);
}

/// Both Gaussian recipes and Rademacher: the kernel must be the same
/// function of (θ, z) whatever makes z.
const std::pair<Distribution, ZRecipe> kKinds[] = {{Distribution::gaussian, ZRecipe::v2},
                                                   {Distribution::gaussian, ZRecipe::v1},
                                                   {Distribution::rademacher, ZRecipe::v2}};

TEST(PerturbUpdate, MatchesHostReference) {
  for (const auto& [dist, recipe] : kKinds) {
    const std::size_t n = 1003;  // not a multiple of 4
    const std::uint32_t id = 5;
    const std::uint64_t first = 6;  // starts mid-block
    ExecSpace space;
    Vec theta = make_theta(n, 0.1f), plus("plus", n), minus("minus", n);
    const std::vector<float> before = to_host(theta);
    const kernels::UpdateTerms u = two_query_update(dist, recipe);
    const PerturbationStream s = stream(7, 42, 0, dist, recipe);
    const float eps = 1e-3f;
    kernels::update_and_perturb(space, theta, id, first, u, s, eps, plus, minus);

    const std::vector<float> t = to_host(theta), p = to_host(plus), m = to_host(minus);
    double max_err = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t e = first + i;
      // Reference in double from the scalar generator, then compared with a
      // tolerance of a few float ulps of |θ| (the kernel works in float).
      double ref = before[i] - double(u.decay) * before[i];
      for (int q = 0; q < u.count; ++q) ref -= double(u.coefficient[q]) * u.stream[q].z(id, e);
      const double z = s.z(id, e);
      max_err = std::max({max_err, std::fabs(t[i] - ref), std::fabs(p[i] - (ref + eps * z)),
                          std::fabs(m[i] - (ref - eps * z))});
    }
    EXPECT_LT(max_err, 1e-6) << "max abs error against the double reference, " << to_string(dist)
                             << " recipe " << to_int(recipe);
  }
}

TEST(PerturbUpdate, NeverPerturbsThetaInPlace) {
  ExecSpace space;
  const std::size_t n = 257;
  Vec theta = make_theta(n, 0.0f), plus("plus", n), minus("minus", n);
  const std::vector<float> before = to_host(theta);
  const PerturbationStream s = stream(1, 2, 3, Distribution::rademacher);
  for (int round = 0; round < 5; ++round)
    kernels::update_and_perturb(space, theta, 0, 0, kernels::UpdateTerms(), s, 1e-2f, plus, minus);
  EXPECT_TRUE(same_bits(before, to_host(theta))) << "θ changed without an update";
  const std::vector<float> p = to_host(plus), m = to_host(minus);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_FLOAT_EQ(p[i], before[i] + 1e-2f * s.z(0, i));
    EXPECT_FLOAT_EQ(m[i], before[i] - 1e-2f * s.z(0, i));
  }
}

TEST(PerturbUpdate, SliceEqualsWhole) {
  for (const auto& [dist, recipe] : kKinds) {
    ExecSpace space;
    const std::size_t n = 999;
    const kernels::UpdateTerms u = two_query_update(dist, recipe);
    const PerturbationStream s = stream(3, 9, 1, dist, recipe);
    Vec whole = make_theta(n, 0.2f), whole_plus("wp", n);
    kernels::update_and_perturb(space, whole, 11, 0, u, s, 1e-3f, whole_plus, Vec());
    const std::vector<float> w = to_host(whole), wp = to_host(whole_plus);

    // Three uneven slices, processed in reverse order.
    const std::size_t cuts[] = {0, 333, 334, 999};
    const std::vector<float> init = to_host(make_theta(n, 0.2f));
    for (int part = 2; part >= 0; --part) {
      const std::size_t a = cuts[part], b = cuts[part + 1];
      Vec slice("slice", b - a), slice_plus("slice_plus", b - a);
      auto h = Kokkos::create_mirror_view(slice);
      for (std::size_t i = a; i < b; ++i) h(i - a) = init[i];
      Kokkos::deep_copy(slice, h);
      kernels::update_and_perturb(space, slice, 11, a, u, s, 1e-3f, slice_plus, Vec());
      const std::vector<float> st = to_host(slice), sp = to_host(slice_plus);
      EXPECT_TRUE(same_bits(st, std::vector<float>(w.begin() + a, w.begin() + b)))
          << "part " << part;
      EXPECT_TRUE(same_bits(sp, std::vector<float>(wp.begin() + a, wp.begin() + b)))
          << "part " << part;
    }
  }
}

TEST(PerturbUpdate, HostThreadsGiveTheBitsOfOneThread) {
  // On the host backends a large enough tensor is cut into chunks for the
  // host GEMM's threads (kernels/common.hpp for_each_index): the bits of
  // θ' and w± must be those of one thread, for odd offsets and lengths too.
  ExecSpace space;
  const std::size_t n = 300001;
  for (const auto& [dist, recipe] : kKinds) {
    const kernels::UpdateTerms u = two_query_update(dist, recipe);
    const PerturbationStream s = stream(5, 3, 0, dist, recipe);
    std::vector<std::vector<float>> got;
    for (const int threads : {1, 2, 3}) {
      kernels::set_gemm_threads(threads, kernels::GemmPath::tiled);
      Vec theta = make_theta(n, 0.1f), plus("plus", n), minus("minus", n);
      kernels::update_and_perturb(space, theta, 4, 7, u, s, 1e-3f, plus, minus);
      for (const Vec& v : {theta, plus, minus}) got.push_back(to_host(v));
    }
    kernels::set_gemm_threads(1, kernels::GemmPath::tiled);
    for (std::size_t i = 3; i < got.size(); ++i)
      EXPECT_TRUE(same_bits(got[i], got[i % 3])) << "output " << i % 3 << ", run " << i / 3;
  }
}

TEST(PerturbUpdate, FusedAndFlushedUpdatesAreBitIdentical) {
  ExecSpace space;
  const std::size_t n = 4097;
  const kernels::UpdateTerms u = two_query_update();
  Vec fused = make_theta(n, -0.3f), flushed = make_theta(n, -0.3f), plus("plus", n);
  kernels::update_and_perturb(space, fused, 2, 0, u, stream(7, 42, 0), 1e-3f, plus, Vec());
  kernels::apply_update(space, flushed, 2, 0, u);
  EXPECT_TRUE(same_bits(to_host(fused), to_host(flushed)));
}

TEST(PerturbUpdate, RowSelectionWritesOnlySelectedRowsAndUpdatesAll) {
  // A (13, 7) tensor: rows of 7 elements, so Philox blocks straddle rows.
  ExecSpace space;
  const std::size_t rows = 13, width = 7, n = rows * width;
  const kernels::UpdateTerms u = two_query_update();
  const PerturbationStream s = stream(5, 6, 0);
  Vec full = make_theta(n, 0.4f), full_plus("fp", n), full_minus("fm", n);
  kernels::update_and_perturb(space, full, 3, 0, u, s, 1e-3f, full_plus, full_minus);

  const std::vector<int> selected = {0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1};
  IntVec used("used", rows);
  auto hu = Kokkos::create_mirror_view(used);
  for (std::size_t r = 0; r < rows; ++r) hu(r) = selected[r];
  Kokkos::deep_copy(used, hu);
  const float stale = 123.0f;
  Vec part = make_theta(n, 0.4f), part_plus("pp", n), part_minus("pm", n);
  Kokkos::deep_copy(part_plus, stale);
  Kokkos::deep_copy(part_minus, stale);
  kernels::update_and_perturb(space, part, 3, 0, u, s, 1e-3f, part_plus, part_minus,
                              kernels::RowSelection{used, width});

  EXPECT_TRUE(same_bits(to_host(part), to_host(full))) << "the update must cover every row";
  const std::vector<float> fp = to_host(full_plus), fm = to_host(full_minus);
  const std::vector<float> pp = to_host(part_plus), pm = to_host(part_minus);
  for (std::size_t i = 0; i < n; ++i) {
    if (selected[i / width] != 0) {
      ASSERT_EQ(std::memcmp(&pp[i], &fp[i], sizeof(float)), 0) << "w+ element " << i;
      ASSERT_EQ(std::memcmp(&pm[i], &fm[i], sizeof(float)), 0) << "w- element " << i;
    } else {
      ASSERT_EQ(pp[i], stale) << "w+ of an unselected row written, element " << i;
      ASSERT_EQ(pm[i], stale) << "w- of an unselected row written, element " << i;
    }
  }
  // A selection that does not cover the tensor is rejected.
  EXPECT_THROW(kernels::update_and_perturb(space, part, 3, 0, u, s, 1e-3f, part_plus, part_minus,
                                           kernels::RowSelection{used, width - 1}),
               Error);
}

TEST(PerturbUpdate, UnperturbedOutputIsTheUpdatedThetaOnSelectedRows) {
  // A one-sided step's unperturbed w = θ': bit for bit the θ a flush
  // leaves, alone or beside w+ (whose bits it must not change), on the
  // selected rows only, at an offset that is not a Philox block's.
  ExecSpace space;
  const std::size_t rows = 11, width = 7, n = rows * width;
  const kernels::UpdateTerms u = two_query_update();
  const PerturbationStream s = stream(5, 6, 1);
  Vec flushed = make_theta(n, 0.2f);
  kernels::apply_update(space, flushed, 3, 5, u);
  Vec with_plus = make_theta(n, 0.2f), plus("p", n), plus_alone("pa", n), base("b", n);
  kernels::update_and_perturb(space, with_plus, 3, 5, u, s, 1e-3f,
                              kernels::PerturbedOutputs{plus, Vec(), base});
  EXPECT_TRUE(same_bits(to_host(base), to_host(flushed)));
  Vec plus_only = make_theta(n, 0.2f);
  kernels::update_and_perturb(space, plus_only, 3, 5, u, s, 1e-3f, plus_alone, Vec());
  EXPECT_TRUE(same_bits(to_host(plus), to_host(plus_alone)));

  const std::vector<int> selected = {1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 1};
  IntVec used("used", rows + 1);  // the slice starts 5 elements into row 0
  auto hu = Kokkos::create_mirror_view(used);
  const auto on = [&](std::size_t r) { return r < rows ? selected[r] : 0; };
  for (std::size_t r = 0; r <= rows; ++r) hu(r) = on(r);
  Kokkos::deep_copy(used, hu);
  const float stale = -7.0f;
  Vec alone = make_theta(n, 0.2f), part("part", n);
  Kokkos::deep_copy(part, stale);
  kernels::update_and_perturb(space, alone, 3, 5, u, s, 1e-3f,
                              kernels::PerturbedOutputs{Vec(), Vec(), part},
                              kernels::RowSelection{used, width});
  EXPECT_TRUE(same_bits(to_host(alone), to_host(flushed))) << "the update must cover every row";
  const std::vector<float> got = to_host(part), want = to_host(flushed);
  for (std::size_t i = 0; i < n; ++i)
    if (on((i + 5) / width) != 0)
      ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0) << "element " << i;
    else
      ASSERT_EQ(got[i], stale) << "an unselected row written, element " << i;
  // Outputs in two formats are refused.
  HalfVec words("words", n);
  EXPECT_THROW(
      kernels::update_and_perturb(
          space, alone, 3, 5, u, s, 1e-3f,
          kernels::PerturbedOutputs{plus, Vec(), StoredVec(StorageDtype::bf16, words.data(), n)}),
      Error);
}

TEST(PerturbUpdate, RejectsMismatchedScratch) {
  ExecSpace space;
  Vec theta("theta", 10), small("small", 9);
  EXPECT_THROW(kernels::update_and_perturb(space, theta, 0, 0, kernels::UpdateTerms(),
                                           stream(0, 0, 0), 1e-3f, small, Vec()),
               Error);
}

}  // namespace
