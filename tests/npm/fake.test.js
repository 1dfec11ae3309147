"use strict";
// Installed from the packed tarballs into a fresh directory: the helper drives the fake through a
// raw client, and the wire check passes on what a correct client sends.
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const { createCodexFake, codexVersions, turn, message, usage, command, WireError } = require("codex-wire");
const { oneTurn } = require("./client.js");

test("a turn answers as scripted and the client's lines are clean", async (t) => {
  const fake = await createCodexFake({ turns: [turn(message("The answer."), usage(12, 4))] });
  t.after(() => fake.cleanup());
  const { answer } = await oneTurn(fake.bin);
  assert.strictEqual(answer, "The answer.");
  assert.deepStrictEqual(
    fake.requests().map((r) => r.method),
    ["initialize", "thread/start", "turn/start"],
  );
  assert.ok(fake.sent("turn/completed").length === 1);
  assert.deepStrictEqual(fake.violations(), []);
  fake.assertWireClean();
});

test("an ignored field is named by path, and allow accepts it", async (t) => {
  const fake = await createCodexFake();
  t.after(() => fake.cleanup());
  await oneTurn(fake.bin, { temperature: 0.2 });
  assert.deepStrictEqual(fake.ignoredFields(), [{ method: "thread/start", path: "$.params.temperature" }]);
  assert.throws(() => fake.assertWireClean(), (e) => e instanceof WireError && e.message.includes("$.params.temperature"));
  fake.assertWireClean({ allow: ["$.params.temp*"] });
});

test("script() replaces the turns; a bad step fails where it is written", async (t) => {
  const fake = await createCodexFake({ version: codexVersions()[0] });
  t.after(() => fake.cleanup());
  fake.script(turn(message("Second script.")));
  assert.strictEqual((await oneTurn(fake.bin)).answer, "Second script.");
  assert.strictEqual(fake.version, codexVersions()[0]);
  assert.throws(() => fake.script(turn(command(""))), /command must not be blank/);
  assert.throws(() => fake.script({ steps: [{ kind: "usage", input: -1 }] }), /step 0 \(usage\): input must be >= 0/);
});

test("cleanup removes the install it made", async () => {
  const fake = await createCodexFake();
  await oneTurn(fake.bin);
  await fake.cleanup();
  assert.ok(!fs.existsSync(fake.stateDir));
});

test("real mode: the same turn on the real codex behind the scripted model", async (t) => {
  const real = process.env.CODEX_WIRE_REAL_CODEX;
  assert.ok(real, "CODEX_WIRE_REAL_CODEX names the real codex (tests/npm.rs sets it)");
  const turns = [turn(message("The answer."), usage(12, 4))];
  const onReal = await createCodexFake({ turns, real });
  t.after(() => onReal.cleanup());
  const fake = await createCodexFake({ turns });
  t.after(() => fake.cleanup());
  const a = await oneTurn(onReal.bin, { temperature: 0.2 });
  const b = await oneTurn(fake.bin, { temperature: 0.2 });
  assert.strictEqual(a.answer, "The answer.");
  assert.strictEqual(b.answer, a.answer);
  // The background notifications come in the real server's own order (docs/turns.md, races):
  // compared as a multiset, the rest in order.
  const background = new Set(["configWarning", "remoteControl/status/changed", "warning", "deprecationNotice"]);
  const ordered = (n) => n.map((m) => m.method).filter((m) => !background.has(m));
  const apart = (n) => n.map((m) => m.method).filter((m) => background.has(m)).sort();
  assert.deepStrictEqual(ordered(b.notifications), ordered(a.notifications));
  assert.deepStrictEqual(apart(b.notifications), apart(a.notifications));
  assert.deepStrictEqual(onReal.ignoredFields(), fake.ignoredFields());
});

test("loadRecording plays a recording's model answers, its own deltas included", async (t) => {
  const rec = fs.mkdtempSync(require("node:path").join(require("node:os").tmpdir(), "codex-wire-rec-"));
  // What `codex-wire record` writes for an upstream that split the text its own way.
  fs.writeFileSync(require("node:path").join(rec, "scenario.json"), JSON.stringify({
    turns: [{ steps: [{ kind: "message", text: "Recorded answer.", deltas: ["Recor", "ded answer."] }] }],
  }));
  const fake = (await createCodexFake()).loadRecording(rec);
  t.after(() => { fake.cleanup(); fs.rmSync(rec, { recursive: true, force: true }); });
  assert.strictEqual((await oneTurn(fake.bin)).answer, "Recorded answer.");
  assert.deepStrictEqual(fake.sent("item/agentMessage/delta").map((m) => m.params.delta), ["Recor", "ded answer."]);
});
