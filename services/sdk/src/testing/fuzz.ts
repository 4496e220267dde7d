/**
 * Property-based fuzzing of the mesh's parsers (`*.fuzz.test.ts`, part of `npm test`): one fixed seed,
 * a bounded number of runs, a deadline on every call (a hang is a failure, not a stuck test run), and
 * generators that mutate valid inputs (prototype keys, deep nesting, huge numbers, lone surrogates,
 * NaN / Infinity) rather than only random text.
 *
 * Every property says the same thing: the parser returns a result or throws its own named error with a
 * message; never a `TypeError`, a `RangeError` (stack overflow), a hang or a polluted prototype.
 *
 * To fuzz harder or elsewhere, change {@link FUZZ_SEED} or {@link FUZZ_RUN_SCALE} here (a failure
 * prints the seed and the `path` that replays it) and run the `*.fuzz.test.ts` files.
 * @module
 */
import vm from "node:vm";
import fc from "fast-check";

/** The one seed of every fuzz property (deterministic `npm test`). */
export const FUZZ_SEED = 16_062_026;

/** Multiplies every property's run count (1 keeps the whole fuzz set under a minute on two slow cores). */
export const FUZZ_RUN_SCALE = 1;

/**
 * Longest one parser call may take before it counts as a hang: generous, since a loaded CI box is slow,
 * while a quadratic parser on the generated 100 KB+ inputs takes minutes.
 */
export const FUZZ_CALL_DEADLINE_MS = 5_000;

/** Longest one property may run; past it fast-check stops early (the runs so far must have passed). */
export const FUZZ_PROPERTY_TIME_LIMIT_MS = 15_000;

/** `fc.assert` parameters: the fixed seed and `runs` × {@link FUZZ_RUN_SCALE} runs, time-bounded. */
export function fuzzParameters(runs: number): fc.Parameters<unknown> {
  return {
    seed: FUZZ_SEED,
    numRuns: Math.max(1, Math.round(runs * FUZZ_RUN_SCALE)),
    interruptAfterTimeLimit: FUZZ_PROPERTY_TIME_LIMIT_MS,
    markInterruptAsFailure: false,
    includeErrorInReport: true,
  };
}

const context = vm.createContext({ call: null as unknown });
const invoke = new vm.Script("call()");

function prototypeShape(): string {
  return [Object.prototype, Array.prototype, String.prototype, Function.prototype]
    .map((p) => Object.getOwnPropertyNames(p).length)
    .join(",");
}
const cleanShape = prototypeShape();

/** Why a fuzzed call broke the property (the counterexample is printed by fast-check). */
export class FuzzFailure extends Error {
  override readonly name = "FuzzFailure";
}

/** The outcome of {@link fuzzCall}: the value, or the named error the parser threw. */
export type FuzzOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: Error };

/**
 * Calls a synchronous parser under a deadline ({@link FUZZ_CALL_DEADLINE_MS}, enforced by V8 even in a
 * tight loop) and checks what came out: a value, or an `Error` whose `name` is one of `allowed` and
 * whose message is not empty. Anything else (another error type, a non-Error, a hang, a change to the
 * built-in prototypes) throws a {@link FuzzFailure} naming `what`.
 */
