// The 2-byte storage of θ (core/storage_dtype.hpp): the known answers of the
// Python reference (tools/z_reference.py, exact rational arithmetic) on the
// host and in a kernel on the default execution space; decoding and round to
// nearest against a naive table of all 65536 words in double precision; the
// properties of stochastic rounding (always one of the two neighbours, exact
// values unchanged, P(hi) exactly the fraction over every value of the
// random bits that matter, unbiased mean); the random word's block form.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/perturbation.hpp"
#include "core/storage_dtype.hpp"
#include "core/types.hpp"

namespace distzo_test_storage {

using distzo::Rounding;
using distzo::RoundingStream;
using distzo::StorageDtype;
namespace storage = distzo::storage;

std::uint32_t float_bits(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

float bits_float(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// ---- a naive model of the two formats, in double ----------------------------

/// One 16-bit format by its fields (not by the header's bit tricks).
struct Format {
  StorageDtype dtype;
  int mantissa_bits, exponent_bits, bias;
  const char* name;

  int exponent_mask() const { return (1 << exponent_bits) - 1; }
  std::uint16_t inf() const { return static_cast<std::uint16_t>(exponent_mask() << mantissa_bits); }
  std::uint16_t max_finite() const { return static_cast<std::uint16_t>(inf() - 1); }
  /// 2^(emax + 1): the first magnitude with no finite neighbour above.
  double beyond() const { return std::ldexp(1.0, exponent_mask() - bias); }

  /// The value of a word, from the IEEE definition; NaN for NaN words.
  double value(std::uint16_t w) const {
    const int e = (w >> mantissa_bits) & exponent_mask();
    const int m = w & ((1 << mantissa_bits) - 1);
    const double sign = (w & 0x8000u) != 0 ? -1.0 : 1.0;
    if (e == exponent_mask())
      return m == 0 ? sign * std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::quiet_NaN();
    if (e == 0) return sign * std::ldexp(m, 1 - bias - mantissa_bits);
    return sign * std::ldexp((1 << mantissa_bits) + m, e - bias - mantissa_bits);
  }

  std::uint16_t nearest(float x) const {
    return dtype == StorageDtype::bf16 ? storage::bf16_nearest(x) : storage::fp16_nearest(x);
  }
  std::uint16_t stochastic(float x, std::uint32_t r) const {
    return dtype == StorageDtype::bf16 ? storage::bf16_stochastic(x, r)
                                       : storage::fp16_stochastic(x, r);
  }
  float decode(std::uint16_t w) const {
    return dtype == StorageDtype::bf16 ? storage::decode_bf16(w) : storage::decode_fp16(w);
  }
};

const Format kBf16{StorageDtype::bf16, 7, 8, 127, "bf16"};
const Format kFp16{StorageDtype::fp16, 10, 5, 15, "fp16"};
const Format kFormats[] = {kBf16, kFp16};

/// The positive finite values of a format, by word: increasing.
std::vector<double> positive_values(const Format& f) {
  std::vector<double> v;
  for (std::uint32_t w = 0; w <= f.max_finite(); ++w)
    v.push_back(f.value(static_cast<std::uint16_t>(w)));
  return v;
}

/// The neighbours of a finite |x| in a table: lo = the largest value <= |x|
/// (its word), hi = the next one (its value may be beyond(): no word).
struct Neighbours {
  std::uint16_t lo_word;
  double lo, hi;
};
Neighbours neighbours(const Format& f, const std::vector<double>& table, double ax) {
  const auto it = std::upper_bound(table.begin(), table.end(), ax);
  const std::size_t i = static_cast<std::size_t>(it - table.begin()) - 1;
  const double hi = i + 1 < table.size() ? table[i + 1] : f.beyond();
  return Neighbours{static_cast<std::uint16_t>(i), table[i], hi};
}

/// Round to nearest, ties to even, by comparing distances in double (exact:
/// x, lo and hi are floats no further apart than the format's spacing).
std::uint16_t naive_nearest(const Format& f, const std::vector<double>& table, float x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  const double ax = std::fabs(static_cast<double>(x));
  if (std::isinf(x)) return static_cast<std::uint16_t>(sign | f.inf());
  if (ax >= f.beyond()) return static_cast<std::uint16_t>(sign | f.inf());
  const Neighbours n = neighbours(f, table, ax);
  const double below = ax - n.lo, above = n.hi - ax;
  const bool up = above < below || (above == below && (n.lo_word & 1u) != 0);
  return static_cast<std::uint16_t>(sign | (n.lo_word + (up ? 1 : 0)));  // lo = max: +1 is inf
}

/// Random float bit patterns with every exponent equally likely (so
/// subnormals, fp16's range edges and bf16's top are all visited), both signs.
std::uint32_t random_float_bits(std::mt19937_64& rng) {
  const std::uint64_t u = rng();
  const std::uint32_t exponent = static_cast<std::uint32_t>(u % 255);  // 0 .. 254: finite
  return (static_cast<std::uint32_t>(u >> 8) & 0x807FFFFFu) | (exponent << 23);
}

// ---- the known answers ---------------------------------------------------------

enum class Kind : std::uint8_t { decode, round, bits, store };

struct KatRow {
  Kind kind;
  StorageDtype dtype;
  std::uint64_t seed, step, element;
  std::uint32_t param_id, x, r, word, nearest, stochastic;
};

/// tests/data/storage_rounding.kat, written by tools/z_reference.py.
std::vector<KatRow> read_kat() {
  std::ifstream in(std::string(DISTZO_TEST_DATA) + "/storage_rounding.kat");
  EXPECT_TRUE(in.good()) << "tests/data/storage_rounding.kat missing";
  std::vector<KatRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string kind, dtype;
    is >> kind;
    KatRow r{};
    if (kind == "update") continue;  // the fused kernel's rows: test_perturb_update_half
    if (kind == "decode") {
      r.kind = Kind::decode;
      is >> dtype >> std::hex >> r.word >> r.x;  // x: the float bits of the word
    } else if (kind == "round") {
      r.kind = Kind::round;
      is >> dtype >> std::hex >> r.x >> r.r >> r.nearest >> r.stochastic;
    } else if (kind == "bits") {
      r.kind = Kind::bits;
      is >> std::dec >> r.seed >> r.step >> r.param_id >> r.element >> std::hex >> r.word;
    } else {
      EXPECT_EQ(kind, "store") << "unknown row: " << line;
      r.kind = Kind::store;
      is >> dtype >> std::dec >> r.seed >> r.step >> r.param_id >> r.element >> std::hex >> r.x >>
          r.stochastic;
    }
    EXPECT_FALSE(is.fail()) << "unreadable line: " << line;
    if (!dtype.empty()) r.dtype = distzo::parse_storage_dtype(dtype);
    rows.push_back(r);
  }
  return rows;
}

/// What the header computes for a row, on the host or on the device: two words.
KOKKOS_INLINE_FUNCTION void evaluate(const KatRow& r, std::uint32_t& first, std::uint32_t& second) {
  switch (r.kind) {
    case Kind::decode:
      first = distzo::fp::to_bits(storage::load(r.word, r.dtype));
      second = first;
      break;
    case Kind::round:
      first = storage::store(distzo::fp::from_bits(r.x), r.dtype, Rounding::nearest, r.r);
      second = storage::store(distzo::fp::from_bits(r.x), r.dtype, Rounding::stochastic, r.r);
      break;
    case Kind::bits: {
      first = distzo::rounding_bits(r.seed, r.step, r.param_id, r.element);
      std::uint32_t block[4];
      RoundingStream::make(r.seed, r.step).words_n<1>(r.param_id, r.element >> 2, block);
      second = block[r.element & 3u];
      break;
    }
    case Kind::store: {
      const std::uint32_t word = RoundingStream::make(r.seed, r.step).word(r.param_id, r.element);
      first = storage::store(distzo::fp::from_bits(r.x), r.dtype, Rounding::stochastic, word);
      second = storage::store(storage::round_to_storage(distzo::fp::from_bits(r.x), r.dtype,
                                                        Rounding::stochastic, word),
                              r.dtype, Rounding::nearest, 0u);  // a stored value is exact
      break;
    }
  }
}

/// The words a row should give.
void expected(const KatRow& r, std::uint32_t& first, std::uint32_t& second) {
  switch (r.kind) {
    case Kind::decode:
      first = second = r.x;
      break;
    case Kind::round:
      first = r.nearest;
      second = r.stochastic;
      break;
    case Kind::bits:
      first = second = r.word;
      break;
    case Kind::store:
      first = second = r.stochastic;
      break;
  }
}

/// evaluate() of every row, each from one thread of a kernel on the default
/// execution space (a free function: CUDA lambdas cannot live in a test body).
std::vector<std::uint32_t> evaluate_in_a_kernel(const std::vector<KatRow>& rows) {
  Kokkos::View<KatRow*, distzo::MemSpace> in("distzo::test::storage_kat", rows.size());
  Kokkos::View<std::uint32_t* [2], distzo::MemSpace> out("distzo::test::storage_kat_out",
                                                         rows.size());
  auto h = Kokkos::create_mirror_view(in);
  for (std::size_t i = 0; i < rows.size(); ++i) h(i) = rows[i];
  Kokkos::deep_copy(in, h);
  distzo::ExecSpace space;
  Kokkos::parallel_for(
      "distzo::test::storage_kat_kernel",
      Kokkos::RangePolicy<distzo::ExecSpace>(space, 0, rows.size()),
      KOKKOS_LAMBDA(const std::size_t i) { evaluate(in(i), out(i, 0), out(i, 1)); });
  distzo::fence(space, "distzo::test: storage KAT results ready for the host");
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  std::vector<std::uint32_t> got(2 * rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    got[2 * i] = host(i, 0), got[2 * i + 1] = host(i, 1);
  return got;
}

std::string describe(const KatRow& r) {
  std::ostringstream os;
  static const char* kinds[] = {"decode", "round", "bits", "store"};
  os << kinds[static_cast<int>(r.kind)] << " " << distzo::to_string(r.dtype) << std::hex << " x "
     << r.x << " r " << r.r << " word " << r.word << std::dec << " seed " << r.seed << " step "
     << r.step << " param " << r.param_id << " element " << r.element;
  return os.str();
}

}  // namespace distzo_test_storage

using namespace distzo_test_storage;

TEST(StorageDtype, NamesRoundTripAndSizes) {
  for (StorageDtype d : {StorageDtype::fp32, StorageDtype::bf16, StorageDtype::fp16})
    EXPECT_EQ(distzo::parse_storage_dtype(distzo::to_string(d)), d);
  for (Rounding r : {Rounding::nearest, Rounding::stochastic})
    EXPECT_EQ(distzo::parse_rounding(distzo::to_string(r)), r);
  EXPECT_STREQ(distzo::to_string(StorageDtype::bf16), "bf16");
  EXPECT_STREQ(distzo::to_string(Rounding::stochastic), "stochastic");
  static_assert(distzo::bytes_per_element(StorageDtype::fp32) == 4, "");
  static_assert(distzo::bytes_per_element(StorageDtype::bf16) == 2, "");
  static_assert(distzo::bytes_per_element(StorageDtype::fp16) == 2, "");
}

TEST(StorageDtype, UnknownNamesListTheAllowedOnes) {
  for (const char* bad : {"float16", "BF16", "", "fp16 ", "half"}) {
    try {
      distzo::parse_storage_dtype(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted as a dtype";
    } catch (const distzo::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("allowed: fp32, bf16, fp16"), std::string::npos) << what;
    }
    try {
      distzo::parse_rounding(bad);
      ADD_FAILURE() << "'" << bad << "' was accepted as a rounding";
    } catch (const distzo::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("allowed: nearest, stochastic"), std::string::npos) << what;
    }
  }
}

TEST(StorageDtype, RoundingStreamIsAPlainDeviceCopyableStruct) {
  static_assert(std::is_trivially_copyable<RoundingStream>::value, "");
  static_assert(std::is_standard_layout<RoundingStream>::value, "");
  static_assert(sizeof(RoundingStream) == 8, "");
}

TEST(StorageDtype, KnownAnswersOnTheHostAndInAKernel) {
  const std::vector<KatRow> rows = read_kat();
  ASSERT_GE(rows.size(), 900u);
  std::size_t kinds[4] = {};
  for (const KatRow& r : rows) {
    ++kinds[static_cast<int>(r.kind)];
    std::uint32_t got0 = 0, got1 = 0, want0 = 0, want1 = 0;
    evaluate(r, got0, got1);
    expected(r, want0, want1);
    EXPECT_EQ(got0, want0) << std::hex << describe(r) << ": got " << got0 << ", want " << want0;
    EXPECT_EQ(got1, want1) << std::hex << describe(r) << ": got " << got1 << ", want " << want1;
  }
  for (std::size_t k : kinds) EXPECT_GT(k, 0u) << "a kind of row is missing";
  // The same rows in a kernel: every function is integer arithmetic (and one
  // exact multiply), so no tolerance on any backend.
  const std::vector<std::uint32_t> got = evaluate_in_a_kernel(rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::uint32_t want0 = 0, want1 = 0;
    expected(rows[i], want0, want1);
    EXPECT_EQ(got[2 * i], want0) << std::hex << describe(rows[i]) << " in a kernel";
    EXPECT_EQ(got[2 * i + 1], want1) << std::hex << describe(rows[i]) << " in a kernel";
  }
}

TEST(StorageDtype, EveryWordDecodesExactlyAndEncodesBackToItself) {
  for (const Format& f : kFormats) {
    const std::uint16_t quiet = static_cast<std::uint16_t>(1u << (f.mantissa_bits - 1));
    for (std::uint32_t i = 0; i < 65536; ++i) {
      const std::uint16_t w = static_cast<std::uint16_t>(i);
      const float x = f.decode(w);
      const double want = f.value(w);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(x)) << f.name << " word " << std::hex << i;
        // Payload and sign kept; re-encoding sets the quiet bit, both roundings.
        EXPECT_EQ(f.nearest(x), w | quiet) << f.name << " NaN word " << std::hex << i;
        EXPECT_EQ(f.stochastic(x, 0u), w | quiet) << f.name << " NaN word " << std::hex << i;
        continue;
      }
      ASSERT_EQ(static_cast<double>(x), want) << f.name << " word " << std::hex << i;
      ASSERT_EQ(std::signbit(x), (w & 0x8000u) != 0) << f.name << " word " << std::hex << i;
      ASSERT_EQ(f.nearest(x), w) << f.name << " word " << std::hex << i;
      // An exact value never moves, whatever the random word.
      for (std::uint32_t r : {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu})
        ASSERT_EQ(f.stochastic(x, r), w) << f.name << " word " << std::hex << i << " r " << r;
      ASSERT_EQ(storage::store(x, f.dtype, Rounding::stochastic, 0u), w);
      ASSERT_EQ(float_bits(storage::load(w, f.dtype)), float_bits(x));
    }
  }
}

