/**
 * `reward-mesh explain`: why a rollout (or every rollout of a group) got its advantage, from what the
 * run stored in `runs/<id>/` (`explain.jsonl`, `resolved-config.json`), recomputed with the trainer's
 * own advantage engine; with `--waterfall`, the rollout's trace from the spans a local receiver stored
 * (`reward-mesh up --traces`).
 * @module
 */
import type { Writable } from "node:stream";
import { readStoredSpans, renderWaterfall, spansOfRollout } from "@reward-mesh/sdk";
import { type ExplainTarget, explainRollout, renderExplanation, serveTrainer } from "@reward-mesh/trainer";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import type { CliConfig } from "../config.js";
import { UsageError } from "../io.js";

/** The explain command (parsing and `--help` come from this table). */
export const EXPLAIN_COMMAND: CommandSpec = {
  name: "explain",
  summary: "why a rollout got its advantage: components, weights, correlation, shares, S-GRPO, DAPO, trace",
  description:
    "Explain one rollout (--rollout) or one group (--step and --group) of a run from runs/<id>/: for every\n" +
    "rollout of the group each component's raw value and status, the weighted total and the group mean,\n" +
    "each component's part and share of the rollout's distance from that mean, the response and the\n" +
    "components' details; the weights, the correlation matrix, each component's share of the denominator\n" +
    "under GRPO and CorrGRPO, the S-GRPO weight and gate, the DAPO decision and the final advantage,\n" +
    "recomputed with the trainer's engine.",
  options: {
    run: { type: "string", value: "ID", description: "the run id (required unless --serve)" },
    rollout: { type: "string", value: "ID", description: "a rollout id (e.g. demo-1-s3-p0-5)" },
    step: { type: "string", value: "N", description: "a step (with --group)" },
    group: { type: "string", value: "ID", description: "a group of that step (e.g. s3-p0)" },
    "runs-dir": { type: "string", value: "DIR", description: "where runs are stored", default: "runs" },
    json: { type: "boolean", description: "print the explanation as one JSON object (responses whole)" },
    "full-text": {
      type: "boolean",
      description: "print each response whole, as stored (default: its first 100 characters on one line)",
    },
    waterfall: {
      type: "boolean",
      description: "also print the rollout's trace (per hop: where, how long) from --spans",
    },
    serve: {
      type: "string",
      value: "PORT",
      description:
        "serve rewardmesh.v1.Trainer (Explain for <runs-dir>, ComputeAdvantages) over gRPC on 127.0.0.1:PORT until Ctrl-C",
    },
    spans: {
      type: "string",
      value: "FILE",
      description: "spans stored by `reward-mesh up --traces`",
      defaultText: "<runs-dir>/traces.jsonl",
    },
  },
  notes: [
    "A rollout's part of (total − group mean) for component k is weight_k·value_k minus that product's group\n" +
      "mean (a value that did not apply counted 0); the parts sum to total − mean. Its share is\n" +
      "|part| / Σ|parts|: what fraction of the rollout's distance from the mean the component accounts for\n" +
      "(shares sum to 1 over components; ↑/↓ say whether it raised or lowered the total; — at the mean).\n" +
      "The share of the denominator is another thing: row k of the covariance (GRPO) or correlation\n" +
      "(CorrGRPO) matrix over the whole matrix; it sums to 1 too, but is below 0 for a component\n" +
      "anti-correlated with the others (and then above 1 for another).",
    "Responses are stored in explain.jsonl up to 16,384 characters each (a longer one is cut, and says so).",
    "REWARD_MESH_TRACE_URL: a link template for the trace, {traceId} replaced, e.g.\n" +
      "http://localhost:16686/trace/{traceId} (Jaeger) or a Grafana Tempo explore URL.",
  ],
  examples: [
    "reward-mesh explain --run demo-1 --rollout demo-1-s3-p0-5",
    "reward-mesh explain --run demo-1 --step 3 --group s3-p0 --json",
    "reward-mesh explain --run demo-1 --rollout demo-1-s3-p0-5 --full-text",
  ],
};

