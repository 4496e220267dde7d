/**
 * Compact tool schemas for episodes (`episodes.tools: compact`): the AgentEnvironment's tool list with
 * each tool reduced to its name, the first line of its description and its parameters as
 * `{"name": "type"}` (`?` after an optional one's type). AgentDojo's banking schemas are about 5 KB
 * (titles, per-parameter descriptions, `anyOf` with null), the compact ones about 1.9 KB: what lets a
 * small-context text policy (e.g. the PyTorch learner's `builtin:tiny4k`, 4096 byte tokens) hold the
 * first prompt and a few turns. The environment is unchanged; only the tools the policy is shown are.
 * @module
 */
import type { AgentEnvironmentSessions } from "./episodes.js";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON-schema property's type in a word: `type`, or the non-null types of an `anyOf`, else `any`. */
function typeWord(p: unknown): string {
  if (!isObj(p)) return "any";
  if (typeof p["type"] === "string") return p["type"];
  if (Array.isArray(p["type"])) return (p["type"] as unknown[]).filter((t) => t !== "null").join("|");
  const any = p["anyOf"] ?? p["oneOf"];
  if (Array.isArray(any)) {
    const ts = any.map(typeWord).filter((t) => t !== "null" && t !== "any");
    if (ts.length > 0) return [...new Set(ts)].join("|");
  }
  return "any";
}

/** One tool (Qwen's `{"type": "function", "function": {…}}` or a bare `{name, description, parameters}`) made compact. */
function compactTool(tool: unknown, i: number): Obj {
  const f = isObj(tool) && isObj(tool["function"]) ? tool["function"] : tool;
  if (!isObj(f) || typeof f["name"] !== "string")
    throw new Error(`toolsJson[${i}] has no "name": ${JSON.stringify(tool)}`);
  const schema = isObj(f["parameters"]) ? f["parameters"] : {};
  const props = isObj(schema["properties"]) ? schema["properties"] : {};
  const required = new Set(Array.isArray(schema["required"]) ? schema["required"] : []);
  const parameters: Obj = {};
  for (const [k, v] of Object.entries(props)) parameters[k] = `${typeWord(v)}${required.has(k) ? "" : "?"}`;
  const description = typeof f["description"] === "string" ? f["description"].trim().split("\n")[0]! : "";
  return { name: f["name"], ...(description ? { description } : {}), parameters };
}

/** `toolsJson` (a JSON array of tool schemas) with every tool made compact (see the module). */
export function compactToolsJson(toolsJson: string): string {
  const tools: unknown = JSON.parse(toolsJson);
  if (!Array.isArray(tools)) throw new Error("toolsJson is not a JSON array");
  return JSON.stringify(tools.map(compactTool));
}

/** `env` whose `Reset` answers with compact tool schemas; `Call` and `Close` are `env`'s own. */
export function withCompactTools(env: AgentEnvironmentSessions): AgentEnvironmentSessions {
  return {
    reset: async (req, opts) => {
      const r = await env.reset(req, opts);
      return { ...r, toolsJson: compactToolsJson(r.toolsJson) };
    },
    call: (req, opts) => env.call(req, opts),
    close: (req, opts) => env.close(req, opts),
  };
}
