/**
 * `reward-mesh serve <service>`: runs one reward service in this process (gRPC + JetStream worker),
 * exactly as its `main.ts` does in a container. `reward-mesh serve --remote host:port`: the sidecar
 * for a reward service implemented elsewhere (any language): Describe, then ScoreStream, behind the
 * same JetStream worker.
 * @module
 */
import { pathToFileURL } from "node:url";
import { type GrpcClientSecurity, natsAuthEnv } from "@reward-mesh/sdk";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { type CliConfig, exportEnvironment, loadCliConfig, serviceRunsWorker } from "../config.js";
import { UsageError } from "../io.js";
import { SERVICES, serviceEntry } from "../services.js";
import { meshBusOptions } from "./mesh-record.js";

/** The serve command's arguments (parsing and `--help` come from this table). */
export const SERVE_COMMAND: CommandSpec = {
  name: "serve",
  summary: "run one reward service (gRPC server + JetStream worker) until SIGTERM/SIGINT",
  positionals: [
    { name: "[service]", description: `${SERVICES.map((s) => s.name).join(", ")} (not with --remote)` },
  ],
  options: {
    remote: {
      type: "string",
      value: "host:port",
      description:
        "run the JetStream worker for a RewardService served elsewhere (any language): Describe gives its name, domains and components, ScoreStream its results",
    },
    "wait-seconds": {
      type: "string",
      value: "N",
      default: "30",
      description: "--remote: how long to wait for the remote service to answer Describe",
    },
  },
  notes: [
    "Its settings come from the environment: <SERVICE>_GRPC_PORT, <SERVICE>_CONCURRENCY, NATS_URL,\n" +
      "<SERVICE>_GRPC_TLS_* / _TOKEN / _INSECURE, <SERVICE>_HEALTH_PORT (a plaintext health-only port for\n" +
      "Kubernetes gRPC probes), <SERVICE>_HTTP_PORT (HTTP/JSON, Connect protocol), LOG_LEVEL, OTEL_* (see the service's README). With --remote, <SERVICE> is the\n" +
      "remote's name in UPPER_SNAKE case, its gRPC front defaults to an ephemeral port, and REWARD_MESH_GRPC_*\n" +
      "secure the connection to the remote. With NATS_URL unset it joins the mesh reward-mesh up recorded, as\n" +
      "the NATS user up generated for it (a built-in service up runs, or reward-mesh up --remote <name>=host:port).",
  ],
  examples: ["LENGTH_GRPC_PORT=50061 reward-mesh serve length", "reward-mesh serve --remote 127.0.0.1:50100"],
};

/** Usage of the serve command. */
export const SERVE_USAGE = `${usageLine(SERVE_COMMAND)}   (options come from <PREFIX>_* environment variables)`;

/**
 * Imports the service's entrypoint (or starts the sidecar), which runs until SIGTERM/SIGINT. Both connect
 * to the mesh at `NATS_URL`, or (unset) to the one `reward-mesh up` recorded, as their service's user.
 */
export async function runServe(
  args: readonly string[],
  security: GrpcClientSecurity = {},
  cli: CliConfig = loadCliConfig(),
): Promise<void> {
  const { values, positionals } = parseCommand(SERVE_COMMAND, args);
  const remote = values["remote"];
  if (typeof remote === "string") {
    if (positionals.length !== 0)
      throw new UsageError(`'--remote' serves the remote's service; drop '${positionals[0]}'`);
    if (!/^[^\s:]+:\d+$|^\[[0-9a-fA-F:]+\]:\d+$/.test(remote))
      throw new UsageError(`'--remote' must be host:port, got '${remote}'`);
    const wait = Number(values["wait-seconds"]);
    if (!Number.isFinite(wait) || wait <= 0)
      throw new UsageError("'--wait-seconds' must be a positive number");
    const { runSidecar } = await import("../sidecar/main.js");
    await runSidecar(remote, {
      waitMs: wait * 1000,
      security,
      bus: (name) => meshBusOptions(cli, { kind: "service", name }),
    });
    return;
  }
  if (positionals.length !== 1) throw new UsageError(SERVE_USAGE);
  const entry = serviceEntry(positionals[0]!);
  if (!cli.natsUrlExplicit && serviceRunsWorker(entry.envPrefix)) {
    // NATS_URL unset and a JetStream worker to run (<PREFIX>_WORKER=false serves gRPC only, without NATS):
    // the mesh `reward-mesh up` recorded, as the user it generated for this service — the entrypoint reads
    // its NATS settings from the environment, as it does in its container.
    const bus = await meshBusOptions(cli, { kind: "service", name: entry.name });
    exportEnvironment({ NATS_URL: bus.natsUrl, ...(bus.auth ? natsAuthEnv(bus.auth) : {}) });
  }
  await import(pathToFileURL(entry.mainPath()).href);
}
