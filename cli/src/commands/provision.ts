/**
 * `reward-mesh provision`: create (or update to the configured settings) the mesh's JetStream streams,
 * as the mesh's admin user, on the NATS at `NATS_URL` — what `reward-mesh up` does for the server it
 * starts, for a server run elsewhere (the Helm chart's provisioning Job in Kubernetes). It keeps
 * trying while NATS is not reachable or JetStream not ready, until `--timeout`; credentials refused, a
 * user that may not create streams or a bad setting end it at once. Prints one JSON line per stream.
 * @module
 */
import type { Writable } from "node:stream";
import {
  isAuthorizationError,
  type ProvisionedStream,
  provisionMeshStreams,
  UnavailableError,
} from "@reward-mesh/sdk";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import type { CliConfig } from "../config.js";
import { UsageError } from "../io.js";

/** The provision command (parsing and `--help` come from this table). */
export const PROVISION_COMMAND: CommandSpec = {
  name: "provision",
  summary: "create or update the mesh's JetStream streams as the admin user (one JSON line each)",
  description:
    "Create the mesh's JetStream streams on the NATS at NATS_URL, or update existing ones to the\n" +
    "MESH_STREAM_* settings, connecting with the NATS_* credentials of the environment, which must be\n" +
    "the mesh's admin user. Keeps trying while NATS is unreachable or JetStream is not ready, for up to\n" +
    "the --timeout. Prints one JSON line per stream on stdout and exits 0; exits 1 with the reason otherwise.",
  options: {
    timeout: {
      type: "string",
      value: "SECONDS",
      default: "120",
      description: "how long to keep trying to reach NATS and JetStream",
    },
  },
  notes: [
    "Environment: NATS_URL; the admin's credentials in NATS_NKEY_SEED_FILE | NATS_CREDS_FILE |\n" +
      "NATS_USER + NATS_PASSWORD | NATS_TOKEN, NATS_TLS_*; stream settings MESH_STREAM_REPLICAS,\n" +
      "MESH_STREAM_MAX_AGE_SECONDS, MESH_STREAM_MAX_BYTES, MESH_DUPLICATE_WINDOW_MS.",
  ],
  examples: ["NATS_URL=nats://nats:4222 NATS_NKEY_SEED_FILE=/etc/nats/admin.nk reward-mesh provision"],
};

/** Usage of the provision command. */
export const PROVISION_USAGE = usageLine(PROVISION_COMMAND);

/** Errors that waiting cannot cure: refused credentials, a user that is not the admin, a bad setting. */
function isFinal(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "NotStreamAdminError" || err.name === "ConfigError") return true;
  return err.name === "UnavailableError" && isAuthorizationError(err.cause);
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Options of {@link provisionWithRetry}. */
export interface ProvisionRetryOptions {
  readonly timeoutMs: number;
  /** Told once, when the first attempt fails with an error worth waiting out. */
  readonly onWait?: (err: unknown) => void;
}

/**
 * Runs {@link provisionMeshStreams} until it succeeds, polling with a short, growing back-off, for up to
 * `timeoutMs`; final errors are thrown at once, and at the deadline an `UnavailableError` names the URL
 * and the last error.
 */
export async function provisionWithRetry(
  cli: CliConfig,
  o: ProvisionRetryOptions,
): Promise<ProvisionedStream[]> {
  const url = cli.bus.natsUrl;
  // Never the default address: an anonymous NATS nobody named (Debian's service) would get the streams.
  if (!cli.natsUrlExplicit)
    throw new UsageError(
      `'reward-mesh provision' creates the streams on the NATS that NATS_URL names, as its admin user (NATS_*); NATS_URL is not set (reward-mesh up provisions the NATS it starts itself)`,
    );
  const deadline = Date.now() + o.timeoutMs;
  let delayMs = 100;
  let attempts = 0;
  while (true) {
    attempts++;
    try {
      return await provisionMeshStreams(cli.bus, "reward-mesh-provision");
    } catch (err) {
      if (isFinal(err)) throw err;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new UnavailableError(
          `could not provision the streams on NATS at ${url} within ${o.timeoutMs / 1000}s (${attempts} attempt${attempts === 1 ? "" : "s"}); last error: ${message(err)}`,
          { cause: err },
        );
      }
      if (attempts === 1) o.onWait?.(err);
      await new Promise((r) => setTimeout(r, Math.min(delayMs, left)));
      delayMs = Math.min(delayMs * 2, 2_000);
    }
  }
}

/** Runs the command; returns the exit code. */
export async function runProvision(
  args: readonly string[],
  cli: CliConfig,
  stdout: Writable,
  stderr: Writable,
): Promise<number> {
  const { values, positionals } = parseCommand(PROVISION_COMMAND, args);
  if (positionals.length > 0) throw new UsageError(PROVISION_USAGE);
  const text = String(values["timeout"]);
  const seconds = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(seconds > 0))
    throw new UsageError(`option '--timeout' must be a number of seconds > 0, got '${text}'`);
  const streams = await provisionWithRetry(cli, {
    timeoutMs: seconds * 1000,
    onWait: (err) =>
      stderr.write(
        `reward-mesh provision: NATS at ${cli.bus.natsUrl} is not ready (${message(err)}); retrying for up to ${text}s\n`,
      ),
  });
  for (const s of streams) stdout.write(`${JSON.stringify(s)}\n`);
  return 0;
}