/** Usage of the explain command. */
export const EXPLAIN_USAGE = usageLine(EXPLAIN_COMMAND);

function targetOf(flags: Readonly<Record<string, string | boolean>>): ExplainTarget {
  const rollout = flags["rollout"];
  const step = flags["step"];
  const group = flags["group"];
  if (typeof rollout === "string") {
    if (step !== undefined || group !== undefined)
      throw new UsageError("give either '--rollout' or '--step' with '--group', not both");
    return { rolloutId: rollout };
  }
  if (typeof step !== "string" || typeof group !== "string")
    throw new UsageError(`'--rollout', or '--step' and '--group', are required\n${EXPLAIN_USAGE}`);
  if (!/^[1-9]\d*$/.test(step)) throw new UsageError(`'--step' must be a positive integer, got '${step}'`);
  return { step: Number(step), groupId: group };
}

/** Runs the command; returns the exit code. */
export async function runExplain(args: readonly string[], cli: CliConfig, stdout: Writable): Promise<number> {
  const { values: flags, positionals } = parseCommand(EXPLAIN_COMMAND, args);
  if (positionals.length > 0) throw new UsageError(EXPLAIN_USAGE);
  if (typeof flags["serve"] === "string") return serve(flags, cli, stdout);
  const run = flags["run"];
  if (typeof run !== "string") throw new UsageError(`'--run' is required\n${EXPLAIN_USAGE}`);
  const runsDir = String(flags["runs-dir"] ?? "runs");
  const e = explainRollout(runsDir, run, targetOf(flags), {
    ...(cli.traceUrlTemplate ? { traceUrlTemplate: cli.traceUrlTemplate } : {}),
  });
  const spansFile = typeof flags["spans"] === "string" ? flags["spans"] : `${runsDir}/traces.jsonl`;
  const rollout = e.rolloutIndex === null ? undefined : e.rollouts[e.rolloutIndex]!.rolloutId;
  const skipped: string[] = [];
  // A rollout has a trace of its own (when sampled); a group's spans are in the step's trace.
  const shownTrace = e.rolloutTraceId ?? e.traceId;
  const spans = flags["waterfall"]
    ? spansOfRollout(
        readStoredSpans(spansFile, {
          traceId: shownTrace,
          onBadLine: (n, problem) => skipped.push(`${spansFile}:${n}: ${problem}`),
        }),
        shownTrace,
        rollout ?? "",
        e.groupId,
      )
    : undefined;
  // Bad lines of the span file (a torn last append) are skipped, and said so on stderr.
  for (const line of skipped) process.stderr.write(`skipped ${line}\n`);
  if (flags["json"]) {
    stdout.write(`${JSON.stringify(spans ? { ...e, spans } : e)}\n`);
    return 0;
  }
  stdout.write(renderExplanation(e, { fullText: flags["full-text"] === true }));
  if (spans) {
    stdout.write("\n");
    stdout.write(
      spans.length
        ? renderWaterfall(spans, shownTrace)
        : `no span of trace ${shownTrace} in ${spansFile} (was the run traced? reward-mesh up --traces)\n`,
    );
  }
  return 0;
}

/** `--serve PORT`: Trainer.Explain over the runs directory until SIGINT/SIGTERM. */
async function serve(
  flags: Readonly<Record<string, string | boolean>>,
  cli: CliConfig,
  stdout: Writable,
): Promise<number> {
  const port = String(flags["serve"]);
  if (!/^\d+$/.test(port) || Number(port) > 65_535)
    throw new UsageError(`'--serve' must be a port number (0-65535), got '${port}'`);
  const stopped = new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  const server = await serveTrainer({
    outputDir: String(flags["runs-dir"] ?? "runs"),
    port: Number(port),
    ...(cli.traceUrlTemplate ? { traceUrlTemplate: cli.traceUrlTemplate } : {}),
  });
  stdout.write(
    `Trainer.Explain on ${server.address} (runs in ${String(flags["runs-dir"] ?? "runs")}); Ctrl-C to stop\n`,
  );
  await stopped;
  await server.close();
  return 0;
}
