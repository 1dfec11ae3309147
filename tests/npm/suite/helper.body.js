// The helper's suite, written once and run six ways: as an ES module and as CommonJS, under Node's
// own runner, vitest and jest. tests/npm.rs puts its head before this text, per module format and
// runner: `test` (the runner's), `assert`, `fs`, `oneTurn` (./client.js, a raw stdio client), and
// every name of codex-wire imported by name — each step builder of clients/steps.json and every
// name index.js exports — as `import { ... } from "codex-wire"` or `const { ... } = require(...)`;
// `IMPORTED` holds them by name, `MODULE` is the whole module, `otherEntry()` loads the other
// entry (CommonJS from an ES module, the ES module from CommonJS). An ES module entry lacking a
// name fails to link here, before any test runs: what a suite on vitest saw.

const STEPS = JSON.parse(fs.readFileSync(process.env.CODEX_WIRE_STEPS_JSON, "utf8"));
const camel = (kind) => kind.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
const names = (m) => Object.keys(m).filter((k) => k !== "default").sort();

test("every builder of clients/steps.json is imported by name", () => {
  for (const b of STEPS.builders) assert.strictEqual(typeof IMPORTED[camel(b.kind)], "function", b.kind);
  for (const [name, value] of Object.entries(IMPORTED)) assert.strictEqual(value, MODULE[name], name);
  assert.deepStrictEqual(names(IMPORTED), names(MODULE));
});

test("the ES module and CommonJS entries give the same names", async () => {
  const other = await otherEntry();
  assert.deepStrictEqual(names(other), names(MODULE));
  for (const name of names(MODULE)) assert.strictEqual(typeof other[name], typeof MODULE[name], name);
});

test("the named builders give the steps and errors of clients/steps.json", () => {
  for (const c of STEPS.cases) {
    const [kind, args, options] = c.call;
    const call = () => IMPORTED[camel(kind)](...args, ...(options ? [options] : []));
    if (c.error) {
      assert.throws(call, (e) => e.message.includes(c.error), `${JSON.stringify(c.call)}: ${c.error}`);
    } else {
      assert.deepStrictEqual(call(), c.step, JSON.stringify(c.call));
      assert.deepStrictEqual(checkStep(c.step), c.step);
    }
  }
});

test("codexTest registers a test per release, named with it, and cleans up its fakes", async () => {
  const registered = [];
  const runner = (name, ...args) => registered.push({ name, args });
  const all = codexTest(runner, { versions: "all" });
  const versions = codexVersions();
  assert.deepStrictEqual(all.versions, versions);
  let made;
  all("a test", { timeout: 1000 }, async ({ version, createCodexFake }, runnerArg) => {
    made = await createCodexFake();
    return [version, runnerArg, made.version];
  });
  assert.deepStrictEqual(
    registered.map((r) => r.name),
    versions.map((v) => `a test (codex ${v})`),
  );
  assert.deepStrictEqual(registered[0].args[0], { timeout: 1000 }, "the runner's options pass through in place");
  const body = registered[0].args[1];
  assert.strictEqual(body.length, 0, "a body declaring a parameter is a done-callback test to jest");
  assert.deepStrictEqual(await body("t"), [versions[0], "t", versions[0]]);
  assert.ok(!fs.existsSync(made.stateDir), "a fake the body made is cleaned up when it ends");
  assert.deepStrictEqual(codexTest(runner, { versions: "newest" }).versions, versions.slice(-1));
  assert.deepStrictEqual(codexTest(runner, { versions: versions[0] }).versions, [versions[0]]);
  assert.throws(() => codexTest(runner, { versions: ["9.9.9"] }), /codex 9\.9\.9 is not a version this codex-wire speaks/);
  assert.throws(() => codexTest(runner, { version: "all" }), /unknown option "version"/);
});

const codex = codexTest(test, { versions: "all" });

codex("a turn answers as scripted and the client's lines are clean", async ({ version, createCodexFake }) => {
  const fake = await createCodexFake({
    turns: [turn(reasoning("Thinking it over."), message("The answer."), usage(12, 4))],
  });
  assert.strictEqual(fake.version, version);
  const { answer, notifications } = await oneTurn(fake.bin);
  assert.strictEqual(answer, "The answer.");
  assert.deepStrictEqual(
    fake.requests().map((r) => r.method),
    ["initialize", "thread/start", "turn/start"],
  );
  assert.ok(notifications.some((n) => n.method === "item/completed" && n.params.item.type === "reasoning"));
  assert.strictEqual(fake.sent("turn/completed").length, 1);
  const init = fake.sent().find((m) => m.id === 0 && m.result);
  assert.match(init.result.userAgent, new RegExp(`/${version.replace(/\./g, "\\.")} `));
  assert.deepStrictEqual(fake.violations(), []);
  fake.assertWireClean();
});

codex("a field the real server drops fails the wire check, named by its path", async ({ createCodexFake }) => {
  const fake = await createCodexFake({ turns: [turn(message("Fine."))] });
  await oneTurn(fake.bin, { temperature: 0.2 });
  assert.deepStrictEqual(fake.ignoredFields(), [{ method: "thread/start", path: "$.params.temperature" }]);
  assert.throws(
    () => fake.assertWireClean(),
    (e) =>
      e instanceof WireError &&
      e.message.includes("ignored by the real server: $.params.temperature (in thread/start)"),
  );
  fake.assertWireClean({ allow: ["$.params.temp*"] });
});