TEST(StorageDtype, NearestPicksTheNearerNeighbourTiesToEven) {
  // Against the naive table: 2^20 random floats over every exponent, and a
  // sweep of all 2^32 patterns with a stride coprime to every field width.
  std::mt19937_64 rng(20261201);
  std::vector<std::uint32_t> xs;
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(random_float_bits(rng));
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 4099)
    xs.push_back(static_cast<std::uint32_t>(b));
  for (const Format& f : kFormats) {
    const std::vector<double> table = positive_values(f);
    std::size_t checked = 0, ties = 0;
    for (std::uint32_t b : xs) {
      const float x = bits_float(b);
      if (std::isnan(x)) continue;
      const std::uint16_t want = naive_nearest(f, table, x);
      ASSERT_EQ(f.nearest(x), want) << f.name << std::hex << " x bits " << b;
      ++checked;
      if ((b & 0x7FFFFFFFu) < 0x7F800000u) {
        const double ax = std::fabs(static_cast<double>(x));
        if (ax < f.beyond()) {
          const Neighbours n = neighbours(f, table, ax);
          ties += ax - n.lo == n.hi - ax;
        }
      }
    }
    EXPECT_GT(checked, 1000000u) << f.name;
    // Ties (2^-16 of bf16's inputs, 2^-13 of fp16's) were among them; the KAT
    // has more, chosen.
    EXPECT_GT(ties, 10u) << f.name;
  }
}

