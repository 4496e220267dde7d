/**
 * `reward-mesh gateway`: an OpenRLHF-compatible remote reward endpoint (`--reward.remote_url`) in front of the
 * mesh's reward services (see `../gateway/openrlhf.ts` for the protocol). The components and weights come from
 * a run config (`--config`) or `--components`; the services' addresses from `--services` (default: each
 * service's default port on 127.0.0.1). Every service is asked `Describe` at start, so that a component no
 * service offers is an error before the first request.
 * @module
 */
import type { Writable } from "node:stream";
import { createRewardServiceClient, isLoopbackHost } from "@reward-mesh/sdk";
import { loadRunConfig } from "@reward-mesh/trainer";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import type { CliConfig } from "../config.js";
import {
  DEFAULT_PAD_TOKENS,
  DEFAULT_SHUTDOWN_GRACE_MS,
  type GatewayComponent,
  type GatewayService,
  scoreComponentOf,
  servicesDomains,
  startOpenRlhfGateway,
} from "../gateway/openrlhf.js";
import { UsageError } from "../io.js";
import { SERVICES } from "../services.js";

/** The gateway command (parsing and `--help` come from this table). */
export const GATEWAY_COMMAND: CommandSpec = {
  name: "gateway",
  summary: "an OpenRLHF remote reward endpoint (--reward.remote_url) over the mesh's services",
  description:
    "Serves POST /get_reward with OpenRLHF's request {query, prompts, labels} and answers {rewards, scores,\n" +
    "extra_logs}: the weighted total of the configured components per query, and each component's value in\n" +
    'extra_logs["<service>/<component>"]. Each request is scored with one ScoreBatch call per service\n' +
    "(one ScoreStream for a service that does not implement ScoreBatch).",
  options: {
    config: {
      type: "string",
      value: "FILE",
      description: "take the components and weights of this run config",
    },
    components: {
      type: "string",
      value: "s/c=w,...",
      description: "components and weights, e.g. math/correct=1,math/format=0.1 (instead of --config)",
    },
    services: {
      type: "string",
      value: "name=host:port,...",
      description: "where each service listens (REWARD_MESH_GRPC_* for TLS/token)",
      defaultText: "127.0.0.1:<its default port>",
    },
    domain: {
      type: "string",
      value: "NAME",
      default: "math",
      description: "domain of a string label: math (the label is the reference answer) or a custom domain",
    },
    "score-component": {
      type: "string",
      value: "S/C|total",
      description:
        "what 'scores' holds (OpenRLHF's dynamic filtering, range default (0,1)): one component's raw value, or the weighted total",
      defaultText: "the first component",
    },
    "pad-tokens": {
      type: "string",
      value: "T1,T2,...",
      description: "pad tokens stripped from the ends of each query before the response is cut ('' for none)",
      defaultText: DEFAULT_PAD_TOKENS.join(","),
    },
    host: {
      type: "string",
      value: "ADDR",
      default: "127.0.0.1",
      description:
        "address to listen on (a non-loopback address needs --insecure: the endpoint is plaintext HTTP without a token)",
    },
    insecure: {
      type: "boolean",
      description:
        "accept a non-loopback --host (e.g. behind a mesh or proxy that encrypts and authenticates)",
    },
    port: { type: "string", value: "PORT", default: "5000", description: "HTTP port (0 = any free port)" },
    "timeout-ms": {
      type: "string",
      value: "N",
      default: "120000",
      description: "deadline per request and service",
    },
    "max-concurrent": {
      type: "string",
      value: "N",
      default: "16",
      description: "requests scored at once; more get 429 with Retry-After (OpenRLHF retries)",
    },
    "max-body-bytes": {
      type: "string",
      value: "N",
      default: "8388608",
      description: "largest request body (past it: 413)",
    },
    "shutdown-grace-seconds": {
      type: "string",
      value: "N",
      default: String(DEFAULT_SHUTDOWN_GRACE_MS / 1000),
      description:
        "on SIGTERM/SIGINT: stop accepting, let requests being scored finish for up to N s, then cancel them (503)",
    },
    "wait-seconds": {
      type: "string",
      value: "N",
      default: "30",
      description: "how long to wait at start for every service to answer Describe",
    },
  },
  notes: [
    "A label that is a JSON object is read as a rewardmesh.v1.Task (proto JSON), so any domain can be scored.\n" +
      "The response is what follows the prompt's first occurrence in the query, after stripping --pad-tokens\n" +
      "from its ends; the whole query when the prompt is not in it (as OpenRLHF's math_reward_func.py). A component\n" +
      'that does not apply to a query counts 0 in rewards, scores and extra_logs, and extra_logs["<s>/<c>/applicable"]\n' +
      "is 1 or 0 (every value a finite float, the same keys in every answer: what OpenRLHF turns into tensors).\n" +
      "SIGTERM/SIGINT drains: no new connections, 503 on kept-alive ones, requests being scored finish within\n" +
      '--shutdown-grace-seconds (a second signal: at once). Bad requests get HTTP 400 with {"error": "..."}.',
  ],
  examples: [
    "reward-mesh gateway --components math/correct=1,math/format=0.1 --services math=127.0.0.1:50067",
    "reward-mesh gateway --config run.yaml --port 5000   # then: --reward.remote_url http://127.0.0.1:5000/get_reward",
  ],
};

