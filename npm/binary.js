"use strict";
// Where the native `codex-wire` is: `$CODEX_WIRE_BIN`, else this platform's package (an optional
// dependency named `codex-wire-<platform>-<arch>`, resolved from here), else `codex-wire` on PATH.

const fs = require("node:fs");
const path = require("node:path");

function platformPackage() {
  return `codex-wire-${process.platform}-${process.arch}`;
}

function binary() {
  const fromEnv = process.env.CODEX_WIRE_BIN;
  if (fromEnv) return fromEnv;
  const exe = process.platform === "win32" ? "codex-wire.exe" : "codex-wire";
  try {
    const manifest = require.resolve(`${platformPackage()}/package.json`);
    const bin = path.join(path.dirname(manifest), "bin", exe);
    if (fs.existsSync(bin)) return bin;
  } catch {
    // Not installed (another platform, or --no-optional): look on PATH.
  }
  // Not this package's own launcher (node_modules/.bin/codex-wire links to it).
  const launcher = fs.realpathSync(path.join(__dirname, "bin", "codex-wire.js"));
  for (const dir of (process.env.PATH || "").split(path.delimiter)) {
    const bin = path.join(dir, exe);
    if (dir && fs.existsSync(bin) && fs.realpathSync(bin) !== launcher) return bin;
  }
  throw new Error(
    `no codex-wire executable: the optional dependency ${platformPackage()} is not installed ` +
      `(this platform has no package, or optional dependencies were omitted); set CODEX_WIRE_BIN`,
  );
}

module.exports = { binary, platformPackage };
