#include "kernels/losses.hpp"

#include "core/error.hpp"
#include "core/fp.hpp"
#include "core/math.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

namespace {

void require_sums(const LossSums& sums, const char* who) {
  DISTZO_REQUIRE(sums.extent(0) == 2,
                 "distzo::kernels::" << who << ": sums must have 2 entries (loss sum, count), got "
                                     << sums.extent(0));
}

}  // namespace

LossSums make_loss_sums(const std::string& label) { return LossSums(label, 2); }

LossValue read_loss(const ExecSpace& space, const LossSums& sums) {
  require_sums(sums, "read_loss");
  const auto host = Kokkos::create_mirror_view(sums);
  Kokkos::deep_copy(space, host, sums);
  fence(space, "distzo::kernels::read_loss: loss sums copied to the host");
  LossValue value;
  value.sum = host(0);
  value.count = host(1);
  return value;
}

// Both sums are reduced straight into the entries of `sums` (rank-0
// subviews): reducing into a View does not fence, and Kokkos' reductions
// combine partial results in a fixed order, so the loss is bit-reproducible
// run to run (no atomics).

namespace detail {

/// sums(1) = number of entries of `labels` that are not kIgnoreIndex.
void count_labels(const ExecSpace& space, const LossSums& sums, const ConstIntVec& labels,
                  const char* label) {
  const ConstIntVec l = labels;
  Kokkos::parallel_reduce(
      label, RangePolicy(space, 0, static_cast<int>(labels.extent(0))),
      KOKKOS_LAMBDA(const int r, double& count) {
        if (l(r) != kIgnoreIndex) count += 1.0;
      },
      Kokkos::subview(sums, 1));
}

}  // namespace detail

void causal_lm_loss(const ExecSpace& space, const LossSums& sums, const ConstMat& logits,
                    const ConstIntVec& targets) {
  require_sums(sums, "causal_lm_loss");
  DISTZO_REQUIRE(targets.extent(0) == logits.extent(0),
                 "distzo::kernels::causal_lm_loss: " << logits.extent(0) << " rows of logits but "
                                                     << targets.extent(0) << " targets");
  const int rows = static_cast<int>(logits.extent(0));
  const int vocab = static_cast<int>(logits.extent(1));
  DISTZO_REQUIRE(vocab > 0 || rows == 0, "distzo::kernels::causal_lm_loss: logits have no columns");
  const ConstMat z = logits;
  const ConstIntVec t = targets;

  // One team per row: max, then the sum of exp(z - max), each exp by
  // fp::exp in float (within 1 ulp) and each chunk of kChunk summed pairwise
  // in float before it joins the row's double sum: the exps vectorise, and
  // the double additions (a latency chain) are one per chunk.
  constexpr int kChunk = 16;
  const int chunks = (vocab + kChunk - 1) / kChunk;
  Kokkos::parallel_reduce(
      "distzo::causal_lm_loss", TeamPolicy(space, rows, Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember& member, double& loss) {
        const int r = member.league_rank();
        const int target = t(r);
        if (target == kIgnoreIndex) return;  // uniform over the team
        real row_max = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, vocab),
            [&](const int c, real& mx) {
              if (z(r, c) > mx) mx = z(r, c);
            },
            Kokkos::Max<real>(row_max));
        const double shift = static_cast<double>(row_max);
        double sum_exp = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, chunks),
            [&](const int k, double& acc) {
              real e[kChunk];
              for (int i = 0; i < kChunk; ++i) {
                const int c = k * kChunk + i;
                const real v = fp::exp(z(r, c < vocab ? c : vocab - 1) - row_max);
                e[i] = c < vocab ? v : real(0);
              }
              for (int width = kChunk / 2; width > 0; width /= 2)
                for (int i = 0; i < width; ++i) e[i] += e[i + width];
              acc += static_cast<double>(e[0]);
            },
            sum_exp);
        const double row_loss = math::log(sum_exp) + shift - static_cast<double>(z(r, target));
        // The outer reduction joins every thread's value: add the row once.
        Kokkos::single(Kokkos::PerTeam(member), [&]() { loss += row_loss; });
      },
      Kokkos::subview(sums, 0));
  detail::count_labels(space, sums, targets, "distzo::causal_lm_loss::count");
}

