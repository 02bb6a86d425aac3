#include "model/batch_builder.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/fence.hpp"
#include "core/memory.hpp"
#include "kernels/losses.hpp"

namespace distzo::model {

BatchBuilder::BatchBuilder(const Dataset& data, int micro_batch, BatchWidth width)
    : data_(&data), width_(width) {
  DISTZO_REQUIRE(micro_batch >= 1,
                 "BatchBuilder: micro_batch must be at least 1, got " << micro_batch);
  DISTZO_REQUIRE(data.seq_len >= 1 && data.seq_len * micro_batch <= std::numeric_limits<int>::max(),
                 "BatchBuilder: micro_batch * seq_len = " << micro_batch << " * " << data.seq_len
                                                          << " does not fit a 32-bit row index");
  const int B = micro_batch;
  const int T = static_cast<int>(data.seq_len);
  const auto BT = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  Batch& b = batch_;
  b.task = data.task;
  b.micro_batch = B;
  b.seq_len = T;
  const auto device = [](const char* name) { return memory_label(MemoryRole::activations, name); };
  const auto host = [](const char* name, int set) {
    return memory_label(MemoryRole::host_master, std::string(name) + "." + std::to_string(set));
  };
  const bool lm = data.task == Task::causal_lm;
  tokens_ = IntVec(device("batch.tokens"), BT);
  mask_ = IntVec(device("batch.mask"), BT);
  b.tokens = IntMat(tokens_.data(), B, T);
  b.mask = IntMat(mask_.data(), B, T);
  for (int j = 0; j < 2; ++j) {
    Staging& st = staging_[j];
    st.tokens = decltype(st.tokens)(host("batch_staging.tokens", j), BT);
    st.mask = decltype(st.mask)(host("batch_staging.mask", j), BT);
    if (lm) {
      st.targets = decltype(st.targets)(host("batch_staging.targets", j), BT);
    } else {
      st.rows = decltype(st.rows)(host("batch_staging.rows", j), B);
      st.gold = decltype(st.gold)(host("batch_staging.gold", j), B);
    }
  }
  if (lm) {
    targets_ = IntVec(device("batch.targets"), BT);
    b.targets = targets_;
  } else {
    b.rows = IntVec(device("batch.rows"), B);
    b.gold = IntVec(device("batch.gold"), B);
    b.candidates = IntVec(device("batch.candidates"), data.candidates.size());
    auto h_cand = Kokkos::create_mirror_view(b.candidates);
    for (std::size_t c = 0; c < data.candidates.size(); ++c) h_cand(c) = data.candidates[c];
    Kokkos::deep_copy(b.candidates, h_cand);
  }
}

int BatchBuilder::width_of(const std::vector<std::int64_t>& example_indices) const {
  const Dataset& d = *data_;
  const int T = static_cast<int>(d.seq_len);
  if (width_ == BatchWidth::full) return T;
  int longest = 1;
  for (const std::int64_t i : example_indices)
    longest = std::max(longest, static_cast<int>(d.lengths[static_cast<std::size_t>(i)]));
  return std::min(T, longest);
}

const Batch& BatchBuilder::fill(const ExecSpace& space,
                                const std::vector<std::int64_t>& example_indices, int seq_len) {
  const Dataset& d = *data_;
  Batch& b = batch_;
  const int B = b.micro_batch;
  DISTZO_REQUIRE(example_indices.size() <= static_cast<std::size_t>(B),
                 "BatchBuilder::fill: " << example_indices.size()
                                        << " examples do not fit a micro-batch of " << B);
  for (std::size_t r = 0; r < example_indices.size(); ++r)
    DISTZO_REQUIRE(example_indices[r] >= 0 && example_indices[r] < d.num_examples,
                   "BatchBuilder::fill: example index " << example_indices[r] << " (row " << r
                                                        << ") is outside [0, " << d.num_examples
                                                        << ")");
  // The width of this fill, and the (B, T') prefixes of the buffers at it.
  const int needed = width_of(example_indices);
  DISTZO_REQUIRE(seq_len == 0 || (seq_len >= needed && seq_len <= d.seq_len),
                 "BatchBuilder::fill: width " << seq_len << " is outside [" << needed << ", "
                                              << d.seq_len
                                              << "] (the longest example, the dataset's T)");
  const int T = seq_len == 0 ? needed : seq_len;
  const auto BT = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
  const auto dataset_row = [&](std::int64_t i) { return static_cast<std::size_t>(i * d.seq_len); };

  // This staging set was copied out two fills ago: wait for that copy.
  Staging& st = staging_[next_staging_];
  next_staging_ = 1 - next_staging_;
  st.copied.host_wait();

  const bool lm = b.task == Task::causal_lm;
  const int pad = static_cast<int>(d.pad_token_id);
  std::int64_t tokens = 0;
  std::int64_t targets = 0;
  for (int r = 0; r < B; ++r) {
    const bool real = static_cast<std::size_t>(r) < example_indices.size();
    const std::int64_t i = real ? example_indices[static_cast<std::size_t>(r)] : 0;
    const int len = real ? d.lengths[static_cast<std::size_t>(i)] : 0;
    const std::size_t out = static_cast<std::size_t>(r) * static_cast<std::size_t>(T);
    tokens += len;
    for (int t = 0; t < T; ++t) {
      st.tokens(out + t) = real ? d.token(i, t) : pad;
      st.mask(out + t) = t < len ? 1 : 0;
    }
    if (lm) {
      // Position t predicts token t+1: the label at row r*T+t is that token
      // when the file marks t+1 as a target (targets lie in [1, length), so
      // within any width the builder picks).
      for (int t = 0; t < T; ++t) {
        const bool is_target = real && t + 1 < T &&
                               d.target_mask[dataset_row(i) + static_cast<std::size_t>(t) + 1] != 0;
        st.targets(out + t) = is_target ? d.token(i, t + 1) : kernels::kIgnoreIndex;
        if (is_target) ++targets;
      }
    } else {
      st.rows(r) = r * T + (real ? len - 1 : 0);
      st.gold(r) = real ? d.labels[static_cast<std::size_t>(i)] : kernels::kIgnoreIndex;
      if (real) ++targets;
    }
  }
  b.seq_len = T;
  b.num_examples = static_cast<std::int64_t>(example_indices.size());
  b.num_tokens = tokens;
  b.num_targets = targets;

  using Pinned = Kokkos::View<int*, Kokkos::LayoutRight, PinnedSpace>;
  b.tokens = IntMat(tokens_.data(), B, T);
  b.mask = IntMat(mask_.data(), B, T);
  Kokkos::deep_copy(space, IntVec(tokens_.data(), BT), Pinned(st.tokens.data(), BT));
  Kokkos::deep_copy(space, IntVec(mask_.data(), BT), Pinned(st.mask.data(), BT));
  if (lm) {
    b.targets = IntVec(targets_.data(), BT);
    Kokkos::deep_copy(space, b.targets, Pinned(st.targets.data(), BT));
  } else {
    Kokkos::deep_copy(space, b.rows, st.rows);
    Kokkos::deep_copy(space, b.gold, st.gold);
  }
  st.copied = StreamEvent::record(space);
  return b;
}

const Batch& BatchBuilder::fill(const std::vector<std::int64_t>& example_indices) {
  const ExecSpace space;
  fill(space, example_indices);
  fence(space, "distzo::BatchBuilder::fill: batch copied to the device");
  return batch_;
}

}  // namespace distzo::model