export function fuzzCall<T>(
  what: string,
  fn: () => T,
  allowed: readonly string[] = [],
  deadlineMs = FUZZ_CALL_DEADLINE_MS,
): FuzzOutcome<T> {
  let outcome: FuzzOutcome<T>;
  context["call"] = fn;
  try {
    outcome = { ok: true, value: invoke.runInContext(context, { timeout: deadlineMs }) as T };
  } catch (err) {
    if ((err as { code?: unknown }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT")
      throw new FuzzFailure(`${what} did not return within ${deadlineMs} ms (hang)`);
    outcome = { ok: false, error: checkError(what, err, allowed) };
  } finally {
    context["call"] = null;
  }
  checkPrototypes(what);
  return outcome;
}

/** {@link fuzzCall} for an async parser (the deadline is a timer: it catches a stall, not a busy loop). */
export async function fuzzCallAsync<T>(
  what: string,
  fn: () => Promise<T>,
  allowed: readonly string[] = [],
  deadlineMs = FUZZ_CALL_DEADLINE_MS,
): Promise<FuzzOutcome<T>> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new FuzzFailure(`${what} did not settle within ${deadlineMs} ms (hang)`)),
      deadlineMs,
    );
  });
  let outcome: FuzzOutcome<T>;
  try {
    outcome = { ok: true, value: await Promise.race([fn(), deadline]) };
  } catch (err) {
    if (err instanceof FuzzFailure) throw err;
    outcome = { ok: false, error: checkError(what, err, allowed) };
  } finally {
    clearTimeout(timer);
  }
  checkPrototypes(what);
  return outcome;
}

function checkError(what: string, err: unknown, allowed: readonly string[]): Error {
  if (!(err instanceof Error))
    throw new FuzzFailure(`${what} threw a non-Error: ${String(err)}`, { cause: err });
  if (!allowed.includes(err.name))
    throw new FuzzFailure(
      `${what} threw ${err.name} (allowed: ${allowed.join(", ") || "none"}): ${err.message}`,
      { cause: err },
    );
  if (err.message.trim() === "")
    throw new FuzzFailure(`${what} threw ${err.name} with an empty message`, { cause: err });
  if (/maximum call stack size exceeded/i.test(err.message))
    throw new FuzzFailure(`${what} overflowed the stack: ${err.message}`, { cause: err });
  return err;
}

function checkPrototypes(what: string): void {
  if (prototypeShape() !== cleanShape)
    throw new FuzzFailure(`${what} changed a built-in prototype (prototype pollution)`);
}

// ---- generators ----

/** Keys that reach prototypes or shadow built-ins when code indexes a plain object with them. */
export const PROTOTYPE_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "isPrototypeOf",
] as const;

/** Strings that break naive code: lone surrogates, NUL, BOM, line separators, prototype keys. */
export const NASTY_STRINGS = [
  "",
  " ",
  "\u0000",
  "\uFEFF",
  "\uD800",
  "\uDFFF",
  "a\uD83Db",
  "\u2028\u2029",
  "\r\n",
  "é",
  "𝄞",
  "\\",
  '"',
  "'",
  "\\u0000",
  "\\ud800",
  ...PROTOTYPE_KEYS,
] as const;

/** Any string, biased towards {@link NASTY_STRINGS}, unicode and lone surrogates. */
export function nastyString(maxLength = 40): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 3 },
    { arbitrary: fc.string({ maxLength }), weight: 2 },
    { arbitrary: fc.string({ unit: "binary", maxLength }), weight: 2 },
    { arbitrary: fc.string({ unit: "grapheme", maxLength }), weight: 1 },
  );
}

/** Numbers past every edge: ±0, NaN, ±Infinity, 2^53 ± 1, 1e308, denormals, huge negative. */
export const EDGE_NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 63),
  1e308,
  5e-324,
  -1e308,
] as const;

/** A JSON-ish value: edge numbers, nasty strings and keys, moderately nested. */
export function nastyValue(): fc.Arbitrary<unknown> {
  const { value } = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom<unknown>(null, true, false, ...EDGE_NUMBERS),
      fc
        .constantFrom(100, 5_000, 50_000)
        .chain((depth) =>
          fc.constantFrom("array" as const, "object" as const).map((kind) => deepValue(depth, kind)),
        ),
      fc.double(),
      fc.integer(),
      nastyString(),
      fc.array(tie("value"), { maxLength: 4 }),
      fc
        .array(fc.tuple(fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), nastyString(12)), tie("value")), {
          maxLength: 4,
        })
        .map(ownObject),
    ),
  }));
  return value;
}

