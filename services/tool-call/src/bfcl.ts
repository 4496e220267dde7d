/**
 * BFCL's AST checker (`berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/ast_checker.py`,
 * `specs/rewards.md` §6.2) for responses that are a JSON list of calls, Python language rules:
 *
 * * the call count must equal the number of possible-answer entries; calls are matched to entries
 *   order-free as BFCL's `parallel_function_checker_no_order` does: entries in order, each taking the
 *   first not-yet-taken call that passes it (first-fit, not an optimal matching);
 * * names must match exactly the gold name after BFCL's `convert_func_name`: with `underscoreToDot`
 *   (BFCL's function-calling models, the default) every `.` of the gold name becomes `_`, so only
 *   `math_factorial` matches `math.factorial`; without it only `math.factorial` does;
 * * every schema-`required` parameter present; every given parameter in the schema **and** in the
 *   possible answer; an entry's parameter may be omitted only when its list contains `""`;
 * * types by the schema (string→str, integer→int, float/number→float, boolean→bool, array/tuple→list,
 *   dict/object→dict, any→str); an int is accepted for a `float` parameter at top level only; nested
 *   item types are checked one level deep; a value of the possible answer's type where the schema
 *   says otherwise is a "variable" and is compared as is;
 * * strings compare after `standardize_string` (drop spaces and `,./-_*^`, lower-case, `'`→`"`);
 *   lists element-wise standardised, whole list equal to one allowed list; dicts key by key; lists of
 *   dicts per position; other values `value in allowed` (Python `==`).
 * @module
 */
import {
  isDict,
  isList,
  type PyDict,
  type PyTypeName,
  type PyValue,
  pyEquals,
  pyFloat,
  pyIn,
  pyJsonLoads,
  pyRepr,
  pyType,
  tryPyJsonLoads,
} from "./py-json.js";
import type { GoldCall } from "./rlla.js";
import { matchScore, pyStrip, RllaRanges, scaleScore } from "./rlla.js";

/** One parameter of a function schema. */
export interface ParamSchema {
  /** The schema's type name (`string`, `integer`, `float`, `array`, `dict`, …); undefined = unchecked. */
  readonly type: string | undefined;
  /** `items.type` for `array` / `tuple`. */
  readonly itemsType: string | undefined;
}

/** A function schema (from `tools_json`). */
export interface FunctionSchema {
  readonly name: string;
  readonly properties: ReadonlyMap<string, ParamSchema>;
  readonly required: readonly string[];
}

/** One possible-answer entry: `{func_name: {param: [allowed values…]}}`. */
export interface PossibleAnswer {
  readonly name: string;
  readonly params: ReadonlyMap<string, readonly PyValue[]>;
}

/** One decoded predicted call. */
export interface PredictedCall {
  readonly name: string;
  readonly args: PyDict;
}

const PY_TYPES: Readonly<Record<string, PyTypeName>> = {
  string: "str",
  integer: "int",
  float: "float",
  number: "float",
  boolean: "bool",
  array: "list",
  tuple: "list",
  dict: "dict",
  object: "dict",
  any: "str",
};

function mapType(t: string | undefined): PyTypeName | undefined {
  // Own keys only: a schema type such as "constructor" must not find Object.prototype's members.
  return t === undefined || !Object.hasOwn(PY_TYPES, t) ? undefined : PY_TYPES[t];
}

