// The step builders, made from DESCRIPTION (clients/steps.json, which `cargo xtask npm` puts
// above this text): one function per described kind, checking its arguments as the Python
// helpers do, with the same messages. Positional args first, then an options object.

const KINDS = new Set([...DESCRIPTION.model_kinds, ...DESCRIPTION.fake_only_kinds]);
const BUILDERS = new Map(DESCRIPTION.builders.map((b) => [b.kind, b]));

function typeName(v) {
  if (v === null) return "NoneType";
  if (v === undefined) return "undefined";
  if (Array.isArray(v)) return "list";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "string") return "str";
  return typeof v === "object" ? "dict" : typeof v;
}

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function checkArg(arg, v) {
  const name = arg.name;
  switch (arg.type) {
    case "string":
      if (typeof v !== "string") throw new TypeError(`${name} must be a string, not ${typeName(v)}`);
      if (arg.nonblank && !v.trim()) throw new RangeError(`${name} must not be blank`);
      break;
    case "int":
      if (typeof v !== "number" || !Number.isInteger(v))
        throw new TypeError(`${name} must be an int, not ${typeName(v)}`);
      break;
    case "number":
      if (typeof v !== "number" || !Number.isFinite(v))
        throw new TypeError(`${name} must be a number, not ${typeName(v)}`);
      break;
    case "bool":
      if (typeof v !== "boolean") throw new TypeError(`${name} must be a bool`);
      break;
    case "strings": {
      const items = typeof v === "string" ? [v] : v;
      if (!Array.isArray(items)) throw new TypeError(`${name} must be a string or a list of strings`);
      items.forEach((x, i) => {
        if (typeof x !== "string") throw new TypeError(`${name}[${i}] must be a string, not ${typeName(x)}`);
      });
      return [...items];
    }
    case "string_map":
      if (!isPlainObject(v) || !Object.values(v).every((x) => typeof x === "string"))
        throw new TypeError(`${name} must be a map of strings`);
      break;
    case "deltas":
      if (!Array.isArray(v)) throw new TypeError(`${name} must be a list, not ${typeName(v)}`);
      v.forEach((d, i) => {
        if (isPlainObject(d) && same(Object.keys(d), ["sleep"])) {
          if (typeof d.sleep !== "number" || !Number.isFinite(d.sleep))
            throw new TypeError(`${name}[${i}].sleep must be a number, not ${typeName(d.sleep)}`);
          if (d.sleep < 0) throw new RangeError(`${name}[${i}].sleep must be >= 0, not ${d.sleep}`);
        } else if (typeof d !== "string") {
          throw new TypeError(`${name}[${i}] must be a string or {"sleep": seconds}, not ${JSON.stringify(d)}`);
        }
      });
      return [...v];
    case "questions":
      if (!Array.isArray(v) || !v.every(isPlainObject)) throw new TypeError(`${name} must be a list of dicts`);
      for (const q of v)
        for (const key of ["id", "question"])
          if (!(key in q)) throw new RangeError(`each question needs ${key}: ${JSON.stringify(q)}`);
      break;
    default:
      break;
  }
  if (typeof v === "number") {
    if (arg.min !== undefined && v < arg.min) throw new RangeError(`${name} must be >= ${arg.min}, not ${v}`);
    if (arg.max !== undefined && v > arg.max) throw new RangeError(`${name} must be <= ${arg.max}, not ${v}`);
    if (arg.nonzero && v === 0) throw new RangeError(`${name} must be > 0`);
  }
  if (arg.enum && !arg.enum.includes(v))
    throw new RangeError(`${name} must be one of ${arg.enum.join(", ")}, not ${JSON.stringify(v)}`);
  return v;
}

function checkRules(builder, values) {
  for (const rule of builder.rules || []) {
    if (rule.exactly_one) {
      const given = rule.exactly_one.filter((n) => values[n] != null);
      if (given.length !== 1)
        throw new RangeError(`${builder.kind} takes exactly one of ${rule.exactly_one.join(", ")}`);
    } else if (rule.requires) {
      const [a, b] = rule.requires;
      if (values[a] != null && values[b] == null) throw new RangeError(`${a} needs ${b}`);
    } else if (rule.at_most) {
      const [a, b] = rule.at_most;
      if (values[a] > values[b])
        throw new RangeError(`${a} must be at most ${b} (${values[a]} > ${values[b]})`);
    }
  }
}