TEST(StorageDtype, StochasticIsAlwaysOneOfTheTwoNeighboursAndOddInX) {
  std::mt19937_64 rng(7);
  for (const Format& f : kFormats) {
    const std::vector<double> table = positive_values(f);
    for (int i = 0; i < (1 << 20); ++i) {
      const std::uint32_t b = random_float_bits(rng);
      const std::uint32_t r = static_cast<std::uint32_t>(rng());
      const float x = bits_float(b);
      const std::uint16_t got = f.stochastic(x, r);
      const std::uint16_t sign = (b & 0x80000000u) != 0 ? 0x8000u : 0u;
      const double ax = std::fabs(static_cast<double>(x));
      std::uint16_t lo = f.max_finite(), hi = f.max_finite();  // beyond: saturates
      if (ax < f.beyond()) {
        const Neighbours n = neighbours(f, table, ax);
        lo = n.lo_word;
        hi = n.lo == ax ? n.lo_word
                        : std::min<std::uint16_t>(static_cast<std::uint16_t>(n.lo_word + 1),
                                                  f.max_finite());
      }
      ASSERT_TRUE(got == (sign | lo) || got == (sign | hi))
          << f.name << std::hex << " x bits " << b << " r " << r << ": got " << got << ", lo " << lo
          << ", hi " << hi;
      ASSERT_NE(got & 0x7FFFu, static_cast<unsigned>(f.inf()))
          << f.name << ": a finite x became inf, bits " << std::hex << b;
      // Rounding -x is rounding x with the sign flipped: SR is symmetric about 0.
      ASSERT_EQ(f.stochastic(bits_float(b ^ 0x80000000u), r), got ^ 0x8000u);
    }
  }
}

