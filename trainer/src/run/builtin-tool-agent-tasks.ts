/**
 * The built-in `tool_call` task set: RLLA-layout tool calls assembled from a function-name choice
 * followed by argument choices (`key=value` fragments); scored by the `tool-call` service against the
 * gold call. (The `agent` set comes from the environment service: `environment-tasks.ts`.)
 * @module
 */
import type { FragmentTaskDefinition } from "./tasks.js";

const STOP = "<eos>";

interface ToolSpec {
  readonly id: string;
  readonly prompt: string;
  readonly gold: ReadonlyArray<{
    readonly name: string;
    readonly arguments: Readonly<Record<string, string | number>>;
  }>;
  readonly names: readonly string[];
  readonly args: readonly string[];
}

const TOOLS_JSON = JSON.stringify([
  {
    name: "get_weather",
    description: "Current weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city"],
    },
  },
  {
    name: "get_time",
    description: "Local time in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
  {
    name: "convert_currency",
    description: "Convert an amount",
    parameters: {
      type: "object",
      properties: { amount: { type: "number" }, from: { type: "string" }, to: { type: "string" } },
      required: ["amount", "from", "to"],
    },
  },
]);

const TOOL_SPECS: readonly ToolSpec[] = [
  {
    id: "tool-weather-paris",
    prompt: "What is the weather in Paris, in celsius?",
    gold: [{ name: "get_weather", arguments: { city: "Paris", unit: "celsius" } }],
    names: ["get_weather", "get_time", "convert_currency"],
    args: ["city=Paris", "city=London", "unit=celsius", "unit=fahrenheit"],
  },
  {
    id: "tool-time-tokyo",
    prompt: "What time is it in Tokyo right now?",
    gold: [{ name: "get_time", arguments: { city: "Tokyo" } }],
    names: ["get_weather", "get_time", "convert_currency"],
    args: ["city=Tokyo", "city=Kyoto", "unit=celsius"],
  },
  {
    id: "tool-convert-eur-usd",
    prompt: "Convert 100 euros to US dollars.",
    gold: [{ name: "convert_currency", arguments: { amount: 100, from: "EUR", to: "USD" } }],
    names: ["get_weather", "convert_currency"],
    args: ["amount=100", "amount=10", "from=EUR", "from=USD", "to=USD", "to=EUR"],
  },
];

/** Parses a `key=value` fragment (numbers stay numbers). */
function arg(fragment: string): [string, string | number] {
  const i = fragment.indexOf("=");
  const v = fragment.slice(i + 1);
  return [fragment.slice(0, i), /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v];
}

/** Renders name/argument fragments as an RLLA response: a name starts a call, arguments attach to it. */
export function renderToolCalls(
  fragments: readonly string[],
  names: readonly string[],
  think = "I should call the right tool with the right arguments.",
): string {
  const calls: Array<{ name: string; parameters: Record<string, string | number> }> = [];
  for (const f of fragments) {
    if (f === STOP) break;
    if (names.includes(f)) calls.push({ name: f, parameters: {} });
    else {
      if (calls.length === 0) calls.push({ name: "", parameters: {} }); // an argument before any name
      const [k, v] = arg(f);
      calls[calls.length - 1]!.parameters[k] = v;
    }
  }
  return `<think>${think}</think>\n<tool_call>\n${calls.map((c) => JSON.stringify(c)).join("\n")}\n</tool_call>`;
}

/** One supervised warm-up example for a text policy: a prompt and a response in the task's format. */
export interface WarmupExample {
  readonly prompt: string;
  readonly response: string;
}

/**
 * Format examples for warming a text policy up on the `tool_call` tasks before RL: for each task,
 * `perTask` RLLA responses whose function name and arguments are drawn at random from the task's
 * candidates (one value per argument key) — the layout is right, the choices mostly wrong. Supervised
 * training on them teaches a randomly initialised model the format and the candidate values, not which
 * choice is correct: that is left to the rewards (the `--learner torch` demo measures the rise).
 */
export function toolCallWarmupExamples(rng: () => number, perTask: number): WarmupExample[] {
  const out: WarmupExample[] = [];
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
  for (const t of TOOL_SPECS) {
    const byKey = new Map<string, string[]>();
    for (const a of t.args) {
      const k = a.slice(0, a.indexOf("="));
      byKey.set(k, [...(byKey.get(k) ?? []), a]);
    }
    for (let i = 0; i < perTask; i++) {
      const args = [...byKey.values()].filter(() => rng() < 0.8).map(pick);
      out.push({ prompt: t.prompt, response: renderToolCalls([pick(t.names), ...args], t.names, "call") });
    }
  }
  return out;
}

/** The `tool_call` set. */
export const TOOL_CALL_TASKS: readonly FragmentTaskDefinition[] = TOOL_SPECS.map((t) => ({
  id: t.id,
  set: "tool_call",
  task: {
    id: t.id,
    prompt: t.prompt,
    kind: {
      case: "toolCall",
      value: {
        format: "rlla",
        toolsJson: TOOLS_JSON,
        groundTruth: t.gold.map((g) => ({ name: g.name, argumentsJson: JSON.stringify(g.arguments) })),
      },
    },
  },
  vocabulary: [STOP, ...t.names, ...t.args],
  stopToken: 0,
  maxTokens: 5,
  render: (f) => renderToolCalls(f, t.names),
}));
