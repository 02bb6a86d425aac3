#include "zo/update_terms.hpp"

#include "core/error.hpp"

namespace distzo::zo {

bool updates_block(const ZSpec& z, const PendingUpdate& pending, int block) {
  if (!pending.active) return false;
  for (const UpdateTerm& t : pending.terms)
    if (z.perturbs(t.step, block)) return true;
  return false;
}

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
  // A term whose step left this parameter's block unperturbed has z = 0
  // here and is dropped; a parameter no term reaches is not updated at all,
  // weight decay included (block-sparse steps, core/block_choice.hpp).
  for (const UpdateTerm& t : pending.terms) {
    if (!z.perturbs(t.step, parameter.block)) continue;
    terms.stream[terms.count] = z.stream(t.step, t.query);
    terms.coefficient[terms.count] = static_cast<real>(pending.lr * t.weight / q);
    ++terms.count;
  }
  if (terms.count == 0) return terms;
  terms.decay =
      parameter.weight_decay ? static_cast<real>(pending.lr * pending.weight_decay) : real(0);
  // The words that round a 2-byte θ', keyed by the step whose update this is.
  terms.rounding = rounding;
  terms.rounding_stream = RoundingStream::make(z.seed, pending.step);
  return terms;
}

}  // namespace distzo::zo