namespace distzo_test_storage {

/// Over every value t of the top `width` bits of r (the low bits set to
/// arbitrary values), how often SR of x rounds away from zero; and what the
/// naive neighbours say it must be: (|x| - lo) / (hi - lo) * 2^width.
void expect_exact_probability(const Format& f, const std::vector<double>& table, float x,
                              int width) {
  const double ax = std::fabs(static_cast<double>(x));
  const Neighbours n = neighbours(f, table, ax);
  const double scaled = (ax - n.lo) / (n.hi - n.lo) * std::ldexp(1.0, width);  // exact: powers of 2
  ASSERT_EQ(scaled, std::floor(scaled))
      << f.name << " x " << x << ": the dropped part is wider than " << width << " bits";
  std::uint64_t ups = 0;
  std::uint32_t noise = 0x9E3779B9u;
  const std::uint16_t lo_word = f.stochastic(x, 0xFFFFFFFFu);  // r = max: lo whenever F < 2^32
  for (std::uint64_t t = 0; t < (std::uint64_t{1} << width); ++t) {
    noise = noise * 1664525u + 1013904223u;
    const std::uint32_t low = width == 32 ? 0u : noise >> width;
    const std::uint32_t r = static_cast<std::uint32_t>(t << (32 - width)) | low;
    const std::uint16_t got = f.stochastic(x, r);
    ASSERT_TRUE(got == lo_word || got == lo_word + 1) << f.name << " x " << x;
    ups += got != lo_word;
  }
  EXPECT_EQ(static_cast<double>(ups), scaled)
      << f.name << " x " << x << " (bits " << std::hex << float_bits(x) << std::dec << "): " << ups
      << " of 2^" << width << " random words round up";
}

}  // namespace distzo_test_storage

