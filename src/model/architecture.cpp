#include "model/architecture.hpp"

namespace distzo::model {

const ArchitectureSpec& architecture_spec(Architecture a) {
  switch (a) {
    case Architecture::opt: return opt_architecture();
    case Architecture::llama: return llama_architecture();
    case Architecture::qwen2: return qwen2_architecture();
    case Architecture::qwen3: return qwen3_architecture();
    case Architecture::mistral: return mistral_architecture();
  }
  return opt_architecture();
}

}  // namespace distzo::model
