// A real client library from the npm registry, unchanged, against the fake: the AI SDK's codex
// provider (ai-sdk-provider-codex-cli, ES modules only), which spawns `codex app-server` itself and
// is given the fake as its `codexPath`. One turn and one approval, on every supported release, with
// the wire check on. tests/npm.rs puts the runner's `test` and `assert` before this text.
import { generateText } from "ai";
import { createCodexAppServer } from "ai-sdk-provider-codex-cli";
import { codexTest, command, message, turn, usage, WireError } from "codex-wire";

// What the provider sends in every thread/start and no supported codex reads (codex drops it
// silently): found by this wire check, and the one path the tests accept.
const DROPPED = "$.params.persistExtendedHistory";
const MODEL = "gpt-6-astra"; // in every supported release's model catalog

function provider(fake, approvals = []) {
  return createCodexAppServer({
    defaultSettings: {
      codexPath: fake.bin,
      cwd: process.cwd(),
      logger: false,
      serverRequests: {
        onCommandExecutionApproval: async (request) => {
          approvals.push(request.params);
          return { decision: "accept" };
        },
      },
    },
  });
}

function checkWire(fake, threads) {
  assert.deepStrictEqual(fake.violations(), []);
  assert.deepStrictEqual(
    fake.ignoredFields(),
    Array.from({ length: threads }, () => ({ method: "thread/start", path: DROPPED })),
  );
  assert.throws(
    () => fake.assertWireClean(),
    (e) => e instanceof WireError && e.message.includes(`ignored by the real server: ${DROPPED} (in thread/start)`),
  );
  fake.assertWireClean({ allow: [DROPPED] });
}

const codex = codexTest(test, { versions: "all" });

codex("ai-sdk-provider-codex-cli: one turn", async ({ version, createCodexFake }) => {
  const fake = await createCodexFake({ turns: [turn(message("The answer."), usage(12, 4))] });
  const codexProvider = provider(fake);
  let result;
  try {
    result = await generateText({ model: codexProvider(MODEL), prompt: "Question?" });
  } finally {
    await codexProvider.close();
  }
  assert.strictEqual(result.text, "The answer.");
  assert.strictEqual(result.usage.inputTokens, 12);
  assert.strictEqual(result.usage.outputTokens, 4);
  const [init, thread, turnStart] = fake.requests();
  assert.deepStrictEqual([init.method, thread.method, turnStart.method], ["initialize", "thread/start", "turn/start"]);
  assert.strictEqual(init.params.clientInfo.name, "ai-sdk-provider-codex-cli");
  assert.strictEqual(thread.params.model, MODEL);
  assert.match(fake.sent().find((m) => m.id === init.id).result.userAgent, new RegExp(`/${version.replace(/\./g, "\\.")} `));
  checkWire(fake, 1);
});

codex("ai-sdk-provider-codex-cli: one approval", async ({ createCodexFake }) => {
  const fake = await createCodexFake({
    turns: [turn(command("echo approved", { approval: true, output: "approved\n" }), message("Ran it."))],
  });
  const approvals = [];
  const codexProvider = provider(fake, approvals);
  let result;
  try {
    result = await generateText({ model: codexProvider(MODEL, { approvalPolicy: "on-request" }), prompt: "Run it." });
  } finally {
    await codexProvider.close();
  }
  assert.strictEqual(result.text, "Ran it.");
  assert.deepStrictEqual(
    approvals.map((p) => p.command),
    fake.sent("item/commandExecution/requestApproval").map((m) => m.params.command),
  );
  assert.strictEqual(approvals.length, 1);
  assert.match(approvals[0].command, /echo approved/);
  assert.deepStrictEqual(
    fake.repliesTo("item/commandExecution/requestApproval").map((e) => e.msg.result),
    [{ decision: "accept" }],
  );
  const ran = fake
    .sent("item/completed")
    .map((m) => m.params.item)
    .filter((item) => item.type === "commandExecution");
  assert.deepStrictEqual(
    ran.map((item) => [item.status, item.aggregatedOutput]),
    [["completed", "approved\n"]],
  );
  assert.strictEqual(fake.requests("thread/start")[0].params.approvalPolicy, "on-request");
  checkWire(fake, 1);
});
