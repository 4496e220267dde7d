/**
 * `--ui [port]` of `reward-mesh train` and `reward-mesh demo`: the run's live page (trainer's
 * `startLivePage`) on 127.0.0.1, its address printed at start, stopped with the run.
 * @module
 */
import type { Writable } from "node:stream";
import { type LivePage, type RunConfig, runPaths, type StepReport, startLivePage } from "@reward-mesh/trainer";
import { UsageError } from "./io.js";

/** `--ui` in the option tables of train and demo (help only: {@link takeUiFlag} parses it first). */
export const UI_OPTION = {
  type: "string",
  value: "[PORT]",
  description: "serve the run's live page on 127.0.0.1 while it runs (PORT 0 or none: a free port)",
  defaultText: "off",
} as const;

/**
 * Takes `--ui`, `--ui <port>` or `--ui=<port>` out of `args` (the flag's value is optional, which the
 * commands' option tables have no kind for: the tables list it for help, this parses it). `ui` is the port (0: any free one), or undefined without the flag.
 */
export function takeUiFlag(args: readonly string[]): { rest: string[]; ui: number | undefined } {
  const rest: string[] = [];
  let ui: number | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    let value: string | undefined;
    if (a === "--ui") {
      const next = args[i + 1];
      if (next !== undefined && /^\d+$/.test(next)) {
        value = next;
        i++;
      } else value = "0";
    } else if (a.startsWith("--ui=")) value = a.slice("--ui=".length);
    else {
      rest.push(a);
      continue;
    }
    const port = Number(value);
    if (!/^\d+$/.test(value) || port > 65535)
      throw new UsageError(`'--ui' takes a port number 0-65535 (0 or none: any free port), got '${value}'`);
    ui = port;
  }
  return { rest, ui };
}

/**
 * Starts the live page of `config`'s run on `port` and prints `live page: <url>` on `out` (with
 * `--log-format json`: one JSON line, `{"msg":"live page","url":…}`).
 */
export async function openLivePage(
  config: Pick<RunConfig, "runId" | "steps" | "outputDir">,
  port: number,
  out: Writable,
  format: "human" | "json" = "human",
): Promise<LivePage> {
  let live: LivePage;
  try {
    live = await startLivePage({
      runId: config.runId,
      steps: config.steps,
      port,
      metricsFile: runPaths(config.outputDir, config.runId).metrics,
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EADDRINUSE")
      throw new UsageError(
        `'--ui ${port}': port ${port} is in use on 127.0.0.1 ('--ui' alone picks a free port)`,
      );
    throw err;
  }
  out.write(
    format === "json"
      ? `${JSON.stringify({ level: 30, time: Date.now(), msg: "live page", url: live.url })}\n`
      : `live page: ${live.url}\n`,
  );
  return live;
}

/** `runTraining`'s `onStep` for the progress printer and the live page, when there is either. */
export function stepSinks(
  progress: ((s: StepReport) => void) | undefined,
  live: LivePage | undefined,
): { onStep?: (s: StepReport) => void } {
  if (!progress && !live) return {};
  return {
    onStep: (s) => {
      progress?.(s);
      live?.push(s);
    },
  };
}
