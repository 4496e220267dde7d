/**
 * The CLI's version: `version` of cli/package.json (the `@reward-mesh/cli` package), read once when asked.
 * @module
 */
import { readFileSync } from "node:fs";

/** `reward-mesh --version`: `version` of the CLI package's package.json. */
export function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version?: unknown;
  };
  if (typeof pkg.version !== "string" || pkg.version === "")
    throw new Error("cli/package.json has no 'version'");
  return pkg.version;
}
