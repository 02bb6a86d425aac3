#include "kernels/attention.hpp"

#include "core/error.hpp"
#include "core/math.hpp"
#include "kernels/common.hpp"

namespace distzo::kernels {

void attention(const ExecSpace& space, const Mat& out, const ConstMat& q, const ConstMat& k,
               const ConstMat& v, const ConstIntMat& mask, int heads, real scale, int window) {
  const int batch = static_cast<int>(mask.extent(0));
  const int seq = static_cast<int>(mask.extent(1));
  const int channels = static_cast<int>(q.extent(1));
  const auto same_shape = [&](const auto& t) {
    return t.extent(0) == static_cast<std::size_t>(batch) * static_cast<std::size_t>(seq) &&
           t.extent(1) == static_cast<std::size_t>(channels);
  };
  DISTZO_REQUIRE(same_shape(q) && same_shape(k) && same_shape(v) && same_shape(out),
                 "distzo::kernels::attention: q, k, v and out must all be (B*T, C) = ("
                     << batch * seq << ", " << channels << ") for a (" << batch << ", " << seq
                     << ") mask; got q (" << q.extent(0) << ", " << q.extent(1) << "), k ("
                     << k.extent(0) << ", " << k.extent(1) << "), v (" << v.extent(0) << ", "
                     << v.extent(1) << "), out (" << out.extent(0) << ", " << out.extent(1) << ")");
  DISTZO_REQUIRE(heads > 0 && channels % heads == 0,
                 "distzo::kernels::attention: " << heads << " heads do not divide " << channels
                                                << " channels");
  if (batch == 0 || seq == 0 || channels == 0) return;

  const int head_dim = channels / heads;
  const Mat o = out;
  const ConstMat qq = q;
  const ConstMat kk = k;
  const ConstMat vv = v;
  const ConstIntMat m = mask;

  // One team per (b, h, i) query row; the team keeps the i + 1 causal scores
  // of its row and the head_dim output sums in scratch.
  // League index = (b * heads + h) * T + i.
  const int league = batch * heads * seq;
  const std::size_t scratch_bytes =
      ScratchReal::shmem_size(seq) + ScratchReal::shmem_size(head_dim);
  Kokkos::parallel_for(
      "distzo::attention",
      TeamPolicy(space, league, Kokkos::AUTO).set_scratch_size(0, Kokkos::PerTeam(scratch_bytes)),
      KOKKOS_LAMBDA(const TeamMember& member) {
        const int i = member.league_rank() % seq;
        const int bh = member.league_rank() / seq;
        const int h = bh % heads;
        const int b = bh / heads;
        const int row_q = b * seq + i;
        const int col0 = h * head_dim;
        // Causal, within the window: keys j0..i, p(j - j0) their scores.
        const int j0 = window > 0 && i - window + 1 > 0 ? i - window + 1 : 0;
        const int n_keys = i + 1 - j0;
        ScratchReal p(member.team_scratch(0), seq);
        ScratchReal acc(member.team_scratch(0), head_dim);

        int visible = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, n_keys),
            [&](const int j, int& count) { count += m(b, j0 + j) != 0 ? 1 : 0; }, visible);
        if (visible == 0) {
          // Every key up to i is padding; the branch is uniform over the team.
          Kokkos::parallel_for(Kokkos::TeamThreadRange(member, head_dim),
                               [&](const int d) { o(row_q, col0 + d) = real(0); });
          return;
        }

        // Scores of the visible keys; masked slots are never read as scores.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n_keys), [&](const int j) {
          real dot = 0;
          if (m(b, j0 + j) != 0) {
            const int row_k = b * seq + j0 + j;
            for (int d = 0; d < head_dim; ++d) dot += qq(row_q, col0 + d) * kk(row_k, col0 + d);
          }
          p(j) = scale * dot;
        });
        member.team_barrier();

        real row_max = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, n_keys),
            [&](const int j, real& mx) {
              if (m(b, j0 + j) != 0 && p(j) > mx) mx = p(j);
            },
            Kokkos::Max<real>(row_max));

        // Unnormalised probabilities; masked keys get exactly 0.
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, n_keys), [&](const int j) {
          p(j) = m(b, j0 + j) != 0 ? math::exp(p(j) - row_max) : real(0);
        });
        member.team_barrier();

        real denom = 0;  // >= 1: the maximal key contributes exp(0)
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(member, n_keys), [&](const int j, real& acc) { acc += p(j); },
            denom);

        // Each thread owns a contiguous chunk of output columns and sums over
        // the keys in the fixed order j = 0..i: no atomics, and the same
        // additions in the same order for any team size, so every backend and
        // repeated runs give identical bits. Keys outermost, so the inner loop
        // runs over contiguous columns of v (vectorised on CPUs, where a team
        // is usually one thread holding every column).
        const int lanes = member.team_size();
        const int chunk = (head_dim + lanes - 1) / lanes;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(member, lanes), [&](const int lane) {
          const int d0 = lane * chunk;
          const int d1 = d0 + chunk < head_dim ? d0 + chunk : head_dim;
          for (int d = d0; d < d1; ++d) acc(d) = 0;
          for (int j = 0; j < n_keys; ++j) {
            const real pj = p(j);
            const int row_v = b * seq + j0 + j;
            for (int d = d0; d < d1; ++d) acc(d) += pj * vv(row_v, col0 + d);
          }
          for (int d = d0; d < d1; ++d) o(row_q, col0 + d) = acc(d) / denom;
        });
      });
}

}  // namespace distzo::kernels
