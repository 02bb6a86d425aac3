#include "io/synthetic.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/philox.hpp"

namespace distzo::io {

namespace {

/// Word k of the random stream of one example: Philox-4x32-10 with key
/// (lo(seed), hi(seed)) at counter (lo(example), hi(example), k / 4, tag),
/// lane k % 4. Every example draws from its own counters, so examples do not
/// depend on each other or on how many there are.
class ExampleStream {
 public:
  ExampleStream(std::uint64_t seed, std::uint32_t tag, std::int64_t example)
      : key_{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}},
        tag_(tag),
        example_(static_cast<std::uint64_t>(example)) {}

  std::uint32_t word(std::uint32_t k) {
    if (k / 4 != block_index_) {
      block_index_ = k / 4;
      const PhiloxBlock ctr{{static_cast<std::uint32_t>(example_),
                             static_cast<std::uint32_t>(example_ >> 32), block_index_, tag_}};
      block_ = philox4x32_10(ctr, key_);
    }
    return block_.v[k % 4];
  }

  /// Integer in [lo, hi] from word k (word mod range: the bias, at most
  /// range / 2^32, is irrelevant for test data).
  std::int64_t uniform(std::uint32_t k, std::int64_t lo, std::int64_t hi) {
    const auto range = static_cast<std::uint64_t>(hi - lo + 1);
    return lo + static_cast<std::int64_t>(word(k) % range);
  }

 private:
  PhiloxKey key_;
  std::uint32_t tag_;
  std::uint64_t example_;
  std::uint32_t block_index_ = std::numeric_limits<std::uint32_t>::max();
  PhiloxBlock block_{};
};

// Word indices of each draw; filler/position words follow the fixed ones.
constexpr std::uint32_t kLengthWord = 0;
constexpr std::uint32_t kLabelWord = 1;   // classification
constexpr std::uint32_t kStartWord = 1;   // causal LM
constexpr std::uint32_t kMarkerWord = 2;  // classification
constexpr std::uint32_t kFirstTokenWord = 4;

void check_sizes(const char* what, int examples, int seq_len, int min_seq_len,
                 std::int64_t vocab_size, std::int64_t min_vocab) {
  DISTZO_REQUIRE(examples >= 1, what << ": examples must be at least 1, got " << examples);
  DISTZO_REQUIRE(seq_len >= min_seq_len,
                 what << ": seq_len must be at least " << min_seq_len << ", got " << seq_len);
  DISTZO_REQUIRE(vocab_size >= min_vocab && vocab_size <= std::numeric_limits<std::int32_t>::max(),
                 what << ": vocab_size must be in [" << min_vocab << ", 2^31), got " << vocab_size);
}

Dataset empty_dataset(Task task, int examples, int seq_len) {
  Dataset d;
  d.task = task;
  d.pad_token_id = synthetic::kPad;
  d.num_examples = examples;
  d.seq_len = seq_len;
  const auto nt = static_cast<std::size_t>(examples) * static_cast<std::size_t>(seq_len);
  d.input_ids.assign(nt, synthetic::kPad);
  d.lengths.assign(static_cast<std::size_t>(examples), 0);
  return d;
}

}  // namespace

Dataset make_synthetic_classification(int examples, int seq_len, std::int64_t vocab_size,
                                      std::uint64_t seed) {
  check_sizes("make_synthetic_classification", examples, seq_len, 2, vocab_size,
              synthetic::kFirstFiller + 2);
  Dataset d = empty_dataset(Task::classification, examples, seq_len);
  d.description = "synthetic classification: which marker (1 -> label 0, 2 -> label 1) occurs";
  d.candidates = {synthetic::kWordA, synthetic::kWordB};
  d.labels.assign(static_cast<std::size_t>(examples), 0);
  const int min_len = std::max(2, (seq_len + 1) / 2);
  for (int i = 0; i < examples; ++i) {
    ExampleStream rng(seed, synthetic::kClassificationTag, i);
    const auto len = static_cast<int>(rng.uniform(kLengthWord, min_len, seq_len));
    const auto label = static_cast<int>(rng.uniform(kLabelWord, 0, 1));
    const auto marker_at = static_cast<int>(rng.uniform(kMarkerWord, 0, len - 2));
    std::int32_t* row = d.input_ids.data() + static_cast<std::size_t>(i) * seq_len;
    for (int t = 0; t < len - 1; ++t)
      row[t] =
          static_cast<std::int32_t>(rng.uniform(kFirstTokenWord + static_cast<std::uint32_t>(t),
                                                synthetic::kFirstFiller, vocab_size - 1));
    row[marker_at] = label == 0 ? synthetic::kMarkerA : synthetic::kMarkerB;
    row[len - 1] = synthetic::kQuery;
    d.lengths[static_cast<std::size_t>(i)] = len;
    d.labels[static_cast<std::size_t>(i)] = label;
  }
  return d;
}

Dataset make_synthetic_causal_lm(int examples, int seq_len, std::int64_t vocab_size,
                                 std::uint64_t seed) {
  check_sizes("make_synthetic_causal_lm", examples, seq_len, 2, vocab_size, 3);
  Dataset d = empty_dataset(Task::causal_lm, examples, seq_len);
  d.description = "synthetic causal LM: counting t -> t+1 through ids 1..vocab_size-1";
  d.target_mask.assign(d.input_ids.size(), 0);
  const std::int64_t m = vocab_size - 1;
  const int min_len = std::max(2, (seq_len + 1) / 2);
  for (int i = 0; i < examples; ++i) {
    ExampleStream rng(seed, synthetic::kCausalLmTag, i);
    const auto len = static_cast<int>(rng.uniform(kLengthWord, min_len, seq_len));
    const std::int64_t start = rng.uniform(kStartWord, 0, m - 1);
    const std::size_t row = static_cast<std::size_t>(i) * seq_len;
    for (int t = 0; t < len; ++t) {
      d.input_ids[row + t] = static_cast<std::int32_t>(1 + (start + t) % m);
      d.target_mask[row + t] = t >= std::max(1, len / 2) ? 1 : 0;
    }
    d.lengths[static_cast<std::size_t>(i)] = len;
  }
  return d;
}

}  // namespace distzo::io
