/**
 * Service discovery: which reward services this build ships, read from the services themselves.
 *
 * A reward service declares itself in its own `package.json`:
 *
 * ```json
 * "rewardMesh": { "service": { "name": "length", "envPrefix": "LENGTH", "defaultPort": 50061,
 *                              "domains": ["code", "custom"], "factory": "createLengthService" } }
 * ```
 *
 * and exports `"."` (an index exporting `loadConfig()` and the named factory, which takes that config)
 * and `"./main"` (its process entrypoint). Discovery finds the packages the way npm does: the
 * workspace root is the nearest directory above this module whose `package.json` has `workspaces`;
 * every workspace folder those globs match is read, and those with a `rewardMesh.service` manifest
 * are services. Adding a service therefore touches only `services/<name>/` (plus the lockfile): the
 * CLI (`serve`, `score`, `up`, the demo), the trainer's default domains and the Helm values generator
 * all read this one list.
 * @module
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Ajv } from "ajv";
import { configuredServiceDomains, type Env, processEnv } from "./config.js";
import { MeshError } from "./errors.js";
import type { RewardServiceDefinition } from "./service.js";

/** What a service package declares under `rewardMesh.service`. */
export interface ServiceManifest {
  /** Service name: a subject token, equal to the name its definition reports. */
  readonly name: string;
  /** Environment prefix of its options (`LENGTH` → `LENGTH_GRPC_PORT`). */
  readonly envPrefix: string;
  /** Default gRPC port (unique in the mesh). */
  readonly defaultPort: number;
  /** Rollout domains it consumes by default (equal to its definition's unless `domainsEnv` is set). */
  readonly domains: readonly string[];
  /**
   * The service's own variable (`<envPrefix>_…`) that replaces `domains` with a comma-separated list,
   * e.g. `REWARD_MODEL_DOMAINS`; see {@link DiscoveredService.domains}.
   */
  readonly domainsEnv?: string;
  /** Name of the factory its index exports: `factory(loadConfig())` is its definition. */
  readonly factory: string;
  /**
   * Whether the mesh runs it when not asked for it by name: `reward-mesh up` without `--services`, the
   * demo, and the Helm values' `services.<name>.enabled`. `false` for a service that is costly to run
   * or meaningless without configuration (e.g. a reward model with test weights). @default true
   */
  readonly defaultEnabled?: boolean;
}

/** A discovered service package. */
export interface DiscoveredService {
  readonly manifest: ServiceManifest;
  /**
   * The domains it consumes as configured ({@link configuredServiceDomains}): the manifest's, or its
   * `domainsEnv` variable's list when set. Credentials, the trainer's defaults and the check of the
   * loaded definition use these.
   */
  readonly domains: readonly string[];
  /** npm package name, e.g. `@reward-mesh/length`. */
  readonly packageName: string;
  /** Absolute folder of the package. */
  readonly dir: string;
  /** Absolute path of its `"."` export. */
  readonly indexPath: string;
  /** Absolute path of its `"./main"` export (what `serve` and `up` run). */
  readonly mainPath: string;
}

/** A package's manifest (or the workspace layout) is unusable; the message names the package and field. */
export class ServiceManifestError extends MeshError {
  override readonly name = "ServiceManifestError";
  readonly retryable = false;
}

/** JSON Schema of `rewardMesh.service`. */
export const SERVICE_MANIFEST_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["name", "envPrefix", "defaultPort", "domains", "factory"],
  properties: {
    // A NATS subject token and a DNS label (the Helm chart names objects after it).
    name: { type: "string", pattern: "^[a-z]([-a-z0-9]*[a-z0-9])?$", maxLength: 20 },
    envPrefix: { type: "string", pattern: "^[A-Z][A-Z0-9_]*$" },
    defaultPort: { type: "integer", minimum: 1024, maximum: 65535 },
    domains: {
      type: "array",
      minItems: 1,
      uniqueItems: true,
      items: { type: "string", pattern: "^[a-z][a-z0-9_-]*$" },
    },
    domainsEnv: { type: "string", pattern: "^[A-Z][A-Z0-9_]*$" },
    factory: { type: "string", pattern: "^[A-Za-z_$][A-Za-z0-9_$]*$" },
    defaultEnabled: { type: "boolean" },
  },
} as const;

