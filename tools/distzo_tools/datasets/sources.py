"""Where the examples of a classification dataset come from, and how they are
split: the rated corpora of the vaderSentiment 3.3.2 sdist, a local TSV or
JSON Lines file (make_dataset.py's docstring says which and how), dedupe,
the seeded test / dev / train split and k-shot draws.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tarfile
from dataclasses import dataclass

import numpy as np

VADER_MOVIE_FILE = "movieReviewSnippets_GroundTruth.txt"
# The four human-rated corpora of the tarball (Hutto & Gilbert, ICWSM 2014:
# every snippet's mean rating of about 20 raters on [-4, 4]), by --vader-corpus.
VADER_CORPORA = {
    "movies": VADER_MOVIE_FILE,  # Rotten Tomatoes snippets, 10,605
    "amazon": "amazonReviewSnippets_GroundTruth.txt",  # product-review sentences, 3,708
    "tweets": "tweets_GroundTruth.txt",  # 4,200
    "nyt": "nytEditorialSnippets_GroundTruth.txt",  # New York Times opinion sentences, 5,190
}
VADER_INNER_TAR = "additional_resources/hutto_ICWSM_2014.tar.gz"
# The other rated corpora in the same tarball (unlabelled text for pretraining).
VADER_OTHER_FILES = (
    "tweets_GroundTruth.txt",
    "nytEditorialSnippets_GroundTruth.txt",
    "amazonReviewSnippets_GroundTruth.txt",
)

# Defaults shared with tools/pretrain_tiny.py: the split of the movie snippets
# must be the same in both, so that pretraining never sees dev or test text.
DEFAULT_SEED = 13
DEFAULT_TEST_SIZE = 1000
DEFAULT_DEV_SIZE = 500


class DatasetError(ValueError):
    """Bad input, template, tokenizer or option; printed as one line."""


@dataclass
class Example:
    texts: tuple  # one or two text slots
    label: int  # index into the label words
    source: str = ""  # "file:line" for messages


def _vader_members(path: str, names) -> dict:
    """{name: text} of the GroundTruth files `names` from the vaderSentiment sdist
    (.tar.gz), the inner hutto_ICWSM_2014.tar.gz, a directory, or one .txt file."""
    out = {}
    if os.path.isdir(path):
        for name in names:
            for root, _, files in os.walk(path):
                if name in files:
                    with open(os.path.join(root, name), "rb") as fh:
                        out[name] = fh.read().decode("utf-8")
                    break
    elif path.endswith(".txt"):
        base = os.path.basename(path)
        if base in names:
            with open(path, "rb") as fh:
                out[base] = fh.read().decode("utf-8")
    else:
        try:
            tar = tarfile.open(path, "r:*")
        except (OSError, tarfile.TarError) as e:
            raise DatasetError(f"{path}: not a readable tar archive ({e})") from None
        with tar:
            members = {os.path.basename(m.name): m for m in tar.getmembers() if m.isfile()}
            if all(n in members for n in names):
                for name in names:
                    out[name] = tar.extractfile(members[name]).read().decode("utf-8")
            else:
                inner = [m for m in tar.getmembers() if m.name.endswith(VADER_INNER_TAR)]
                if not inner:
                    raise DatasetError(
                        f"{path}: neither {names[0]} nor {VADER_INNER_TAR} inside; expected the "
                        "vaderSentiment 3.3.2 sdist (pip download vaderSentiment==3.3.2 "
                        "--no-binary :all: --no-deps)"
                    )
                data = tar.extractfile(inner[0]).read()
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t2:
                    m2 = {os.path.basename(m.name): m for m in t2.getmembers() if m.isfile()}
                    for name in names:
                        if name in m2:
                            out[name] = t2.extractfile(m2[name]).read().decode("utf-8")
    missing = [n for n in names if n not in out]
    if missing:
        raise DatasetError(f"{path}: {', '.join(missing)} not found")
    return out


def parse_ground_truth(text: str, name: str):
    """Rows (id, mean rating, snippet) of a hutto_ICWSM_2014 *_GroundTruth.txt file
    (tab-separated, CRLF line ends, the last line without one)."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise DatasetError(f"{name}:{lineno}: expected 3 tab-separated fields, found {len(parts)}")
        try:
            rating = float(parts[1])
        except ValueError:
            raise DatasetError(f"{name}:{lineno}: rating {parts[1]!r} is not a number") from None
        rows.append((parts[0], rating, parts[2].strip()))
    return rows


