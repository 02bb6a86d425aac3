// The perturbation z = Z(seed, step, query, param_id, element) (DESIGN.md
// invariant 1): known answers from the Python reference (tools/z_reference.py)
// for both Gaussian recipes, recipe 2's error against the exact transform and
// its largest |z|, independence from chunking and order, distinct streams,
// and the statistics of both distributions.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/perturbation.hpp"
#include "core/types.hpp"
#include "support/normal_statistics.hpp"

namespace distzo_test_perturbation {

using distzo::fence;

using distzo::Distribution;
using distzo::PerturbationStream;
using distzo::real;
using distzo::ZRecipe;

/// The Gaussian under both recipes, and Rademacher (whose recipe is moot).
struct Kind {
  Distribution dist;
  ZRecipe recipe;
  std::string name() const {
    return std::string(distzo::to_string(dist)) +
           (dist == Distribution::gaussian ? " v" + std::to_string(distzo::to_int(recipe)) : "");
  }
};
const Kind kKinds[] = {{Distribution::gaussian, ZRecipe::v2},
                       {Distribution::gaussian, ZRecipe::v1},
                       {Distribution::rademacher, ZRecipe::v2}};

PerturbationStream make(std::uint64_t seed, std::uint64_t step, std::uint32_t query, Kind k) {
  return PerturbationStream::make(seed, step, query, k.dist, k.recipe);
}

constexpr bool kDeviceIsHost =
    std::is_same<distzo::ExecSpace, Kokkos::DefaultHostExecutionSpace>::value;

std::uint32_t float_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

// Distance in units in the last place between two finite floats of equal sign
// (or both within one ulp of zero); large when the signs differ.
std::int64_t ulp_distance(float a, float b) {
  auto ordered = [](float x) {
    const std::int64_t i = float_bits(x);
    return (i & 0x80000000) ? -(i & 0x7fffffff) : i;
  };
  const std::int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

std::vector<real> to_host(const distzo::Vec& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<real>(h.data(), h.data() + h.extent(0));
}

std::vector<real> fill(const PerturbationStream& s, std::uint32_t param_id, std::uint64_t first,
                       std::size_t n) {
  distzo::ExecSpace space;
  distzo::Vec out("distzo::test::z", n);
  distzo::fill_perturbation(space, out, s, param_id, first);
  fence(space, "distzo::test: perturbation ready for the host");
  return to_host(out);
}

// out(i) = s.z(param_id, first + i), the scalar function evaluated in a kernel.
std::vector<real> scalar_in_kernel(const PerturbationStream& s, std::uint32_t param_id,
                                   std::uint64_t first, std::size_t n) {
  distzo::ExecSpace space;
  distzo::Vec out("distzo::test::z_scalar", n);
  Kokkos::parallel_for(
      "distzo::test::z_scalar", Kokkos::RangePolicy<distzo::ExecSpace>(space, 0, n),
      KOKKOS_LAMBDA(const std::size_t i) { out(i) = s.z(param_id, first + i); });
  fence(space, "distzo::test: scalar z ready for the host");
  return to_host(out);
}

// Fills [0, n) chunk by chunk, each chunk into its subview of one output,
// visiting the chunks in the given order.
std::vector<real> fill_in_chunks(const PerturbationStream& s, std::uint32_t param_id, std::size_t n,
                                 const std::vector<std::size_t>& bounds,
                                 const std::vector<std::size_t>& order) {
  distzo::ExecSpace space;
  distzo::Vec out("distzo::test::z_chunks", n);
  for (std::size_t c : order) {
    const std::size_t a = bounds[c], b = bounds[c + 1];
    distzo::Vec part = Kokkos::subview(out, std::make_pair(a, b));
    distzo::fill_perturbation(space, part, s, param_id, a);
  }
  fence(space, "distzo::test: chunked perturbation ready for the host");
  return to_host(out);
}

void expect_bitwise_equal(const std::vector<real>& got, const std::vector<real>& want,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t mismatches = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (float_bits(got[i]) != float_bits(want[i]) && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << what << ": first mismatch at " << first << ": " << got[first]
                            << " vs " << want[first];
}

struct KnownAnswer {
  std::uint64_t seed, step;
  std::uint32_t query, param_id;
  std::uint64_t element;
  std::uint32_t key0, key1;  // stream key
  std::uint32_t gaussian_bits;
  float gaussian;  // the same value, for the failure message
  int rademacher;
};

// Recipe 1, produced by the Python reference (tools/z_reference.py, recipe=1:
// double-precision math.log/cos/sin, rounded to float32 with struct).
constexpr KnownAnswer kKnownAnswers[] = {
    {0x0ull, 0x0ull, 0x0u, 0x0u, 0x0ull, 0x27cac5a1u, 0xbf36e5ecu, 0x3f95aa4cu, 1.16925955f, -1},
    {0x123456789abcdefull, 0x3e8ull, 0x3u, 0x11u, 0x0ull, 0x76d3886cu, 0x667a1eb2u, 0x3dea44eau,
     0.114389256f, -1},
    {0x123456789abcdefull, 0x3e8ull, 0x3u, 0x11u, 0x1ull, 0x76d3886cu, 0x667a1eb2u, 0x3f0c076bu,
     0.546988189f, 1},
    {0x123456789abcdefull, 0x3e8ull, 0x3u, 0x11u, 0x2ull, 0x76d3886cu, 0x667a1eb2u, 0x3fe75a3au,
     1.807441f, 1},
    {0x123456789abcdefull, 0x3e8ull, 0x3u, 0x11u, 0x3ull, 0x76d3886cu, 0x667a1eb2u, 0xbfcd49e5u,
     -1.60381758f, -1},
    {0x123456789abcdefull, 0x3e8ull, 0x3u, 0x11u, 0x16ull, 0x76d3886cu, 0x667a1eb2u, 0xbe152529u,
     -0.145649567f, -1},
    {0x123456789abcdefull, 0x3e8ull, 0x3u, 0x11u, 0x400000002ull, 0x76d3886cu, 0x667a1eb2u,
     0xbf92e6fcu, -1.14767408f, -1},
    {0x123456789abcdefull, 0x3e8ull, 0x3u, 0x11u, 0xffffffffffffffffull, 0x76d3886cu, 0x667a1eb2u,
     0xbf2392f5u, -0.638961136f, -1},
    {0x2aull, 0x100000007ull, 0xffffffffu, 0xffffffffu, 0x75bcd15ull, 0x443f1ff6u, 0x976407aeu,
     0xbf5fc722u, -0.874132276f, -1},
    {0xffffffffffffffffull, 0xffffffffffffffffull, 0x1u, 0x2u, 0x5ull, 0x76ceaf17u, 0x6ad0910bu,
     0xbf7d4ccau, -0.989452958f, -1},
};

}  // namespace distzo_test_perturbation

using namespace distzo_test_perturbation;

TEST(Perturbation, DistributionNamesRoundTrip) {
  for (Distribution d : {Distribution::gaussian, Distribution::rademacher}) {
    EXPECT_EQ(distzo::parse_distribution(distzo::to_string(d)), d);
  }
  EXPECT_STREQ(distzo::to_string(Distribution::gaussian), "gaussian");
  EXPECT_STREQ(distzo::to_string(Distribution::rademacher), "rademacher");
}

TEST(Perturbation, UnknownDistributionNamesTheAllowedOnes) {
  for (const char* bad : {"normal", "Gaussian", "", "rademacher "}) {
    try {
      distzo::parse_distribution(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const distzo::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("gaussian, rademacher"), std::string::npos) << what;
    }
  }
}

TEST(Perturbation, StreamIsAPlainDeviceCopyableStruct) {
  static_assert(std::is_trivially_copyable<PerturbationStream>::value, "");
  static_assert(std::is_standard_layout<PerturbationStream>::value, "");
}

TEST(Perturbation, KnownAnswersRecipe1) {
  // Evaluated on the host, as the Python reference was: both use the platform's
  // double log/cos/sin, so the float results agree bit for bit. (Another libm
  // could differ by a double ulp, which changes the float about once in 10^8.)
  for (const KnownAnswer& k : kKnownAnswers) {
    const PerturbationStream g =
        PerturbationStream::make(k.seed, k.step, k.query, Distribution::gaussian, ZRecipe::v1);
    const PerturbationStream r =
        PerturbationStream::make(k.seed, k.step, k.query, Distribution::rademacher, ZRecipe::v1);
    EXPECT_EQ(g.key.k[0], k.key0) << "seed " << k.seed << " step " << k.step;
    EXPECT_EQ(g.key.k[1], k.key1) << "seed " << k.seed << " step " << k.step;
    const float z = g.z(k.param_id, k.element);
    float want;
    std::memcpy(&want, &k.gaussian_bits, sizeof(want));
    EXPECT_EQ(float_bits(z), k.gaussian_bits)
        << "element " << k.element << ": got " << z << ", want " << k.gaussian << " (ulp distance "
        << ulp_distance(z, want) << ")";
    EXPECT_EQ(r.z(k.param_id, k.element), static_cast<real>(k.rademacher))
        << "element " << k.element;
    EXPECT_EQ(float_bits(distzo::perturbation_z(k.seed, k.step, k.query, k.param_id, k.element,
                                                Distribution::gaussian, ZRecipe::v1)),
              k.gaussian_bits);
  }
}

TEST(Perturbation, KnownRawBlock) {
  const PerturbationStream s =
      PerturbationStream::make(0x0123456789ABCDEFull, 1000, 3, Distribution::gaussian, ZRecipe::v2);
  const distzo::PhiloxBlock w = s.bits(17, 5);
  EXPECT_EQ(w.v[0], 0x66e34086u);
  EXPECT_EQ(w.v[1], 0x42245a28u);
  EXPECT_EQ(w.v[2], 0xcf7771f1u);
  EXPECT_EQ(w.v[3], 0xb6c4d80eu);
}

TEST(Perturbation, ScalarEqualsEveryLaneOfZ4) {
  for (const Kind& d : kKinds) {
    const PerturbationStream s = make(7, 11, 2, d);
    const std::uint64_t blocks[] = {0, 1, 12345, (1ull << 32) + 3, (1ull << 62) - 1};
    for (std::uint64_t block : blocks) {
      real out[4];
      s.z4(9, block, out);
      for (unsigned l = 0; l < 4; ++l) {
        EXPECT_EQ(float_bits(s.z(9, 4 * block + l)), float_bits(out[l]))
            << d.name() << " block " << block << " lane " << l;
      }
    }
  }
}

TEST(Perturbation, BulkFillEqualsScalarFunction) {
  // Every alignment of the first element, and a range ending at 2^64 - 1.
  for (const Kind& d : kKinds) {
    const PerturbationStream s = make(2024, 5, 1, d);
    const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t firsts[] = {0, 1, 2, 3, 4, 1001, top - 10};
    for (std::uint64_t first : firsts) {
      const std::size_t n = first > top - 100 ? static_cast<std::size_t>(top - first + 1) : 37;
      const std::vector<real> bulk = fill(s, 4, first, n);
      // Same backend: the scalar function in a kernel gives the same bits.
      expect_bitwise_equal(bulk, scalar_in_kernel(s, 4, first, n),
                           std::string("fill vs scalar in kernel, ") + d.name() + ", first " +
                               std::to_string(first));
      // Host evaluation: identical on host backends and, with recipe 2, on
      // every backend; recipe 1 within a float ulp across backends.
      for (std::size_t i = 0; i < n; ++i) {
        const real host = s.z(4, first + i);
        if (kDeviceIsHost || d.recipe == ZRecipe::v2 || d.dist == Distribution::rademacher) {
          EXPECT_EQ(float_bits(bulk[i]), float_bits(host)) << "first " << first << " i " << i;
        } else {
          EXPECT_LE(ulp_distance(bulk[i], host), 1) << "first " << first << " i " << i;
        }
      }
    }
  }
}

TEST(Perturbation, EmptyFillIsANoOpAndOverflowIsAnError) {
  const PerturbationStream s =
      PerturbationStream::make(1, 2, 3, Distribution::gaussian, ZRecipe::v2);
  distzo::ExecSpace space;
  distzo::Vec empty("distzo::test::empty", 0);
  EXPECT_NO_THROW(
      distzo::fill_perturbation(space, empty, s, 0, std::numeric_limits<std::uint64_t>::max()));
  distzo::Vec two("distzo::test::two", 2);
  EXPECT_THROW(
      distzo::fill_perturbation(space, two, s, 0, std::numeric_limits<std::uint64_t>::max()),
      distzo::Error);
}

TEST(Perturbation, SubrangeEqualsTheSameRangeOfTheWholeTensor) {
  const std::size_t n = 1001;
  for (const Kind& d : kKinds) {
    const PerturbationStream s = make(99, 123456, 0, d);
    const std::vector<real> whole = fill(s, 31, 0, n);
    const std::pair<std::size_t, std::size_t> ranges[] = {{7, 778}, {1, 2},    {5, 7},      {9, 12},
                                                          {13, 14}, {0, 1001}, {998, 1001}, {3, 5}};
    for (const auto& [a, b] : ranges) {
      const std::vector<real> part = fill(s, 31, a, b - a);
      const std::vector<real> want(whole.begin() + static_cast<std::ptrdiff_t>(a),
                                   whole.begin() + static_cast<std::ptrdiff_t>(b));
      expect_bitwise_equal(
          part, want, d.name() + " range [" + std::to_string(a) + ", " + std::to_string(b) + ")");
    }
  }
}

TEST(Perturbation, ChunkAndBlockOrderChangeNothing) {
  const std::size_t n = 4099;
  // Chunk boundaries deliberately off the 4-element block grid.
  const std::vector<std::size_t> bounds = {0, 3, 5, 6, 333, 1027, 1029, 2050, 3001, 4098, n};
  const std::size_t chunks = bounds.size() - 1;
  std::vector<std::size_t> forward(chunks);
  std::iota(forward.begin(), forward.end(), 0);
  std::vector<std::size_t> reverse(forward.rbegin(), forward.rend());
  std::vector<std::size_t> shuffled = forward;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(12345));

  for (const Kind& d : kKinds) {
    const PerturbationStream s = make(5, 6, 7, d);
    const std::vector<real> whole = fill(s, 8, 0, n);
    const std::string name = d.name();
    expect_bitwise_equal(fill_in_chunks(s, 8, n, bounds, forward), whole, name + " forward");
    expect_bitwise_equal(fill_in_chunks(s, 8, n, bounds, reverse), whole, name + " reverse");
    expect_bitwise_equal(fill_in_chunks(s, 8, n, bounds, shuffled), whole, name + " shuffled");

    // Block by block on the host with z4, blocks visited in shuffled order.
    std::vector<std::uint64_t> blocks((n + 3) / 4);
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), std::mt19937(777));
    std::vector<real> by_block(n);
    for (std::uint64_t b : blocks) {
      real out[4];
      s.z4(8, b, out);
      for (std::uint64_t l = 0; l < 4 && 4 * b + l < n; ++l) by_block[4 * b + l] = out[l];
    }
    if (kDeviceIsHost || d.recipe == ZRecipe::v2 || d.dist == Distribution::rademacher) {
      expect_bitwise_equal(by_block, whole, name + " z4 in shuffled block order");
    } else {
      for (std::size_t i = 0; i < n; ++i) EXPECT_LE(ulp_distance(by_block[i], whole[i]), 1);
    }
  }
}

