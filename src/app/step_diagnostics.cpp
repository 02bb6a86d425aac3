#include "app/step_diagnostics.hpp"

#include <algorithm>
#include <cstdio>

namespace distzo::app {

std::string eps_warning(double eps) {
  if (!(eps < 1e-6)) return "";
  char text[32];
  std::snprintf(text, sizeof(text), "%g", eps);
  return "warning: optim.eps = " + std::string(text) +
         " is near float32's resolution of the weights: θ ± εz rounds back to θ for many of them, "
         "and g becomes rounding noise (MeZO uses 1e-3)";
}

std::string ZeroGradientSteps::step(const zo::StepReport& r) {
  const std::vector<double>& g = r.estimate.g;
  if (r.skipped || !std::all_of(g.begin(), g.end(), [](double v) { return v == 0; })) return "";
  if (count_++ != 0) return "";
  char line[320];
  std::snprintf(line, sizeof(line),
                "warning: step %lld: g = 0 exactly (loss+ == loss-): this step's update "
                "does nothing. If it repeats, optim.eps = %g is too small for float32 weights "
                "(θ ± εz rounds back to θ) or the loss ignores the perturbed "
                "parameters",
                static_cast<long long>(r.step), eps_);
  return line;
}

}  // namespace distzo::app
