"use strict";
// codex-wire for Node test suites: one fake codex install per test (a state dir and a `codex`
// executable that runs `codex-wire fake`), readers over its transcript, and the wire check: what
// the client sent that the real server refuses or silently drops. The same shape as the Python
// package's FakeCodex (python/codex_wire/fake.py); the step builders come from
// clients/steps.json, as the Python ones are checked against it.

const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { binary } = require("./binary.js");
const steps = require("./steps.js");


/** The client sent what the real server refuses or silently drops. */
class WireError extends Error {
  constructor(message) {
    super(message);
    this.name = "WireError";
  }
}

/** The codex versions the binary speaks, oldest first (the last is the default). */
function codexVersions() {
  return execFileSync(binary(), ["versions"], { encoding: "utf8" }).split(/\s+/).filter(Boolean);
}

function pidAlive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
  } catch {
    return false;
  }
}

/** Live descendants of `pid` (from /proc; none where there is no /proc). */
function descendants(pid) {
  const children = new Map();
  let entries = [];
  try {
    entries = fs.readdirSync("/proc");
  } catch {
    return [];
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  const found = [];
  const todo = [pid];
  while (todo.length) {
    for (const child of children.get(todo.pop()) || []) {
      found.push(child);
      todo.push(child);
    }
  }
  return found;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class CodexFake {
  /**
   * @param {string} root a directory of the test's own (the install goes under it)
   * @param {object} options `{ turns, real, version, ...scenario }`
   */
  constructor(root, { turns = [], real, version, ...scenario } = {}) {
    const checked = steps.checkTurns(turns);
    this.root = root;
    // The install (state dir, CODEX_HOME and its config.toml, the `codex` wrapper) is the
    // binary's: one implementation for every helper.
    const args = ["install", root];
    if (real) args.push("--real", real);
    if (version) args.push("--codex-version", version);
    const made = JSON.parse(execFileSync(binary(), args, { encoding: "utf8" }));
    this.stateDir = made.state_dir;
    this.bin = made.bin;
    this.codexHome = made.codex_home;
    this.grandchildRelease = made.grandchild_release;
    fs.writeFileSync(path.join(this.stateDir, "scenario.json"), JSON.stringify({ turns: checked, ...scenario }));
    this.real = real || null;
    this.ownsRoot = false;
  }

  /** The directory of the `codex` executable, to put first on PATH. */
  get pathDir() {
    return path.dirname(this.bin);
  }

  /** The codex version the server answers as (what its `--version` says). */
  get version() {
    const out = execFileSync(this.real || this.bin, ["--version"], { encoding: "utf8" });
    return out.trim().split(/\s+/).pop();
  }

  /** Sets the turns (checked now): one script per `turn/start`. */
  script(...turns) {
    this.setScenario({ turns: steps.checkTurns(turns) });
    return this;
  }

  /**
   * Plays the model's answers of a recording (`codex-wire record --out DIR`): `DIR/scenario.json`
   * as the recorder wrote it (its model-only steps, such as raw events, play in real mode only).
   */
  loadRecording(dir) {
    const scenario = JSON.parse(fs.readFileSync(path.join(dir, "scenario.json"), "utf8"));
    fs.writeFileSync(path.join(this.stateDir, "scenario.json"), JSON.stringify(scenario));
    return this;
  }

  /** Changes top-level keys of scenario.json (read by the next server process and turn). */
  setScenario(changes) {
    const file = path.join(this.stateDir, "scenario.json");
    const data = JSON.parse(fs.readFileSync(file, "utf8"));
    fs.writeFileSync(file, JSON.stringify({ ...data, ...changes }));
  }

  // Two kinds of readers: `requests` and `sent` return JSON-RPC messages (what went over the
  // wire); the others return transcript entries (`{pid, t, dir, msg, violation, ignored,
  // reply_to}` or events), for what the fake judged and who sent it.

  /** Every transcript entry, in order. */
  entries() {
    const file = path.join(this.stateDir, "transcript.jsonl");
    if (!fs.existsSync(file)) return [];
    // A fake may be writing now: text after the last newline is an entry still being written.
    return fs
      .readFileSync(file, "utf8")
      .split("\n")
      .slice(0, -1)
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
  }

  /** Transcript entries of the client's requests, optionally of one method. */
  requestEntries(method) {
    return this.entries().filter(
      (e) => e.dir === "in" && e.msg && "method" in e.msg && "id" in e.msg && (method == null || e.msg.method === method),
    );
  }

  /** The client's requests (messages), optionally of one method. */
  requests(method) {
    return this.requestEntries(method).map((e) => e.msg);
  }

  /** The messages the server wrote, optionally of one method. */
  sent(method) {
    return this.entries()
      .filter((e) => e.dir === "out" && e.msg && (method == null || e.msg.method === method))
      .map((e) => e.msg);
  }

  /** Transcript entries of the client's answers to one kind of server request. */
  repliesTo(serverMethod) {
    return this.entries().filter((e) => e.reply_to === serverMethod);
  }

  /** Transcript entries the real server would refuse or never expect. */
  violations() {
    return this.entries().filter((e) => e.violation);
  }

  /** `{ method, path }` of every field the real server would silently drop. */
  ignoredFields() {
    return this.entries().flatMap((e) =>
      (e.ignored || []).map((p) => ({ method: String((e.msg && e.msg.method) || e.reply_to), path: p })),
    );
  }

  events(name) {
    return this.entries().filter((e) => e.event === name);
  }

  spawnedPids() {
    return this.events("spawn").map((e) => e.pid);
  }

  grandchildPids() {
    return this.events("grandchild").map((e) => e.child_pid);
  }

  /** The fake's rollout store (fake mode only: the real server keeps its own). */
  threads() {
    if (this.real) throw new Error("threads.json is the fake's; the real server keeps rollouts in CODEX_HOME");
    const file = path.join(this.stateDir, "threads.json");
    return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")).threads : {};
  }

  /**
   * What the client sent that the real server refuses (violations) or silently drops (ignored
   * fields), one line each with the JSON path; `allow`: glob patterns of ignored paths the test
   * accepts, as `codex-wire validate --allow-ignored` reads them (`*` within one path segment,
   * `**` anything, a pattern without `$` rooted: `params.input[*].extra`, `$.jsonrpc`). Judged
   * by the binary (`codex-wire wire-check`): a pattern means one thing in every helper.
   */
  wireProblems({ allow = [] } = {}) {
    const args = ["wire-check", path.join(this.stateDir, "transcript.jsonl")];
    for (const pattern of [].concat(allow)) args.push("--allow-ignored", pattern);
    const out = spawnSync(binary(), args, { encoding: "utf8" });
    if (out.status !== 0 && out.status !== 1)
      throw new Error(`codex-wire wire-check failed: ${(out.stderr || out.error || "").toString().trim()}`);
    return out.stdout.split("\n").filter(Boolean);
  }

  /** Throws a WireError naming each path unless every line the client sent is valid and carries
   * no field codex drops. */
  assertWireClean({ allow = [] } = {}) {
    const problems = this.wireProblems({ allow });
    if (problems.length)
      throw new WireError(`the client sent what the real codex refuses or drops:\n  ${problems.join("\n  ")}`);
  }

  /** Releases and kills what the install started, then removes a directory it made itself. */
  async cleanup() {
    fs.writeFileSync(path.join(this.stateDir, this.grandchildRelease), "");
    const deadline = Date.now() + 10000;
    while (Date.now() < deadline && this.grandchildPids().some(pidAlive)) await sleep(50);
    const pids = [...this.spawnedPids(), ...this.grandchildPids()];
    for (const pid of [...pids, ...pids.flatMap(descendants)]) {
      if (pidAlive(pid)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // Gone meanwhile.
        }
      }
    }
    if (this.ownsRoot) fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * One fake codex install for a test. `options`: `{ turns, real, version, dir, ...scenario }`:
 * `turns` one script per `turn/start` (checked now); `real` the path of a real codex to run
 * behind the scripted model instead; `version` the codex version the fake answers as; `dir` where
 * to put the install (default: a fresh temp dir, removed by `cleanup()`); the rest goes into
 * scenario.json as is.
 */
async function createCodexFake({ dir, ...options } = {}) {
  const root = dir || fs.mkdtempSync(path.join(os.tmpdir(), "codex-wire-"));
  const fake = new CodexFake(root, options);
  fake.ownsRoot = !dir;
  return fake;
}

/** The versions `versions` names: "all", "newest", one version or a list, each one `codexVersions()` lists. */
function pickVersions(versions) {
  const supported = codexVersions();
  if (versions === "all") return supported;
  if (versions === "newest") return supported.slice(-1);
  const wanted = typeof versions === "string" ? [versions] : versions;
  if (!Array.isArray(wanted) || !wanted.length || !wanted.every((v) => typeof v === "string"))
    throw new TypeError(
      `versions must be "all", "newest", a codex version or a list of them, not ${JSON.stringify(versions)}`,
    );
  for (const v of wanted)
    if (!supported.includes(v))
      throw new RangeError(`codex ${v} is not a version this codex-wire speaks (${supported.join(", ")})`);
  return [...new Set(wanted)];
}

/**
 * A test function that registers each test once per codex version, named with its release:
 * `codexTest(test, { versions: "all" })` with the runner's own `test` (node:test, vitest, jest)
 * gives `codex(name, body)`, which registers `${name} (codex 0.163.0)`, ... Each body gets
 * `{ version, createCodexFake }` (a `createCodexFake` answering as that version; every fake it
 * made is cleaned up when the body ends) before the runner's own arguments (node:test's `t`,
 * vitest's context). Other arguments pass through in place: `codex(name, { timeout }, body)` for
 * node:test, `codex(name, body, 20000)` for jest and vitest.
 */
function codexTest(test, { versions = "all", ...rest } = {}) {
  if (typeof test !== "function")
    throw new TypeError("codexTest(test, options): test is the runner's test function (node:test, vitest, jest)");
  const unknown = Object.keys(rest);
  if (unknown.length) throw new TypeError(`codexTest: unknown option ${JSON.stringify(unknown[0])} (versions)`);
  const chosen = pickVersions(versions);
  const register = (name, ...args) => {
    const at = args.findIndex((a) => typeof a === "function");
    if (typeof name !== "string" || at < 0)
      throw new TypeError("a codexTest test takes a name and a body: codex(name, [options,] body)");
    const body = args[at];
    for (const version of chosen) {
      const made = [];
      const context = {
        version,
        createCodexFake: async (options = {}) => {
          const fake = await createCodexFake({ version, ...options });
          made.push(fake);
          return fake;
        },
      };
      // `(...runnerArgs)` declares no parameter: jest takes a body that declares one for a
      // done-callback test.
      const run = async (...runnerArgs) => {
        try {
          return await body(context, ...runnerArgs);
        } finally {
          for (const fake of made.splice(0)) await fake.cleanup();
        }
      };
      const passed = [...args];
      passed[at] = run;
      test(`${name} (codex ${version})`, ...passed);
    }
  };
  register.versions = chosen;
  return register;
}

module.exports = {
  createCodexFake,
  codexTest,
  CodexFake,
  WireError,
  binary,
  codexVersions,
  ...steps,
};