TEST(Perturbation, DifferentCoordinatesGiveDifferentStreams) {
  // Each variant changes one coordinate, including only the high 32 bits of the
  // seed, of the step and of the element (block) index.
  struct Coords {
    std::uint64_t seed, step;
    std::uint32_t query, param_id;
    std::uint64_t first;
    const char* what;
  };
  const Coords variants[] = {
      {1, 10, 0, 0, 0, "base"},
      {2, 10, 0, 0, 0, "seed"},
      {1 | (1ull << 32), 10, 0, 0, 0, "seed high word"},
      {1, 11, 0, 0, 0, "step"},
      {1, 10 | (1ull << 32), 0, 0, 0, "step high word"},
      {1, 10, 1, 0, 0, "query"},
      {1, 10, 0, 1, 0, "param id"},
      {1, 10, 0, 0, 1ull << 34, "element high word"},
      {10, 1, 0, 0, 0, "seed and step swapped"},
  };
  const std::size_t n = 4096;
  // Two independent samples of n pairs have |correlation| < 6/sqrt(n) = 0.094
  // except with probability ~1e-9.
  const double bound = 6.0 / std::sqrt(static_cast<double>(n));
  std::vector<std::vector<real>> samples;
  for (const Coords& v : variants) {
    const PerturbationStream s =
        PerturbationStream::make(v.seed, v.step, v.query, Distribution::gaussian, ZRecipe::v2);
    samples.push_back(fill(s, v.param_id, v.first, n));
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    for (std::size_t j = i + 1; j < samples.size(); ++j) {
      std::size_t equal = 0;
      double sxy = 0, sxx = 0, syy = 0;
      for (std::size_t e = 0; e < n; ++e) {
        equal += samples[i][e] == samples[j][e];
        sxy += double(samples[i][e]) * samples[j][e];
        sxx += double(samples[i][e]) * samples[i][e];
        syy += double(samples[j][e]) * samples[j][e];
      }
      EXPECT_EQ(equal, 0u) << variants[i].what << " vs " << variants[j].what;
      EXPECT_LT(std::fabs(sxy / std::sqrt(sxx * syy)), bound)
          << variants[i].what << " vs " << variants[j].what;
    }
  }
}

