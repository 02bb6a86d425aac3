"""The quality table (docs/quality.md): its runs as data, the references
distzo does not run, and the tables and figures."""
