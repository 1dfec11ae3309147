"use strict";
// A client that sends a field the real server drops: this test must FAIL, naming the path
// (tests/npm.rs checks the failure and its text).
const test = require("node:test");
const { createCodexFake } = require("codex-wire");
const { oneTurn } = require("./client.js");

test("a client sending an ignored field", async (t) => {
  const fake = await createCodexFake();
  t.after(() => fake.cleanup());
  await oneTurn(fake.bin, { cwd: process.cwd(), temperature: 0.2 });
  fake.assertWireClean();
});