class GaussianRecipe : public ::testing::TestWithParam<ZRecipe> {};

TEST_P(GaussianRecipe, MomentsChiSquareAndKolmogorovSmirnov) {
  const std::size_t n = 1000000;
  const PerturbationStream s =
      PerturbationStream::make(31337, 42, 0, Distribution::gaussian, GetParam());
  // Start off the block grid so partial blocks are included.
  std::vector<real> z = fill(s, 3, 2, n);
  // Recipe 1: u1 >= 2^-32 bounds |z| by sqrt(64 ln 2); recipe 2: u1 >= 2^-30,
  // sqrt(60 ln 2).
  const double max_abs = std::sqrt((GetParam() == ZRecipe::v1 ? 64.0 : 60.0) * std::log(2.0));
  for (const distzo_test::NormalCheck& c : distzo_test::normal_checks(z, max_abs))
    EXPECT_TRUE(c.ok()) << c.name << " = " << c.value << ", bound " << c.bound;
}

INSTANTIATE_TEST_SUITE_P(Recipes, GaussianRecipe, ::testing::Values(ZRecipe::v1, ZRecipe::v2),
                         [](const auto& info) {
                           return "v" + std::to_string(distzo::to_int(info.param));
                         });

TEST(Perturbation, RademacherIsBalancedSigns) {
  const std::size_t n = 1000000;
  const PerturbationStream s =
      PerturbationStream::make(31337, 42, 0, Distribution::rademacher, ZRecipe::v2);
  const std::vector<real> z = fill(s, 3, 1, n);
  double sum = 0;
  double lane_sum[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(z[i] == real(1) || z[i] == real(-1)) << "z[" << i << "] = " << z[i];
    sum += z[i];
    lane_sum[(i + 1) % 4] += z[i];
  }
  // Each sign is +-1 with probability 1/2: sd(mean) = 1/sqrt(n); 6-sigma bound.
  const double dn = static_cast<double>(n);
  EXPECT_LT(std::fabs(sum / dn), 6.0 / std::sqrt(dn)) << "mean " << sum / dn;
  for (int l = 0; l < 4; ++l) {
    EXPECT_LT(std::fabs(lane_sum[l] / (dn / 4)), 6.0 / std::sqrt(dn / 4)) << "lane " << l;
  }
}

