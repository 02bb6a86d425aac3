"""The specifications in Python: perturbation z (recipe 2, θ's 2-byte
storage), the parameter digest, the golden fixtures of the C++ tests, and
PyTorch MeZO (the algorithm, and a trainer on a distzo deck)."""
