/**
 * The `reward-mesh` command line. Dispatches to one command module per verb; usage errors are one
 * line on stderr with exit code 2, other failures exit 1.
 */
import { text } from "node:stream/consumers";
import { NodeSDK } from "@opentelemetry/sdk-node";
import { applyTelemetryDefaults } from "@reward-mesh/sdk";
import { runAdvantagesCli } from "@reward-mesh/trainer";
import { wantsHelp } from "./args.js";
import { ADVANTAGES_COMMAND, commandNamed, HELP, helpOf } from "./commands.js";
import { runCheck } from "./commands/check.js";
import { runDemo } from "./commands/demo.js";
import { runEval } from "./commands/eval.js";
import { runExperiment } from "./commands/experiment.js";
import { runAdvantagesServe } from "./commands/advantages-serve.js";
import { runExplain } from "./commands/explain.js";
import { runGateway } from "./commands/gateway.js";
import { runNew } from "./commands/new.js";
import { runProvision } from "./commands/provision.js";
import { runScore } from "./commands/score.js";
import { runServe } from "./commands/serve.js";
import { runTasks, TASKS_COMMAND } from "./commands/tasks.js";
import { runReport, runTrain } from "./commands/train.js";
import { runUp } from "./commands/up.js";
import { loadCliConfig } from "./config.js";
import { cliVersion } from "./version.js";

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case undefined:
      process.stdout.write(HELP);
      return 2;
    case "help":
    case "--help":
    case "-h":
      if (args[0] === "tasks") return runTasks(["help", ...args.slice(1)], process.stdout, process.stderr);
      process.stdout.write(args[0] === undefined ? HELP : helpOf(commandNamed(args[0])));
      return 0;
    case "--version":
    case "-V":
      process.stdout.write(`reward-mesh ${cliVersion()}\n`);
      return 0;
  }
  const spec = commandNamed(command);
  // `tasks` answers `tasks import --help` itself; advantages parses its own flags.
  if (spec !== TASKS_COMMAND && spec !== ADVANTAGES_COMMAND && wantsHelp(spec, args)) {
    process.stdout.write(helpOf(spec));
    return 0;
  }
  const config = loadCliConfig();
  switch (command) {
    case "serve":
      await runServe(args, config.grpc);
      return -1; // keeps running until a signal
    case "score":
      return runScore(args, process.stdin, process.stdout, process.stderr, config.grpc);
    case "advantages": {
      if (args[0] === "serve") {
        await runAdvantagesServe(args.slice(1), config, process.stdout);
        return 0;
      }
      const help = args.includes("--help") || args.includes("-h");
      const r = await runAdvantagesCli([...args], help ? "" : await text(process.stdin));
      process.stdout.write(r.stdout);
      process.stderr.write(r.stderr);
      return r.exitCode;
    }
    case "up":
      return runUp(args, config, process.stdout);
    case "provision":
      return runProvision(args, config, process.stdout, process.stderr);
    case "train":
      return withTelemetry(() => runTrain(args, config, process.stdout, process.stderr));
    case "report":
      return runReport(args, process.stdout);
    case "check":
      return runCheck(args, config, process.stdout);
    case "experiment":
      return withTelemetry(() => runExperiment(args, config, process.stdout, process.stderr));
    case "demo":
      return withTelemetry(() => runDemo(args, config, process.stdout, process.stderr));
    case "explain":
      return runExplain(args, config, process.stdout);
    case "eval":
      return runEval(args, config, process.stdout, process.stderr);
    case "gateway":
      return runGateway(args, config, process.stdout);
    case "tasks":
      return runTasks(args, process.stdout, process.stderr, config);
    case "new":
      return runNew(args, process.stdout);
    default:
      throw new Error(`command '${command}' is listed but not dispatched`);
  }
}

/**
 * The commands that run the trainer in this process install the OpenTelemetry SDK the way the
 * services' entrypoints do: off unless configured (REWARD_MESH_TELEMETRY=on or OTEL_* exporters), then
 * traces to OTLP and metrics on OTEL_EXPORTER_PROMETHEUS_PORT; flushed before the command returns.
 */
async function withTelemetry(run: () => Promise<number>): Promise<number> {
  applyTelemetryDefaults();
  const otel = new NodeSDK({ serviceName: "reward-mesh-trainer" });
  otel.start();
  try {
    return await run();
  } finally {
    await otel.shutdown().catch(() => {});
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