TEST(StorageDtype, StochasticRoundsUpWithExactlyTheDroppedFraction) {
  std::mt19937_64 rng(99);
  const std::vector<double> bf16 = positive_values(kBf16), fp16 = positive_values(kFp16);
  // bf16 drops 16 bits everywhere (float subnormals too); fp16 drops 13 in
  // its normal range and 14 + k for results 2^-k below its smallest normal.
  for (int i = 0; i < 40; ++i) {
    std::uint32_t b = random_float_bits(rng);
    if ((b & 0x7F800000u) == 0x7F000000u) b &= ~0x00800000u;  // keep below bf16's saturation
    expect_exact_probability(kBf16, bf16, bits_float(b), 16);
  }
  for (std::uint32_t b : {0x00000001u, 0x00012345u, 0x3F808000u, 0xBF8000FFu})
    expect_exact_probability(kBf16, bf16, bits_float(b), 16);
  for (int i = 0; i < 40; ++i) {
    // |x| in [2^-14, 2^15): normal fp16 results.
    const std::uint32_t e =
        113 + static_cast<std::uint32_t>(rng() % 29);  // below 2^15: no saturation
    const std::uint32_t b = (static_cast<std::uint32_t>(rng()) & 0x807FFFFFu) | (e << 23);
    expect_exact_probability(kFp16, fp16, bits_float(b), 13);
  }
  // Subnormal results: 2^-15 .. 2^-20 (14 to 19 dropped bits), and the tie at 2^-25.
  for (int k = 1; k <= 6; ++k) {
    const std::uint32_t e = 113 - static_cast<std::uint32_t>(k);
    const std::uint32_t b = (static_cast<std::uint32_t>(rng()) & 0x807FFFFFu) | (e << 23);
    expect_exact_probability(kFp16, fp16, bits_float(b), 13 + k);
  }
  expect_exact_probability(kFp16, fp16, 0x1p-25f, 1);
  expect_exact_probability(kFp16, fp16, -0x1.8p-24f, 1);
}

