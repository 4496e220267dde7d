/** What every benchmark records about the machine, and where it writes its JSON (`bench/results/<name>.json`). */
import { mkdirSync, writeFileSync } from "node:fs";
import { arch, cpus, platform, release } from "node:os";
import { fileURLToPath } from "node:url";

/** The machine a figure was measured on. */
export function machineInfo() {
  return {
    cpu: cpus()[0]?.model ?? "unknown",
    logicalCores: cpus().length,
    node: process.version,
    platform: platform(),
    arch: arch(),
    kernel: release(),
  };
}

/** Writes `bench/results/<name>.json`; returns the path relative to the repository root. */
export function writeBenchResult(name: string, result: unknown): string {
  const dir = new URL("./results/", import.meta.url);
  mkdirSync(fileURLToPath(dir), { recursive: true });
  writeFileSync(new URL(`${name}.json`, dir), `${JSON.stringify(result, null, 2)}\n`);
  return `bench/results/${name}.json`;
}
