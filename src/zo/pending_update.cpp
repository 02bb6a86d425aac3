#include "zo/pending_update.hpp"

#include "core/error.hpp"

namespace distzo::zo {

kernels::UpdateTerms PendingUpdate::terms_for(const model::ParameterInfo& parameter) const {
  kernels::UpdateTerms terms;
  if (!active) return terms;
  const int q = static_cast<int>(g.size());
  DISTZO_REQUIRE(q >= 1 && q <= kernels::kMaxQueries,
                 "pending update with " << q << " queries (allowed 1.." << kernels::kMaxQueries << ")");
  terms.count = q;
  terms.decay = parameter.weight_decay ? static_cast<real>(lr * weight_decay) : real(0);
  for (int i = 0; i < q; ++i) {
    terms.stream[i] = PerturbationStream::make(seed, static_cast<std::uint64_t>(step),
                                               static_cast<std::uint32_t>(i), distribution, recipe);
    terms.coefficient[i] = static_cast<real>(lr * g[i] / q);
  }
  return terms;
}

}  // namespace distzo::zo
