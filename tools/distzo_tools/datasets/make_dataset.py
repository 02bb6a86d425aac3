"""Turn labelled text into distzo classification datasets (HDF5, docs/datasets.md).

MeZO's prompt-based "train as classification" (Malladi et al., 2023): every
example is rendered with a template whose label slot comes last, e.g. SST-2's

    {text} It was {label} .        label words: terrible great

The prompt is everything before the label slot ("<sentence> It was"); the space
in front of {label} belongs to the label word (" terrible", " great": byte-level
BPE tokenizers such as OPT's spell a word with its leading space), and whatever
follows the label slot (" .") is not used. Each label word must be ONE token of
the tokenizer; the candidates of the file are those token ids, in label order,
and distzo predicts at the last prompt token. For every example the script
checks that tokenize(prompt + label word) == tokenize(prompt) + [candidate], so
the prediction position really is where the label word would follow.

Sources (pooled, then deduplicated by text):

    --vader PATH    the Rotten Tomatoes movie-review snippets with mean human
                    ratings (10,605 sentences, the text the Stanford Sentiment
                    Treebank was built from) in the vaderSentiment 3.3.2 sdist:
                    PATH is vaderSentiment-3.3.2.tar.gz, the inner
                    additional_resources/hutto_ICWSM_2014.tar.gz, or the
                    extracted movieReviewSnippets_GroundTruth.txt. Label =
                    sign of the mean rating: 0 negative, 1 positive; the 37
                    snippets whose mean is exactly 0 have no sign and are
                    dropped (--neutral-band widens that band).
                    --vader-corpus amazon|tweets|nyt takes one of the same
                    tarball's other rated corpora instead: 3,708 Amazon
                    product-review sentences, 4,200 tweets, 5,190 New York
                    Times editorial sentences (same rating scale, same rule).
    --input FILE    TSV (header row; .tsv) or JSON Lines (.jsonl/.json) files a
                    user has locally, e.g. GLUE SST-2 train.tsv
                    (sentence, label), RTE (premise/hypothesis or
                    sentence1/sentence2, label), BoolQ (passage, question,
                    label): --text-field, --text2-field, --label-field name
                    the columns; --label-values maps the file's label values
                    to label indices (default 0..K-1 as integers; JSON
                    true/false are the strings "false"/"true").
    --test-input F  optional: take the test split from F (same format rules,
                    e.g. GLUE's labelled validation file) instead of the pool.

Splits (seeded): the pooled examples are deduplicated by text (first
occurrence kept), shuffled with --seed; the first --test-size become test (unless
--test-input), the next --dev-size dev, the rest is the train pool; then
--k-shot examples per class are drawn from the train pool (0 = the whole pool)
and --dev-k-shot per class for dev if given. Every split written by one call is
padded to the same length T (distzo requires equal sequence lengths for
data.train and data.eval), at most --max-len tokens. Runs of whitespace in a
text are collapsed to one space. A prompt longer than
--max-len is truncated in its text slot(s), word by word from the end (the
longest slot first), never in the template, and re-tokenised, so input_ids are
always exactly what the tokenizer gives for the prompt that was kept.

Example (the demo's data, docs/demo.md):

    python3 tools/make_dataset.py --vader vaderSentiment-3.3.2.tar.gz \\
        --tokenizer inputs/demo/tokenizer.json --out-dir inputs/demo \\
        --template '{text} It was {label} .' --labels terrible great \\
        --test-size 1000 --dev-size 500 --k-shot 256 --max-len 64 --seed 13

    python3 tools/make_dataset.py --input SST-2/train.tsv --test-input SST-2/dev.tsv \\
        --text-field sentence --label-field label --tokenizer opt-125m/tokenizer.json \\
        --template '{text} It was {label} .' --labels terrible great --k-shot 16

    python3 tools/make_dataset.py --input RTE/train.jsonl --text-field premise \\
        --text2-field hypothesis --label-field label \\
        --label-values entailment not_entailment --labels Yes No \\
        --template '{text}\\nDoes this mean that "{text2}" is true? Yes or No?\\n{label}' ...

Needs numpy, h5py and tokenizers (no torch). Errors print one line
"make_dataset: error: ..." and exit with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
import tempfile
from dataclasses import dataclass, field

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "tokenizers")

import h5py  # noqa: E402
import numpy as np  # noqa: E402

from distzo_tools import formats  # noqa: E402
from distzo_tools.datasets.sources import (  # noqa: E402
    DEFAULT_DEV_SIZE,
    DEFAULT_SEED,
    DEFAULT_TEST_SIZE,
    VADER_CORPORA,
    DatasetError,
    dedupe,
    k_shot,
    read_table,
    read_vader,
    split_pool,
)


# ---------------------------------------------------------------------------
# templates and tokenisation


@dataclass
class Template:
    """A MeZO-style template: text slots {text} (and {text2}), then {label} last."""

    text: str
    slots: tuple = field(init=False)
    prompt_format: str = field(init=False)
    label_prefix: str = field(init=False)

    def __post_init__(self):
        t = self.text.replace("\\n", "\n")
        if t.count("{label}") != 1:
            raise DatasetError(f"template {self.text!r}: needs exactly one {{label}} slot")
        before, _after = t.split("{label}")
        self.slots = tuple(s for s in ("text", "text2") if "{" + s + "}" in before)
        if "text" not in self.slots:
            raise DatasetError(f"template {self.text!r}: needs a {{text}} slot before {{label}}")
        for s in self.slots:
            if before.count("{" + s + "}") != 1:
                raise DatasetError(f"template {self.text!r}: {{{s}}} must appear once")
        # The space before the label slot is the label word's leading space.
        self.label_prefix = ""
        if before.endswith(" "):
            before, self.label_prefix = before[:-1], " "
        self.prompt_format = before
        try:
            self.render(tuple("x" for _ in self.slots))
        except (KeyError, IndexError, ValueError) as e:
            raise DatasetError(f"template {self.text!r}: only {{text}}, {{text2}} and {{label}} are allowed ({e})") from None

    def render(self, texts) -> str:
        return self.prompt_format.format(**dict(zip(self.slots, texts)))


class Tok:
    """A Hugging Face `tokenizers` tokenizer (tokenizer.json)."""

    def __init__(self, path: str, add_special_tokens: bool = True):
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise DatasetError("the 'tokenizers' package is needed (pip install tokenizers)") from None
        try:
            self.tok = Tokenizer.from_file(path)
        except Exception as e:  # tokenizers raises a plain Exception
            raise DatasetError(f"{path}: cannot load tokenizer ({e})") from None
        self.path = path
        self.add_special = add_special_tokens

    def encode(self, text: str, special: bool | None = None) -> list:
        return self.tok.encode(text, add_special_tokens=self.add_special if special is None else special).ids

    def encode_batch(self, texts, special: bool | None = None) -> list:
        s = self.add_special if special is None else special
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=s)]

    def token_id(self, token: str):
        return self.tok.token_to_id(token)

    def vocab_size(self) -> int:
        return self.tok.get_vocab_size(with_added_tokens=True)


def label_candidates(tok: Tok, words, prefix: str):
    """Token id of each label word (prefix + word); each must be one token."""
    ids = []
    for w in words:
        piece = prefix + w
        enc = tok.encode(piece, special=False)
        if len(enc) != 1:
            pieces = [tok.tok.id_to_token(i) for i in enc]
            raise DatasetError(
                f"label word {piece!r} is {len(enc)} tokens {pieces} with tokenizer {tok.path}, "
                "but each label word must be ONE token: choose another word, or give the "
                "tokenizer that token (tools/pretrain_tiny.py --ensure-tokens)"
            )
        ids.append(enc[0])
    if len(set(ids)) != len(ids):
        raise DatasetError(f"label words {list(words)} map to repeated token ids {ids}")
    return ids


def encode_prompt(tok: Tok, template: Template, texts, max_len: int):
    """(ids, rendered prompt, truncated?) with len(ids) <= max_len.

    Truncation removes whole words from the end of the longest text slot (then
    characters, if one word is still too long) and re-tokenises the rendered
    prompt, so ids are always the tokenizer's own encoding of the prompt kept.
    """
    texts = tuple(" ".join(t.split()) for t in texts)  # normalise whitespace
    prompt = template.render(texts)
    ids = tok.encode(prompt)
    if len(ids) <= max_len:
        return ids, prompt, False
    texts = list(texts)
    while True:
        slot = max(range(len(texts)), key=lambda i: len(texts[i].split()))
        words = texts[slot].split()
        if len(words) > 1:
            # largest n in [1, len(words) - 1] with the prompt fitting (binary search;
            # fall back to 1 word and continue with the next slot / characters)
            lo, hi = 1, len(words) - 1
            best = None
            while lo <= hi:
                mid = (lo + hi) // 2
                trial = list(texts)
                trial[slot] = " ".join(words[:mid])
                if len(tok.encode(template.render(trial))) <= max_len:
                    best, lo = mid, mid + 1
                else:
                    hi = mid - 1
            texts[slot] = " ".join(words[: best if best else 1])
        else:
            word = texts[slot]
            if len(word) <= 1:
                raise DatasetError(
                    f"--max-len {max_len} is too short for the template alone "
                    f"({len(tok.encode(template.render(tuple('' for _ in texts))))} tokens)"
                )
            texts[slot] = word[: len(word) // 2]
        prompt = template.render(texts)
        ids = tok.encode(prompt)
        if len(ids) <= max_len:
            return ids, prompt, True


@dataclass
class Encoded:
    ids: list
    label: int
    prompt: str
    truncated: bool


def encode_examples(tok: Tok, template: Template, examples, candidates, label_texts, max_len: int):
    """Encode every example's prompt; check that each label word continues it as
    exactly its candidate token."""
    out = []
    for ex in examples:
        if len(ex.texts) != len(template.slots):
            raise DatasetError(
                f"{ex.source}: the template has {len(template.slots)} text slot(s), the example "
                f"{len(ex.texts)} (use --text2-field for pair tasks)"
            )
        ids, prompt, truncated = encode_prompt(tok, template, ex.texts, max_len)
        out.append(Encoded(ids, ex.label, prompt, truncated))
    # The prediction position must be where the label word follows.
    for e in out:
        for c, word in zip(candidates, label_texts):
            full = tok.encode(e.prompt + word)
            if full != e.ids + [c]:
                raise DatasetError(
                    f"prompt {e.prompt!r} + label word {word!r} does not tokenise as the "
                    f"prompt's tokens followed by the label token ({full[-4:]} vs "
                    f"{(e.ids + [c])[-4:]} at the end); change the template so the label word "
                    "starts a new token (e.g. a space before {label})"
                )
    return out


# ---------------------------------------------------------------------------
# writing


def write_classification(path: str, encoded, candidates, pad_id: int, seq_len: int, description: str):
    """One distzo classification file (format 1), atomically (temp file + rename)."""
    n = len(encoded)
    if n == 0:
        raise DatasetError(f"{path}: no examples to write")
    input_ids = np.full((n, seq_len), pad_id, dtype=np.int32)
    lengths = np.zeros(n, dtype=np.int32)
    labels = np.zeros(n, dtype=np.int32)
    for i, e in enumerate(encoded):
        input_ids[i, : len(e.ids)] = e.ids
        lengths[i] = len(e.ids)
        labels[i] = e.label
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        with h5py.File(tmp, "w", libver=("earliest", "v110")) as f:
            formats.write_string_attr(f.attrs, "distzo_format", "dataset")
            f.attrs.create("format_version", np.int64(1), dtype=np.int64)
            formats.write_string_attr(f.attrs, "task", "classification")
            f.attrs.create("pad_token_id", np.int64(pad_id), dtype=np.int64)
            formats.write_string_attr(f.attrs, "description", description)
            for name, arr in (("input_ids", input_ids), ("lengths", lengths),
                              ("candidates", np.asarray(candidates, np.int32)), ("labels", labels)):
                f.create_dataset(name, data=arr, track_times=False)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_ids_file(path: str, encoded, candidates, pad_id: int, seq_len: int, tok_path: str, template: str):
    """Per example: a comment with the prompt text, then the label, a tab and the
    prompt's token ids as the tokenizer gave them (space-separated). Lines that
    start with '#' are comments."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# distzo dataset fixture: one line per example, in file order: LABEL<TAB>ID ID ...\n")
        fh.write("# the ids are tokenizer.encode(prompt).ids, unpadded; LABEL indexes the candidates\n")
        fh.write(f"# tokenizer: {tok_path}; template: {template!r}\n")
        fh.write(f"# candidates: {' '.join(map(str, candidates))}\n")
        fh.write(f"# pad_token_id: {pad_id}; seq_len: {seq_len}; examples: {len(encoded)}\n")
        for e in encoded:
            fh.write(f"# {json.dumps(e.prompt, ensure_ascii=False)}{' (truncated)' if e.truncated else ''}\n")
            fh.write(f"{e.label}\t{' '.join(map(str, e.ids))}\n")