function str(v: PyValue | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/**
 * Parses `tools_json`: a JSON array (or one object) of function schemas, BFCL shape
 * (`{name, parameters: {properties, required}}`) or OpenAI shape (`{type: "function", function: {...}}`).
 * Empty text = no schemas. Throws an `Error` whose message says what is wrong.
 */
export function parseToolSchemas(toolsJson: string): Map<string, FunctionSchema> {
  const out = new Map<string, FunctionSchema>();
  if (pyStrip(toolsJson) === "") return out;
  const root = pyJsonLoads(toolsJson);
  const items = isList(root) ? root : [root];
  items.forEach((item, k) => {
    let fn: PyValue = item;
    if (isDict(item) && isDict(item.get("function") ?? null)) fn = item.get("function")!;
    if (!isDict(fn)) throw new Error(`[${k}] must be an object`);
    const name = str(fn.get("name"));
    if (!name) throw new Error(`[${k}].name must be a non-empty string`);
    const params = fn.get("parameters") ?? new Map<string, PyValue>();
    if (!isDict(params)) throw new Error(`[${k}].parameters must be an object`);
    const props = params.get("properties") ?? new Map<string, PyValue>();
    if (!isDict(props)) throw new Error(`[${k}].parameters.properties must be an object`);
    const properties = new Map<string, ParamSchema>();
    for (const [p, d] of props) {
      const items = isDict(d) ? d.get("items") : undefined;
      properties.set(p, {
        type: isDict(d) ? str(d.get("type")) : undefined,
        itemsType: items !== undefined && isDict(items) ? str(items.get("type")) : undefined,
      });
    }
    const req = params.get("required") ?? [];
    if (!isList(req) || !req.every((r) => typeof r === "string"))
      throw new Error(`[${k}].parameters.required must be a list of strings`);
    out.set(name, { name, properties, required: req as string[] });
  });
  return out;
}

/**
 * Parses `possible_answers_json`: a BFCL answer row (`{"id", "ground_truth": [...]}`) or its
 * `ground_truth` list: `[{func_name: {param: [allowed values…]}}]`. Throws on a bad shape.
 */
export function parsePossibleAnswers(json: string): PossibleAnswer[] {
  let root = pyJsonLoads(json);
  if (isDict(root) && root.has("ground_truth")) root = root.get("ground_truth")!;
  if (!isList(root)) throw new Error("must be a list of {function: {param: [allowed values]}}");
  return root.map((entry, k) => {
    if (!isDict(entry) || entry.size !== 1)
      throw new Error(`[${k}] must be an object with one function name`);
    const [name, params] = [...entry][0]!;
    if (!isDict(params)) throw new Error(`[${k}].${name} must be an object of parameters`);
    const m = new Map<string, readonly PyValue[]>();
    for (const [p, allowed] of params) {
      if (!isList(allowed)) throw new Error(`[${k}].${name}.${p} must be a list of allowed values`);
      m.set(p, allowed);
    }
    return { name, params: m };
  });
}

/** Possible answers that accept exactly the ground-truth calls (each value the only allowed one). */
export function possibleAnswersFromGroundTruth(gold: readonly GoldCall[]): PossibleAnswer[] {
  return gold.map((g) => ({ name: g.name, params: new Map([...g.parameters].map(([p, v]) => [p, [v]])) }));
}

/** Decoded calls, or why the response is not a JSON list of calls. */
export type DecodedCalls =
  | { readonly ok: true; readonly calls: PredictedCall[] }
  | { readonly ok: false; readonly reason: string };

function stripFence(s: string): string {
  let t = pyStrip(s);
  if (t.startsWith("```")) {
    const nl = t.indexOf("\n");
    if (nl === -1) return t;
    t = pyStrip(t.slice(nl + 1));
    if (t.endsWith("```")) t = t.slice(0, -3);
  }
  return pyStrip(t);
}

/**
 * Decodes the response: a JSON list (one object is taken as a one-call list), optionally inside one
 * markdown code fence. A call is `{"name": f, "arguments"|"parameters": {...}}` (arguments may be a JSON
 * string, OpenAI style) or BFCL's decoded `{f: {...}}`.
 */
export function decodeJsonCalls(response: string, maxCalls: number): DecodedCalls {
  const r = tryPyJsonLoads(stripFence(response));
  if ("error" in r) return { ok: false, reason: `not JSON (${r.error})` };
  const list = isList(r.value) ? r.value : isDict(r.value) ? [r.value] : undefined;
  if (!list) return { ok: false, reason: `expected a JSON list of calls, got ${pyType(r.value)}` };
  if (list.length > maxCalls) return { ok: false, reason: `more than ${maxCalls} calls` };
  const calls: PredictedCall[] = [];
  for (let k = 0; k < list.length; k++) {
    const c = list[k]!;
    if (!isDict(c)) return { ok: false, reason: `call ${k + 1} is a ${pyType(c)}, not an object` };
    const name = c.get("name");
    if (typeof name === "string") {
      let args: PyValue = c.has("arguments")
        ? c.get("arguments")!
        : c.has("parameters")
          ? c.get("parameters")!
          : new Map<string, PyValue>();
      if (typeof args === "string") {
        const parsed = tryPyJsonLoads(args);
        if ("error" in parsed)
          return { ok: false, reason: `call ${k + 1}: arguments string is not JSON (${parsed.error})` };
        args = parsed.value;
      }
      if (!isDict(args)) return { ok: false, reason: `call ${k + 1}: arguments must be an object` };
      calls.push({ name, args });
      continue;
    }
    const only = c.size === 1 ? [...c][0]! : undefined;
    if (only && isDict(only[1])) {
      calls.push({ name: only[0], args: only[1] });
      continue;
    }
    return {
      ok: false,
      reason: `call ${k + 1} is neither {"name", "arguments"} nor {function_name: {arguments}}`,
    };
  }
  return { ok: true, calls };
}

/** BFCL `standardize_string`. */
export function standardizeString(s: string): string {
  let out = "";
  for (const ch of s) if (!" ,./-_*^".includes(ch)) out += ch;
  return out.toLowerCase().replaceAll("'", '"');
}

const std = (v: PyValue): PyValue => (typeof v === "string" ? standardizeString(v) : v);

/** BFCL's name options: its model config's `underscore_to_dot`. */
export interface BfclOptions {
  /**
   * BFCL's `underscore_to_dot` (true for its function-calling models, whose APIs forbid `.` in names):
   * the gold name's dots become underscores and only that name matches; false: only the dotted name.
   * @default true
   */
  readonly underscoreToDot: boolean;
}

/** BFCL's default: function-calling models (`underscore_to_dot = True`). */
export const DEFAULT_BFCL_OPTIONS: BfclOptions = { underscoreToDot: true };

/** The name BFCL expects for a gold name (`convert_func_name`). */
export function expectedName(gold: string, options: BfclOptions = DEFAULT_BFCL_OPTIONS): string {
  return options.underscoreToDot && gold.includes(".") ? gold.replaceAll(".", "_") : gold;
}

/** True iff `predicted` is exactly the name BFCL expects for `gold` under `options`. */
export function nameMatches(
  predicted: string,
  gold: string,
  options: BfclOptions = DEFAULT_BFCL_OPTIONS,
): boolean {
  return predicted === expectedName(gold, options);
}

type Check = { readonly valid: true } | { readonly valid: false; readonly error: string };
const OK: Check = { valid: true };
const bad = (error: string): Check => ({ valid: false, error });

function possibleAnswerType(allowed: readonly PyValue[]): PyTypeName | undefined {
  for (const a of allowed) if (a !== "") return pyType(a);
  return undefined;
}

/** `type_checker`: valid, and whether the value is a "variable" (typed like the answer, not the schema). */
function typeCheck(
  value: PyValue,
  allowed: readonly PyValue[],
  expected: PyTypeName | undefined,
  nested: PyTypeName | undefined,
): { valid: boolean; isVariable: boolean } {
  const pat = possibleAnswerType(allowed);
  const isVariable = pat !== undefined && pat !== expected;
  if (pyType(value) === expected) {
    if (nested === undefined) return { valid: true, isVariable };
    for (const item of allowed) {
      let flag = true;
      if (isList(item)) {
        for (const v of value as PyValue[]) {
          if (!typeCheck(v, item, nested, undefined).valid) {
            flag = false;
            break;
          }
        }
      }
      if (flag) return { valid: true, isVariable };
    }
    return { valid: false, isVariable };
  }
  if (pat !== undefined && pyType(value) === pat) return { valid: true, isVariable: true };
  return { valid: false, isVariable };
}

function stringChecker(value: string, allowed: readonly PyValue[]): boolean {
  const v = standardizeString(value);
  return allowed.some((a) => typeof a === "string" && standardizeString(a) === v);
}

function listChecker(value: readonly PyValue[], allowed: readonly PyValue[]): boolean {
  const out = value.map(std);
  return allowed.some((a) => {
    const items = isList(a) ? a.map(std) : typeof a === "string" ? Array.from(a, std) : undefined;
    return items !== undefined && pyEquals(out, items);
  });
}

function dictChecker(value: PyDict, allowedDicts: readonly PyValue[]): boolean {
  for (const option of allowedDicts) {
    if (option === "" || !isDict(option)) continue;
    let flag = true;
    for (const [key, v] of value) {
      const allowedValues = option.get(key);
      if (allowedValues === undefined || !isList(allowedValues) || !pyIn(std(v), allowedValues.map(std))) {
        flag = false;
        break;
      }
    }
    for (const [key, allowedValues] of option) {
      if (!value.has(key) && !(isList(allowedValues) && pyIn("", allowedValues))) flag = false;
    }
    if (flag) return true;
  }
  return false;
}

function listDictChecker(value: readonly PyValue[], allowed: readonly PyValue[]): boolean {
  for (const option of allowed) {
    const dicts = isList(option) ? option : typeof option === "string" ? Array.from(option) : undefined;
    if (dicts === undefined || dicts.length !== value.length) continue;
    let flag = true;
    for (let k = 0; k < value.length; k++) {
      const v = value[k]!;
      if (!isDict(v) || !dictChecker(v, [dicts[k]!])) {
        flag = false;
        break;
      }
    }
    if (flag) return true;
  }
  return false;
}

/** One parameter's type and value check (the body of `simple_function_checker`'s loop). */
function checkParam(
  param: string,
  raw: PyValue,
  allowed: readonly PyValue[],
  schema: ParamSchema | undefined,
): Check {
  const typeName = schema ? schema.type : undefined;
  // Without a schema (or with a type BFCL does not know) the possible answer's type is the expected one.
  const expected = mapType(typeName) ?? possibleAnswerType(allowed);
  const nested = typeName === "array" || typeName === "tuple" ? mapType(schema?.itemsType) : undefined;
  let value = raw;
  if (
    (typeName === "float" || typeName === "number" || (!schema && expected === "float")) &&
    pyType(value) === "int"
  )
    value = pyFloat(Number((value as { value: bigint }).value));
  const t = typeCheck(value, allowed, expected, nested);
  if (!t.valid)
    return bad(
      `incorrect type for parameter '${param}': expected ${typeName ?? expected ?? "any"}, got ${pyType(value)} ${pyRepr(value, 60)}`,
    );
  if (!t.isVariable) {
    if (expected === "dict") {
      return dictChecker(value as PyDict, allowed)
        ? OK
        : bad(`invalid value for parameter '${param}': ${pyRepr(value, 80)}`);
    }
    if (expected === "list" && nested === "dict") {
      return listDictChecker(value as PyValue[], allowed)
        ? OK
        : bad(`invalid value for parameter '${param}': ${pyRepr(value, 80)}`);
    }
    if (expected === "str") {
      return stringChecker(value as string, allowed)
        ? OK
        : bad(
            `invalid value for parameter '${param}': ${pyRepr(value, 80)}; allowed ${pyRepr(allowed as PyValue[], 80)}`,
          );
    }
    if (expected === "list") {
      return listChecker(value as PyValue[], allowed)
        ? OK
        : bad(
            `invalid value for parameter '${param}': ${pyRepr(value, 80)}; allowed ${pyRepr(allowed as PyValue[], 80)}`,
          );
    }
  }
  return pyIn(value, allowed)
    ? OK
    : bad(
        `invalid value for parameter '${param}': ${pyRepr(value, 80)}; allowed ${pyRepr(allowed as PyValue[], 80)}`,
      );
}

/** `simple_function_checker`: one predicted call against one possible-answer entry. */
export function checkCall(
  schema: FunctionSchema | undefined,
  call: PredictedCall,
  answer: PossibleAnswer,
  options: BfclOptions = DEFAULT_BFCL_OPTIONS,
): Check {
  if (!nameMatches(call.name, answer.name, options))
    return bad(`wrong function name: expected '${expectedName(answer.name, options)}', got '${call.name}'`);
  for (const r of schema?.required ?? []) {
    if (!call.args.has(r)) return bad(`missing required parameter '${r}'`);
  }
  for (const [param, value] of call.args) {
    const allowed = answer.params.get(param);
    if ((schema && !schema.properties.has(param)) || allowed === undefined)
      return bad(`unexpected parameter '${param}'`);
    const c = checkParam(param, value, allowed, schema?.properties.get(param));
    if (!c.valid) return c;
  }
  for (const [param, allowed] of answer.params) {
    if (!call.args.has(param) && !pyIn("", allowed)) return bad(`missing parameter '${param}'`);
  }
  return OK;
}

/**
 * The whole BFCL check: counts must match; one answer → one call (simple / multiple); several →
 * BFCL's `parallel_function_checker_no_order`: answer entries in order, each matched by the first
 * call not yet taken that passes it. That first-fit can reject an order an optimal matching would
 * accept (a call passing two entries taken by the first one) — as BFCL does.
 */
export function checkBfcl(
  schemas: ReadonlyMap<string, FunctionSchema>,
  calls: readonly PredictedCall[],
  answers: readonly PossibleAnswer[],
  options: BfclOptions = DEFAULT_BFCL_OPTIONS,
): Check {
  if (calls.length !== answers.length)
    return bad(`wrong number of calls: expected ${answers.length}, got ${calls.length}`);
  const taken = new Set<number>();
  for (const [i, a] of answers.entries()) {
    const errors: string[] = [];
    let found = -1;
    for (let k = 0; k < calls.length && found === -1; k++) {
      if (taken.has(k)) continue;
      const r = checkCall(schemas.get(a.name), calls[k]!, a, options);
      if (r.valid) found = k;
      else errors.push(r.error);
    }
    if (found === -1)
      return bad(
        answers.length === 1
          ? errors[0]!
          : `no call matches '${a.name}' (entry ${i + 1}): ${errors[0] ?? "all calls taken"}`,
      );
    taken.add(found);
  }
  return OK;
}

/** Partial scores for a decoded JSON response (same ranges as the RLLA components). */
export interface BfclScores {
  readonly functionName: number;
  readonly parameterName: number;
  readonly parameterValue: number;
  readonly exact: boolean;
  readonly details: string;
}

/**
 * BFCL validity plus ToolRL-style partial credit: `function_name` = multiset Jaccard of names;
 * per answer entry (in order) the unused call with a matching name maximising `J + satisfied` where
 * J = |given ∩ allowed| / |given ∪ required| over parameter names and `satisfied` counts the entry's
 * parameters that pass (or are optional and absent); `parameter_name` = ΣJ / #entries,
 * `parameter_value` = Σsatisfied / Σ#parameters, each mapped like RLLA. A BFCL-valid response gets all
 * maxima (and `exact`).
 */
export function scoreBfcl(
  schemas: ReadonlyMap<string, FunctionSchema>,
  calls: readonly PredictedCall[],
  answers: readonly PossibleAnswer[],
  options: BfclOptions = DEFAULT_BFCL_OPTIONS,
): BfclScores {
  const R = RllaRanges;
  const verdict = checkBfcl(schemas, calls, answers, options);
  if (verdict.valid) {
    return {
      functionName: R.functionName.max,
      parameterName: R.parameterName.max,
      parameterValue: R.parameterValue.max,
      exact: true,
      details: "valid (BFCL AST check)",
    };
  }
  const nameScore = matchScore(
    answers.map((a) => a.name),
    calls.map((c) => {
      const a = answers.find((x) => nameMatches(c.name, x.name, options));
      return a ? a.name : c.name;
    }),
  );
  let paramScore = 0;
  let valuesScore = 0;
  let valuesMax = 0;
  const used = new Set<number>();
  for (const a of answers) {
    valuesMax += a.params.size;
    const schema = schemas.get(a.name);
    const allowedNames = new Set([...a.params.keys()].filter((p) => !schema || schema.properties.has(p)));
    const required = new Set([
      ...[...a.params].filter(([, v]) => !pyIn("", v)).map(([p]) => p),
      ...(schema?.required ?? []),
    ]);
    let best = -1;
    let bestTotal = 0;
    let bestJ = 0;
    let bestSat = 0;
    calls.forEach((c, k) => {
      if (used.has(k) || !nameMatches(c.name, a.name, options)) return;
      const given = [...c.args.keys()];
      const union = new Set([...given, ...required]);
      const j = union.size === 0 ? 1 : given.filter((p) => allowedNames.has(p)).length / union.size;
      let sat = 0;
      for (const [p, allowed] of a.params) {
        if (!c.args.has(p)) sat += pyIn("", allowed) ? 1 : 0;
        else if (checkParam(p, c.args.get(p)!, allowed, schema?.properties.get(p)).valid) sat++;
      }
      if (j + sat > bestTotal) {
        best = k;
        bestTotal = j + sat;
        bestJ = j;
        bestSat = sat;
      }
    });
    if (best !== -1) {
      used.add(best);
      paramScore += bestJ;
      valuesScore += bestSat;
    }
  }
  return {
    functionName: scaleScore(nameScore, 1, R.functionName.max, R.functionName.min),
    parameterName: scaleScore(paramScore, answers.length, R.parameterName.max, R.parameterName.min),
    parameterValue: scaleScore(valuesScore, valuesMax, R.parameterValue.max, R.parameterValue.min),
    exact: false,
    details: `invalid: ${verdict.error}`,
  };
}
