#!/usr/bin/env python3
"""Build urpe's embedded language-modelling corpus, data/assets/corpus/{train,valid,test}.txt.gz.

Sources (Debian packages, public-domain texts; see data/assets/README):
  * Jane Austen's six novels from r-cran-janeaustenr. Its lazy-load data base
    (Rdata.rdx + Rdata.rdb in its data folder) is read directly: R's XDR serialisation is parsed just far
    enough to pull out the character vectors, so R itself is not needed.
  * The King James Bible, printed verse by verse by the `bible` program (bible-kjv) from the data
    of bible-kjv-text.

Output format is WikiText's: whitespace-separated tokens, one paragraph (Austen) or verse / chapter
heading (Bible) per line, punctuation split off, `do n't` / `Emma 's` clitics, `@-@` for hyphens
inside words and `@,@` / `@.@` inside numbers. Each source (each novel, and the Bible) is cut into
contiguous 90% / 5% / 5% blocks of lines for train / valid / test; train tokens seen fewer than
--min-count times become <unk> in every split, as do valid/test tokens that are not kept in train,
so valid and test have no out-of-vocabulary token.

It also writes data/assets/corpus/sources.tsv, which lines of each split come from which source
(split, first line counting from 1, line count, source title), so `urpe analyze` can label a
window of text with its novel or the Bible (app/analysis/corpus_topics.h).

The output is deterministic: gzip with mtime 0 and no file name, so a rerun gives the same bytes
(with the same zlib). Python 3 standard library only.

    python3 tools/make_corpus.py            # writes data/assets/corpus/, prints the statistics
"""
import argparse
import collections
import gzip
import io
import math
import os
import re
import struct
import subprocess
import sys
import zlib

JANEAUSTENR_DATA = "/usr/lib/R/site-library/janeaustenr/data"
# Publication order; the keys are the object names inside janeaustenr.
AUSTEN_NOVELS = [
    ("sensesensibility", "Sense and Sensibility (1811)"),
    ("prideprejudice", "Pride and Prejudice (1813)"),
    ("mansfieldpark", "Mansfield Park (1814)"),
    ("emma", "Emma (1815)"),
    ("northangerabbey", "Northanger Abbey (1817)"),
    ("persuasion", "Persuasion (1817)"),
]
SPLITS = ("train", "valid", "test")
UNK = "<unk>"


# ---------------------------------------------------------------------------------------------
# R serialisation (format "X\n", version 2 or 3), enough for lists of character vectors.
# ---------------------------------------------------------------------------------------------
NILVALUE_SXP, REFSXP, SYMSXP, LISTSXP, CHARSXP = 254, 255, 1, 2, 9
LGLSXP, INTSXP, REALSXP, STRSXP, VECSXP = 10, 13, 14, 16, 19
EMPTYENV_SXP, BASEENV_SXP, GLOBALENV_SXP = 242, 241, 253
UTF8_MASK = 1 << 3


class RReader:
    def __init__(self, data):
        self.data, self.pos, self.refs = data, 0, []

    def int32(self):
        value = struct.unpack_from(">i", self.data, self.pos)[0]
        self.pos += 4
        return value

    def length(self):
        n = self.int32()
        if n == -1:  # long vector: two 32-bit halves
            upper, lower = self.int32(), self.int32()
            n = (upper << 32) + lower
        return n

    def item(self):
        flags = self.int32()
        sxp = flags & 0xFF
        has_attr, has_tag, levels = flags & (1 << 9), flags & (1 << 10), flags >> 12
        if sxp in (NILVALUE_SXP, EMPTYENV_SXP, BASEENV_SXP, GLOBALENV_SXP):
            return None
        if sxp == REFSXP:
            index = flags >> 8
            return self.refs[(index or self.int32()) - 1]
        if sxp == SYMSXP:
            symbol = ("symbol", self.item())
            self.refs.append(symbol)
            return symbol
        if sxp == CHARSXP:
            n = self.int32()
            if n == -1:
                return None  # NA_character_
            raw = self.data[self.pos:self.pos + n]
            self.pos += n
            return raw.decode("utf-8" if levels & UTF8_MASK else "latin-1")
        if sxp == LISTSXP:  # pairlist: (tag, value) pairs
            pairs = []
            while True:
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else None
                pairs.append((tag, self.item()))
                flags = self.int32()
                if flags & 0xFF == NILVALUE_SXP:
                    return pairs
                if flags & 0xFF != LISTSXP:
                    raise ValueError("R data: unsupported pairlist tail type %d" % (flags & 0xFF))
                has_attr, has_tag = flags & (1 << 9), flags & (1 << 10)
        if sxp in (STRSXP, VECSXP, INTSXP, LGLSXP, REALSXP):
            n = self.length()
            if sxp in (STRSXP, VECSXP):
                values = [self.item() for _ in range(n)]
            elif sxp == REALSXP:
                values = list(struct.unpack_from(">%dd" % n, self.data, self.pos))
                self.pos += 8 * n
            else:
                values = list(struct.unpack_from(">%di" % n, self.data, self.pos))
                self.pos += 4 * n
            attributes = dict(((tag[1] if tag else None), v) for tag, v in self.item()) \
                if has_attr else {}
            if "names" in attributes:
                return dict(zip(attributes["names"], values))
            return values
        raise ValueError("R data: unsupported SEXP type %d at byte %d" % (sxp, self.pos))


