/**
 * The part of `deepdiff.DeepDiff` the workspace and travel checkers rely on (`WorkspaceDeepDiff` and
 * `TravelDeepDiff` in upstream's `task_suite.py`: a diff of two environments, ignoring order nowhere). Keys are DeepDiff's report
 * categories, values the changed paths in DeepDiff's notation: `root.inbox.emails['5']` for a dict key
 * (a `Map` here), `root.cloud_drive.files['0'].content` for a model field (a plain object here),
 * `root.calendar.events['6'].participants[2]` for a list index.
 *
 * Categories produced: `dictionary_item_added`, `dictionary_item_removed`, `values_changed`,
 * `type_changes`, `iterable_item_added`, `iterable_item_removed`, `attribute_added`, `attribute_removed`.
 * Upstream (`WorkspaceDeepDiff`, `TravelDeepDiff`) excludes the computed `inbox.sent/received/drafts`
 * and the `initial_*` fields; these environments have none of them, so nothing needs excluding. A
 * JavaScript number is one type: a pydantic `float` field holding `5.0` and then `5.5` is a
 * `values_changed` upstream, not an int-to-float `type_changes` (no `int` field ever holds a float).
 * @module
 */

/** DeepDiff's report: category → changed paths (in the order found). */
export type DeepDiffReport = Record<string, string[]>;

function typeTag(v: unknown): string {
  if (v === null || v === undefined) return "none";
  if (Array.isArray(v)) return "list";
  if (v instanceof Map) return "dict";
  return typeof v;
}

function keyRepr(k: unknown): string {
  return typeof k === "string" ? `['${k}']` : `[${String(k)}]`;
}

/** `DeepDiff(pre, post)` for environment-shaped values (Maps, plain objects, arrays, scalars). */
export function deepDiff(pre: unknown, post: unknown, root = "root"): DeepDiffReport {
  const report: DeepDiffReport = {};
  const add = (cat: string, path: string) => {
    report[cat] ??= [];
    report[cat].push(path);
  };
  const walk = (a: unknown, b: unknown, path: string): void => {
    if (a === b) return;
    const ta = typeTag(a);
    const tb = typeTag(b);
    if (ta !== tb) {
      add("type_changes", path);
      return;
    }
    if (a instanceof Map && b instanceof Map) {
      for (const k of b.keys()) if (!a.has(k)) add("dictionary_item_added", `${path}${keyRepr(k)}`);
      for (const k of a.keys()) if (!b.has(k)) add("dictionary_item_removed", `${path}${keyRepr(k)}`);
      for (const [k, v] of a) if (b.has(k)) walk(v, b.get(k), `${path}${keyRepr(k)}`);
      return;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      const n = Math.min(a.length, b.length);
      for (let i = 0; i < n; i++) walk(a[i], b[i], `${path}[${i}]`);
      for (let i = n; i < b.length; i++) add("iterable_item_added", `${path}[${i}]`);
      for (let i = n; i < a.length; i++) add("iterable_item_removed", `${path}[${i}]`);
      return;
    }
    if (ta === "object") {
      const oa = a as Record<string, unknown>;
      const ob = b as Record<string, unknown>;
      for (const k of Object.keys(ob)) if (!Object.hasOwn(oa, k)) add("attribute_added", `${path}.${k}`);
      for (const k of Object.keys(oa)) if (!Object.hasOwn(ob, k)) add("attribute_removed", `${path}.${k}`);
      for (const k of Object.keys(oa)) if (Object.hasOwn(ob, k)) walk(oa[k], ob[k], `${path}.${k}`);
      return;
    }
    add("values_changed", path);
  };
  walk(pre, post, root);
  return report;
}

/** pydantic `==` of two environments: DeepDiff finds nothing. */
export function environmentsEqual(pre: unknown, post: unknown): boolean {
  return Object.keys(deepDiff(pre, post)).length === 0;
}