/** An object with exactly these own keys (`__proto__` included, as `JSON.parse` makes it). */
export function ownObject(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of entries)
    Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  return o;
}

/** `depth` nested arrays or objects (`{"a": …}`) around 1, built without recursion. */
export function deepValue(depth: number, kind: "array" | "object"): unknown {
  let v: unknown = 1;
  for (let d = 0; d < depth; d++) v = kind === "array" ? [v] : { a: v };
  return v;
}

class Token {
  constructor(readonly text: string) {}
}

/**
 * `JSON.stringify` without recursion, so that {@link deepValue}s of any depth can be written (NaN and
 * ±Infinity become `null`, as in `JSON.stringify`; own `__proto__` keys are kept).
 */
export function toJsonText(value: unknown): string {
  const out: string[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const x = stack.pop();
    if (x instanceof Token) out.push(x.text);
    else if (Array.isArray(x)) {
      out.push("[");
      stack.push(new Token("]"));
      for (let i = x.length - 1; i >= 0; i--) {
        stack.push(x[i]);
        if (i > 0) stack.push(new Token(","));
      }
    } else if (x !== null && typeof x === "object") {
      const entries = Object.entries(x);
      out.push("{");
      stack.push(new Token("}"));
      for (let i = entries.length - 1; i >= 0; i--) {
        stack.push(entries[i]![1], new Token(`${JSON.stringify(entries[i]![0])}:`));
        if (i > 0) stack.push(new Token(","));
      }
    } else out.push(JSON.stringify(x) ?? "null");
  }
  return out.join("");
}

/** `depth` nested arrays or objects around `inner` (as JSON text). */
export function deeplyNested(depth: number, kind: "array" | "object", inner = "1"): string {
  return kind === "array"
    ? `${"[".repeat(depth)}${inner}${"]".repeat(depth)}`
    : `${'{"a":'.repeat(depth)}${inner}${"}".repeat(depth)}`;
}

/** Text fragments a mutation splices into valid input. */
export const NASTY_FRAGMENTS = [
  '"__proto__"',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  "NaN",
  "Infinity",
  "-Infinity",
  "1e999",
  "-0",
  "123456789012345678901234567890",
  "9".repeat(5000),
  "0.1e-400",
  '"\\ud800"',
  '"\\u0000"',
  "\uD800",
  "\u0000",
  "\uFEFF",
  "null",
  "[]",
  "{}",
  '""',
  ",",
  ":",
  "[",
  "]",
  "{",
  "}",
  '"',
  "\\",
  "\n",
  "\r\n",
  "```",
  deeplyNested(200, "array"),
  deeplyNested(5000, "array"),
  deeplyNested(200, "object"),
  deeplyNested(5000, "object"),
] as const;

/**
 * One edit of a text: insert, delete, replace or duplicate a span, or repeat a short span (or the
 * fragment) `times` times — long runs of one pattern are what super-linear regexes and scanners
 * choke on (a run of spaces before `\s*$`, many unclosed fences).
 */
type Edit = readonly [op: 0 | 1 | 2 | 3 | 4, at: number, length: number, fragment: string, times: number];

function applyEdit(text: string, [op, at, length, fragment, times]: Edit): string {
  const i = text.length === 0 ? 0 : at % (text.length + 1);
  const j = Math.min(text.length, i + length);
  switch (op) {
    case 0:
      return text.slice(0, i) + fragment + text.slice(i);
    case 1:
      return text.slice(0, i) + text.slice(j);
    case 2:
      return text.slice(0, i) + fragment + text.slice(j);
    case 3:
      return text.slice(0, j) + text.slice(i);
    default: {
      const unit = j > i ? text.slice(i, j) : fragment.slice(0, 8) || " ";
      return text.slice(0, j) + unit.repeat(times) + text.slice(j);
    }
  }
}

