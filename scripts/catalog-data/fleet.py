#!/usr/bin/env python3
"""Converts three public fleet-scale tool collections into toolreg definitions folders, as a team
would receive them (one file per server, or one export per category), for the fleet tests
(tests/fleet.rs) and the fleet benchmark. Data only: nothing of these repositories' code is used.

    python3 scripts/catalog-data/fleet.py livemcp   LIVEMCPBENCH_CHECKOUT tests/catalogs/fleet/livemcp
    python3 scripts/catalog-data/fleet.py toolsdk   TOOLSDK_REGISTRY_CHECKOUT tests/catalogs/fleet/toolsdk
    python3 scripts/catalog-data/fleet.py toolbench STABLETOOLBENCH_CHECKOUT tests/catalogs/fleet/toolbench

A checkout is a folder or a bare git directory (read with `git show HEAD:PATH`).

- livemcp: icip-cas/LiveMCPBench, tools/LiveMCPTool/tools.json (Apache-2.0): the real `tools/list`
  answers of 70 MCP servers, inputSchema as the servers sent it. One SERVER.mcp.json per server.
- toolsdk: toolsdk-ai/toolsdk-mcp-registry, indexes/packages-list.json (MIT): the tool names and
  descriptions the registry read from each validated server (no input schemas). One
  SERVER.mcp.json per server that lists tools.
- toolbench: THUNLP-MT/StableToolBench, solvable_queries/test_instruction/*.json (Apache-2.0): the
  RapidAPI endpoints its test queries use, 2,479 APIs of 811 providers. One OpenAI-function file per
  RapidAPI category, each endpoint named the way ToolBench names functions for a model:
  `<api>_for_<provider>` (lower snake case, at most 64 characters).

Output is deterministic: sorted keys where order carries no meaning, sorted tools, LF, final
newline. File names are reduced to [a-z0-9_-].
"""
import json, re, subprocess, sys
from pathlib import Path


def read(src: Path, rel: str) -> str:
    if (src / rel).exists():
        return (src / rel).read_text()
    return subprocess.check_output(["git", "--git-dir", str(src), "show", f"HEAD:{rel}"]).decode()


def commit(src: Path) -> str:
    git_dir = src if (src / "HEAD").exists() else src / ".git"
    return subprocess.check_output(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"]).decode().strip()


def file_name(name: str) -> str:
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")
    return slug or "server"


def write(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n")


def unique(out: Path, stem: str, taken: set) -> Path:
    n, name = 1, stem
    while name in taken:
        n += 1
        name = f"{stem}-{n}"
    taken.add(name)
    return out / name


def livemcp(src: Path, out: Path) -> None:
    rev = commit(src)
    entries = json.loads(read(src, "tools/LiveMCPTool/tools.json"))
    taken, count = set(), 0
    for entry in entries:
        for key, server in sorted((entry.get("tools") or {}).items()):
            tools = sorted(server.get("tools") or [], key=lambda t: t["name"])
            if not tools:
                continue
            note = (f"tools/list of MCP server {server.get('server_name', key)} "
                    f"{server.get('version', '')} from LiveMCPBench (icip-cas/LiveMCPBench@{rev[:7]}, "
                    f"tools/LiveMCPTool/tools.json, Apache-2.0); source {entry.get('web', '')}").strip()
            path = unique(out, file_name(key), taken)
            write(Path(f"{path}.mcp.json"), {"_source": note, "tools": tools})
            count += len(tools)
    print(f"livemcp: {len(taken)} servers, {count} tools", file=sys.stderr)


def toolsdk(src: Path, out: Path) -> None:
    rev = commit(src)
    packages = json.loads(read(src, "indexes/packages-list.json"))
    taken, count = set(), 0
    for key in sorted(packages):
        tools = packages[key].get("tools") or {}
        if not tools:
            continue
        listed = []
        for name in sorted(tools):
            tool = {"name": tools[name].get("name", name)}
            if tools[name].get("description"):
                tool["description"] = tools[name]["description"]
            tool["inputSchema"] = {"type": "object"}
            listed.append(tool)
        note = (f"tools of MCP server package {key} as the ToolSDK registry lists them "
                f"(toolsdk-ai/toolsdk-mcp-registry@{rev[:7]}, indexes/packages-list.json, MIT; "
                f"names and descriptions only, no input schemas)")
        # The package name without its npm scope names the server (`@x/github-mcp` -> github-mcp),
        # unless that name says nothing (`@acme/mcp-server` -> acme-mcp-server).
        last = key.split("/")[-1]
        if not set(re.split(r"[^a-z0-9]+", last.lower())) - {"", "mcp", "server", "servers"}:
            last = key.lstrip("@").replace("/", "-")
        path = unique(out, file_name(last), taken)
        write(Path(f"{path}.mcp.json"), {"_source": note, "tools": listed})
        count += len(listed)
    print(f"toolsdk: {len(taken)} servers, {count} tools", file=sys.stderr)


def snake(text: str) -> str:
    """ToolBench's way of making a function-name part: lower case, runs of anything else as `_`."""
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if not s or s[0].isdigit():
        s = f"get_{s}"
    return s


TOOLBENCH_TYPES = {"NUMBER": "number", "BOOLEAN": "boolean", "ARRAY": "array", "OBJECT": "object"}


def toolbench(src: Path, out: Path) -> None:
    rev = commit(src)
    sets = ["G1_category", "G1_instruction", "G1_tool", "G2_category", "G2_instruction", "G3_instruction"]
    apis = {}
    for s in sets:
        for query in json.loads(read(src, f"solvable_queries/test_instruction/{s}.json")):
            for api in query["api_list"]:
                apis.setdefault((api["category_name"], api["tool_name"], api["api_name"]), api)
    by_category, names, providers = {}, set(), set()
    for (category, provider, api_name), api in sorted(apis.items()):
        name = f"{snake(api_name)}_for_{snake(provider)}"[:64]
        if name in names:
            continue
        names.add(name)
        providers.add(provider)
        props, required = {}, []
        for group, is_required in (("required_parameters", True), ("optional_parameters", False)):
            for p in api.get(group) or []:
                prop = {"type": TOOLBENCH_TYPES.get(str(p.get("type", "")).upper(), "string")}
                if p.get("description"):
                    prop["description"] = p["description"]
                if p.get("default") not in (None, ""):
                    prop["default"] = p["default"]
                props[p["name"]] = prop
                if is_required:
                    required.append(p["name"])
        parameters = {"type": "object", "properties": props}
        if required:
            parameters["required"] = required
        description = (api.get("api_description") or "").strip() or f"{api_name} ({provider})"
        by_category.setdefault(category, []).append(
            {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
    for category, functions in sorted(by_category.items()):
        write(out / f"{file_name(category)}.json", functions)
    note = {"source": f"THUNLP-MT/StableToolBench@{rev[:7]} solvable_queries/test_instruction/*.json",
            "licence": "Apache-2.0", "categories": len(by_category), "providers": len(providers),
            "functions": len(names)}
    print(f"toolbench: {note}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("livemcp", "toolsdk", "toolbench"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    {"livemcp": livemcp, "toolsdk": toolsdk, "toolbench": toolbench}[sys.argv[1]](Path(sys.argv[2]), Path(sys.argv[3]))