/** Usage of the gateway command. */
export const GATEWAY_USAGE = usageLine(GATEWAY_COMMAND);

/** `math/correct=1,math/format=0.1` → components. */
export function parseComponentsFlag(raw: string): GatewayComponent[] {
  return raw.split(",").map((item, i) => {
    const m = /^\s*([^/=\s]+)\/([^=\s]+)\s*=\s*(\S+)\s*$/.exec(item);
    const weight = m ? Number(m[3]) : Number.NaN;
    if (!m || !Number.isFinite(weight))
      throw new UsageError(
        `'--components' item ${i + 1} must be <service>/<component>=<weight>, got '${item}'`,
      );
    return { service: m[1]!, component: m[2]!, weight };
  });
}

/** `math=127.0.0.1:50067,…` → addresses by service. */
export function parseServicesFlag(raw: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of raw.split(",")) {
    const m = /^\s*([^=\s]+)\s*=\s*(\S+:\d+)\s*$/.exec(item);
    if (!m) throw new UsageError(`'--services' items must be <name>=<host:port>, got '${item}'`);
    out.set(m[1]!, m[2]!);
  }
  return out;
}

function portOf(raw: string, flag: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) > 65_535)
    throw new UsageError(`'${flag}' must be a port number (0-65535), got '${raw}'`);
  return Number(raw);
}

function positive(raw: string, flag: string): number {
  const v = Number(raw);
  if (!Number.isFinite(v) || v <= 0)
    throw new UsageError(`'${flag}' must be a positive number, got '${raw}'`);
  return v;
}

function positiveInteger(raw: string, flag: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new UsageError(`'${flag}' must be a positive integer, got '${raw}'`);
  return Number(raw);
}

/** A service as Describe answered: what the gateway needs, plus its component names (checked at start). */
interface DescribedService extends GatewayService {
  readonly components: readonly string[];
}

