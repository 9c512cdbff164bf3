"""The packaging half of scripts/package: a wheel and npm tarballs from one toolreg binary.

python3 scripts/package.py OUT_DIR BINARY [TARGET_TRIPLE]

Standard library only. The wheel follows the binary-distribution format (PEP 427, PEP 491):
the binary is a data script, so pip puts it on PATH as `toolreg`; RECORD carries every file's
sha256. The npm packages are written as folders and packed with `npm pack`.
"""

import base64
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

DESCRIPTION = "A build-time compiler for LLM tool catalogs, and the runtime that serves what it compiled."
REPOSITORY = "https://github.com/toolreg/toolreg"

# Rust target triple -> (npm os, npm cpu, executable suffix). The launcher lists the same.
TARGETS = {
    "x86_64-unknown-linux-gnu": ("linux", "x64", ""),
    "aarch64-unknown-linux-gnu": ("linux", "arm64", ""),
    "x86_64-apple-darwin": ("darwin", "x64", ""),
    "aarch64-apple-darwin": ("darwin", "arm64", ""),
    "x86_64-pc-windows-msvc": ("win32", "x64", ".exe"),
}


def host_triple():
    machine = platform.machine().lower()
    cpu = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine)
    system = sys.platform
    if cpu and system.startswith("linux"):
        return f"{cpu}-unknown-linux-gnu"
    if cpu and system == "darwin":
        return f"{cpu}-apple-darwin"
    if cpu == "x86_64" and system == "win32":
        return "x86_64-pc-windows-msvc"
    sys.exit(f"error: no package target for {system} {machine}; pass --target TRIPLE")


def version_of(binary):
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.match(r"toolreg (\S+)", out)
    if not m:
        sys.exit(f"error: `{binary} --version` did not name a version: {out!r}")
    return m.group(1)


def wheel_platform(target, binary):
    """The wheel's platform tag. Linux: manylinux_2_NN with NN the newest glibc symbol version
    the binary needs (read from its bytes), so pip refuses it on an older glibc."""
    if target.endswith("linux-gnu"):
        data = open(binary, "rb").read()
        minors = [int(m) for m in re.findall(rb"GLIBC_2\.(\d+)", data)]
        minor = max(minors) if minors else 17
        arch = target.split("-")[0]
        return f"manylinux_2_{minor}_{arch}"
    if target == "x86_64-apple-darwin":
        return "macosx_10_12_x86_64"
    if target == "aarch64-apple-darwin":
        return "macosx_11_0_arm64"
    if target == "x86_64-pc-windows-msvc":
        return "win_amd64"
    sys.exit(f"error: no wheel tag for {target}")