void candidate_logits(const ExecSpace& space, const Mat& out, const ConstMat& hidden,
                      const WeightMatrix& table, const ConstIntVec& candidates) {
  const int rows = static_cast<int>(hidden.extent(0));
  const int dim = static_cast<int>(hidden.extent(1));
  const int n_cand = static_cast<int>(candidates.extent(0));
  DISTZO_REQUIRE(table.cols() == hidden.extent(1), "distzo::kernels::candidate_logits: hidden has "
                                                       << dim << " columns, table is ("
                                                       << table.rows() << ", " << table.cols()
                                                       << ")");
  DISTZO_REQUIRE(out.extent(0) == hidden.extent(0) && out.extent(1) == candidates.extent(0),
                 "distzo::kernels::candidate_logits: out is ("
                     << out.extent(0) << ", " << out.extent(1) << "), expected (" << rows << ", "
                     << n_cand << ")");
  if (rows == 0 || n_cand == 0) return;
  const Mat o = out;
  const ConstMat hid = hidden;
  const MatrixReader tab = table.reader();
  const ConstIntVec cand = candidates;
  // One team per (row, candidate): R and K are small (a batch, a handful of
  // label words) and C is large, so the parallelism is in the dot product.
  Kokkos::parallel_for(
      "distzo::candidate_logits", TeamPolicy(space, rows * n_cand, Kokkos::AUTO),
      KOKKOS_LAMBDA(const TeamMember& member) {
        const int r = member.league_rank() / n_cand;
        const int c = member.league_rank() % n_cand;
        const int token = cand(c);
        double dot = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, dim),
            [&](const int d, double& acc) {
              acc += static_cast<double>(hid(r, d)) * static_cast<double>(tab(token, d));
            },
            dot);
        Kokkos::single(Kokkos::PerTeam(member), [&]() { o(r, c) = static_cast<real>(dot); });
      });
}

void classification_loss(const ExecSpace& space, const LossSums& sums, const IntVec& predictions,
                         const ConstMat& cand_logits, const ConstIntVec& gold) {
  require_sums(sums, "classification_loss");
  const int rows = static_cast<int>(cand_logits.extent(0));
  const int n_cand = static_cast<int>(cand_logits.extent(1));
  DISTZO_REQUIRE(
      predictions.extent(0) == cand_logits.extent(0) && gold.extent(0) == cand_logits.extent(0),
      "distzo::kernels::classification_loss: " << rows << " rows of logits, "
                                               << predictions.extent(0) << " predictions, "
                                               << gold.extent(0) << " gold labels");
  DISTZO_REQUIRE(n_cand > 0 || rows == 0,
                 "distzo::kernels::classification_loss: there must be at least one candidate");
  const IntVec pred = predictions;
  const ConstMat z = cand_logits;
  const ConstIntVec g = gold;
  // One thread per row: K is a handful of candidates.
  Kokkos::parallel_reduce(
      "distzo::classification_loss", RangePolicy(space, 0, rows),
      KOKKOS_LAMBDA(const int r, double& loss) {
        // Strict ">" keeps the lowest index on ties (torch.argmax does too).
        int best = 0;
        real best_value = z(r, 0);
        for (int c = 1; c < n_cand; ++c) {
          if (z(r, c) > best_value) {
            best = c;
            best_value = z(r, c);
          }
        }
        pred(r) = best;
        const int label = g(r);
        if (label == kIgnoreIndex) return;
        const double shift = static_cast<double>(best_value);
        double sum_exp = 0.0;
        for (int c = 0; c < n_cand; ++c) sum_exp += math::exp(static_cast<double>(z(r, c)) - shift);
        loss += math::log(sum_exp) + shift - static_cast<double>(z(r, label));
      },
      Kokkos::subview(sums, 0));
  detail::count_labels(space, sums, gold, "distzo::classification_loss::count");
}

}  // namespace distzo::kernels