const validateManifest = new Ajv({ allErrors: false }).compile(SERVICE_MANIFEST_SCHEMA);

interface PackageJson {
  readonly name?: unknown;
  readonly exports?: unknown;
  readonly rewardMesh?: { readonly service?: unknown };
  readonly workspaces?: unknown;
}

function readPackageJson(file: string): PackageJson {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ServiceManifestError(`${file}: cannot be read`, { cause: err });
  }
  try {
    return JSON.parse(text) as PackageJson;
  } catch (err) {
    throw new ServiceManifestError(`${file}: not valid JSON (${(err as Error).message})`, { cause: err });
  }
}

/**
 * Checks a package's `rewardMesh.service` (undefined when it declares none). `where` names the package
 * in errors, e.g. `services/math/package.json`.
 */
export function parseServiceManifest(pkg: PackageJson, where: string): ServiceManifest | undefined {
  const raw = pkg.rewardMesh?.service;
  if (raw === undefined) return undefined;
  if (!validateManifest(raw)) {
    const e = validateManifest.errors![0]!;
    const field = `rewardMesh.service${e.instancePath.replace(/\/(\d+)/g, "[$1]").replace(/\//g, ".")}`;
    const extra =
      e.keyword === "additionalProperties"
        ? ` ('${(e.params as { additionalProperty: string }).additionalProperty}')`
        : e.keyword === "required"
          ? ` ('${(e.params as { missingProperty: string }).missingProperty}')`
          : "";
    throw new ServiceManifestError(`${where}: '${field}' ${e.message}${extra}`);
  }
  return raw as ServiceManifest;
}

function exportPath(pkg: PackageJson, key: "." | "./main", dir: string, where: string): string {
  const exp = pkg.exports;
  const target = exp && typeof exp === "object" ? (exp as Record<string, unknown>)[key] : undefined;
  if (typeof target !== "string")
    throw new ServiceManifestError(
      `${where}: 'exports["${key}"]' must name a file (a reward service exports "." and "./main")`,
    );
  const file = resolve(dir, target);
  if (!existsSync(file))
    throw new ServiceManifestError(`${where}: 'exports["${key}"]' names ${target}, which does not exist`);
  return file;
}

/** The nearest directory at or above `from` whose `package.json` declares `workspaces`. */
export function findWorkspaceRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = resolve(from);
  for (;;) {
    const file = join(dir, "package.json");
    if (existsSync(file) && Array.isArray(readPackageJson(file).workspaces)) return dir;
    const up = dirname(dir);
    if (up === dir) throw new ServiceManifestError(`no package.json with 'workspaces' at or above ${from}`);
    dir = up;
  }
}

