#!/usr/bin/env python3
"""Writes MetaTool's out-of-scope queries (github.com/HowieHwong/MetaTool at 35e81bb, MIT
licence) as two abstention sets: queries its authors labelled as needing no tool at all
(dataset/tmp_dataset/Task1.json, the tool-usage-awareness task: 520 `negative` queries, such as
"Write an opinion piece about ..."). No tool of the MetaTool catalog serves them, so search
should answer `none`, not `strong`.

    python3 scripts/eval-data/metatool_oos.py METATOOL_CHECKOUT tests/eval/metatool

Split by a hash of the query text, as metatool.py splits (hash % 10 in 0..3 -> dev, the rest
held out): out-of-scope-dev.jsonl tunes the `match` floors, out-of-scope-heldout.jsonl is only
reported. Each line is {"query": "..."}.
"""
import hashlib, json, sys
from pathlib import Path


def main(src: Path, out: Path) -> None:
    rows = json.loads((src / "dataset/tmp_dataset/Task1.json").read_text())
    queries = sorted({r["query"].strip() for r in rows if r.get("label") == "negative" and r.get("query", "").strip()})
    dev, held = [], []
    for q in queries:
        h = int(hashlib.sha256(q.encode()).hexdigest(), 16)
        (dev if h % 10 < 4 else held).append(q)
    for name, qs in [("out-of-scope-dev.jsonl", dev), ("out-of-scope-heldout.jsonl", held)]:
        with open(out / name, "w") as f:
            for q in qs:
                f.write(json.dumps({"query": q}, ensure_ascii=False) + "\n")
    print(f"{len(queries)} negative queries: dev {len(dev)}, held out {len(held)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