// ---------------------------------------------------------------------------
// Recipe 2

namespace distzo_test_perturbation {

struct KatRow {
  bool pair;  // a Box–Muller pair of words, else z at coordinates
  std::uint64_t seed = 0, step = 0, element = 0;
  std::uint32_t query = 0, param_id = 0, a = 0, b = 0;
  std::uint32_t bits = 0, odd_bits = 0;
};

/// tests/data/z_recipe2.kat, written by tools/z_reference.py.
std::vector<KatRow> read_kat() {
  std::ifstream in(std::string(DISTZO_TEST_DATA) + "/z_recipe2.kat");
  EXPECT_TRUE(in.good()) << "tests/data/z_recipe2.kat missing";
  std::vector<KatRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string kind;
    is >> kind;
    if (kind == "update") continue;  // tests/test_perturb_update.cpp reads those
    KatRow r;
    r.pair = kind == "pair";
    if (r.pair) {
      is >> std::hex >> r.a >> r.b >> r.bits >> r.odd_bits;
    } else {
      is >> std::dec >> r.seed >> r.step >> r.query >> r.param_id >> r.element >> std::hex >>
          r.bits;
    }
    EXPECT_FALSE(is.fail()) << "unreadable line: " << line;
    rows.push_back(r);
  }
  return rows;
}

