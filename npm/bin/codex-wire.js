#!/usr/bin/env node
// `codex-wire` for npm installs: runs the native binary of this platform's package (an optional
// dependency, as `@openai/codex` ships codex) with the same arguments, stdio and exit status.
"use strict";

const { spawn } = require("node:child_process");
const { binary } = require("../binary.js");

let bin;
try {
  bin = binary();
} catch (e) {
  console.error(`codex-wire: ${e.message}`);
  process.exit(1);
}
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
// The launcher is transparent to signals: the binary gets them and decides (the fake exits 0 on
// SIGTERM, as codex does).
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => child.kill(sig));
}
child.on("error", (e) => {
  console.error(`codex-wire: cannot run ${bin}: ${e.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
