#include "zo/update_terms.hpp"

#include "core/error.hpp"

namespace distzo::zo {

kernels::UpdateTerms update_terms(const ZSpec& z, const PendingUpdate& pending,
                                  const model::ParameterInfo& parameter, Rounding rounding) {
  kernels::UpdateTerms terms;
  if (!pending.active) return terms;
  const int q = static_cast<int>(pending.g.size());
  DISTZO_REQUIRE(q >= 1 && q <= kernels::kMaxQueries, "pending update with "
                                                          << q << " queries (allowed 1.."
                                                          << kernels::kMaxQueries << ")");
  terms.count = q;
  terms.decay =
      parameter.weight_decay ? static_cast<real>(pending.lr * pending.weight_decay) : real(0);
  for (int i = 0; i < q; ++i) {
    terms.stream[i] = z.stream(pending.step, i);
    terms.coefficient[i] = static_cast<real>(pending.lr * pending.g[i] / q);
  }
  // The words that round a 2-byte θ', keyed by the step being applied.
  terms.rounding = rounding;
  terms.rounding_stream = RoundingStream::make(z.seed, pending.step);
  return terms;
}

}  // namespace distzo::zo
