#pragma once
// An hf_tokenizer_files value (io::ModelInfo) as an importer writes it, large
// enough to need HDF5's dense attribute storage (over 64 KiB), with JSON
// escapes and non-ASCII text in it.
#include <string>

namespace distzo::test_support {

inline std::string tokenizer_files_json() {
  std::string merges;
  for (int i = 0; i < 12000; ++i) merges += "\\u0120t h" + std::to_string(i) + "\\n";
  return "{\"merges.txt\": \"#version: 0.2\\n" + merges +
         "\", \"tokenizer.json\": \"{\\\"model\\\": {\\\"type\\\": \\\"BPE\\\"}, \\\"é\\\": 1}\"}";
}

}  // namespace distzo::test_support
