"""The generated Python client over its MCP transport, against a real `toolreg serve` (stdio).

tests/clients.rs runs: python mcp_roundtrip.py MODULE_PY TOOLREG REGISTRY_DIR CALLS_JSON
CALLS_JSON is [{op, args, dry_run?}]; prints one envelope per call as a JSON array. The MCP side
is a minimal JSON-RPC client over the server's stdin and stdout (newline-delimited messages).
"""

import importlib.util
import json
import subprocess
import sys


def load(path):
    spec = importlib.util.spec_from_file_location("generated_client", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["generated_client"] = module
    spec.loader.exec_module(module)
    return module


class Stdio:
    def __init__(self, command):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.next_id = 0

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed its output")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(answer["error"])
                return answer["result"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def main():
    module_path, toolreg, registry, calls_path = sys.argv[1:5]
    generated = load(module_path)
    server = Stdio([toolreg, "serve", "--registry", registry])
    server.request("initialize", {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "toolreg-generated-client-test", "version": "0.0.0"},
    })
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    client = generated.Client(generated.McpTransport(lambda name, arguments: server.request("tools/call", {"name": name, "arguments": arguments})))
    answers = []
    with open(calls_path, encoding="utf-8") as f:
        for call in json.load(f):
            answers.append(client.exec(call["op"], call["args"], dry_run=call.get("dry_run")))
    server.close()
    print(json.dumps(answers))


main()
