// Checking a dataset against the model before any step: sizes, lengths,
// tokens inside the vocabulary, and each task's targets (validate_dataset).

#include <cstdint>
#include <set>
#include <string>

#include "core/error.hpp"
#include "io/dataset.hpp"

namespace distzo::io {

namespace {

/// Remembers the first violation of one rule and counts the others, so a
/// message shows one concrete example and how widespread the problem is.
class Violations {
 public:
  template <class MessageFn>
  void add(MessageFn&& message) {
    if (count_++ == 0) first_ = message();
  }
  /// `what` names the violations in the plural, for the count when there are
  /// several: "... (12 tokens outside the vocabulary in all)".
  void throw_if_any(const char* what) const {
    if (count_ == 0) return;
    if (count_ == 1) DISTZO_FAIL(first_);
    DISTZO_FAIL(first_ << " (" << count_ << " " << what << " in all)");
  }

 private:
  std::int64_t count_ = 0;
  std::string first_;
};

}  // namespace

namespace {

/// The sizes every task shares: vocabulary, example count, sequence length,
/// input_ids and lengths, pad_token_id.
void check_sizes(const Dataset& d, std::int64_t vocab_size, const std::string& src) {
  DISTZO_INPUT_REQUIRE(vocab_size >= 1 && vocab_size <= (std::int64_t{1} << 31),
                       src << ": vocabulary size " << vocab_size << " must be in [1, 2^31]");
  DISTZO_INPUT_REQUIRE(d.num_examples >= 1, src << ": the dataset has no examples");
  DISTZO_INPUT_REQUIRE(d.seq_len >= 1 && d.seq_len <= std::numeric_limits<std::int32_t>::max(),
                       src << ": sequence length " << d.seq_len << " must be in [1, 2^31)");
  const std::int64_t n = d.num_examples;
  const std::int64_t T = d.seq_len;
  const std::size_t nt = static_cast<std::size_t>(n * T);
  DISTZO_INPUT_REQUIRE(d.input_ids.size() == nt, src << ": input_ids holds " << d.input_ids.size()
                                                     << " tokens, expected N*T = " << n << "*" << T
                                                     << " = " << nt);
  DISTZO_INPUT_REQUIRE(d.lengths.size() == static_cast<std::size_t>(n),
                       src << ": lengths holds " << d.lengths.size()
                           << " entries, expected one per example (" << n << ")");
  DISTZO_INPUT_REQUIRE(d.pad_token_id >= 0 && d.pad_token_id < vocab_size,
                       src << ": pad_token_id " << d.pad_token_id
                           << " is outside the vocabulary [0, " << vocab_size << ")");
}

/// Every length in [1, seq_len].
void check_lengths(const Dataset& d, const std::string& src) {
  const std::int64_t n = d.num_examples;
  const std::int64_t T = d.seq_len;
  Violations bad;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t len = d.lengths[static_cast<std::size_t>(i)];
    if (len < 1 || len > T)
      bad.add([&] {
        std::ostringstream os;
        os << src << ": lengths: example " << i << " has length " << len << ", allowed [1, " << T
           << "] (the sequence length)";
        return os.str();
      });
  }
  bad.throw_if_any("examples with a bad length");
}

/// Tokens inside the vocabulary up to each length, pad_token_id after it.
void check_tokens(const Dataset& d, std::int64_t vocab_size, const std::string& src) {
  const std::int64_t n = d.num_examples;
  const std::int64_t T = d.seq_len;
  Violations out_of_vocab;
  Violations not_padding;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t len = d.lengths[static_cast<std::size_t>(i)];
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t id = d.token(i, t);
      if (t < len && (id < 0 || id >= vocab_size))
        out_of_vocab.add([&] {
          std::ostringstream os;
          os << src << ": input_ids: example " << i << ", position " << t << ": token id " << id
             << " is outside the vocabulary [0, " << vocab_size << ")";
          return os.str();
        });
      if (t >= len && id != d.pad_token_id)
        not_padding.add([&] {
          std::ostringstream os;
          os << src << ": input_ids: example " << i << ", position " << t << " is past its length "
             << len << " but holds " << id << ", not pad_token_id " << d.pad_token_id
             << " (examples must be right-padded)";
          return os.str();
        });
    }
  }
  out_of_vocab.throw_if_any("tokens outside the vocabulary");
  not_padding.throw_if_any("padding positions that are not pad_token_id");
}

