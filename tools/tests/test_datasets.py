"""make_dataset's sources: each of the four rated vader corpora, with and
without a neutral band (numpy)."""

from __future__ import annotations

import os
import tempfile


def test_vader_corpora():
    """sources.read_vader reads each of the four rated corpora of the
    hutto tarball (a directory here) by the sign of the mean rating,
    dropping the near-neutral band, and refuses an unknown corpus."""
    from distzo_tools.datasets import sources

    rows = {"movies": [0.0, 2.5, -1.2, 0.4], "amazon": [-0.5, 0.6, -3.0, 0.2],
            "tweets": [1.0, -1.0, 0.5, -0.51], "nyt": [0.45, -0.55, 0.0, 2.0]}
    with tempfile.TemporaryDirectory() as tmp:
        for corpus, ratings in rows.items():
            name = sources.VADER_CORPORA[corpus]
            with open(os.path.join(tmp, name), "w", encoding="utf-8", newline="") as fh:
                fh.write("\r\n".join(f"{i}\t{r}\t{corpus} snippet {i}" for i, r in enumerate(ratings)))
        for corpus, ratings in rows.items():
            for band in (0.0, 0.5):
                examples, dropped = sources.read_vader(tmp, corpus, band)
                kept = [r for r in ratings if abs(r) > band]
                assert dropped == len(ratings) - len(kept), (corpus, band, dropped)
                assert [e.label for e in examples] == [int(r > 0) for r in kept], (corpus, band)
                assert all(e.texts[0].startswith(corpus) for e in examples)
        try:
            sources.read_vader(tmp, "imdb")
            raise AssertionError("an unknown corpus was read")
        except sources.DatasetError as err:
            assert "one of movies, amazon, tweets, nyt" in str(err), err
    print("vader corpora: OK")
