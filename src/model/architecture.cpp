#include "model/architecture.hpp"

namespace distzo::model {

const ArchitectureSpec& architecture_spec(Architecture a) {
  switch (a) {
    case Architecture::opt: return opt_architecture();
    case Architecture::llama: return llama_architecture();
  }
  return opt_architecture();
}

}  // namespace distzo::model
