"""Hugging Face and GGUF checkpoints to distzo model files and back, and the
check of a converted real model against transformers."""