/// Recipe-2 z at the coordinates of `rows`, each from one thread of a kernel
/// on the default execution space (a free function: CUDA lambdas cannot live
/// in a test body).
std::vector<real> recipe2_z_in_a_kernel(const std::vector<KatRow>& rows) {
  Kokkos::View<KatRow*, distzo::MemSpace> coords("distzo::test::kat", rows.size());
  Kokkos::View<real*, distzo::MemSpace> got("distzo::test::kat_z", rows.size());
  auto h = Kokkos::create_mirror_view(coords);
  for (std::size_t i = 0; i < rows.size(); ++i) h(i) = rows[i];
  Kokkos::deep_copy(coords, h);
  distzo::ExecSpace space;
  Kokkos::parallel_for(
      "distzo::test::kat_kernel", Kokkos::RangePolicy<distzo::ExecSpace>(space, 0, rows.size()),
      KOKKOS_LAMBDA(const std::size_t i) {
        const KatRow& r = coords(i);
        got(i) = distzo::perturbation_z(r.seed, r.step, r.query, r.param_id, r.element,
                                        Distribution::gaussian, ZRecipe::v2);
      });
  fence(space, "distzo::test: KAT results ready for the host");
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), got);
  return std::vector<real>(host.data(), host.data() + rows.size());
}

}  // namespace distzo_test_perturbation