# ---------------------------------------------------------------------------
# main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Labelled text -> distzo classification datasets (HDF5) with MeZO-style prompts.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Sources, splits, truncation and examples: see the module docstring "
               "(head -75 tools/distzo_tools/datasets/make_dataset.py) and docs/demo.md.",
    )
    src = p.add_argument_group("sources")
    src.add_argument("--vader", metavar="PATH", help="vaderSentiment-3.3.2.tar.gz (or its hutto tarball / the movie .txt)")
    src.add_argument("--vader-corpus", choices=sorted(VADER_CORPORA), default="movies",
                     help="which rated corpus of --vader (default: movies)")
    src.add_argument("--neutral-band", type=float, default=0.0,
                     help="drop vader snippets with |mean rating| <= this (default 0: exact zeros only)")
    src.add_argument("--input", action="append", default=[], metavar="FILE", help=".tsv or .jsonl; repeatable (pooled)")
    src.add_argument("--test-input", metavar="FILE", help="take test examples from this file, not from the pool")
    src.add_argument("--text-field", default="sentence")
    src.add_argument("--text2-field", default=None, help="second text column for pair tasks ({text2})")
    src.add_argument("--label-field", default="label")
    src.add_argument("--label-values", nargs="+", default=None,
                     help="the file's label values, in the order of --labels (default: integers 0..K-1)")
    pr = p.add_argument_group("prompt")
    pr.add_argument("--tokenizer", required=True, help="Hugging Face tokenizer.json")
    pr.add_argument("--template", default="{text} It was {label} .",
                    help="slots {text} [{text2}] then {label}; \\n allowed (default: %(default)r, MeZO SST-2)")
    pr.add_argument("--labels", nargs="+", default=["terrible", "great"],
                    help="label words, one token each, label 0 first (default: terrible great)")
    pr.add_argument("--no-special-tokens", action="store_true",
                    help="do not let the tokenizer add its special tokens (OPT's leading </s>)")
    pr.add_argument("--pad-id", type=int, default=None, help="pad token id (default: the tokenizer's <pad>)")
    pr.add_argument("--max-len", type=int, default=64, help="maximum prompt tokens (default %(default)s)")
    sp = p.add_argument_group("splits")
    sp.add_argument("--seed", type=int, default=DEFAULT_SEED)
    sp.add_argument("--test-size", type=int, default=DEFAULT_TEST_SIZE,
                    help="test examples (from the pool, or sampled from --test-input; 0 = all of --test-input)")
    sp.add_argument("--dev-size", type=int, default=DEFAULT_DEV_SIZE)
    sp.add_argument("--k-shot", type=int, default=0, help="train examples per class (0 = the whole train pool)")
    sp.add_argument("--dev-k-shot", type=int, default=0, help="dev examples per class (0 = all --dev-size)")
    out = p.add_argument_group("output")
    out.add_argument("--out-dir", help="write PREFIXtrain.h5, PREFIXdev.h5, PREFIXtest.h5 here")
    out.add_argument("--prefix", default="", help="file name prefix: PREFIXtrain.h5, PREFIXdev.h5, PREFIXtest.h5")
    out.add_argument("--splits", nargs="+", default=["train", "dev", "test"], choices=["train", "dev", "test"],
                     help="which split files to write (default: all three)")
    out.add_argument("--all-out", metavar="FILE",
                     help="instead of splits: every pooled example, in input order, in one file (fixtures)")
    out.add_argument("--ids-file", metavar="FILE",
                     help="with --all-out: also write LABEL<TAB>prompt token ids per example (test fixture)")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        run(args, argv)
    except DatasetError as e:
        print(f"make_dataset: error: {e}", file=sys.stderr)
        return 1
    return 0


