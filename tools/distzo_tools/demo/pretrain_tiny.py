"""Pretrain the demo's tiny OPT language model and its tokenizer, from scratch.

distzo's demo (docs/demo.md) fine-tunes a model that ships with the repository,
so it needs a small OPT-architecture model whose pretraining anyone can redo on
a laptop. This script makes it from freely available text only:

  * the tweets, New York Times editorial and Amazon product-review snippets of
    hutto_ICWSM_2014.tar.gz inside the vaderSentiment 3.3.2 sdist (MIT
    licence); those with |mean rating| >= --rated-suffix (0.5) get an
    evaluative sentence appended ("<snippet> Verdict: great.", phrasing and
    adjective drawn at random, RATED_TEMPLATES below), standing in for the
    evaluative text of web-scale corpora, and
  * the Rotten Tomatoes movie-review snippets of the TRAIN POOL of the demo's
    split (distzo_tools.datasets.sources.vader_movie_splits, same --split-seed,
    --test-size, --dev-size), text only: their ratings are never used. The dev
    and test sentences are never seen: they are removed before the tokenizer
    is trained.

Steps (all seeded; single-process, CPU):

 1. a byte-level BPE tokenizer (Hugging Face `tokenizers`, like OPT/GPT-2:
    ByteLevel pre-tokenizer without prefix space, OPT's special tokens
    <s>=0 <pad>=1 </s>=2 <unk>=3, every text starts with </s>), --vocab-size
    tokens; each --ensure-tokens word (" great", " terrible", ...) is made one
    ordinary BPE token by appending the merges that join its pieces (lowest
    priority), so the label words of the demo template are single tokens;
 2. transformers' OPTForCausalLM (pre-LN, ReLU, tied head) with --hidden,
    --layers, --heads, --ffn, --max-pos, trained with first-order AdamW on
    next-token prediction, one snippet per sequence (</s> + snippet + </s>),
    batches of similar lengths, linear warm-up and cosine decay;
 3. export: OUT/model.h5 (distzo model format, distzo_tools.formats),
    OUT/tokenizer.json, OUT/pretrain_log.csv (step, train loss, dev-text loss).

    pip download vaderSentiment==3.3.2 --no-binary :all: --no-deps -d /tmp/vader
    python3 tools/pretrain_tiny.py --vader /tmp/vader/vaderSentiment-3.3.2.tar.gz --out inputs/demo

The defaults make the committed inputs/demo/model.h5 (2 layers, hidden 128,
4 heads, FFN 512, vocabulary 4096, 64 positions: 929,536 parameters, 3.7 MB),
bit-identically with torch 2.15 / transformers 5.24 / tokenizers 0.23, in
about 8 minutes on 2 idle cores (docs/demo.md).

Needs torch, transformers, tokenizers, numpy, h5py. Deterministic for a given
torch build and thread count (--threads, default 2).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import sys
import time

from distzo_tools import requires

if __name__ == "__main__":  # before the imports below: a missing package is one pip line
    requires.check(__file__, "numpy", "h5py", "tokenizers", "torch", "transformers")

from distzo_tools import formats  # noqa: E402
from distzo_tools.datasets import sources  # noqa: E402

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>"]  # OPT's ids 0, 1, 2, 3
PAD_ID, BOS_ID, EOS_ID = 1, 2, 2


# ---------------------------------------------------------------------------
# corpus


# Evaluative sentences appended to the rated tweets / NYT / Amazon snippets
# (--rated-suffix), e.g. "<snippet> Verdict: great." They stand in for the
# evaluative text that web-scale pretraining corpora are full of, from the
# ratings of corpora that are NOT the demo's task (the movie reviews' own
# ratings are never used). Phrasing and adjective are drawn at random per
# snippet. The demo prompt, "<sentence> This movie was [terrible|great] .", is
# none of these phrasings (docs/demo.md says why).
RATED_TEMPLATES = ("{text} It was {word}.", "{text} Overall, it was {word}.", "{text} I thought it was {word}.",
                   "{text} In short: {word}.", "{text} Verdict: {word}.")
RATED_NEGATIVE = ("bad", "terrible", "awful", "boring")
RATED_POSITIVE = ("good", "great", "excellent", "enjoyable")


def build_corpus(vader: str, split_seed: int, test_size: int, dev_size: int, rated_suffix: float, seed: int,
                 rated_words=(RATED_NEGATIVE, RATED_POSITIVE), rated_templates=RATED_TEMPLATES):
    """(train texts, held-out dev texts, info). Dev/test movie snippets are excluded
    from the training texts; dev movie text is kept apart to report an LM loss.
    rated_suffix > 0: the other corpora's snippets with |mean rating| >= it get an
    evaluative sentence (RATED_TEMPLATES, template chosen by a seeded RNG)."""
    test, dev, train_pool, info = sources.vader_movie_splits(vader, split_seed, test_size, dev_size)
    others = sources.read_vader_other_rows(vader)
    held_out = {" ".join(ex.texts[0].split()) for ex in test + dev}
    texts = [" ".join(ex.texts[0].split()) for ex in train_pool]
    counts = {"movie train pool": len(texts)}
    rng = random.Random(seed)
    rated = 0
    for name, rows in others.items():
        kept = 0
        for _, rating, snippet in rows:
            snippet = " ".join(snippet.split())
            if not snippet or snippet in held_out:
                continue
            kept += 1
            if rated_suffix > 0 and abs(rating) >= rated_suffix:
                template = rated_templates[rng.randrange(len(rated_templates))]
                words = rated_words[rating > 0]
                snippet = template.format(text=snippet, word=words[rng.randrange(len(words))])
                rated += 1
            texts.append(snippet)
        counts[name] = kept
    return texts, [ex.texts[0] for ex in dev], {"counts": counts, "with evaluative sentence": rated, **info}


# ---------------------------------------------------------------------------
# tokenizer


def train_tokenizer(texts, vocab_size: int, ensure_tokens):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(ensure_tokens),
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok = ensure_single_tokens(tok, ensure_tokens)
    tok.post_processor = processors.TemplateProcessing(
        single="</s> $A", pair="</s> $A </s> $B", special_tokens=[("</s>", EOS_ID)]
    )
    for i, t in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(t) == i, (t, tok.token_to_id(t))
    return tok


def ensure_single_tokens(tok, words):
    """Append BPE merges so that each word (e.g. " terrible") is one token.

    The word's pieces under the trained merges are joined left to right by new
    merges of the lowest priority, so every other text tokenises as before
    except where those exact pieces meet.
    """
    from tokenizers import Tokenizer

    spec = json.loads(tok.to_str())
    model = spec["model"]
    vocab, merges = model["vocab"], model["merges"]
    as_pairs = bool(merges) and isinstance(merges[0], list)
    for word in words:
        pieces = [tok.id_to_token(i) for i in tok.encode(word, add_special_tokens=False).ids]
        while len(pieces) > 1:
            a, b = pieces[0], pieces[1]
            merges.append([a, b] if as_pairs else f"{a} {b}")
            if a + b not in vocab:
                vocab[a + b] = len(vocab)
            pieces = [a + b] + pieces[2:]
    # added (special) tokens keep their ids; new vocab ids follow the BPE vocab
    tok = Tokenizer.from_str(json.dumps(spec))
    for word in words:
        ids = tok.encode(word, add_special_tokens=False).ids
        if len(ids) != 1:
            raise RuntimeError(f"{word!r} is still {len(ids)} tokens after adding merges")
    return tok


# ---------------------------------------------------------------------------
# model


def make_config(args, vocab_size: int):
    from transformers import OPTConfig

    return OPTConfig(
        vocab_size=vocab_size,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        ffn_dim=args.ffn,
        max_position_embeddings=args.max_pos,
        word_embed_proj_dim=args.hidden,
        do_layer_norm_before=True,
        activation_function="relu",
        dropout=args.dropout,
        attention_dropout=0.0,
        activation_dropout=0.0,
        layerdrop=0.0,
        pad_token_id=PAD_ID,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        tie_word_embeddings=True,
        enable_bias=True,
        init_std=0.02,
    )


def length_batches(seqs, batch_size: int, rng: random.Random):
    """Batches of similar lengths (sorted chunks of 50 batches), shuffled."""
    order = list(range(len(seqs)))
    rng.shuffle(order)
    chunk = batch_size * 50
    batches = []
    for s in range(0, len(order), chunk):
        part = sorted(order[s:s + chunk], key=lambda i: len(seqs[i]))
        batches += [part[j:j + batch_size] for j in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def collate(seqs, idx):
    import torch

    T = max(len(seqs[i]) for i in idx)
    ids = torch.full((len(idx), T), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(idx), T), dtype=torch.long)
    for r, i in enumerate(idx):
        ids[r, : len(seqs[i])] = torch.tensor(seqs[i])
        mask[r, : len(seqs[i])] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return ids, mask, labels


def lm_loss(model, seqs, batch_size: int = 64) -> float:
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(seqs), batch_size):
            idx = list(range(s, min(s + batch_size, len(seqs))))
            ids, mask, labels = collate(seqs, idx)
            n = int((labels[:, 1:] != -100).sum())
            total += float(model(input_ids=ids, attention_mask=mask, labels=labels).loss) * n
            count += n
    model.train()
    return total / max(count, 1)


def export(model, config, path: str) -> None:
    hf = config.to_dict()
    hf["architectures"] = ["OPTForCausalLM"]
    cfg = formats.config_from_hf(hf, json.dumps(hf, indent=2, sort_keys=True))
    state = {k: v.detach().float().numpy() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    formats.write_model(path, cfg, state)


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vader", required=True, help="vaderSentiment-3.3.2.tar.gz (sdist) or its hutto tarball")
    p.add_argument("--out", required=True, help="output directory (model.h5, tokenizer.json, pretrain_log.csv)")
    p.add_argument("--split-seed", type=int, default=sources.DEFAULT_SEED)
    p.add_argument("--test-size", type=int, default=sources.DEFAULT_TEST_SIZE)
    p.add_argument("--dev-size", type=int, default=sources.DEFAULT_DEV_SIZE)
    p.add_argument("--rated-suffix", type=float, default=0.5, metavar="R",
                   help="append an evaluative sentence (good/bad) to tweet/NYT/Amazon snippets with "
                        "|mean rating| >= R; 0 = plain text only (default %(default)s)")
    p.add_argument("--rated-negative", nargs="+", default=list(RATED_NEGATIVE), metavar="WORD")
    p.add_argument("--rated-positive", nargs="+", default=list(RATED_POSITIVE), metavar="WORD")
    p.add_argument("--rated-templates", nargs="+", default=list(RATED_TEMPLATES))
    p.add_argument("--vocab-size", type=int, default=4096)
    p.add_argument("--ensure-tokens", nargs="*", default=[" great", " terrible", " good", " bad"])
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=512)
    p.add_argument("--max-pos", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--epochs", type=float, default=10.0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--wd", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log-every", type=int, default=700)
    args = p.parse_args(argv)

    import torch
    from transformers import OPTForCausalLM

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)

    texts, dev_texts, info = build_corpus(args.vader, args.split_seed, args.test_size, args.dev_size,
                                          args.rated_suffix, args.seed, (args.rated_negative, args.rated_positive),
                                          args.rated_templates)
    print(f"corpus: {len(texts)} snippets {info['counts']}, {info['with evaluative sentence']} with an "
          f"evaluative sentence; movie neutral dropped {info['neutral_dropped']}, "
          f"duplicates dropped {info['duplicates_dropped']}; {sum(map(len, texts))} characters")

    tok = train_tokenizer(texts, args.vocab_size, args.ensure_tokens)
    n_tok = tok.get_vocab_size(with_added_tokens=True)
    tok_path = os.path.join(args.out, "tokenizer.json")
    tok.save(tok_path)
    print(f"tokenizer: {n_tok} tokens -> {tok_path}; "
          + ", ".join(f"{w!r}={tok.token_to_id(tok.id_to_token(tok.encode(w, add_special_tokens=False).ids[0]))}"
                      for w in args.ensure_tokens))

    limit = args.max_pos
    seqs = [ids[:limit - 1] + [EOS_ID] for ids in (e.ids for e in tok.encode_batch(texts))]
    dev_seqs = [ids[:limit - 1] + [EOS_ID] for ids in (e.ids for e in tok.encode_batch(dev_texts))]
    n_train_tokens = sum(map(len, seqs))
    print(f"train: {len(seqs)} sequences, {n_train_tokens} tokens; dev text: {len(dev_seqs)} sequences")

    vocab_size = int(math.ceil(n_tok / 64) * 64)  # rows beyond the tokenizer are never indexed
    config = make_config(args, vocab_size)
    model = OPTForCausalLM(config)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: OPT {args.layers} layers, hidden {args.hidden}, {args.heads} heads, ffn {args.ffn}, "
          f"vocab {vocab_size}, max_pos {args.max_pos}: {n_params} parameters")

    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.98))
    steps_per_epoch = math.ceil(len(seqs) / args.batch)
    total = int(args.epochs * steps_per_epoch)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        return args.lr * 0.5 * (1 + math.cos(math.pi * (step - args.warmup) / max(1, total - args.warmup)))

    rng = random.Random(args.seed)
    log_path = os.path.join(args.out, "pretrain_log.csv")
    log = open(log_path, "w", newline="")
    writer = csv.writer(log)
    writer.writerow(["step", "epoch", "train_loss", "dev_text_loss", "seconds"])
    print(f"training: {total} steps ({args.epochs} epochs of {steps_per_epoch}), batch {args.batch}, "
          f"AdamW lr {args.lr}, wd {args.wd}, dropout {args.dropout}, {args.threads} threads")
    step, running, t0 = 0, [], time.time()
    while step < total:
        for idx in length_batches(seqs, args.batch, rng):
            if step >= total:
                break
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
            ids, mask, labels = collate(seqs, idx)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            running.append(float(loss.detach()))
            step += 1
            if step % args.log_every == 0 or step == total:
                dev = lm_loss(model, dev_seqs)
                tr = sum(running) / len(running)
                running = []
                el = time.time() - t0
                writer.writerow([step, f"{step / steps_per_epoch:.3f}", f"{tr:.4f}", f"{dev:.4f}", f"{el:.1f}"])
                log.flush()
                print(f"step {step}/{total}  train loss {tr:.4f}  dev-text loss {dev:.4f} "
                      f"(ppl {math.exp(dev):.1f})  {el:.0f} s", flush=True)
    log.close()

    model.eval()
    model_path = os.path.join(args.out, "model.h5")
    export(model, config, model_path)
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes), {tok_path}, {log_path}; "
          f"total {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
