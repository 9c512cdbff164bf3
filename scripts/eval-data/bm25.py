#!/usr/bin/env python3
"""Plain BM25 over a tool catalog, the reference most tool-search peers ship: one document per
tool (its name, split on _ - . and camel case, and its description), lowercase words, no
stemming, no stop words, k1 = 1.2, b = 0.75. Prints recall@1, recall@5 and nDCG@10 of a query
file (JSON lines {"query", "expected": [tool names]}); with --out-of-scope FILE, the share of
those queries it answers with a tool at all (BM25 always does, unless no word matches).

    python3 scripts/eval-data/bm25.py DEFINITIONS_DIR QUERIES.jsonl [--out-of-scope FILE]
"""
import json, math, re, sys
from collections import Counter
from pathlib import Path


def words(text):
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w for w in re.split(r"[^\w]+|_", text.lower()) if w]


def tools(folder):
    out = []
    for f in sorted(Path(folder).rglob("*.json")):
        data = json.loads(f.read_text())
        items = data.get("tools", []) if isinstance(data, dict) else data
        for t in items if isinstance(items, list) else []:
            if not isinstance(t, dict):
                continue
            fn = t.get("function", t)
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                out.append((fn["name"], fn.get("description") or ""))
    return out


def main():
    args = sys.argv[1:]
    oos = None
    if "--out-of-scope" in args:
        i = args.index("--out-of-scope")
        oos = args[i + 1]
        del args[i:i + 2]
    catalog = tools(args[0])
    docs = [Counter(words(n) + words(d)) for n, d in catalog]
    n = len(docs)
    avg = sum(sum(d.values()) for d in docs) / max(n, 1)
    df = Counter(w for d in docs for w in d)
    idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def rank(q):
        qs = words(q)
        scores = []
        for i, d in enumerate(docs):
            length = sum(d.values())
            s = sum(idf.get(w, 0) * d[w] * 2.2 / (d[w] + 1.2 * (0.25 + 0.75 * length / avg)) for w in qs if w in d)
            if s > 0:
                scores.append((-s, catalog[i][0]))
        return [name for _, name in sorted(scores)]

    lines = [json.loads(l) for l in open(args[1]) if l.strip()]
    r1 = r5 = ndcg = 0.0
    for l in lines:
        top = rank(l["query"])[:10]
        exp = set(l["expected"])
        hits = [i for i, t in enumerate(top) if t in exp]
        r1 += bool(hits and hits[0] == 0)
        r5 += bool(hits and hits[0] < 5)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(len(exp), 10)))
        ndcg += sum(1 / math.log2(i + 2) for i in hits) / ideal
    k = len(lines)
    out = {"recall@1": round(r1 / k, 4), "recall@5": round(r5 / k, 4), "ndcg@10": round(ndcg / k, 4), "queries": k}
    if oos:
        qs = [json.loads(l)["query"] for l in open(oos) if l.strip()]
        out["out_of_scope_answered"] = round(sum(bool(rank(q)) for q in qs) / len(qs), 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
