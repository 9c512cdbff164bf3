"""Runs the generated Python client's `check` on every case tests/clients.rs wrote and compares it
with what the runtime's exec answered (code, failing pointers, cleaned arguments).

TOOLREG_CLIENT_CASES names `MODULE_PATH=CASES_JSON` pairs separated by os.pathsep; tests/clients.rs
sets it and runs pytest.
"""

import importlib.util
import json
import os
import sys

import pytest


def _pairs():
    raw = os.environ.get("TOOLREG_CLIENT_CASES", "")
    return [tuple(p.split("=", 1)) for p in raw.split(os.pathsep) if p]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_cases_were_given():
    assert _pairs(), "TOOLREG_CLIENT_CASES is empty: run through tests/clients.rs"


@pytest.mark.parametrize("module_path,cases_path", _pairs())
def test_check_answers_as_the_runtime(module_path, cases_path):
    client = _load(module_path, "generated_" + str(abs(hash(module_path))))
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    assert cases
    mismatches = []
    for c in cases:
        if "result" in c:
            errors = client.check_result(c["op"], c["result"])
            seen = {"ok": not errors, "code": None, "pointers": sorted({e["pointer"] for e in errors}), "args": None}
            want = {k: c["expected"][k] for k in ("ok", "code", "pointers", "args")}
            if seen != want:
                mismatches.append({"case": c["name"], "op": c["op"], "want": want, "seen": seen})
            continue
        got = client.check(c["op"], c["args"])
        seen = {
            "ok": got["ok"],
            "code": None if got["ok"] else got["error"]["code"],
            "pointers": [] if got["ok"] else sorted({e["pointer"] for e in got["error"]["details"]["field_errors"]}),
            "args": got.get("args") if got["ok"] else None,
        }
        want = {k: c["expected"][k] for k in ("ok", "code", "pointers", "args")}
        if seen != want:
            mismatches.append({"case": c["name"], "op": c["op"], "want": want, "seen": seen})
    assert not mismatches, json.dumps(mismatches[:10], indent=1, ensure_ascii=False)
    print(f"{cases_path}: {len(cases)} cases agree")


def test_the_client_runs_a_checked_call_through_handlers():
    pairs = _pairs()
    client = _load(pairs[0][0], "generated_client_run")
    op = next(iter(client.OPS))
    seen = []
    transport = client.HandlersTransport({op: lambda args: seen.append(args) or {"done": True}})
    c = client.Client(transport)
    bad = c.exec(op, "not json")
    assert bad["ok"] is False and bad["error"]["code"] == "MALFORMED_ARGS"
    assert seen == []
