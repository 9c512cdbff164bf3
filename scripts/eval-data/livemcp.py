#!/usr/bin/env python3
"""Converts LiveMCPBench's 95 annotated real-world tasks (github.com/icip-cas/LiveMCPBench,
Apache-2.0, annotated_data/all_annotations.json) into a query set over the LiveMCPTool catalog
that tests/catalogs/fleet/livemcp holds: {"query": task, "expected": [tools the annotators used]}.
Tasks none of whose annotated tools is in the catalog are left out.

    python3 scripts/eval-data/livemcp.py LIVEMCPBENCH_CHECKOUT tests/catalogs/fleet/livemcp tests/eval/livemcp/tasks.jsonl

A checkout is a folder or a bare git directory (read with `git show HEAD:PATH`).
"""
import json, re, subprocess, sys
from pathlib import Path


def read(src: Path, rel: str) -> str:
    if (src / rel).exists():
        return (src / rel).read_text()
    return subprocess.check_output(["git", "--git-dir", str(src), "show", f"HEAD:{rel}"]).decode()


def main(src: Path, catalog: Path, out: Path) -> None:
    names = set()
    for f in sorted(catalog.glob("*.json")):
        names.update(t["name"] for t in json.loads(f.read_text())["tools"])
    tasks = json.loads(read(src, "annotated_data/all_annotations.json"))
    lines, skipped = [], 0
    for t in tasks:
        listed = t["Annotator Metadata"]["Tools"]
        tools = [re.sub(r"^\s*\d+\.\s*", "", l).strip() for l in listed.splitlines()]
        expected = [x for x in dict.fromkeys(tools) if x in names]
        if not expected:
            skipped += 1
            continue
        lines.append(json.dumps({"query": t["Question"].strip(), "expected": expected}, ensure_ascii=False))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} tasks, {skipped} without a catalog tool", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
