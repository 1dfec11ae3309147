"use strict";
// The install and the wire check are the binary's (`codex-wire install`, `codex-wire wire-check`),
// the same ones the Python helper calls: the cases of clients/install_cases.json (an allow
// pattern's meaning; installs under awkward directory names) pass here as in
// tests/python/test_install.py.
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { execFileSync } = require("node:child_process");
const { createCodexFake, turn, message } = require("codex-wire");

const CASES = JSON.parse(fs.readFileSync(process.env.CODEX_WIRE_INSTALL_CASES, "utf8"));

for (const c of CASES.allow) {
  test(`allow ${c.pattern} against ${c.path}`, async (t) => {
    const fake = await createCodexFake();
    t.after(() => fake.cleanup());
    const entry = { dir: "in", msg: { id: 1, method: "thread/start", params: {} }, ignored: [c.path] };
    fs.writeFileSync(path.join(fake.stateDir, "transcript.jsonl"), JSON.stringify(entry) + "\n");
    const problems = fake.wireProblems({ allow: [c.pattern] });
    assert.strictEqual(problems.length === 0, c.allowed, JSON.stringify(problems));
  });
}

test("a half-written last entry is not read", async (t) => {
  const fake = await createCodexFake();
  t.after(() => fake.cleanup());
  const entry = { dir: "in", msg: { id: 1, method: "thread/start", params: {} } };
  const whole = JSON.stringify(entry) + "\n";
  fs.writeFileSync(path.join(fake.stateDir, "transcript.jsonl"), whole + whole.slice(0, 20));
  assert.deepStrictEqual(fake.entries(), [entry]);
});

for (const name of CASES.dirs) {
  test(`an install under ${JSON.stringify(name)}`, async (t) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "codex-wire-install-"));
    const fake = await createCodexFake({ dir: path.join(root, name), turns: [turn(message("Fine."))] });
    t.after(async () => {
      await fake.cleanup();
      fs.rmSync(root, { recursive: true, force: true });
    });
    const line = JSON.stringify({ id: 0, method: "initialize", params: { clientInfo: { name: "t", version: "1" } } });
    const out = execFileSync(fake.bin, ["app-server"], { input: line + "\n", encoding: "utf8" });
    const reply = JSON.parse(out.split("\n")[0]);
    assert.strictEqual(reply.result.codexHome, fake.codexHome);
    assert.ok(fake.requests("initialize").length === 1, "the fake under that name wrote its transcript");
  });
}