TEST(StorageDtype, EdgesOfStochasticRounding) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::uint32_t r : {0u, 0x80000000u, 0xFFFFFFFFu}) {
    // Beyond the largest finite: saturate, never inf.
    EXPECT_EQ(storage::fp16_stochastic(65519.0f, r), 0x7BFFu);
    EXPECT_EQ(storage::fp16_stochastic(-65535.0f, r), 0xFBFFu);
    EXPECT_EQ(storage::fp16_stochastic(1.0e30f, r), 0x7BFFu);
    EXPECT_EQ(storage::fp16_stochastic(std::numeric_limits<float>::max(), r), 0x7BFFu);
    EXPECT_EQ(storage::bf16_stochastic(std::numeric_limits<float>::max(), r), 0x7F7Fu);
    EXPECT_EQ(storage::bf16_stochastic(-std::numeric_limits<float>::max(), r), 0xFF7Fu);
    // Non-finite as round to nearest.
    EXPECT_EQ(storage::fp16_stochastic(inf, r), 0x7C00u);
    EXPECT_EQ(storage::fp16_stochastic(-inf, r), 0xFC00u);
    EXPECT_EQ(storage::bf16_stochastic(-inf, r), 0xFF80u);
    EXPECT_EQ(storage::fp16_stochastic(nan, r), storage::fp16_nearest(nan));
    EXPECT_EQ(storage::bf16_stochastic(-nan, r), storage::bf16_nearest(-nan));
    // Underflow keeps the sign.
    EXPECT_EQ(storage::fp16_stochastic(-1.0e-30f, r), 0x8000u);
    EXPECT_EQ(storage::fp16_stochastic(1.0e-30f, r), 0x0000u);
  }
  // Round to nearest overflows as IEEE: 65520 is the tie, to even = inf.
  EXPECT_EQ(storage::fp16_nearest(65519.996f), 0x7BFFu);
  EXPECT_EQ(storage::fp16_nearest(65520.0f), 0x7C00u);
  EXPECT_EQ(storage::fp16_nearest(-1.0e30f), 0xFC00u);
  EXPECT_EQ(storage::bf16_nearest(std::numeric_limits<float>::max()), 0x7F80u);
  // Signalling NaN with payload only in the low bits stays a NaN.
  EXPECT_TRUE(std::isnan(storage::decode_bf16(storage::bf16_nearest(bits_float(0x7F800001u)))));
  EXPECT_TRUE(std::isnan(storage::decode_fp16(storage::fp16_nearest(bits_float(0xFF800001u)))));
  // fp32 storage: the float's bits, whatever the rounding.
  for (float x : {0.1f, -0.0f, inf, 1.0e-40f}) {
    EXPECT_EQ(storage::store(x, StorageDtype::fp32, Rounding::stochastic, 0u), float_bits(x));
    EXPECT_EQ(float_bits(storage::round_to_storage(x, StorageDtype::fp32, Rounding::nearest, 7u)),
              float_bits(x));
  }
}

