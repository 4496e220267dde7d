/**
 * The chart README's values table, generated from the `## @section` and `## @param <path> <description>`
 * comments of values.yaml (bitnami's readme-generator convention), with each default read from the values.
 *
 *   node --import tsx helm/test/values-doc.ts --write   # rewrite the table in helm/reward-mesh/README.md
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { chartDir } from "./helm.js";

/** Markers around the generated table in README.md. */
export const START =
  "<!-- values-table:start (generated from values.yaml: node --import tsx helm/test/values-doc.ts --write) -->";
export const END = "<!-- values-table:end -->";

export interface ParamDoc {
  readonly path: string;
  readonly description: string;
  readonly section: string;
}

/** The `@param` comments of values.yaml, in order, each with its section. */
export function paramDocs(valuesText: string): ParamDoc[] {
  const out: ParamDoc[] = [];
  let section = "";
  for (const line of valuesText.split("\n")) {
    const s = /^\s*## @section (.+)$/.exec(line);
    if (s) section = s[1]!.trim();
    const p = /^\s*## @param (\S+) (.+)$/.exec(line);
    if (p) out.push({ path: p[1]!, description: p[2]!.trim(), section });
  }
  return out;
}

/** The value at a dotted path (keys may contain `-`), or undefined. */
export function valueAt(values: unknown, path: string): unknown {
  let v: unknown = values;
  for (const k of path.split(".")) {
    if (v === null || typeof v !== "object" || !(k in (v as object))) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** Every leaf path of the values (a non-empty object is descended into; arrays and `{}` are leaves). */
export function leafPaths(v: unknown, prefix = ""): string[] {
  if (v === null || typeof v !== "object" || Array.isArray(v) || Object.keys(v as object).length === 0)
    return [prefix];
  return Object.entries(v as Record<string, unknown>).flatMap(([k, x]) =>
    leafPaths(x, prefix === "" ? k : `${prefix}.${k}`),
  );
}

/** Problems: a `@param` naming no value, a value no `@param` (of it or an ancestor) documents. */
export function coverageProblems(valuesText: string): string[] {
  const values = parseYaml(valuesText);
  const docs = paramDocs(valuesText);
  const documented = new Set(docs.map((d) => d.path));
  const problems: string[] = [];
  for (const d of docs)
    if (valueAt(values, d.path) === undefined) problems.push(`@param ${d.path} names no value`);
  for (const leaf of leafPaths(values)) {
    const parts = leaf.split(".");
    const covered = parts.some((_, i) => documented.has(parts.slice(0, i + 1).join(".")));
    if (!covered) problems.push(`${leaf} has no ## @param comment`);
  }
  return problems;
}

function cell(s: string): string {
  return s.replaceAll("|", "\\|").replaceAll("\n", " ");
}

/** The Markdown table (one per section). */
export function valuesTable(valuesText: string): string {
  const values = parseYaml(valuesText);
  const out: string[] = [];
  let section: string | undefined;
  for (const d of paramDocs(valuesText)) {
    if (d.section !== section) {
      section = d.section;
      out.push("", `### ${section}`, "", "| Key | Description | Default |", "| --- | --- | --- |");
    }
    const v = valueAt(values, d.path);
    out.push(`| \`${d.path}\` | ${cell(d.description)} | \`${cell(JSON.stringify(v))}\` |`);
  }
  return `${out.join("\n").trim()}\n`;
}

/** README text with the table between the markers replaced. */
export function withTable(readme: string, table: string): string {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`README.md lacks the markers ${START} ... ${END}`);
  return `${readme.slice(0, a + START.length)}\n\n${table}\n${readme.slice(b)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes("--write")) {
  const valuesText = readFileSync(join(chartDir, "values.yaml"), "utf8");
  const readmePath = join(chartDir, "README.md");
  writeFileSync(readmePath, withTable(readFileSync(readmePath, "utf8"), valuesTable(valuesText)));
  process.stdout.write(`wrote the values table of ${readmePath}\n`);
}
