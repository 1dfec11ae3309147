"use strict";
// The JavaScript builders against clients/steps.json's cases: the Python helpers pass the same
// cases (tests/python/test_steps_description.py), so the two give the same steps and errors.
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const steps = require("codex-wire");

const description = JSON.parse(fs.readFileSync(process.env.CODEX_WIRE_STEPS_JSON, "utf8"));
const camel = (k) => k.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

test("every described builder is exported", () => {
  for (const b of description.builders) assert.strictEqual(typeof steps[camel(b.kind)], "function", b.kind);
  assert.deepStrictEqual([...steps.KINDS].sort(), [...description.model_kinds, ...description.fake_only_kinds].sort());
});

for (const c of description.cases) {
  test(`case ${JSON.stringify(c.call)}`, () => {
    const [kind, args, options] = c.call;
    const call = () => steps[camel(kind)](...args, ...(options ? [options] : []));
    if (c.error) {
      assert.throws(call, (e) => e.message.includes(c.error), `expected an error with ${JSON.stringify(c.error)}`);
    } else {
      assert.deepStrictEqual(call(), c.step);
      assert.deepStrictEqual(steps.checkStep(c.step), c.step);
    }
  });
}
