#!/usr/bin/env python3
"""Writes a misspelled copy of a query set: in each query one word of six or more letters gets
one typo of the kinds people make (two letters swapped, a letter dropped, doubled, or replaced
by a keyboard neighbour), chosen with a fixed seed. Queries with no such word are left out.

    python3 scripts/eval-data/typos.py IN.jsonl OUT.jsonl
"""
import json, random, re, sys

NEIGHBOURS = dict(zip("qwertyuiopasdfghjklzxcvbnm",
                      ["wa", "qes", "wrd", "etf", "ryg", "tuh", "yij", "uok", "ipl", "ol",
                       "qsz", "adwx", "sfec", "dgrv", "fhtb", "gjyn", "hkum", "jli", "kop",
                       "axs", "zcd", "xvf", "cbg", "vnh", "bmj", "nk"]))


def typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    kind = rng.choice(["swap", "drop", "double", "neighbour"])
    if kind == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "drop":
        return word[:i] + word[i + 1:]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    c = word[i].lower()
    return word[:i] + rng.choice(NEIGHBOURS.get(c, c)) + word[i + 1:]


def main(src: str, dst: str) -> None:
    rng = random.Random(7)
    out = []
    for line in open(src):
        if not line.strip():
            continue
        row = json.loads(line)
        words = [m for m in re.finditer(r"[A-Za-z]{6,}", row["query"])]
        if not words:
            continue
        m = rng.choice(words)
        row["query"] = row["query"][:m.start()] + typo(m.group(), rng) + row["query"][m.end():]
        out.append(row)
    with open(dst, "w") as f:
        for row in out:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(out)} queries with a typo")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
