#!/usr/bin/env python3
"""Converts Seal-Tools (github.com/fairyshine/Seal-Tools, Apache-2.0, `Seal-Tools_Dataset/`) into a
toolreg catalog and query sets: its 4,076 tools as ChatToolDefinition JSON (`definitions/`), and
each split's queries as {"query": ..., "expected": [every API the query calls]}: `dev.jsonl`
(tuning), `heldout.jsonl` (`test_in_domain` and `test_out_domain`, reported only).

    python3 scripts/eval-data/sealtools.py SEAL_TOOLS_CHECKOUT OUT_DIR

A checkout is a folder or a bare git directory (read with `git show HEAD:PATH`). The data is
fetched, not committed (its copy stays outside the repository, e.g. target/eval-data/sealtools).
"""
import json, subprocess, sys
from pathlib import Path

TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
         "list": "array", "dict": "object"}


def read(src: Path, rel: str) -> str:
    if (src / rel).exists():
        return (src / rel).read_text()
    return subprocess.check_output(["git", "--git-dir", str(src), "show", f"HEAD:{rel}"]).decode()


def jsonl(text: str):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def tool(t: dict) -> dict:
    props = {}
    for name, p in (t.get("parameters") or {}).items():
        prop = {"type": TYPES.get(p.get("type"), "string")}
        if p.get("description"):
            prop["description"] = p["description"]
        props[name] = prop
    params = {"type": "object", "properties": props}
    required = [r for r in t.get("required") or [] if r in props]
    if required:
        params["required"] = required
    return {"type": "function", "function": {"name": t["api_name"],
            "description": t.get("api_description", ""), "parameters": params}}


def queries(rows, names):
    out = []
    for r in rows:
        expected = [c["api"] for c in r["calling"] if c["api"] in names]
        expected = list(dict.fromkeys(expected))
        if expected:
            out.append(json.dumps({"query": r["query"].strip(), "expected": expected}, ensure_ascii=False))
    return out


def main(src: Path, out: Path) -> None:
    base = "Seal-Tools_Dataset"
    tools = [tool(t) for t in jsonl(read(src, f"{base}/tool.jsonl"))]
    names = {t["function"]["name"] for t in tools}
    (out / "definitions").mkdir(parents=True, exist_ok=True)
    (out / "definitions" / "sealtools.json").write_text(json.dumps(tools, indent=1, ensure_ascii=False) + "\n")
    dev = queries(jsonl(read(src, f"{base}/dev.jsonl")), names)
    held = queries(jsonl(read(src, f"{base}/test_in_domain.jsonl")) + jsonl(read(src, f"{base}/test_out_domain.jsonl")), names)
    (out / "dev.jsonl").write_text("\n".join(dev) + "\n")
    (out / "heldout.jsonl").write_text("\n".join(held) + "\n")
    print(f"{len(tools)} tools, {len(dev)} dev and {len(held)} held-out queries", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
