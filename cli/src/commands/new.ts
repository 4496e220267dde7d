/**
 * `reward-mesh new service <name> [--domain a,b] [--port N] [--root DIR]`: writes `services/<name>/`
 * with the skeleton every service has (a working example scoring to replace), links it into the
 * workspace (`node_modules/@reward-mesh/<name>`, what `npm install` would create), regenerates the
 * services' environment schema, and prints the next steps. Nothing outside the new folder is edited:
 * discovery finds the service from its package.json manifest.
 * @module
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative } from "node:path";
import type { Writable } from "node:stream";
import {
  discoverServices,
  findWorkspaceRoot,
  parseServiceManifest,
  workspaceFolders,
} from "@reward-mesh/sdk";
import { BUILTIN_SET_NAMES } from "@reward-mesh/trainer";
import { type CommandSpec, parseCommand, usageLine } from "../args.js";
import { UsageError } from "../io.js";
import { serviceFiles, serviceNames } from "../scaffold/templates.js";

/** The new command's arguments (parsing and `--help` come from this table). */
export const NEW_COMMAND: CommandSpec = {
  name: "new",
  summary: "scaffold a new reward service: reward-mesh new service <name>",
  positionals: [
    { name: "service", description: "what to create (only 'service')" },
    {
      name: "<name>",
      description:
        "the service name: at most 20 lower case letters, digits or '-' (a NATS subject token and a DNS label)",
    },
  ],
  options: {
    domain: {
      type: "string",
      value: "a,b,...",
      default: "custom",
      description: "rollout domains it consumes (code, tool_call, agent, custom, or a new one)",
    },
    port: {
      type: "string",
      value: "N",
      description: "default gRPC port",
      defaultText: "one above the highest in use",
    },
    root: {
      type: "string",
      value: "DIR",
      description: "the workspace to write into",
      defaultText: "the one around the current directory",
    },
  },
  notes: [
    "Writes services/<name>/ only, then regenerates the files that list every service (the environment\n" +
      "schema, the Helm values' services, the mesh Dockerfile); run 'npm install' to record it in package-lock.json.",
  ],
  examples: ["reward-mesh new service word-count --domain custom"],
};

/** A service name: a NATS subject token and a DNS label (its Helm objects), at most 20 characters. */
const NAME = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
/** A domain: a NATS subject token. */
const DOMAIN = /^[a-z][a-z0-9_-]*$/;

/** Runs the command; returns the exit code. */
export function runNew(args: readonly string[], stdout: Writable, cwd: string = process.cwd()): number {
  const { values, positionals } = parseCommand(NEW_COMMAND, args);
  if (positionals[0] !== "service" || positionals.length !== 2) throw new UsageError(usageLine(NEW_COMMAND));
  const name = positionals[1]!;
  if (!NAME.test(name) || name.length > 20)
    throw new UsageError(
      `'<name>' must be at most 20 lower case letters, digits or '-' (a letter first, not '-' last), got '${name}'`,
    );
  const root = typeof values["root"] === "string" ? values["root"] : findWorkspaceRoot(cwd);
  const dir = join(root, "services", name);
  if (!existsSync(join(root, "services"))) throw new UsageError(`${root} has no services/ folder`);
  if (existsSync(dir)) throw new UsageError(`${relative(cwd, dir) || dir} already exists`);
  const existing = discoverServices(root);
  if (existing.some((s) => s.manifest.name === name))
    throw new UsageError(`a service named '${name}' exists already`);
  const domains = String(values["domain"])
    .split(",")
    .map((d) => d.trim());
  for (const d of domains)
    if (!DOMAIN.test(d))
      throw new UsageError(`'--domain' values must be subject tokens (e.g. custom, tool_call), got '${d}'`);
  const used = new Set(existing.map((s) => s.manifest.defaultPort));
  let port: number;
  if (values["port"] !== undefined) {
    port = Number(values["port"]);
    if (!Number.isInteger(port) || port < 1024 || port > 65535)
      throw new UsageError(`'--port' must be an integer in [1024, 65535], got '${values["port"]}'`);
    if (used.has(port)) throw new UsageError(`'--port' ${port} is another service's default port`);
  } else port = Math.max(50060, ...used) + 1;

  const names = serviceNames(name, port, domains);
  const files = serviceFiles(names);
  const pkg = JSON.parse(files["package.json"]!) as { name: string };
  parseServiceManifest(pkg, `services/${name}/package.json`);
  refusePackageClash(root, name, pkg.name);
  createServiceFolder(root, dir, name, files);
  const rel = relative(cwd, dir) || dir;
  stdout.write(nextSteps(rel, name, port, domains));
  return 0;
}

