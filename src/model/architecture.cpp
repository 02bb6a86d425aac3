#include "model/architecture.hpp"

#include "core/error.hpp"

namespace distzo::model {

const ArchitectureSpec& architecture_spec(Architecture a) {
  switch (a) {
    case Architecture::opt: return opt_architecture();
    case Architecture::llama: break;
  }
  DISTZO_INPUT_FAIL("architecture '" << architecture_name(a) << "' is not implemented yet");
}

}  // namespace distzo::model