def read_vader(path: str, corpus: str = "movies", neutral_band: float = 0.0):
    """(examples, dropped) from one rated corpus (VADER_CORPORA): label 1 if
    the mean rating is > neutral_band, 0 if < -neutral_band; the rest (by
    default only exact zeros) is dropped and counted."""
    if corpus not in VADER_CORPORA:
        raise DatasetError(f"--vader-corpus {corpus!r}: one of {', '.join(VADER_CORPORA)}")
    name = VADER_CORPORA[corpus]
    text = _vader_members(path, (name,))[name]
    examples, dropped = [], 0
    for rid, rating, snippet in parse_ground_truth(text, name):
        if abs(rating) <= neutral_band:
            dropped += 1
            continue
        examples.append(Example((snippet,), 1 if rating > 0 else 0, f"{name}:id {rid}"))
    return examples, dropped


def read_vader_other_rows(path: str) -> dict:
    """{file name: [(id, mean rating, snippet), ...]} of the tweets, NYT and Amazon snippets."""
    files = _vader_members(path, VADER_OTHER_FILES)
    return {name: parse_ground_truth(text, name) for name, text in files.items()}


def _label_index(value, label_values, where: str) -> int:
    key = value
    if isinstance(key, bool):
        key = "true" if key else "false"
    key = str(key).strip()
    if label_values:
        if key not in label_values:
            raise DatasetError(f"{where}: label {key!r} is not one of --label-values {label_values}")
        return label_values.index(key)
    try:
        return int(key)
    except ValueError:
        raise DatasetError(
            f"{where}: label {key!r} is not an integer; give --label-values (the file's label "
            "values in the order of --labels)"
        ) from None


def read_table(path: str, text_field: str, text2_field: str | None, label_field: str, label_values):
    """Examples from a TSV (header row) or JSON Lines file."""
    fields = [text_field] + ([text2_field] if text2_field else [])
    rows = []
    if path.endswith((".jsonl", ".json")):
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rows.append((lineno, json.loads(line)))
                except json.JSONDecodeError as e:
                    raise DatasetError(f"{path}:{lineno}: invalid JSON ({e.msg})") from None
    elif path.endswith((".tsv", ".txt")):
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            for lineno, row in enumerate(reader, 2):
                rows.append((lineno, row))
    else:
        raise DatasetError(f"{path}: unknown file type (expected .tsv, .jsonl or .json)")
    examples = []
    for lineno, row in rows:
        where = f"{path}:{lineno}"
        for name in fields + [label_field]:
            if name not in row or row[name] is None:
                raise DatasetError(f"{where}: no field {name!r} (fields: {', '.join(map(str, row))})")
        texts = tuple(str(row[name]).strip() for name in fields)
        examples.append(Example(texts, _label_index(row[label_field], label_values, where), where))
    return examples


def dedupe(examples):
    """First occurrence of each text (tuple) kept; returns (kept, dropped count)."""
    seen, kept = set(), []
    for ex in examples:
        key = tuple(" ".join(t.split()) for t in ex.texts)
        if key in seen:
            continue
        seen.add(key)
        kept.append(ex)
    return kept, len(examples) - len(kept)


def split_pool(examples, seed: int, test_size: int, dev_size: int):
    """(test, dev, train_pool) from a seeded permutation of the pool (numpy
    PCG64 with `seed`): test first, then dev, the rest train."""
    n = len(examples)
    if test_size + dev_size >= n:
        raise DatasetError(f"--test-size {test_size} + --dev-size {dev_size} leave no training examples of {n}")
    perm = np.random.default_rng(seed).permutation(n)
    test = [examples[i] for i in perm[:test_size]]
    dev = [examples[i] for i in perm[test_size:test_size + dev_size]]
    train = [examples[i] for i in perm[test_size + dev_size:]]
    return test, dev, train


def vader_movie_splits(path: str, seed: int = DEFAULT_SEED, test_size: int = DEFAULT_TEST_SIZE,
                       dev_size: int = DEFAULT_DEV_SIZE, neutral_band: float = 0.0):
    """The demo's split of the movie-review snippets: (test, dev, train_pool, info).
    tools/pretrain_tiny.py calls this to pretrain on train_pool's text only."""
    examples, neutral = read_vader(path, "movies", neutral_band)
    examples, dups = dedupe(examples)
    test, dev, train = split_pool(examples, seed, test_size, dev_size)
    return test, dev, train, {"neutral_dropped": neutral, "duplicates_dropped": dups}


def k_shot(examples, k: int, num_labels: int, seed: int, what: str):
    """k examples per label, drawn with numpy PCG64(seed), in a shuffled order."""
    if k <= 0:
        return list(examples)
    rng = np.random.default_rng(seed)
    chosen = []
    for label in range(num_labels):
        idx = [i for i, ex in enumerate(examples) if ex.label == label]
        if len(idx) < k:
            raise DatasetError(f"{what}: only {len(idx)} examples of label {label}, {k} asked (--k-shot)")
        chosen.extend(rng.choice(idx, size=k, replace=False).tolist())
    chosen = [chosen[i] for i in rng.permutation(len(chosen))]
    return [examples[i] for i in chosen]