/**
 * Valid `seeds` with up to `maxEdits` random edits each (spliced fragments from
 * {@link NASTY_FRAGMENTS} or random strings), plus the seeds themselves and plain random text.
 */
export function mutatedText(seeds: readonly string[], maxEdits = 4): fc.Arbitrary<string> {
  const edit: fc.Arbitrary<Edit> = fc.tuple(
    fc.constantFrom<0 | 1 | 2 | 3 | 4>(0, 1, 2, 3, 0, 1, 2, 4),
    fc.nat(),
    fc.nat({ max: 12 }),
    fc.oneof(fc.constantFrom(...NASTY_FRAGMENTS), nastyString(8)),
    fc.constantFrom(100, 5_000, 40_000),
  );
  return fc.oneof(
    { arbitrary: fc.constantFrom(...seeds), weight: 1 },
    {
      arbitrary: fc
        .tuple(fc.constantFrom(...seeds), fc.array(edit, { minLength: 1, maxLength: maxEdits }))
        .map(([s, edits]) => edits.reduce(applyEdit, s)),
      weight: 6,
    },
    { arbitrary: nastyString(200), weight: 1 },
  );
}

/**
 * Valid `seeds` (JSON-like values) with up to `maxEdits` structural edits: a node replaced by a
 * {@link nastyValue} or by a key-like string (often a prototype key: `"constructor"` where a name is
 * looked up), a key (often a prototype key) added to an object, an element dropped.
 */
export function mutatedValue(seeds: readonly unknown[], maxEdits = 3): fc.Arbitrary<unknown> {
  const edit = fc.tuple(
    fc.constantFrom<0 | 1 | 2 | 3>(0, 1, 2, 3),
    fc.nat(),
    fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), nastyString(12)),
    nastyValue(),
  );
  return fc.oneof(
    { arbitrary: fc.constantFrom(...seeds).map(structuredClone), weight: 1 },
    {
      arbitrary: fc
        .tuple(fc.constantFrom(...seeds), fc.array(edit, { minLength: 1, maxLength: maxEdits }))
        .map(([seed, edits]) => edits.reduce(applyValueEdit, structuredCloneOwn(seed))),
      weight: 6,
    },
  );
}

/** A deep copy that keeps own `__proto__` keys (structuredClone would too, but be explicit). */
function structuredCloneOwn(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(structuredCloneOwn);
  if (v !== null && typeof v === "object")
    return ownObject(Object.entries(v).map(([k, x]) => [k, structuredCloneOwn(x)] as const));
  return v;
}

/** Every node of `v` (iterative: deep values are fine), at most `max`. */
function nodes(v: unknown, max = 10_000): unknown[] {
  const out: unknown[] = [];
  const stack = [v];
  while (stack.length > 0 && out.length < max) {
    const x = stack.pop();
    out.push(x);
    if (x !== null && typeof x === "object") stack.push(...Object.values(x));
  }
  return out;
}

function applyValueEdit(
  root: unknown,
  [op, at, key, nasty]: readonly [0 | 1 | 2 | 3, number, string, unknown],
): unknown {
  // op 3 puts the key-like string where a value was: a name the parser may look up.
  const replace = op === 0 || op === 3;
  const value = op === 3 ? key : nasty;
  const containers = nodes(root).filter(
    (n): n is Record<string, unknown> => n !== null && typeof n === "object",
  );
  if (containers.length === 0) return replace ? value : root;
  const target = containers[at % containers.length]!;
  const keys = Object.keys(target);
  if (Array.isArray(target)) {
    if (replace && keys.length > 0) target[at % target.length] = value;
    else if (op === 1 && target.length > 0) target.splice(at % target.length, 1);
    else target.push(value);
    return root;
  }
  const k = replace && keys.length > 0 ? keys[at % keys.length]! : key;
  if (op === 1 && keys.length > 0) delete target[keys[at % keys.length]!];
  else Object.defineProperty(target, k, { value, enumerable: true, writable: true, configurable: true });
  return root;
}
