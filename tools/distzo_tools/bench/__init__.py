"""The yardsticks of perf/: transformers' forward and llama.cpp's prefill on
the same weights and tokens as distzo's benchmarks."""
