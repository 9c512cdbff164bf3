#!/usr/bin/env python3
"""Converts the MetaTool benchmark (github.com/HowieHwong/MetaTool, MIT licence) into a toolreg
catalog and two query sets: a dev set (for tuning) and a held-out set (only for reporting).

    python3 scripts/eval-data/metatool.py METATOOL_CHECKOUT tests/eval/metatool

Reads the tool descriptions (dataset/big_tool_des.json: 47 merged tools such as FinanceTool;
dataset/plugin_des.json: the other plugins, keyed by lower-case name) and
dataset/data/all_clean_data.csv (20,615 single-tool queries: Query,Tool; 199 tools). Writes
definitions/metatool.json (ChatToolDefinition, parameters empty: MetaTool gives none),
dev.jsonl and heldout.jsonl ({"query", "expected": [tool]}). The split is by a hash of the
query text, so it does not depend on file order: hash % 10 == 0 -> dev, otherwise held out;
then a fixed-seed sample of DEV_SIZE and HELDOUT_SIZE. dev-log.jsonl is the whole dev side
(every query hashed to dev, dev.jsonl among them): a team's log of seen requests for `toolreg
learn`, never a held-out query.
"""
import csv, hashlib, json, random, sys
from pathlib import Path

DEV_SIZE, HELDOUT_SIZE, SEED = 600, 1500, 20261122


def main(src: Path, out: Path) -> None:
    big = json.loads((src / "dataset/big_tool_des.json").read_text())
    plugins = {k.lower(): v for k, v in json.loads((src / "dataset/plugin_des.json").read_text()).items()}
    with open(src / "dataset/data/all_clean_data.csv", newline="") as f:
        rows = [(r["Query"].strip().strip('"').strip(), r["Tool"].strip()) for r in csv.DictReader(f)]
    tools = {}
    for _, t in rows:
        desc = big.get(t) or plugins.get(t.lower())
        if desc:
            tools[t] = desc
    rows = [(q, t) for q, t in rows if q and t in tools]
    seen, unique = set(), []
    for q, t in rows:  # a query listed twice keeps its first tool
        if q not in seen:
            seen.add(q)
            unique.append((q, t))
    dev, held = [], []
    for q, t in unique:
        h = int(hashlib.sha256(q.encode()).hexdigest(), 16)
        (dev if h % 10 == 0 else held).append((q, t))
    dev_log = list(dev)
    rng = random.Random(SEED)
    dev = rng.sample(dev, min(DEV_SIZE, len(dev)))
    held = rng.sample(held, min(HELDOUT_SIZE, len(held)))
    (out / "definitions").mkdir(parents=True, exist_ok=True)
    defs = [
        {"type": "function", "function": {"name": name, "description": desc,
                                          "parameters": {"type": "object", "properties": {}}}}
        for name, desc in sorted(tools.items())
    ]
    (out / "definitions/metatool.json").write_text(json.dumps(defs, indent=2, ensure_ascii=False) + "\n")
    for name, rows in [("dev.jsonl", dev), ("heldout.jsonl", held), ("dev-log.jsonl", dev_log)]:
        with open(out / name, "w") as f:
            for q, t in sorted(rows):
                f.write(json.dumps({"query": q, "expected": [t]}, ensure_ascii=False) + "\n")
    print(f"{len(defs)} tools; dev {len(dev)} (log {len(dev_log)}), held out {len(held)} of {len(unique)} queries")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
