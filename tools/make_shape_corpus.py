#!/usr/bin/env python3
"""A corpus with WikiText-103's shape but none of its text, for timing a training step only.

Why: a Transformer-XL step's work depends on the vocabulary size (the adaptive softmax's clusters,
cutoffs 20000/40000/200000) and the batch shape, not on which words the text holds. Timing the
paper's preset (txl-base-paper) needs a vocabulary of WikiText-103's size (267,735 types), and the
lent GPU machines have no network to fetch the real corpus. This writes wiki.{train,valid,test}.tokens
in WikiText's layout: every one of the V word types once, then Zipf-distributed words (exponent 1,
as natural text roughly is), a line break every 100 words. Never use it to train or to report a
perplexity: it is random text. The output is deterministic (seeded).

    python3 tools/make_shape_corpus.py DIR [--vocab 267735] [--tokens 3000000]
"""
import argparse
import bisect
import itertools
import os
import random


def zipf_words(vocab, count, rng):
    """count word indices drawn with P(k) ∝ 1/(k+1)."""
    cumulative = list(itertools.accumulate(1.0 / (k + 1) for k in range(vocab)))
    total = cumulative[-1]
    return [bisect.bisect_left(cumulative, rng.random() * total) for _ in range(count)]


def write_split(path, words, per_line=100):
    with open(path + ".tmp", "w") as f:
        for start in range(0, len(words), per_line):
            f.write(" " + " ".join(f"w{k}" for k in words[start:start + per_line]) + " \n")
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--vocab", type=int, default=267735, help="word types (WikiText-103: 267,735)")
    ap.add_argument("--tokens", type=int, default=3000000, help="training tokens beyond one of each type")
    args = ap.parse_args()
    if args.vocab < 2 or args.tokens < 1:
        ap.error("--vocab must be at least 2 and --tokens at least 1")
    os.makedirs(args.dir, exist_ok=True)
    rng = random.Random(0)
    train = list(range(args.vocab)) + zipf_words(args.vocab, args.tokens, rng)
    write_split(os.path.join(args.dir, "wiki.train.tokens"), train)
    held_out = max(1000, args.tokens // 50)
    write_split(os.path.join(args.dir, "wiki.valid.tokens"), zipf_words(args.vocab, held_out, rng))
    write_split(os.path.join(args.dir, "wiki.test.tokens"), zipf_words(args.vocab, held_out, rng))
    print(f"wrote {args.dir}/wiki.{{train,valid,test}}.tokens: {args.vocab} types, {len(train)} training tokens "
          f"(random Zipf text: for timing a step only)")


if __name__ == "__main__":
    main()
