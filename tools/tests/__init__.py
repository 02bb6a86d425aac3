"""The tools' tests, split by concern: `python3 -m pytest tools` (tools/README.md)."""
