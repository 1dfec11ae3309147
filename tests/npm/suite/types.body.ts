// The package's types as a TypeScript suite sees them, checked by `tsc --noEmit` under
// `moduleResolution: node16` (as an ES module, types.mts, and as CommonJS, types.cts) and
// `bundler` (types.ts). tests/npm.rs puts before this text the import of every name by name (each
// step builder of clients/steps.json, every name index.js exports) and `codexWire`, the whole
// module; a name the types lack fails to compile.
import type { CodexTest, CodexTestContext, Step, Turn, TranscriptEntry } from "codex-wire";

const answer: Step = message("The answer.", { deltas: ["The ", "answer."] });
const script: Turn = turn(reasoning("Thinking."), answer, usage(12, 4), command("ls", { approval: true }));
const steps: Step[] = [answer, step("message", "By kind.")];
// @ts-expect-error a message's text is a string
message(42);
// @ts-expect-error command takes no option `nope`
command("ls", { nope: true });

async function body(): Promise<void> {
  const fake: CodexFake = await createCodexFake({ turns: [script, { steps }], version: codexVersions()[0] });
  fake.script(turn(message("Again.")));
  const entries: TranscriptEntry[] = fake.entries();
  const dropped: Array<{ method: string; path: string }> = fake.ignoredFields();
  fake.assertWireClean({ allow: ["$.params.temperature"] });
  await fake.cleanup();
  void entries;
  void dropped;
}

const runnerTest = (name: string, fn: (...args: any[]) => unknown, timeout?: number): void => {
  void name;
  void fn;
  void timeout;
};
const codex: CodexTest = codexTest(runnerTest, { versions: "all" });
const versions: string[] = codex.versions;
codex("a test", async ({ version, createCodexFake }) => {
  const fake: CodexFake = await createCodexFake({ turns: [script] });
  // @ts-expect-error the version is a string
  const n: number = version;
  void fake;
  void n;
});
codex("with the runner's options", { timeout: 20000 }, async (context: CodexTestContext, t: unknown) => {
  void context.version;
  void t;
});
codex("with jest's timeout", async () => {}, 20000);
codexTest(runnerTest, { versions: ["0.171.0"] });
codexTest(runnerTest, { versions: "newest" });
// @ts-expect-error versions are strings
codexTest(runnerTest, { versions: 3 });

const kinds: Set<string> = KINDS;
const error: Error = new WireError("x");
const whole: typeof createCodexFake = codexWire.createCodexFake;
void body;
void versions;
void kinds;
void error;
void whole;