/// causal_lm: a target mask per token, targets in [1, length), at least one
/// per example, and no classification arrays.
void check_causal_lm_targets(const Dataset& d, const std::string& src) {
  const std::int64_t n = d.num_examples;
  const std::int64_t T = d.seq_len;
  const std::size_t nt = static_cast<std::size_t>(n * T);
  DISTZO_INPUT_REQUIRE(d.target_mask.size() == nt,
                       src << ": target_mask holds " << d.target_mask.size()
                           << " entries, expected N*T = " << nt << " (task causal_lm)");
  DISTZO_INPUT_REQUIRE(d.candidates.empty() && d.labels.empty(),
                       src << ": candidates/labels belong to task classification, not causal_lm");
  Violations misplaced;
  Violations no_targets;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t len = d.lengths[static_cast<std::size_t>(i)];
    std::int64_t targets = 0;
    for (std::int64_t t = 0; t < T; ++t) {
      if (d.target_mask[static_cast<std::size_t>(i * T + t)] == 0) continue;
      if (t == 0 || t >= len)
        misplaced.add([&] {
          std::ostringstream os;
          os << src << ": target_mask: example " << i << " marks position " << t
             << " as a target; targets must lie in [1, length) = [1, " << len
             << ") (position 0 has nothing to predict it from, positions from the length on are "
                "padding)";
          return os.str();
        });
      else
        ++targets;
    }
    if (targets == 0)
      no_targets.add([&] {
        std::ostringstream os;
        os << src << ": target_mask: example " << i
           << " has no target tokens (is the answer truncated away?)";
        return os.str();
      });
  }
  misplaced.throw_if_any("misplaced targets");
  no_targets.throw_if_any("examples without targets");
}

/// classification: at least two distinct candidate tokens in the
/// vocabulary, one label per example indexing them, and no target mask.
void check_classification_labels(const Dataset& d, std::int64_t vocab_size,
                                 const std::string& src) {
  const std::int64_t n = d.num_examples;
  DISTZO_INPUT_REQUIRE(d.target_mask.empty(),
                       src << ": target_mask belongs to task causal_lm, not classification");
  const std::int64_t k = d.num_candidates();
  DISTZO_INPUT_REQUIRE(
      k >= 2, src << ": candidates: " << k << " label word(s); classification needs at least 2");
  std::set<std::int32_t> seen;
  for (std::int64_t c = 0; c < k; ++c) {
    const std::int64_t id = d.candidates[static_cast<std::size_t>(c)];
    DISTZO_INPUT_REQUIRE(id >= 0 && id < vocab_size,
                         src << ": candidates: candidate " << c << " is token id " << id
                             << ", outside the vocabulary [0, " << vocab_size << ")");
    DISTZO_INPUT_REQUIRE(
        seen.insert(static_cast<std::int32_t>(id)).second,
        src << ": candidates: token id " << id << " appears twice (candidate " << c << ")");
  }
  DISTZO_INPUT_REQUIRE(d.labels.size() == static_cast<std::size_t>(n),
                       src << ": labels holds " << d.labels.size()
                           << " entries, expected one per example (" << n << ")");
  Violations bad;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t label = d.labels[static_cast<std::size_t>(i)];
    if (label < 0 || label >= k)
      bad.add([&] {
        std::ostringstream os;
        os << src << ": labels: example " << i << " has label " << label << ", allowed [0, " << k
           << ") (an index into candidates)";
        return os.str();
      });
  }
  bad.throw_if_any("labels out of range");
}

}  // namespace

void validate_dataset(const Dataset& d, std::int64_t vocab_size, const std::string& source) {
  // In this order: each check relies on the sizes the ones before it proved.
  check_sizes(d, vocab_size, source);
  check_lengths(d, source);
  check_tokens(d, vocab_size, source);
  if (d.task == Task::causal_lm)
    check_causal_lm_targets(d, source);
  else
    check_classification_labels(d, vocab_size, source);
}

}  // namespace distzo::io
