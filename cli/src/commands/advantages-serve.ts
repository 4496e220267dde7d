/**
 * `reward-mesh advantages serve`: the trainer's `rewardmesh.v1.Trainer` service (ComputeAdvantages, and
 * Explain over `--runs-dir`) on its own, over gRPC and optionally HTTP/JSON (Connect protocol), until
 * SIGINT/SIGTERM. This is what the Python client's verl estimator calls.
 * @module
 */
import type { Writable } from "node:stream";
import { loadGrpcServerSecurity } from "@reward-mesh/sdk";
import { serveTrainer } from "@reward-mesh/trainer";
import { type CommandSpec, formatHelp, parseCommand, usageLine } from "../args.js";
import type { CliConfig } from "../config.js";
import { UsageError } from "../io.js";

/** The default gRPC port of the standalone Trainer service. */
export const TRAINER_DEFAULT_PORT = 50080;

/** The command's options (parsing and `--help` come from this table). */
export const ADVANTAGES_SERVE_COMMAND: CommandSpec = {
  name: "advantages serve",
  summary: "serve rewardmesh.v1.Trainer (ComputeAdvantages, Explain) over gRPC and HTTP/JSON",
  options: {
    host: {
      type: "string",
      value: "ADDR",
      default: "127.0.0.1",
      description:
        "address to listen on; a non-loopback address needs TLS (--tls-cert/--tls-key) or --insecure",
    },
    "tls-cert": {
      type: "string",
      value: "FILE",
      description: "PEM certificate chain: TLS on the gRPC and HTTP/JSON ports (with --tls-key)",
      defaultText: "TRAINER_GRPC_TLS_CERT_FILE / REWARD_MESH_GRPC_TLS_CERT_FILE",
    },
    "tls-key": {
      type: "string",
      value: "FILE",
      description: "PEM private key of --tls-cert",
      defaultText: "TRAINER_GRPC_TLS_KEY_FILE / REWARD_MESH_GRPC_TLS_KEY_FILE",
    },
    "token-file": {
      type: "string",
      value: "FILE",
      description: "require 'authorization: Bearer <token>' (the file's content) on every call but health",
      defaultText: "TRAINER_GRPC_TOKEN[_FILE] / REWARD_MESH_GRPC_TOKEN[_FILE]",
    },
    insecure: {
      type: "boolean",
      description: "accept plaintext on a non-loopback --host (e.g. behind a mesh that encrypts)",
    },
    port: {
      type: "string",
      value: "PORT",
      default: String(TRAINER_DEFAULT_PORT),
      description: "gRPC port (0 = any free port)",
    },
    "http-port": {
      type: "string",
      value: "PORT",
      description:
        "also serve HTTP/JSON (Connect protocol: POST /rewardmesh.v1.Trainer/ComputeAdvantages) here (0 = any free port)",
      defaultText: "off",
    },
    "runs-dir": { type: "string", value: "DIR", default: "runs", description: "where Explain finds runs" },
  },
  notes: [
    "Security as a service's gRPC port: the flags, else TRAINER_GRPC_* (falling back to REWARD_MESH_GRPC_*)\n" +
      "TLS_CERT_FILE, TLS_KEY_FILE, TLS_CLIENT_CA_FILE, TOKEN[_FILE], INSECURE; HTTP/JSON uses the same.\n" +
      "Prints one line with the addresses once listening. The numbers are those of `reward-mesh advantages`\n" +
      "(same engine); a bad request is INVALID_ARGUMENT (HTTP 400) naming the field.",
  ],
  examples: ["reward-mesh advantages serve --port 50080 --http-port 8080"],
};

function portOf(raw: string, flag: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) > 65_535)
    throw new UsageError(`'${flag}' must be a port number (0-65535), got '${raw}'`);
  return Number(raw);
}

/** Runs the command; returns the exit code once stopped. */
export async function runAdvantagesServe(
  args: readonly string[],
  cli: CliConfig,
  stdout: Writable,
): Promise<number> {
  const { values: flags, positionals, help } = parseCommand(ADVANTAGES_SERVE_COMMAND, args);
  if (help) {
    stdout.write(formatHelp(ADVANTAGES_SERVE_COMMAND));
    return 0;
  }
  if (positionals.length)
    throw new UsageError(`unexpected argument '${positionals[0]}' (${usageLine(ADVANTAGES_SERVE_COMMAND)})`);
  const port = portOf(String(flags["port"]), "--port");
  const httpPort =
    typeof flags["http-port"] === "string" ? portOf(flags["http-port"], "--http-port") : undefined;
  if (httpPort !== undefined && httpPort !== 0 && httpPort === port)
    throw new UsageError(`'--http-port' must differ from '--port' (${port})`);
  // The flags as the variables a service reads, so that the one loader checks them (files, key pair, token).
  const flagEnv: Record<string, string> = {};
  if (typeof flags["tls-cert"] === "string") flagEnv["TRAINER_GRPC_TLS_CERT_FILE"] = flags["tls-cert"];
  if (typeof flags["tls-key"] === "string") flagEnv["TRAINER_GRPC_TLS_KEY_FILE"] = flags["tls-key"];
  if (typeof flags["token-file"] === "string") flagEnv["TRAINER_GRPC_TOKEN_FILE"] = flags["token-file"];
  if (flags["insecure"] === true) flagEnv["TRAINER_GRPC_INSECURE"] = "1";
  const security = {
    ...loadGrpcServerSecurity("TRAINER", { ...cli.env, ...flagEnv }),
    hints: { tls: "--tls-cert and --tls-key", insecure: "TRAINER_GRPC_INSECURE" },
  };
  const stopped = new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  const server = await serveTrainer({
    outputDir: String(flags["runs-dir"]),
    host: String(flags["host"]),
    port,
    security,
    ...(httpPort !== undefined ? { httpPort } : {}),
    ...(cli.traceUrlTemplate ? { traceUrlTemplate: cli.traceUrlTemplate } : {}),
  });
  stdout.write(
    `Trainer (Explain, ComputeAdvantages) on ${server.address}${server.httpUrl ? `; HTTP/JSON on ${server.httpUrl}` : ""}; Ctrl-C to stop\n`,
  );
  await stopped;
  await server.close();
  return 0;
}