TEST(Recipe2, KnownAnswersOnTheHostAndInAKernel) {
  const std::vector<KatRow> rows = read_kat();
  ASSERT_GE(rows.size(), 200u);
  // Host.
  for (const KatRow& r : rows) {
    if (r.pair) {
      real even, odd;
      distzo::perturbation_detail::box_muller_v2(r.a, r.b, even, odd);
      EXPECT_EQ(float_bits(even), r.bits) << std::hex << "pair " << r.a << " " << r.b;
      EXPECT_EQ(float_bits(odd), r.odd_bits) << std::hex << "pair " << r.a << " " << r.b;
    } else {
      EXPECT_EQ(float_bits(distzo::perturbation_z(r.seed, r.step, r.query, r.param_id, r.element,
                                                  Distribution::gaussian, ZRecipe::v2)),
                r.bits)
          << "seed " << r.seed << " step " << r.step << " element " << r.element;
    }
  }
  // The same coordinates in a kernel on the execution space: recipe 2 is
  // the same bits on every backend, so no tolerance here.
  std::vector<KatRow> zs;
  for (const KatRow& r : rows)
    if (!r.pair) zs.push_back(r);
  const std::vector<real> got = recipe2_z_in_a_kernel(zs);
  for (std::size_t i = 0; i < zs.size(); ++i)
    EXPECT_EQ(float_bits(got[i]), zs[i].bits) << "element " << zs[i].element << " in a kernel";
}

