// codex-wire as an ES module (`import { createCodexFake, turn, message } from "codex-wire"`, as
// vitest and TypeScript's ES module output load it). Every name is exported explicitly: Node links
// the named imports of an ES module before it runs, and cannot see the names of index.js's
// `module.exports = { ...steps }`. The objects are index.js's own, loaded once by either entry: a
// `WireError` a fake throws is the `WireError` imported here.
import codexWire from "./index.js";

export const { createCodexFake, codexTest, CodexFake, WireError, binary, codexVersions } = codexWire;
// The step builders and `turn`, `step`, `checkStep`, ..., one named export each (steps.mjs is
// generated from clients/steps.json by `cargo xtask npm`).
export * from "./steps.mjs";
export default codexWire;