/** Builds one step of `kind` from positional args then an options object. */
function build(kind, args) {
  const builder = BUILDERS.get(kind);
  if (!builder) throw new RangeError(`no builder for step kind ${JSON.stringify(kind)}`);
  const positional = builder.args.filter((a) => a.positional);
  let options = {};
  if (args.length > positional.length) {
    options = args[positional.length];
    if (!isPlainObject(options) || args.length > positional.length + 1)
      throw new TypeError(`${kind} takes ${positional.length} positional argument(s) and an options object`);
  }
  for (const key of Object.keys(options))
    if (!builder.args.some((a) => !a.positional && a.name === key))
      throw new TypeError(`${kind}: unknown option ${JSON.stringify(key)}`);
  const values = {};
  builder.args.forEach((arg) => {
    const given = arg.positional ? args[positional.indexOf(arg)] : options[arg.name];
    const v = given === undefined ? arg.default : given;
    values[arg.name] = v == null ? v : checkArg(arg, v);
    if (v == null && arg.required) throw new TypeError(`${arg.name} must be ${article(arg.type)}, not ${typeName(v)}`);
  });
  checkRules(builder, values);
  const step = { kind };
  for (const arg of builder.args) {
    const v = values[arg.name];
    if (v != null && !(arg.omit !== undefined && same(v, arg.omit))) step[arg.name] = v;
  }
  return step;
}

function article(type) {
  return { int: "an int", string: "a string", number: "a number", bool: "a bool" }[type] || `a ${type}`;
}

/** A step object, checked: a known kind, and the builder's rules (keys it does not take pass). */
function checkStep(step, index = 0) {
  if (!isPlainObject(step))
    throw new TypeError(`step ${index} must be an object (use the codex-wire step builders), not ${typeName(step)}`);
  if (!KINDS.has(step.kind))
    throw new RangeError(`step ${index}: unknown kind ${JSON.stringify(step.kind)} (known: ${[...KINDS].sort().join(", ")})`);
  const builder = BUILDERS.get(step.kind);
  if (builder) {
    const args = builder.args.filter((a) => a.positional).map((a) => step[a.name]);
    const options = {};
    for (const a of builder.args) if (!a.positional && step[a.name] !== undefined) options[a.name] = step[a.name];
    for (const a of builder.args)
      if (a.required && step[a.name] === undefined)
        throw new RangeError(`step ${index} (${step.kind}): missing ${JSON.stringify(a.name)}`);
    try {
      build(step.kind, [...args, options]);
    } catch (e) {
      e.message = `step ${index} (${step.kind}): ${e.message}`;
      throw e;
    }
  }
  return step;
}

/** One turn/start's script: `turn(step, step, ..., { start_error, continuations, rollover_ms })`. */
function turn(...steps) {
  let options = {};
  if (steps.length && isPlainObject(steps[steps.length - 1]) && !("kind" in steps[steps.length - 1]))
    options = steps.pop();
  const out = { steps: steps.map((s, i) => checkStep(s, i)) };
  if (options.start_error != null) out.start_error = checkArg({ name: "start_error", type: "string" }, options.start_error);
  if (options.continuations && options.continuations.length) out.continuations = checkTurns(options.continuations);
  if (options.rollover_ms != null) out.rollover_ms = checkArg({ name: "rollover_ms", type: "int", min: 0 }, options.rollover_ms);
  return out;
}

/** Turn scripts, each checked (an object with `steps`, or built by `turn`). */
function checkTurns(turns) {
  return [...turns].map((t, i) => {
    if (!isPlainObject(t) || !Array.isArray(t.steps))
      throw new TypeError(`turn ${i} must be an object with steps (turn(...)), not ${JSON.stringify(t)}`);
    const checked = { ...t, steps: t.steps.map((s, j) => checkStep(s, j)) };
    if (t.continuations) checked.continuations = checkTurns(t.continuations);
    return checked;
  });
}

function camel(kind) {
  return kind.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
}

const builders = {};
for (const { kind } of DESCRIPTION.builders) builders[camel(kind)] = (...args) => build(kind, args);

module.exports = {
  ...builders,
  step: (kind, ...args) => build(kind, args),
  turn,
  checkStep,
  checkTurns,
  KINDS,
  MODEL_KINDS: new Set(DESCRIPTION.model_kinds),
  FAKE_ONLY_KINDS: new Set(DESCRIPTION.fake_only_kinds),
  DESCRIPTION,
};
