#include "model/architecture.hpp"

namespace distzo::model {

const ArchitectureSpec& architecture_spec(Architecture a) {
  switch (a) {
    case Architecture::opt:
      return opt_architecture();
    case Architecture::llama:
    case Architecture::qwen2:
    case Architecture::qwen3:
    case Architecture::mistral:
    case Architecture::olmo2:
    case Architecture::phi3:
      return llama_family_architecture(a);
    case Architecture::gemma3:
      return gemma3_architecture();
  }
  return opt_architecture();
}

}  // namespace distzo::model