def run(args, argv) -> None:
    if not args.vader and not args.input:
        raise DatasetError("give a source: --vader PATH or --input FILE")
    if args.max_len < 2:
        raise DatasetError("--max-len must be >= 2")
    template = Template(args.template)
    if args.text2_field and "text2" not in template.slots:
        raise DatasetError("--text2-field given but the template has no {text2} slot")
    tok = Tok(args.tokenizer, add_special_tokens=not args.no_special_tokens)
    candidates = label_candidates(tok, args.labels, template.label_prefix)
    label_texts = [template.label_prefix + w for w in args.labels]
    pad_id = args.pad_id if args.pad_id is not None else tok.token_id("<pad>")
    if pad_id is None:
        raise DatasetError(f"{args.tokenizer} has no <pad> token; give --pad-id")
    K = len(args.labels)

    notes = []
    pool = []
    if args.vader:
        ex, neutral = read_vader(args.vader, args.vader_corpus, args.neutral_band)
        what = {"movies": "movie", "amazon": "Amazon review", "tweets": "tweet", "nyt": "NYT editorial"}
        notes.append(f"{len(ex) + neutral} vader {what[args.vader_corpus]} snippets, {neutral} with |mean rating| <= "
                     f"{args.neutral_band:g} dropped")
        pool += ex
    for path in args.input:
        pool += read_table(path, args.text_field, args.text2_field, args.label_field, args.label_values)
    for ex in pool:
        if not 0 <= ex.label < K:
            raise DatasetError(f"{ex.source}: label {ex.label} is outside [0, {K}) for --labels {args.labels}")
    pool, dups = dedupe(pool)
    notes.append(f"{dups} duplicate texts dropped, {len(pool)} examples")

    if bool(args.all_out) == bool(args.out_dir):
        raise DatasetError("give exactly one of --out-dir (splits) and --all-out (one file)")
    if args.ids_file and not args.all_out:
        raise DatasetError("--ids-file needs --all-out")
    splits = {}
    if args.all_out:
        splits["all"] = pool
    else:
        if args.test_input:
            test = read_table(args.test_input, args.text_field, args.text2_field, args.label_field, args.label_values)
            test, _ = dedupe(test)
            pool_keys = {tuple(" ".join(t.split()) for t in ex.texts) for ex in test}
            before = len(pool)
            pool = [ex for ex in pool if tuple(" ".join(t.split()) for t in ex.texts) not in pool_keys]
            if before != len(pool):
                notes.append(f"{before - len(pool)} pool examples equal to test examples dropped")
            if 0 < args.test_size < len(test):
                test = [test[i] for i in sorted(np.random.default_rng(args.seed).choice(len(test), args.test_size, replace=False))]
            _, dev, train_pool = split_pool(pool, args.seed, 0, args.dev_size)
        else:
            test, dev, train_pool = split_pool(pool, args.seed, args.test_size, args.dev_size)
        splits["train"] = k_shot(train_pool, args.k_shot, K, args.seed + 1, "train pool")
        splits["dev"] = k_shot(dev, args.dev_k_shot, K, args.seed + 2, "dev split")
        splits["test"] = test
        notes.append(f"split seed {args.seed}: test {len(test)}, dev {len(dev)}, train pool {len(train_pool)}")

    encoded = {name: encode_examples(tok, template, exs, candidates, label_texts, args.max_len) for name, exs in splits.items()}
    wanted = ["all"] if args.all_out else args.splits
    seq_len = max(len(e.ids) for name in wanted for e in encoded[name])
    command = "python3 tools/make_dataset.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    for name in wanted:
        enc = encoded[name]
        counts = np.bincount([e.label for e in enc], minlength=K)
        truncated = sum(e.truncated for e in enc)
        desc = (
            f"split {name}: {len(enc)} examples ({', '.join(f'{w!r}: {c}' for w, c in zip(args.labels, counts))}); "
            f"template {args.template!r}, label words {[template.label_prefix + w for w in args.labels]} -> "
            f"candidates {candidates}; prediction at the last prompt token; tokenizer "
            f"{os.path.basename(args.tokenizer)}; max_len {args.max_len} ({truncated} truncated); "
            f"{'; '.join(notes)}; made by: {command}"
        )
        path = args.all_out if name == "all" else os.path.join(args.out_dir, f"{args.prefix}{name}.h5")
        write_classification(path, enc, candidates, pad_id, seq_len, desc)
        print(f"{path}: {len(enc)} examples, T={seq_len}, labels {counts.tolist()}, "
              f"{truncated} truncated, mean length {np.mean([len(e.ids) for e in enc]):.1f}")
        if args.ids_file and name == "all":
            write_ids_file(args.ids_file, enc, candidates, pad_id, seq_len, args.tokenizer, args.template)
            print(f"{args.ids_file}: prompt ids of {len(enc)} examples")
    for n in notes:
        print("note:", n)


if __name__ == "__main__":
    sys.exit(main())
