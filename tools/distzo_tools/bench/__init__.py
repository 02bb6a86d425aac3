"""The yardsticks of perf/: transformers' forward and llama.cpp's prefill on
the same weights and tokens as distzo's benchmarks, and the seeded random
OPT model the benchmarks run on."""
