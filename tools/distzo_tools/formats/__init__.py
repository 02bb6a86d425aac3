"""distzo's HDF5 model and checkpoint files (docs/formats.md), needing only
numpy and h5py: any tool, notebook or test can import it.

    from distzo_tools.formats import read_model, write_model
    cfg, tensors = read_model("tests/data/opt_tiny_preln.model.h5")  # OptConfig
    cfg, tensors = read_model("tests/data/llama_tiny_gqa.model.h5")  # LlamaConfig
    cfg, tensors = read_model("tests/data/gemma3_tiny.model.h5")     # Gemma3Config

The names below are the API; the modules split it by concern: configs (one
config type per architecture, the tensors it defines), hf_config
(config.json there and back), tensors (float32, float16, bfloat16 as stored)
and model_file (reading and writing the files).
"""

from distzo_tools.formats.configs import (
    CONFIG_TYPES,
    GEMMA3_ACTIVATION,
    GEMMA3_FLOAT_ATTRS,
    GEMMA3_INT_ATTRS,
    LLAMA_FLOAT_ATTRS,
    LLAMA_INT_ATTRS,
    OPT_INT_ATTRS,
    POSITION_OFFSET,
    FormatError,
    Gemma3Config,
    LlamaConfig,
    MistralConfig,
    ModelConfig,
    Olmo2Config,
    OptConfig,
    Phi3Config,
    Qwen2Config,
    Qwen3Config,
    expected_tensors,
    supported_architectures,
)
from distzo_tools.formats.hf_config import (
    GEMMA3_DEFAULT_ROPE_LOCAL_BASE_FREQ,
    GEMMA3_DEFAULT_ROPE_THETA,
    GEMMA3_DEFAULT_SLIDING_WINDOW,
    GEMMA3_DEFAULT_SLIDING_WINDOW_PATTERN,
    GEMMA3_LAYER_TYPES,
    LLAMA_DEFAULT_ROPE_THETA,
    MISTRAL_DEFAULT_SLIDING_WINDOW,
    config_from_hf,
    hf_config_dict,
)
from distzo_tools.formats.model_file import (
    FORMAT_VERSION,
    TOKENIZER_ATTR,
    TOKENIZER_FILES,
    ModelWriter,
    atomic_h5,
    give_usual_permissions,
    read_config,
    read_model,
    read_string_attr,
    read_text,
    read_tokenizer_dir,
    read_tokenizer_files,
    string_dtype_for,
    write_dataset,
    write_model,
    write_string_attr,
)
from distzo_tools.formats.tensors import Bf16Array, as_stored, bf16_h5_type, read_tensor, stored_dtype

__all__ = [
    "CONFIG_TYPES", "FORMAT_VERSION", "GEMMA3_ACTIVATION", "GEMMA3_DEFAULT_ROPE_LOCAL_BASE_FREQ",
    "GEMMA3_DEFAULT_ROPE_THETA", "GEMMA3_DEFAULT_SLIDING_WINDOW", "GEMMA3_DEFAULT_SLIDING_WINDOW_PATTERN",
    "GEMMA3_FLOAT_ATTRS", "GEMMA3_INT_ATTRS", "GEMMA3_LAYER_TYPES", "LLAMA_DEFAULT_ROPE_THETA",
    "LLAMA_FLOAT_ATTRS", "LLAMA_INT_ATTRS", "MISTRAL_DEFAULT_SLIDING_WINDOW", "OPT_INT_ATTRS", "POSITION_OFFSET",
    "TOKENIZER_ATTR", "TOKENIZER_FILES", "Bf16Array", "FormatError", "Gemma3Config", "LlamaConfig",
    "MistralConfig", "ModelConfig", "ModelWriter", "Olmo2Config", "OptConfig", "Phi3Config", "Qwen2Config", "Qwen3Config", "as_stored",
    "atomic_h5", "bf16_h5_type", "config_from_hf", "expected_tensors", "give_usual_permissions",
    "hf_config_dict", "read_config", "read_model", "read_string_attr", "read_tensor", "read_text",
    "read_tokenizer_dir", "read_tokenizer_files", "stored_dtype", "string_dtype_for", "supported_architectures",
    "write_dataset", "write_model", "write_string_attr",
]