def record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def write_wheel(out, binary, version, target):
    tag = f"py3-none-{wheel_platform(target, binary)}"
    name = f"toolreg-{version}-{tag}.whl"
    exe = TARGETS[target][2]
    info = f"toolreg-{version}.dist-info"
    readme = open("README.md", encoding="utf-8").read()
    files = [
        (f"toolreg-{version}.data/scripts/toolreg{exe}", open(binary, "rb").read(), 0o755),
        (f"{info}/METADATA", (
            "Metadata-Version: 2.1\n"
            "Name: toolreg\n"
            f"Version: {version}\n"
            f"Summary: {DESCRIPTION}\n"
            "License: MIT OR Apache-2.0\n"
            f"Project-URL: Source, {REPOSITORY}\n"
            "Requires-Python: >=3.8\n"
            "Description-Content-Type: text/markdown\n\n" + readme
        ).encode(), 0o644),
        (f"{info}/WHEEL", (
            "Wheel-Version: 1.0\n"
            "Generator: toolreg scripts/package\n"
            "Root-Is-Purelib: false\n"
            f"Tag: {tag}\n"
        ).encode(), 0o644),
    ]
    record = "".join(f"{path},{record_hash(data)},{len(data)}\n" for path, data, _ in files)
    record += f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode(), 0o644))
    path = os.path.join(out, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for file_name, data, mode in files:
            entry = zipfile.ZipInfo(file_name, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return path


LAUNCHER = r"""#!/usr/bin/env node
// Runs the toolreg binary of this platform, installed as the optional dependency
// @toolreg/<os>-<cpu> (npm installs only the one that matches).
"use strict";
const { spawnSync } = require("node:child_process");
const SUPPORTED = __SUPPORTED__;
const platform = process.env.TOOLREG_NPM_PLATFORM || `${process.platform}-${process.arch}`;
if (!SUPPORTED.includes(platform)) {
  console.error(`toolreg: no binary is published for ${platform}; packages exist for ${SUPPORTED.join(", ")}.`);
  console.error("  = help: install with cargo instead: cargo install --locked --git __REPOSITORY__ toolreg");
  process.exit(1);
}
const exe = platform.startsWith("win32") ? "toolreg.exe" : "toolreg";
let binary;
try {
  binary = require.resolve(`@toolreg/${platform}/bin/${exe}`);
} catch {
  console.error(`toolreg: the package @toolreg/${platform} is not installed (it is an optional dependency of toolreg).`);
  console.error("  = help: reinstall without --no-optional / --omit=optional, e.g. npm install --save-dev toolreg");
  process.exit(1);
}
const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
  console.error(`toolreg: cannot run ${binary}: ${run.error.message}`);
  process.exit(1);
}
if (run.signal) process.kill(process.pid, run.signal);
process.exit(run.status ?? 1);
"""


def npm_pack(folder, out):
    packed = subprocess.run(["npm", "pack", "--silent", "--pack-destination", os.path.abspath(out)],
                            cwd=folder, capture_output=True, text=True)
    if packed.returncode != 0:
        sys.exit(f"error: npm pack failed in {folder}:\n{packed.stderr}")
    return os.path.join(out, packed.stdout.strip().splitlines()[-1])


def write_npm(out, binary, version, target):
    os_name, cpu, exe = TARGETS[target]
    supported = sorted(f"{o}-{c}" for o, c, _ in TARGETS.values())
    license_text = "MIT OR Apache-2.0"
    with tempfile.TemporaryDirectory() as tmp:
        platform_dir = os.path.join(tmp, "platform")
        os.makedirs(os.path.join(platform_dir, "bin"))
        shutil.copy2(binary, os.path.join(platform_dir, "bin", "toolreg" + exe))
        os.chmod(os.path.join(platform_dir, "bin", "toolreg" + exe), 0o755)
        platform_manifest = {
            "name": f"@toolreg/{os_name}-{cpu}",
            "version": version,
            "description": f"The toolreg binary for {os_name}-{cpu} (installed by the `toolreg` package).",
            "license": license_text,
            "repository": REPOSITORY,
            "os": [os_name],
            "cpu": [cpu],
            "files": [f"bin/toolreg{exe}"],
            "preferUnplugged": True,
        }
        if os_name == "linux":
            platform_manifest["libc"] = ["glibc"]
        json.dump(platform_manifest, open(os.path.join(platform_dir, "package.json"), "w"), indent=2)
        main_dir = os.path.join(tmp, "main")
        os.makedirs(os.path.join(main_dir, "bin"))
        launcher = LAUNCHER.replace("__SUPPORTED__", json.dumps(supported)).replace("__REPOSITORY__", REPOSITORY)
        with open(os.path.join(main_dir, "bin", "toolreg.js"), "w") as f:
            f.write(launcher)
        os.chmod(os.path.join(main_dir, "bin", "toolreg.js"), 0o755)
        shutil.copy2("README.md", os.path.join(main_dir, "README.md"))
        json.dump({
            "name": "toolreg",
            "version": version,
            "description": DESCRIPTION,
            "license": license_text,
            "repository": REPOSITORY,
            "bin": {"toolreg": "bin/toolreg.js"},
            "files": ["bin/toolreg.js", "README.md"],
            "engines": {"node": ">=18"},
            "optionalDependencies": {f"@toolreg/{p}": version for p in supported},
        }, open(os.path.join(main_dir, "package.json"), "w"), indent=2)
        return npm_pack(platform_dir, out), npm_pack(main_dir, out)


def main():
    out, binary, target = sys.argv[1], sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "")
    target = target or host_triple()
    if target not in TARGETS:
        sys.exit(f"error: unknown target {target}; one of {', '.join(sorted(TARGETS))}")
    version = version_of(binary) if target == host_triple() else os.environ.get("TOOLREG_VERSION") or sys.exit(
        "error: set TOOLREG_VERSION when packaging a binary for another target")
    wheel = write_wheel(out, binary, version, target)
    platform_tgz, main_tgz = write_npm(out, binary, version, target)
    for path in (wheel, platform_tgz, main_tgz):
        print(path)


main()