TEST(Recipe2, ErrorAgainstTheExactTransformIsBelow1e6) {
  // The exact Box–Muller (long double, libm) of recipe 2's own quantised
  // uniforms: u1 = float((a >> 2) + 1) * 2^-30, angle = q pi/2 + y pi/4.
  // What remains is the binary32 evaluation: stated bound 1e-6 (|z| <= 6.45,
  // so about two ulps at the largest |z|).
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  long double max_err = 0;
  std::uint32_t worst_a = 0, worst_b = 0;
  for (int i = 0; i < 1000000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::uint32_t a = static_cast<std::uint32_t>(x), b = static_cast<std::uint32_t>(x >> 32);
    if (i < 16) a = static_cast<std::uint32_t>(i) - 8u;  // u1 near 1 and near 2^-30
    real even, odd;
    distzo::perturbation_detail::box_muller_v2(a, b, even, odd);
    const long double u1 =
        static_cast<long double>(static_cast<float>(static_cast<std::int32_t>(a >> 2) + 1)) /
        1073741824.0L;
    const std::uint32_t v = b + 0x20000000u;
    const std::int32_t t = static_cast<std::int32_t>((v & 0x3FFFFFFFu) - 0x20000000u) >> 6;
    const long double pi = 3.141592653589793238462643383279502884L;
    const long double theta = pi * (static_cast<long double>(v >> 30) / 2.0L +
                                    static_cast<long double>(t) / 8388608.0L / 4.0L);
    const long double r = std::sqrt(-2.0L * std::log(u1));
    const long double err =
        std::max(std::fabs(even - r * std::cos(theta)), std::fabs(odd - r * std::sin(theta)));
    if (err > max_err) {
      max_err = err;
      worst_a = a;
      worst_b = b;
    }
  }
  EXPECT_LT(max_err, 1e-6L) << std::hex << "worst at a = " << worst_a << ", b = " << worst_b;
  EXPECT_GT(max_err, 0.0L) << "an exact match everywhere would mean the test compares z to itself";
}

TEST(Recipe2, LargestReachableZ) {
  // The smallest u1 is 2^-30 (a < 4); with the angle 0 (b = 0) z_even is the
  // radius itself, sqrt(60 ln 2) = 6.44894. No other words give more.
  real even, odd;
  distzo::perturbation_detail::box_muller_v2(0, 0, even, odd);
  EXPECT_NEAR(even, std::sqrt(60.0 * std::log(2.0)), 1e-6);
  EXPECT_EQ(odd, 0.0f);
  const float largest = even;
  for (std::uint32_t a = 0; a < 4; ++a) {
    distzo::perturbation_detail::box_muller_v2(a, 0, even, odd);
    EXPECT_EQ(even, largest) << "a = " << a;
  }
  // u1 = 1 (a >= 0xFFFFFFFC) gives z = 0.
  distzo::perturbation_detail::box_muller_v2(0xFFFFFFFFu, 0x12345678u, even, odd);
  EXPECT_EQ(even, 0.0f);
  EXPECT_EQ(odd, 0.0f);
  // Every radius is at most the largest: sampled over all of a's 2^30 values
  // in strides, r is monotonic in u1.
  for (std::uint64_t a = 0; a <= 0xFFFFFFFFull; a += 65537) {
    EXPECT_LE(distzo::perturbation_detail::radius_v2(static_cast<std::uint32_t>(a)), largest);
  }
}