TEST(StorageDtype, StochasticMeanOverRandomWordsIsX) {
  // n elements of one parameter, each rounded with its own rounding_bits:
  // each result is lo + (hi - lo) B with B Bernoulli(p), E = x exactly. By
  // Hoeffding, P(|mean - x| >= t) <= 2 exp(-2 n t^2 / (hi - lo)^2); with
  // t = (hi - lo) sqrt(ln(2 / 1e-12) / (2n)) a fair generator fails with
  // probability below 1e-12 (and these fixed words either pass or not, for good).
  constexpr int kBlocksPerCall = 32;
  constexpr std::uint64_t n = 1u << 20;
  const RoundingStream s = RoundingStream::make(2026, 41);
  std::vector<std::uint32_t> words(n);
  for (std::uint64_t b = 0; b < n / 4; b += kBlocksPerCall)
    s.words_n<kBlocksPerCall>(3, b, &words[4 * b]);
  const double bound = std::sqrt(std::log(2.0 / 1e-12) / (2.0 * static_cast<double>(n)));
  const float xs[] = {0.1f, -1.7f, 3.0e-5f, 1.0f + 0x1p-20f, 2.9e-7f, 1.0e-3f, -60000.5f};
  for (const Format& f : kFormats) {
    const std::vector<double> table = positive_values(f);
    for (float x : xs) {
      const Neighbours nb = neighbours(f, table, std::fabs(static_cast<double>(x)));
      double sum = 0;
      for (std::uint64_t i = 0; i < n; ++i)
        sum += static_cast<double>(f.decode(f.stochastic(x, words[i])));
      const double mean = sum / static_cast<double>(n);
      EXPECT_LE(std::fabs(mean - static_cast<double>(x)), bound * (nb.hi - nb.lo))
          << f.name << " x " << x << ": mean " << mean << ", neighbours " << nb.lo << " and "
          << nb.hi << " (sign aside)";
    }
  }
}

TEST(StorageDtype, RoundingWordsBlockFormEqualsTheScalarForm) {
  const RoundingStream s = RoundingStream::make(0x0123456789ABCDEFull, 1000);
  const std::uint64_t top_block = (std::numeric_limits<std::uint64_t>::max() >> 2) - 31;
  for (std::uint64_t first :
       {std::uint64_t{0}, std::uint64_t{12345}, (std::uint64_t{1} << 32) - 3, top_block}) {
    std::uint32_t out32[4 * 32], out1[4];
    s.words_n<32>(17, first, out32);
    for (std::uint64_t i = 0; i < 32; ++i) {
      s.words_n<1>(17, first + i, out1);
      const distzo::PhiloxBlock w = s.bits(17, first + i);
      for (unsigned l = 0; l < 4; ++l) {
        const std::uint64_t e = 4 * (first + i) + l;
        EXPECT_EQ(out32[4 * i + l], s.word(17, e)) << "element " << e;
        EXPECT_EQ(out1[l], w.v[l]) << "element " << e;
        EXPECT_EQ(s.word(17, e), distzo::rounding_bits(0x0123456789ABCDEFull, 1000, 17, e));
      }
    }
  }
}

TEST(StorageDtype, RoundingWordsAreNotTheWordsOfZ) {
  // Same seed, step and coordinates: the tags make different streams.
  for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{7}, ~std::uint64_t{0}}) {
    const RoundingStream r = RoundingStream::make(seed, 41);
    const distzo::PerturbationStream z = distzo::PerturbationStream::make(
        seed, 41, 0, distzo::Distribution::gaussian, distzo::ZRecipe::v2);
    EXPECT_FALSE(r.key.k[0] == z.key.k[0] && r.key.k[1] == z.key.k[1]) << "seed " << seed;
    const distzo::PhiloxBlock a = r.bits(5, 9), b = z.bits(5, 9);
    EXPECT_NE(std::memcmp(&a, &b, sizeof a), 0) << "seed " << seed;
  }
}
