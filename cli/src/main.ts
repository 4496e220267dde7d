/**
 * The `reward-mesh` command line. Dispatches to one command module per verb; usage errors are one
 * line on stderr with exit code 2, other failures exit 1.
 */
import { text } from "node:stream/consumers";
import { runAdvantagesCli } from "@reward-mesh/trainer";
import { runCheck } from "./commands/check.js";
import { runDemo } from "./commands/demo.js";
import { runTasks } from "./commands/tasks.js";
import { runExperiment } from "./commands/experiment.js";
import { runReport, runTrain } from "./commands/train.js";
import { runScore } from "./commands/score.js";
import { runServe } from "./commands/serve.js";
import { runUp } from "./commands/up.js";
import { loadCliConfig } from "./config.js";
import { UsageError } from "./io.js";
import { SERVICES } from "./services.js";

const HELP = `reward-mesh — a reward-service mesh for multi-objective GRPO

usage: reward-mesh <command> [options]

commands:
  serve <service>                      run one reward service (gRPC + JetStream worker)
  score <service> [--addr host:port]   score proto-JSON rollouts (JSONL on stdin) -> RewardResult JSONL
  advantages --estimator <name> ...    JSON groups on stdin -> advantages (+ --diagnostics)
  up [--services a,b] [--learner torch]  the whole mesh on this machine (NATS + every service [+ the PyTorch learner])
  train --config run.yaml [--with-mesh]  a training run (resumes a run id from its checkpoint)
  report <run dir>                     write <run dir>/report.html from its metrics.jsonl
  check                                the bus: consumers per domain, orphan rollout subjects (exit 1 if any)
  experiment --estimators a,b --seeds N [--reward-noise p]   the same run per estimator and seed, compared
  tasks import --format F <in> <out>   convert humaneval/mbpp/leetcodedataset/rlla/bfcl records to a task file
  tasks check <file.jsonl>             validate a task file
  demo [--learner torch]               what \`npm start\` runs: the mesh plus a short training run

services: ${SERVICES.map((s) => s.name).join(", ")}
environment: NATS_URL (default nats://127.0.0.1:4222), <SERVICE>_GRPC_PORT, <SERVICE>_CONCURRENCY, LOG_LEVEL, OTEL_*
  NATS credentials: NATS_NKEY_SEED_FILE | NATS_CREDS_FILE | NATS_USER + NATS_PASSWORD | NATS_TOKEN, NATS_TLS_CA_FILE,
  NATS_TLS_CERT_FILE + NATS_TLS_KEY_FILE, NATS_INBOX_PREFIX; REWARD_MESH_NATS_AUTH=off: up/demo's NATS without users (development)
gRPC security: REWARD_MESH_GRPC_TLS_CA_FILE, _TLS_CLIENT_CERT_FILE/_KEY_FILE, _TOKEN(_FILE), _INSECURE
  (clients); <SERVICE>_GRPC_TLS_CERT_FILE/_KEY_FILE, _TLS_CLIENT_CA_FILE, _TOKEN(_FILE), _INSECURE (servers)
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...args] = argv;
  const config = loadCliConfig();
  switch (command) {
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(HELP);
      return command === undefined ? 2 : 0;
    case "serve":
      await runServe(args);
      return -1; // keeps running until a signal
    case "score":
      return runScore(args, process.stdin, process.stdout, process.stderr, config.grpc);
    case "advantages": {
      const r = await runAdvantagesCli([...args], args.includes("--help") ? "" : await text(process.stdin));
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      return r.exitCode;
    }
    case "up":
      return runUp(args, config, process.stdout);
    case "train":
      return runTrain(args, config, process.stdout, process.stderr);
    case "report":
      return runReport(args, process.stdout);
    case "check":
      return runCheck(args, config, process.stdout);
    case "experiment":
      return runExperiment(args, config, process.stdout, process.stderr);
    case "demo":
      return runDemo(args, config, process.stdout, process.stderr);
    case "tasks":
      return runTasks(args, process.stdout, process.stderr);
    default:
      throw new UsageError(`unknown command '${command}' (try 'reward-mesh help')`);
  }
}

try {
  const code = await main(process.argv.slice(2));
  if (code >= 0) process.exitCode = code;
} catch (err) {
  const usage =
    err instanceof Error &&
    [
      "UsageError",
      "UnknownServiceError",
      "RunConfigError",
      "ConfigError",
      "TaskFileError",
      "TaskPolicyMismatchError",
      "TorchUnavailableError",
    ].includes(err.name);
  process.stderr.write(`reward-mesh: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = usage ? 2 : 1;
}
