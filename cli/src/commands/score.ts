/**
 * `reward-mesh score <service> [--addr host:port] [--concurrency N]`: proto-JSON rollouts, one per line
 * on stdin → one `RewardResult` JSON per line on stdout, in input order. In-process unless `--addr`.
 * A bad line (not valid UTF-8, not JSON, not a valid rollout) is reported on stderr as
 * `line N: <what is wrong>` and skipped; the others are still scored; the exit code is then 2.
 * @module
 */
import type { Readable, Writable } from "node:stream";
import { fromJson, type JsonValue, toJsonString } from "@bufbuild/protobuf";
import { type grpc, type RewardResult, RewardResultSchema, RolloutSchema } from "@reward-mesh/proto";
import { createLimiter, createRewardServiceClient, type GrpcClientSecurity } from "@reward-mesh/sdk";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { orderedMap, UsageError, utf8Lines } from "../io.js";
import { SERVICES, serviceEntry } from "../services.js";

/** The score command's arguments and options (parsing and `--help` come from this table). */
export const SCORE_COMMAND: CommandSpec = {
  name: "score",
  summary: "score proto-JSON rollouts (JSONL on stdin) -> RewardResult JSONL on stdout, in order",
  positionals: [
    { name: "<service>", description: `the reward service: ${SERVICES.map((s) => s.name).join(", ")}` },
  ],
  usageTail: "< rollouts.jsonl",
  options: {
    addr: {
      type: "string",
      value: "host:port",
      description: "score with a running service over gRPC (REWARD_MESH_GRPC_* for TLS/token)",
      defaultText: "in this process",
    },
    concurrency: { type: "string", value: "N", default: "16", description: "rollouts scored at once" },
    "timeout-ms": { type: "string", value: "N", default: "60000", description: "deadline per rollout" },
  },
  notes: [
    "A bad line is reported on stderr as 'line N: <what is wrong>' and skipped; the exit code is then 2.",
  ],
  examples: [
    `echo '{"id":"r1","runId":"demo","groupId":"g","groupSize":1,"response":"hello"}' | reward-mesh score length`,
  ],
};

/** Usage of the score command. */
export const SCORE_USAGE = usageLine(SCORE_COMMAND);

function describeError(err: unknown): string {
  if (err && typeof err === "object" && "code" in err && "details" in err) {
    const e = err as grpc.ServiceError;
    return `gRPC ${e.code}: ${e.details}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Runs the command; returns the exit code. `--addr` dials with `security` (TLS, client certificate,
 * token: the CLI's `REWARD_MESH_GRPC_*`); plaintext to a non-loopback address is refused unless allowed.
 */
export async function runScore(
  args: readonly string[],
  stdin: Readable,
  stdout: Writable,
  stderr: Writable,
  security: GrpcClientSecurity = {},
): Promise<number> {
  const { values: flags, positionals: positional } = parseCommand(SCORE_COMMAND, args);
  if (positional.length !== 1) throw new UsageError(SCORE_USAGE);
  const name = positional[0]!;
  const concurrency = Number(flags["concurrency"]);
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new UsageError("'--concurrency' must be a positive integer");
  const timeoutMs = Number(flags["timeout-ms"]);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new UsageError("'--timeout-ms' must be a positive number");

  let scoreFn: (line: string) => Promise<RewardResult>;
  let close = () => {};
  const parse = (line: string) => {
    let json: JsonValue;
    try {
      json = JSON.parse(line) as JsonValue;
    } catch (err) {
      throw new UsageError(`not valid JSON (${err instanceof Error ? err.message : String(err)})`);
    }
    return fromJson(RolloutSchema, json);
  };
  if (typeof flags["addr"] === "string") {
    const client = createRewardServiceClient(flags["addr"], { timeoutMs, security });
    close = () => client.close();
    scoreFn = async (line) => client.score({ rollout: parse(line) }, { timeoutMs });
  } else {
    const def = await serviceEntry(name).load();
    const limiter = createLimiter(concurrency);
    scoreFn = (line) =>
      limiter.run(() => def.scoreRollout(parse(line), { signal: AbortSignal.timeout(timeoutMs) }));
  }

  let failed = 0;
  async function* nonEmpty() {
    for await (const line of utf8Lines(stdin))
      if (line.error !== undefined || line.text.trim() !== "") yield line;
  }
  try {
    await orderedMap(
      nonEmpty(),
      concurrency,
      async ({ text, error, n }) => {
        if (error !== undefined) return { ok: false as const, error: `line ${n}: ${error}` };
        try {
          return { ok: true as const, result: await scoreFn(text) };
        } catch (err) {
          // One stderr line per bad line: a line break quoted inside the message is escaped.
          const why = describeError(err).replace(/\r/g, "\\r").replace(/\n/g, "\\n");
          return { ok: false as const, error: `line ${n}: ${why}` };
        }
      },
      (r) => {
        if (r.ok)
          stdout.write(`${toJsonString(RewardResultSchema, r.result, { alwaysEmitImplicit: true })}\n`);
        else {
          failed++;
          stderr.write(`${r.error}\n`);
        }
      },
    );
  } finally {
    close();
  }
  return failed > 0 ? 2 : 0;
}