/** Describe, retried until `deadline` (a service just started may not listen yet). */
async function describeWhenUp(
  name: string,
  address: string,
  cli: CliConfig,
  deadline: number,
): Promise<DescribedService> {
  const client = createRewardServiceClient(address, { security: cli.grpc, timeoutMs: 5_000 });
  for (;;) {
    try {
      const d = await client.describe({}, { timeoutMs: 5_000 });
      if (d.name !== name) {
        client.close();
        throw new UsageError(`'--services': ${address} is the service '${d.name}', not '${name}'`);
      }
      return { name, client, domains: d.domains, components: d.components.map((c) => c.name) };
    } catch (err) {
      if (err instanceof UsageError) throw err;
      if (Date.now() > deadline) {
        client.close();
        throw new UsageError(
          `service '${name}' at ${address} did not answer Describe: ${err instanceof Error ? err.message : String(err)} (start it, or point --services at it)`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Runs the gateway until SIGINT/SIGTERM; returns the exit code. */
export async function runGateway(args: readonly string[], cli: CliConfig, stdout: Writable): Promise<number> {
  const { values: flags, positionals } = parseCommand(GATEWAY_COMMAND, args);
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}' (${GATEWAY_USAGE})`);
  const config = typeof flags["config"] === "string" ? flags["config"] : undefined;
  const compFlag = typeof flags["components"] === "string" ? flags["components"] : undefined;
  if ((config === undefined) === (compFlag === undefined))
    throw new UsageError(
      "give either '--config' (a run config) or '--components' (<service>/<component>=<weight>,...)",
    );
  const components = compFlag ? parseComponentsFlag(compFlag) : [...loadRunConfig(config!).components];
  const addresses = typeof flags["services"] === "string" ? parseServicesFlag(flags["services"]) : new Map();
  const port = portOf(String(flags["port"]), "--port");
  if (!isLoopbackHost(String(flags["host"])) && flags["insecure"] !== true)
    throw new UsageError(
      `'--host ${String(flags["host"])}' is not a loopback address: the endpoint is plaintext HTTP without a token; add --insecure to accept that (e.g. behind a proxy that encrypts)`,
    );
  const timeoutMs = positive(String(flags["timeout-ms"]), "--timeout-ms");
  const maxConcurrent = positiveInteger(String(flags["max-concurrent"]), "--max-concurrent");
  const maxBodyBytes = positiveInteger(String(flags["max-body-bytes"]), "--max-body-bytes");
  const deadline = Date.now() + positive(String(flags["wait-seconds"]), "--wait-seconds") * 1000;
  const graceRaw = String(flags["shutdown-grace-seconds"]);
  const graceSeconds = Number(graceRaw);
  // Node's timers hold at most 2^31 - 1 ms (~24.8 days); a longer delay would fire at once.
  if (
    graceRaw.trim() === "" ||
    !Number.isFinite(graceSeconds) ||
    graceSeconds < 0 ||
    graceSeconds > 2_147_483
  )
    throw new UsageError(
      `'--shutdown-grace-seconds' must be a number of seconds from 0 to 2147483, got '${graceRaw}'`,
    );
  const names = [...new Set(components.map((c) => c.service))];
  for (const n of addresses.keys())
    if (!names.includes(n))
      throw new UsageError(`'--services' names '${n}', which no component uses (${names.join(", ")})`);
  const services = await Promise.all(
    names.map((name) => {
      const known = SERVICES.find((s) => s.name === name);
      const address = addresses.get(name) ?? (known ? `127.0.0.1:${known.defaultPort}` : undefined);
      if (!address)
        throw new UsageError(
          `service '${name}' is not in this build: give its address with --services ${name}=host:port`,
        );
      return describeWhenUp(name, address, cli, deadline);
    }),
  );
  try {
    for (const c of components) {
      const s = services.find((x) => x.name === c.service)!;
      if (!s.components.includes(c.component))
        throw new UsageError(
          `component '${c.service}/${c.component}' is not offered by '${c.service}' (its components: ${s.components.join(", ")})`,
        );
    }
    const domain = String(flags["domain"]);
    if (!services.some((s) => s.domains.includes(domain)))
      throw new UsageError(
        `'--domain ${domain}' is scored by none of the services (${servicesDomains(services)}): every string-labelled query would get reward 0; pick one of their domains`,
      );
  } catch (err) {
    for (const s of services) s.client.close();
    throw err;
  }
  const scoreComponent = typeof flags["score-component"] === "string" ? flags["score-component"] : undefined;
  try {
    scoreComponentOf({ components, ...(scoreComponent !== undefined ? { scoreComponent } : {}) });
  } catch (err) {
    for (const s of services) s.client.close();
    throw new UsageError(`'--score-component': ${(err as Error).message}`);
  }
  // The first SIGINT/SIGTERM drains; another one cuts the grace short.
  let signals = 0;
  let onSignal: () => void = () => {
    signals++;
  };
  const listener = () => onSignal();
  process.on("SIGINT", listener);
  process.on("SIGTERM", listener);
  const gw = await startOpenRlhfGateway({
    components,
    services,
    domain: String(flags["domain"]),
    host: String(flags["host"]),
    port,
    timeoutMs,
    maxConcurrent,
    maxBodyBytes,
    ...(scoreComponent !== undefined ? { scoreComponent } : {}),
    shutdownGraceMs: graceSeconds * 1000,
    padTokens:
      typeof flags["pad-tokens"] === "string"
        ? flags["pad-tokens"].split(",").filter((t) => t !== "")
        : DEFAULT_PAD_TOKENS,
  });
  stdout.write(
    `OpenRLHF reward endpoint on ${gw.url}/get_reward (${components.map((c) => `${c.service}/${c.component}×${c.weight}`).join(", ")}); Ctrl-C to stop\n`,
  );
  try {
    await new Promise<void>((resolve) => {
      onSignal = () => {
        signals++;
        if (signals === 1) {
          const n = gw.inFlight();
          stdout.write(
            `stopping: no new requests; ${n} being scored get up to ${graceSeconds} s to finish (signal again to stop now)\n`,
          );
          void gw.close().then(resolve);
        } else void gw.close(0);
      };
      // Signals during start-up.
      const early = signals;
      signals = 0;
      for (let i = 0; i < early; i++) onSignal();
    });
    stdout.write("gateway stopped\n");
  } finally {
    process.off("SIGINT", listener);
    process.off("SIGTERM", listener);
    for (const s of services) s.client.close();
  }
  return 0;
}
