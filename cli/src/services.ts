/**
 * The reward services this build ships, by name. The CLI may import services (it is not one);
 * services never import each other.
 * @module
 */
import { fileURLToPath } from "node:url";
import type { RewardServiceDefinition } from "@reward-mesh/sdk";

/** How the CLI starts and loads one service. */
export interface ServiceEntry {
  readonly name: string;
  /** Environment prefix of its options (e.g. `LENGTH` → `LENGTH_GRPC_PORT`). */
  readonly envPrefix: string;
  readonly defaultPort: number;
  /** Absolute path of its `main.ts` (what `serve` and `up` run). */
  readonly mainPath: () => string;
  /** Its definition configured from the environment, for in-process scoring. */
  readonly load: () => Promise<RewardServiceDefinition>;
}

/** Every available service. */
export const SERVICES: readonly ServiceEntry[] = [
  {
    name: "length",
    envPrefix: "LENGTH",
    defaultPort: 50061,
    mainPath: () => fileURLToPath(import.meta.resolve("@reward-mesh/length/main")),
    load: async () => {
      const m = await import("@reward-mesh/length");
      return m.createLengthService(m.loadConfig());
    },
  },
  {
    name: "tool-call",
    envPrefix: "TOOL_CALL",
    defaultPort: 50065,
    mainPath: () => fileURLToPath(import.meta.resolve("@reward-mesh/tool-call/main")),
    load: async () => {
      const m = await import("@reward-mesh/tool-call");
      return m.createToolCallService(m.loadConfig());
    },
  },
  {
    name: "agentdojo",
    envPrefix: "AGENTDOJO",
    defaultPort: 50066,
    mainPath: () => fileURLToPath(import.meta.resolve("@reward-mesh/agentdojo/main")),
    load: async () => {
      const m = await import("@reward-mesh/agentdojo");
      return m.createAgentDojoService(m.loadConfig());
    },
  },
  {
    name: "code-exec",
    envPrefix: "CODE_EXEC",
    defaultPort: 50062,
    mainPath: () => fileURLToPath(import.meta.resolve("@reward-mesh/code-exec/main")),
    load: async () => {
      const m = await import("@reward-mesh/code-exec");
      return m.createCodeExecService(m.loadConfig());
    },
  },
  {
    name: "ast",
    envPrefix: "AST",
    defaultPort: 50063,
    mainPath: () => fileURLToPath(import.meta.resolve("@reward-mesh/ast/main")),
    load: async () => {
      const m = await import("@reward-mesh/ast");
      return m.createAstService(m.loadConfig());
    },
  },
  {
    name: "efficiency",
    envPrefix: "EFFICIENCY",
    defaultPort: 50064,
    mainPath: () => fileURLToPath(import.meta.resolve("@reward-mesh/efficiency/main")),
    load: async () => {
      const m = await import("@reward-mesh/efficiency");
      return m.createEfficiencyService(m.loadConfig());
    },
  },
  {
    name: "math",
    envPrefix: "MATH",
    defaultPort: 50067,
    mainPath: () => fileURLToPath(import.meta.resolve("@reward-mesh/math/main")),
    load: async () => {
      const m = await import("@reward-mesh/math");
      return m.createMathService(m.loadConfig());
    },
  },
];

/** Thrown for an unknown service name; lists the known ones. */
export class UnknownServiceError extends Error {
  override readonly name = "UnknownServiceError";
}

/** The entry named `name`. */
export function serviceEntry(name: string): ServiceEntry {
  const e = SERVICES.find((s) => s.name === name);
  if (!e)
    throw new UnknownServiceError(
      `unknown service '${name}'; available: ${SERVICES.map((s) => s.name).join(", ")}`,
    );
  return e;
}
