// Types of the codex-wire helper; the step builders' types are generated (steps.d.ts).
import type { Step, Turn } from "./steps";

export * from "./steps";

/** A transcript line: a message in or out with the fake's judgement, or one of its events. */
export interface TranscriptEntry {
  pid: number;
  t?: number;
  dir?: "in" | "out";
  msg?: { id?: number | string; method?: string; params?: unknown; result?: unknown; error?: unknown };
  violation?: string;
  ignored?: string[];
  reply_to?: string;
  event?: string;
  [key: string]: unknown;
}

export interface CodexFakeOptions {
  /** One script per `turn/start` (step objects, or built with `turn(...)`), checked now. */
  turns?: Array<Turn | { steps: Step[] }>;
  /** The path of a real codex: run it behind the scripted model instead of the fake. */
  real?: string;
  /** The codex version the fake answers as (default: the newest the binary speaks). */
  version?: string;
  /** Where the install goes (default: a fresh temp dir that `cleanup()` removes). */
  dir?: string;
  /** Any other scenario.json key (docs/fake.md), written as is. */
  [scenarioKey: string]: unknown;
}

export class WireError extends Error {}

export class CodexFake {
  /** The `codex` executable to give a client (`codexPath`, or first on PATH via `pathDir`). */
  readonly bin: string;
  readonly pathDir: string;
  readonly stateDir: string;
  readonly codexHome: string;
  readonly real: string | null;
  /** The codex version the server answers as (runs `--version`). */
  readonly version: string;
  script(...turns: Array<Turn | { steps: Step[] }>): this;
  /** Plays the model's answers of a recording (`codex-wire record --out DIR`): DIR/scenario.json. */
  loadRecording(dir: string): this;
  setScenario(changes: Record<string, unknown>): void;
  entries(): TranscriptEntry[];
  requestEntries(method?: string): TranscriptEntry[];
  /** The client's requests: JSON-RPC messages. */
  requests(method?: string): Array<{ id: number | string; method: string; params?: any }>;
  /** The messages the server wrote. */
  sent(method?: string): Array<{ id?: number | string; method?: string; params?: any; result?: any; error?: any }>;
  repliesTo(serverMethod: string): TranscriptEntry[];
  violations(): TranscriptEntry[];
  ignoredFields(): Array<{ method: string; path: string }>;
  events(name: string): TranscriptEntry[];
  spawnedPids(): number[];
  grandchildPids(): number[];
  threads(): Record<string, unknown>;
  wireProblems(options?: { allow?: string | string[] }): string[];
  /** Throws a WireError naming each refused line and each dropped field's path (`allow`: globs as `codex-wire validate --allow-ignored` reads them: `*` within one path segment, `**` anything). */
  assertWireClean(options?: { allow?: string | string[] }): void;
  cleanup(): Promise<void>;
}

export function createCodexFake(options?: CodexFakeOptions): Promise<CodexFake>;
/** The native codex-wire executable this package runs. */
export function binary(): string;
/** The codex versions the binary speaks, oldest first (the last is the default). */
export function codexVersions(): string[];

/** What `codexTest` gives each body: its codex version, and a `createCodexFake` answering as it. */
export interface CodexTestContext {
  /** The codex version this run of the test is for (in its name: `answer (codex 0.171.0)`). */
  readonly version: string;
  /** `createCodexFake` with `version` set; every fake it made is cleaned up when the body ends. */
  createCodexFake(options?: CodexFakeOptions): Promise<CodexFake>;
}

export interface CodexTestOptions {
  /** The codex versions each test runs for: "all" (default: every one `codexVersions()` lists),
   * "newest", one version, or a list. */
  versions?: "all" | "newest" | (string & {}) | string[];
}

/** Registers `name (codex V)` once per version; arguments other than the body pass through in
 * place (node:test's options before it, jest's and vitest's timeout after it). */
export interface CodexTest {
  (name: string, body: (codex: CodexTestContext, ...runnerArgs: any[]) => unknown, ...rest: unknown[]): void;
  (name: string, options: object, body: (codex: CodexTestContext, ...runnerArgs: any[]) => unknown, ...rest: unknown[]): void;
  /** The versions each test runs for, oldest first. */
  readonly versions: string[];
}

/** One test per codex version: `const codex = codexTest(test, { versions: "all" })`, with the
 * runner's own `test` (node:test, vitest, jest). */
export function codexTest(test: (name: string, ...args: any[]) => unknown, options?: CodexTestOptions): CodexTest;
