#pragma once
// Small learnable datasets for tests, benchmarks and the demo, generated
// deterministically from a seed with Philox (core/philox.hpp) and integer
// arithmetic only, so the same seed gives the same bytes on every platform.
// The recipes are spelled out in docs/datasets.md ("Synthetic datasets").

#include <cstdint>

#include "io/dataset.hpp"

namespace distzo::io {

/// Token ids the synthetic datasets reserve at the bottom of the vocabulary.
namespace synthetic {
constexpr std::int32_t kPad = 0;      // pad_token_id
constexpr std::int32_t kMarkerA = 1;  // classification: marker of label 0
constexpr std::int32_t kMarkerB = 2;  // classification: marker of label 1
constexpr std::int32_t kWordA = 3;    // classification: candidate 0 (label word of A)
constexpr std::int32_t kWordB = 4;    // classification: candidate 1 (label word of B)
constexpr std::int32_t kQuery = 5;    // classification: last prompt token ("Answer:")
constexpr std::int32_t kFirstFiller = 6;
/// Philox domain-separation tags (ASCII "SYNC", "SYNL").
constexpr std::uint32_t kClassificationTag = 0x53594E43u;
constexpr std::uint32_t kCausalLmTag = 0x53594E4Cu;
}  // namespace synthetic

/// Classification: example i has length L in [max(2, ceil(T/2)), T]; positions
/// 0..L-2 are filler ids from [6, vocab_size) except one position holding
/// marker A (label 0) or marker B (label 1); position L-1 is kQuery, where
/// the model predicts candidates = {kWordA, kWordB}. Learnable: the answer is
/// whichever marker the last token can attend to. Needs seq_len >= 2 and
/// vocab_size >= 8.
Dataset make_synthetic_classification(int examples, int seq_len, std::int64_t vocab_size,
                                      std::uint64_t seed);

/// Causal LM: example i has length L in [max(2, ceil(T/2)), T] and counts
/// through ids 1..m, m = vocab_size - 1: token t = 1 + (s + t) mod m from a
/// random start s, i.e. t_{k+1} = t_k + 1 wrapping from m to 1. Targets are
/// the second half, positions [max(1, L/2), L). Needs seq_len >= 2 and
/// vocab_size >= 3.
Dataset make_synthetic_causal_lm(int examples, int seq_len, std::int64_t vocab_size,
                                 std::uint64_t seed);

}  // namespace distzo::io