def unserialize(data):
    if data[:2] != b"X\n":
        raise ValueError("R data: expected XDR serialisation ('X\\n'), got %r" % data[:2])
    reader = RReader(data)
    reader.pos = 2
    version = reader.int32()
    reader.int32()  # writer R version
    reader.int32()  # minimal reader R version
    if version == 3:
        name_length = reader.int32()
        reader.pos += name_length  # native encoding name
    return reader.item()


def read_lazyload_db(directory, name="Rdata"):
    """Objects of an R lazy-load data base (name.rdx index + name.rdb blobs) as Python values."""
    with open(os.path.join(directory, name + ".rdx"), "rb") as f:
        index = unserialize(zlib.decompress(f.read(), 15 + 32))  # gzip or zlib stream
    with open(os.path.join(directory, name + ".rdb"), "rb") as f:
        blob = f.read()
    objects = {}
    for object_name, (offset, size) in index["variables"].items():
        record = blob[offset:offset + size]
        expected = struct.unpack(">I", record[:4])[0]
        if record[4:5] in (b"2", b"X", b"Z", b"0"):
            raise ValueError("R data: bzip2/xz-compressed lazy-load records are not supported")
        raw = zlib.decompress(record[4:])
        if len(raw) != expected:
            raise ValueError("R data: %s decompressed to %d bytes, expected %d"
                             % (object_name, len(raw), expected))
        objects[object_name] = unserialize(raw)
    return objects


# ---------------------------------------------------------------------------------------------
# Sources -> paragraphs (one string per output line)
# ---------------------------------------------------------------------------------------------
def austen_paragraphs(lines):
    """Gutenberg-wrapped lines -> paragraphs (blank-line separated). Editorial notes in square
    brackets ("[End volume one of this edition.]") are dropped."""
    paragraphs, current = [], []
    for line in lines + [""]:
        line = line.strip()
        if line:
            current.append(line)
            continue
        if current:
            text = " ".join(current)
            if not (text.startswith("[") and text.endswith("]")):
                paragraphs.append(text)
            current = []
    return paragraphs


def bible_paragraphs(bible_program):
    """One line per verse (verse number dropped), plus a heading line per chapter ("Genesis 1")."""
    out = subprocess.run([bible_program, "-l0", "gen1:1-rev22:21"], check=True,
                         stdout=subprocess.PIPE, env={"PATH": os.environ.get("PATH", "")})
    paragraphs, verses = [], 0
    for line in out.stdout.decode("ascii").splitlines():
        if not line.strip():
            continue
        verse = re.match(r"^\s+\d+ (.*)$", line)
        if verse:
            paragraphs.append(verse.group(1).strip())
            verses += 1
        elif re.match(r"^[1-3]?\s?[A-Z][A-Za-z ]+ \d+$", line):
            paragraphs.append(line.strip())
        else:
            raise ValueError("bible: unexpected output line %r" % line)
    if verses != 31102:
        raise ValueError("bible: expected the 31,102 verses of the KJV, got %d" % verses)
    return paragraphs


# ---------------------------------------------------------------------------------------------
# WikiText-style tokenisation
# ---------------------------------------------------------------------------------------------
LEADING = set("\"'([{*£")
TRAILING = set("\".,;:!?)]}'*")
# Abbreviations that keep their full stop (Moses-style non-breaking prefixes); "l." is pounds.
ABBREVIATIONS = {"Mr", "Mrs", "Dr", "St", "Esq", "Messrs", "Col", "Capt", "Rev", "viz", "ult",
                 "inst", "&c", "etc", "l", "Vol"}
CLITICS = ("'s", "'m", "'d", "'ll", "'re", "'ve")


def split_core(core):
    """A word without surrounding punctuation -> [word] or [stem, clitic]."""
    lower = core.lower()
    if len(core) > 3 and lower.endswith("n't"):
        return [core[:-3], core[-3:]]
    for clitic in CLITICS:
        if len(core) > len(clitic) and lower.endswith(clitic):
            return [core[:-len(clitic)], core[-len(clitic):]]
    return [core]


def tokenize(text):
    text = text.replace("_", "")                      # Gutenberg italics markup
    text = text.replace("--", " -- ")                 # dashes are tokens of their own
    text = re.sub(r"(?<=\d),(?=\d)", " @,@ ", text)  # 10,000 -> 10 @,@ 000
    text = re.sub(r"(?<=\d)\.(?=\d)", " @.@ ", text)  # 1.5 -> 1 @.@ 5
    text = re.sub(r"(?<=[A-Za-z0-9])-(?=[A-Za-z0-9])", " @-@ ", text)
    tokens = []
    for chunk in text.split():
        lead, trail = [], []
        while len(chunk) > 1 and chunk[0] in LEADING:
            lead.append(chunk[0])
            chunk = chunk[1:]
        while len(chunk) > 1 and chunk[-1] in TRAILING:
            if chunk[-1] == "." and chunk[:-1] in ABBREVIATIONS:
                break
            trail.append(chunk[-1])
            chunk = chunk[:-1]
        tokens += lead + split_core(chunk) + trail[::-1]
    return tokens