/** Folders matched by the root's `workspaces` globs (`dir` or `dir/*`, npm's common forms). */
export function workspaceFolders(root: string): string[] {
  const globs = readPackageJson(join(root, "package.json")).workspaces as unknown[];
  const out: string[] = [];
  for (const [i, g] of globs.entries()) {
    if (typeof g !== "string" || /[*?[{]/.test(g.replace(/\/\*$/, "")))
      throw new ServiceManifestError(
        `${join(root, "package.json")}: 'workspaces[${i}]' (${JSON.stringify(g)}) must be a folder or 'folder/*'`,
      );
    if (g.endsWith("/*")) {
      const parent = join(root, g.slice(0, -2));
      if (!existsSync(parent)) continue;
      for (const name of readdirSync(parent).sort()) {
        const d = join(parent, name);
        if (statSync(d).isDirectory() && existsSync(join(d, "package.json"))) out.push(d);
      }
    } else if (existsSync(join(root, g, "package.json"))) out.push(join(root, g));
  }
  return out;
}

/**
 * Every reward service of the workspace at `root`, sorted by name. Throws
 * {@link ServiceManifestError} for an invalid manifest, or two services sharing a name, port or prefix;
 * `ConfigError` for an invalid value of a manifest's `domainsEnv` variable in `env`.
 */
export function discoverServices(
  root: string = findWorkspaceRoot(),
  env: Env = processEnv(),
): DiscoveredService[] {
  const found: DiscoveredService[] = [];
  for (const dir of workspaceFolders(root)) {
    const where = relative(root, join(dir, "package.json"));
    const pkg = readPackageJson(join(dir, "package.json"));
    const manifest = parseServiceManifest(pkg, where);
    if (!manifest) continue;
    if (typeof pkg.name !== "string") throw new ServiceManifestError(`${where}: 'name' is required`);
    if (manifest.domainsEnv !== undefined && !manifest.domainsEnv.startsWith(`${manifest.envPrefix}_`))
      throw new ServiceManifestError(
        `${where}: 'rewardMesh.service.domainsEnv' (${manifest.domainsEnv}) must be one of the service's own variables (${manifest.envPrefix}_…)`,
      );
    found.push({
      manifest,
      domains: configuredServiceDomains(manifest, env),
      packageName: pkg.name,
      dir,
      indexPath: exportPath(pkg, ".", dir, where),
      mainPath: exportPath(pkg, "./main", dir, where),
    });
  }
  for (const key of ["name", "defaultPort", "envPrefix"] as const) {
    const seen = new Map<unknown, string>();
    for (const s of found) {
      const prev = seen.get(s.manifest[key]);
      if (prev)
        throw new ServiceManifestError(
          `${s.packageName} and ${prev} both declare 'rewardMesh.service.${key}' = ${JSON.stringify(s.manifest[key])}`,
        );
      seen.set(s.manifest[key], s.packageName);
    }
  }
  return found.sort((a, b) => a.manifest.name.localeCompare(b.manifest.name));
}

/**
 * The service's definition configured from the environment: its index's `factory(loadConfig())`
 * (awaited: a factory may be async).
 * Checks that the definition agrees with the manifest: its name, and its domains with the configured
 * ones ({@link DiscoveredService.domains}: the manifest's, or its `domainsEnv` variable's list).
 */
export async function loadDiscoveredService(s: DiscoveredService): Promise<RewardServiceDefinition> {
  const m = (await import(pathToFileURL(s.indexPath).href)) as Record<string, unknown>;
  const where = `${s.packageName} (${s.indexPath})`;
  const { factory } = s.manifest;
  if (typeof m["loadConfig"] !== "function")
    throw new ServiceManifestError(`${where} does not export 'loadConfig'`);
  if (typeof m[factory] !== "function")
    throw new ServiceManifestError(`${where} does not export '${factory}' (rewardMesh.service.factory)`);
  // A factory may be async (e.g. one that loads a model first).
  const def = await (
    m[factory] as (c: unknown) => RewardServiceDefinition | Promise<RewardServiceDefinition>
  )((m["loadConfig"] as () => unknown)());
  if (def.name !== s.manifest.name)
    throw new ServiceManifestError(
      `${s.packageName}: 'rewardMesh.service.name' is '${s.manifest.name}' but its definition is named '${def.name}'`,
    );
  const a = [...def.domains].sort().join(",");
  const b = [...s.domains].sort().join(",");
  if (a !== b) {
    const which =
      s.manifest.domainsEnv === undefined
        ? "'rewardMesh.service.domains' is"
        : `the configured domains ('rewardMesh.service.domains', or ${s.manifest.domainsEnv} when set) are`;
    throw new ServiceManifestError(`${s.packageName}: ${which} [${b}] but its definition consumes [${a}]`);
  }
  return def;
}
