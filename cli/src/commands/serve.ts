/**
 * `reward-mesh serve <service>`: runs one reward service in this process (gRPC + JetStream worker),
 * exactly as its `main.ts` does in a container.
 * @module
 */
import { pathToFileURL } from "node:url";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { SERVICES, serviceEntry } from "../services.js";

/** The serve command's arguments (parsing and `--help` come from this table). */
export const SERVE_COMMAND: CommandSpec = {
  name: "serve",
  summary: "run one reward service (gRPC server + JetStream worker) until SIGTERM/SIGINT",
  positionals: [{ name: "<service>", description: SERVICES.map((s) => s.name).join(", ") }],
  options: {},
  notes: [
    "Its settings come from the environment: <SERVICE>_GRPC_PORT, <SERVICE>_CONCURRENCY, NATS_URL,\n" +
      "<SERVICE>_GRPC_TLS_* / _TOKEN / _INSECURE, <SERVICE>_HEALTH_PORT (a plaintext health-only port for\n" +
      "Kubernetes gRPC probes), LOG_LEVEL, OTEL_* (see the service's README).",
  ],
  examples: ["LENGTH_GRPC_PORT=50061 reward-mesh serve length"],
};

/** Usage of the serve command. */
export const SERVE_USAGE = `${usageLine(SERVE_COMMAND)}   (options come from <PREFIX>_* environment variables)`;

/** Imports the service's entrypoint, which runs until SIGTERM/SIGINT. */
export async function runServe(args: readonly string[]): Promise<void> {
  const { positionals } = parseCommand(SERVE_COMMAND, args);
  if (positionals.length !== 1) throw new UsageError(SERVE_USAGE);
  await import(pathToFileURL(serviceEntry(positionals[0]!).mainPath()).href);
}
