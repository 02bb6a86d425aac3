"""The demo (docs/demo.md): its tokenizer and model pretrained from scratch,
and the baselines it is measured against."""