# ---------------------------------------------------------------------------------------------
# Splits, <unk> mapping, statistics, output
# ---------------------------------------------------------------------------------------------
def split_source(lines, fractions=(0.90, 0.95)):
    """Contiguous train/valid/test blocks of lines at 90% / 95% of the source's tokens
    (each line counting its <eos>)."""
    total = sum(len(line) + 1 for line in lines)
    cuts, seen, k = [], 0, 0
    for fraction in fractions:
        while k < len(lines) and seen < fraction * total:
            seen += len(lines[k]) + 1
            k += 1
        cuts.append(k)
    return lines[:cuts[0]], lines[cuts[0]:cuts[1]], lines[cuts[1]:]


def write_gzip(path, lines):
    raw = "".join(" ".join(line) + "\n" for line in lines).encode("utf-8")
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as f:
        f.write(raw)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    return len(raw), len(buffer.getvalue())


def write_sources(path, ranges):
    """The source record: a tab-separated line per (split, source), in file order."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Which lines of each split come from which source (tools/make_corpus.py).\n")
        f.write("# split\tfirst_line (from 1)\tlines\tsource\n")
        for name in SPLITS:
            for split, first, count, title in ranges:
                if split == name:
                    f.write("%s\t%d\t%d\t%s\n" % (split, first, count, title))


def unigram_perplexity(train_lines, eval_lines):
    """exp of the mean negative log train-unigram probability of the eval tokens (+ <eos>)."""
    counts = collections.Counter(tok for line in train_lines for tok in line)
    counts["<eos>"] = len(train_lines)
    total = sum(counts.values())
    nll, n = 0.0, 0
    for line in eval_lines:
        for tok in line + ["<eos>"]:
            nll -= math.log(counts[tok] / total)
            n += 1
    return math.exp(nll / n)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--out", default=os.path.join(root, "data", "assets", "corpus"))
    parser.add_argument("--janeaustenr", default=JANEAUSTENR_DATA,
                        help="janeaustenr's data directory (Rdata.rdx / Rdata.rdb)")
    parser.add_argument("--bible", default="bible", help="the bible-kjv program")
    parser.add_argument("--min-count", type=int, default=3,
                        help="train tokens seen fewer times become <unk>")
    args = parser.parse_args()

    novels = read_lazyload_db(args.janeaustenr)
    sources = []  # (name, tokenised lines)
    for key, title in AUSTEN_NOVELS:
        sources.append((title, [tokenize(p) for p in austen_paragraphs(novels[key])]))
    sources.append(("King James Bible", [tokenize(p) for p in bible_paragraphs(args.bible)]))

    splits = {name: [] for name in SPLITS}
    ranges = []  # (split, first line from 1, lines, source)
    for title, lines in sources:
        for name, block in zip(SPLITS, split_source(lines)):
            ranges.append((name, len(splits[name]) + 1, len(block), title))
            splits[name] += block

    counts = collections.Counter(tok for line in splits["train"] for tok in line)
    keep = {tok for tok, c in counts.items() if c >= args.min_count}
    raw_tokens = {name: sum(len(l) for l in lines) for name, lines in splits.items()}
    unk = {}
    for name in SPLITS:
        mapped = [[tok if tok in keep else UNK for tok in line] for line in splits[name]]
        unk[name] = sum(line.count(UNK) for line in mapped)
        splits[name] = mapped

    os.makedirs(args.out, exist_ok=True)
    vocab = len({tok for line in splits["train"] for tok in line}) + 1  # + <eos>
    print("source sizes (tokens before <unk>, without <eos>):")
    for title, lines in sources:
        print("  %-28s %9d tokens %7d lines" % (title, sum(map(len, lines)), len(lines)))
    print("%-6s %9s %8s %9s %7s %10s %9s" % ("split", "tokens", "lines", "+<eos>", "<unk>%",
                                              "raw bytes", "gz bytes"))
    for name in SPLITS:
        raw_bytes, gz_bytes = write_gzip(os.path.join(args.out, name + ".txt.gz"), splits[name])
        with_eos = raw_tokens[name] + len(splits[name])
        print("%-6s %9d %8d %9d %6.2f%% %10d %9d" % (
            name, raw_tokens[name], len(splits[name]), with_eos,
            100.0 * unk[name] / raw_tokens[name], raw_bytes, gz_bytes))
    write_sources(os.path.join(args.out, "sources.tsv"), ranges)
    print("vocabulary (with <eos>): %d" % vocab)
    for name in ("valid", "test"):
        print("unigram perplexity %s: %.2f" % (name, unigram_perplexity(splits["train"],
                                                                       splits[name])))


if __name__ == "__main__":
    sys.exit(main())
