#include "zo/update_terms.hpp"

#include "core/error.hpp"

namespace distzo::zo {

kernels::UpdateTerms update_terms(const ZSpec& z, const PendingUpdate& pending,
                                  const model::ParameterInfo& parameter, Rounding rounding) {
  kernels::UpdateTerms terms;
  if (!pending.active) return terms;
  const int count = static_cast<int>(pending.terms.size());
  const int q = pending.queries;
  DISTZO_REQUIRE(q >= 1 && count <= kernels::kMaxQueries,
                 "pending update with " << count << " z terms of " << q
                                        << " queries a step (the kernel takes at most "
                                        << kernels::kMaxQueries << ")");
  terms.count = count;
  terms.decay =
      parameter.weight_decay ? static_cast<real>(pending.lr * pending.weight_decay) : real(0);
  for (int k = 0; k < count; ++k) {
    const UpdateTerm& t = pending.terms[static_cast<std::size_t>(k)];
    terms.stream[k] = z.stream(t.step, t.query);
    terms.coefficient[k] = static_cast<real>(pending.lr * t.weight / q);
  }
  // The words that round a 2-byte θ', keyed by the step whose update this is.
  terms.rounding = rounding;
  terms.rounding_stream = RoundingStream::make(z.seed, pending.step);
  return terms;
}

}  // namespace distzo::zo
