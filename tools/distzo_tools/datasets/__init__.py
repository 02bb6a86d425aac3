"""Labelled text to distzo classification datasets: the sources (the vader
corpora, TSV and JSON Lines files) and the prompts."""