/** Refuses a package name another workspace package, or an installed `@reward-mesh/*` package, has. */
function refusePackageClash(root: string, name: string, packageName: string): void {
  for (const folder of workspaceFolders(root)) {
    const other = (JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as { name?: unknown }).name;
    if (other === packageName)
      throw new UsageError(
        `'${name}' would be package ${packageName}, which ${relative(root, folder)}/ is already; choose another name`,
      );
  }
  const [scope, bare] = packageName.split("/");
  if (bare && existsSync(join(root, "node_modules", scope!, bare)))
    throw new UsageError(
      `'${name}' would be package ${packageName}, which node_modules/${packageName} already is; choose another name`,
    );
}

/**
 * Writes the service into a scratch folder and moves it into place whole, links it into the workspace
 * and runs the generators; when any step fails, the folder and the link are removed again (and the
 * generators rerun without it), so no half-made service is left behind.
 */
function createServiceFolder(root: string, dir: string, name: string, files: Record<string, string>): void {
  const scratch = mkdtempSync(join(root, `.new-service-${name}-`));
  const scope = join(root, "node_modules", "@reward-mesh");
  const link = join(scope, name);
  let linked = false;
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(scratch, path)), { recursive: true });
      writeFileSync(join(scratch, path), text);
    }
    renameSync(scratch, dir);
    // What npm's workspace install creates; `npm install` later records it in package-lock.json.
    if (existsSync(join(root, "node_modules"))) {
      mkdirSync(scope, { recursive: true });
      if (!existsSync(link)) {
        symlinkSync(relative(scope, dir), link, "dir");
        linked = true;
      }
    }
    runGenerators(root);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    if (linked) rmSync(link, { force: true });
    try {
      runGenerators(root); // the lists without the service again
    } catch {
      // the first error is the one to report
    }
    throw err;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  // The house format (the templates are close to it; Biome settles line lengths).
  const biome = join(root, "node_modules", ".bin", "biome");
  if (existsSync(biome)) spawnSync(biome, ["format", "--write", dir], { cwd: root, encoding: "utf8" });
}

/** Regenerates the files that list every service: the environment schema, the Helm values, the Dockerfile. */
function runGenerators(root: string): void {
  for (const script of ["gen-service-env-schema.mjs", "gen-service-lists.mjs"]) {
    const gen = join(root, "scripts", script);
    if (!existsSync(gen)) continue;
    const r = spawnSync(process.execPath, ["--import", "tsx", gen], { cwd: root, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`scripts/${script} failed:\n${r.stderr}`);
  }
}

/**
 * The run config of step 3 (one line of flow YAML): the service's example component on a built-in task
 * set of one of its domains, or (none is built in) a task file of its first domain to write.
 */
function runConfigLine(name: string, domains: readonly string[]): { line: string; note: string } {
  const set = domains.find((d) => d !== "agent" && BUILTIN_SET_NAMES.includes(d));
  const tasks = set ? `{sets: [${set}]}` : `{files: [${domains[0]}-tasks.jsonl]}`;
  return {
    line: `echo '{run: {id: ${name}-1, seed: 1}, tasks: ${tasks}, groupSize: 4, promptsPerStep: 2, steps: 3, components: [{service: ${name}, component: brevity, weight: 1}]}' > run.yaml`,
    note: set
      ? ""
      : `     (no built-in tasks of domain ${domains[0]}: write ${domains[0]}-tasks.jsonl first, see 'reward-mesh tasks check')\n`,
  };
}

/**
 * What `new service` prints after creating `rel`. The commands of each step are the lines indented by 7
 * spaces, meant to run as printed (step 3's are run by cli/test/walkthrough.test.ts).
 */
function nextSteps(rel: string, name: string, port: number, domains: readonly string[]): string {
  const run = runConfigLine(name, domains);
  return `created ${rel}/ (service '${name}', port ${port}, domains ${domains.join(", ")}); linked as @reward-mesh/${name}

next steps:
  1. write your scoring in ${rel}/src/service.ts (components and their ranges; keep the domains equal to
     rewardMesh.service.domains in ${rel}/package.json), and run its tests:
       node scripts/run-tests.mjs services/${name}/
  2. record it in the lockfile and check it:
       npm install && npm run check
  3. train with it: a run config naming its components, the mesh in the background (up records its NATS
     and credentials in .nats/auth/mesh.json; train finds the mesh there, waiting for it to start), a run,
     then the mesh stopped:
${run.note}       ${run.line}
       reward-mesh up --services ${name} &
       reward-mesh train --config run.yaml
       kill %1; wait
`;
}
