/**
 * `reward-mesh serve <service>`: runs one reward service in this process (gRPC + JetStream worker),
 * exactly as its `main.ts` does in a container.
 * @module
 */
import { pathToFileURL } from "node:url";
import { UsageError } from "../io.js";
import { serviceEntry } from "../services.js";

/** Usage of the serve command. */
export const SERVE_USAGE =
  "usage: reward-mesh serve <service>   (options come from <PREFIX>_* environment variables)";

/** Imports the service's entrypoint, which runs until SIGTERM/SIGINT. */
export async function runServe(args: readonly string[]): Promise<void> {
  if (args.length !== 1 || args[0]!.startsWith("-")) throw new UsageError(SERVE_USAGE);
  await import(pathToFileURL(serviceEntry(args[0]!).mainPath()).href);
}
