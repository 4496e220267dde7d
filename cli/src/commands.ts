/**
 * The table of `reward-mesh`'s commands: the top-level help, `reward-mesh help <command>`, and the
 * nearest command suggested for a typo. Each command's own options live in its module's table.
 * @module
 */
import { didYouMean } from "@reward-mesh/sdk";
import { ADVANTAGES_USAGE } from "@reward-mesh/trainer";
import { type CommandSpec, formatHelp } from "./args.js";
import { CHECK_COMMAND } from "./commands/check.js";
import { DEMO_COMMAND } from "./commands/demo.js";
import { EVAL_COMMAND } from "./commands/eval.js";
import { EXPERIMENT_COMMAND } from "./commands/experiment.js";
import { EXPLAIN_COMMAND } from "./commands/explain.js";
import { GATEWAY_COMMAND } from "./commands/gateway.js";
import { NEW_COMMAND } from "./commands/new.js";
import { PROVISION_COMMAND } from "./commands/provision.js";
import { SCORE_COMMAND } from "./commands/score.js";
import { SERVE_COMMAND } from "./commands/serve.js";
import { TASKS_COMMAND } from "./commands/tasks.js";
import { REPORT_COMMAND, TRAIN_COMMAND } from "./commands/train.js";
import { UP_COMMAND } from "./commands/up.js";
import { UsageError } from "./io.js";
import { SERVICES } from "./services.js";

/**
 * `reward-mesh advantages` parses its own flags (trainer/src/advantage/cli.ts, a pure function the
 * trainer's tests drive) and prints its own help; this entry lists it and answers `help advantages`.
 */
export const ADVANTAGES_COMMAND = {
  name: "advantages",
  summary:
    "JSON groups of rewards on stdin -> advantages (+ diagnostics) for any estimator;\n" +
    "`advantages serve`: the same engine as rewardmesh.v1.Trainer/ComputeAdvantages (gRPC, HTTP/JSON)",
  options: {},
  examples: [],
} as const satisfies CommandSpec;

/** Every command, in the order `reward-mesh help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  SERVE_COMMAND,
  SCORE_COMMAND,
  ADVANTAGES_COMMAND,
  UP_COMMAND,
  PROVISION_COMMAND,
  TRAIN_COMMAND,
  REPORT_COMMAND,
  EXPLAIN_COMMAND,
  GATEWAY_COMMAND,
  CHECK_COMMAND,
  EXPERIMENT_COMMAND,
  EVAL_COMMAND,
  TASKS_COMMAND,
  DEMO_COMMAND,
  NEW_COMMAND,
];

const firstLine = (s: string) => s.split("\n")[0]!;

/** `reward-mesh help`. */
export const HELP = `reward-mesh — a reward-service mesh for multi-objective GRPO

usage: reward-mesh <command> [options]
       reward-mesh <command> --help      that command's options, their defaults and an example
       reward-mesh --version (-V)        the version of this reward-mesh

commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(12)} ${firstLine(c.summary)}`).join("\n")}

services: ${SERVICES.map((s) => s.name).join(", ")}
finding the mesh: NATS_URL names it (with the NATS_* credentials); unset, train, check, serve and
  serve --remote use the mesh 'reward-mesh up' recorded in <auth dir>/mesh.json, each as its own NATS user,
  and never a server nobody named (up and demo then start their own NATS on 4222 or a free port)
environment: NATS_URL, <SERVICE>_GRPC_PORT, <SERVICE>_CONCURRENCY, LOG_LEVEL,
  REWARD_MESH_LOG_FORMAT (human|json, as --log-format), REWARD_MESH_TELEMETRY=on (traces + /metrics), OTEL_*
  NATS credentials: NATS_NKEY_SEED_FILE | NATS_CREDS_FILE | NATS_USER + NATS_PASSWORD | NATS_TOKEN, NATS_TLS_CA_FILE,
  NATS_TLS_CERT_FILE + NATS_TLS_KEY_FILE, NATS_INBOX_PREFIX; REWARD_MESH_NATS_AUTH=off with NATS_URL: an
  anonymous NATS you name (development)
gRPC security: REWARD_MESH_GRPC_TLS_CA_FILE, _TLS_CLIENT_CERT_FILE/_KEY_FILE, _TOKEN(_FILE), _INSECURE
  (clients); <SERVICE>_GRPC_TLS_CERT_FILE/_KEY_FILE, _TLS_CLIENT_CA_FILE, _TOKEN(_FILE), _INSECURE (servers)
waiting at start (seconds, default 0 = fail at once): MESH_STREAMS_WAIT_SECONDS (NATS reachable, JetStream
  answering, streams provisioned), REWARD_MESH_START_WAIT_SECONDS (train: the learner listening, a consumer per domain)

example: reward-mesh demo
`;

/** The command named `name`, or a usage error suggesting the nearest one. */
export function commandNamed(name: string): CommandSpec {
  const spec = COMMANDS.find((c) => c.name === name);
  if (spec) return spec;
  const hint =
    didYouMean(
      name,
      COMMANDS.map((c) => c.name),
    ) || " (try 'reward-mesh help')";
  throw new UsageError(`unknown command '${name}'${hint}`);
}

/** The help of one command (`advantages` keeps its own). */
export function helpOf(spec: CommandSpec): string {
  return spec === ADVANTAGES_COMMAND ? ADVANTAGES_USAGE : formatHelp(spec);
}
