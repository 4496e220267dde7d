/**
 * Runs one container of a rendered Pod template with Docker, the way a kubelet would: the same image,
 * command and args (`$(VAR)` expanded), env (values, Secret and ConfigMap keys, the downward API),
 * Secret/ConfigMap volumes as read-only files, emptyDir as tmpfs, PVCs as fresh directories, and the
 * security context (user, read-only root, dropped capabilities, no new privileges). Pods share one Docker
 * network on which each answers to the DNS names of the Services that select it, so the chart's own
 * addresses resolve. This proves the chart's wiring with the real images without a Kubernetes cluster;
 * it is not a kubelet (no probes are run by it, no restarts, no resource enforcement beyond memory).
 * @module
 */
import { execFile } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

import { type Any, find, type K8sObject, podSpec } from "./helm.js";

const run = promisify(execFile);

type Json = Any;

/** The labels of a workload's pods (or of a bare Pod). */
function podLabels(o: K8sObject): Record<string, string> {
  return (o.kind === "Pod" ? o.metadata["labels"] : o["spec"]?.template?.metadata?.labels) ?? {};
}

/** The decoded value of `key` in the rendered Secret `name`. */
export function secretValue(docs: readonly K8sObject[], name: string, key: string): string {
  const s = find(docs, "Secret", name);
  if (s["stringData"]?.[key] !== undefined) return String(s["stringData"][key]);
  const b64 = s["data"]?.[key];
  if (b64 === undefined) throw new Error(`Secret/${name} has no key ${key}`);
  return Buffer.from(String(b64), "base64").toString("utf8");
}

function configMapValue(docs: readonly K8sObject[], name: string, key: string): string {
  const c = find(docs, "ConfigMap", name);
  const v = c["data"]?.[key];
  if (v === undefined) throw new Error(`ConfigMap/${name} has no key ${key}`);
  return String(v);
}

/** Kubernetes `$(VAR)` expansion (`$$(VAR)` escapes; unknown names stay as written). */
export function expand(s: string, env: Readonly<Record<string, string>>): string {
  return s.replace(/\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) =>
    name === undefined ? "$(" : (env[name] ?? m),
  );
}

interface PodIdentity {
  readonly name: string;
  readonly namespace: string;
}

function resolveEnv(docs: readonly K8sObject[], c: Json, pod: PodIdentity): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const src = from.secretRef
      ? find(docs, "Secret", from.secretRef.name)
      : find(docs, "ConfigMap", from.configMapRef.name);
    const data = from.secretRef
      ? Object.fromEntries(
          Object.entries(src["data"] ?? {}).map(([k, v]) => [k, Buffer.from(String(v), "base64").toString()]),
        )
      : (src["data"] ?? {});
    for (const [k, v] of Object.entries(data)) env[`${from.prefix ?? ""}${k}`] = String(v);
  }
  for (const e of c.env ?? []) {
    const vf = e.valueFrom;
    if (!vf) env[e.name] = expand(String(e.value ?? ""), env);
    else if (vf.secretKeyRef) env[e.name] = secretValue(docs, vf.secretKeyRef.name, vf.secretKeyRef.key);
    else if (vf.configMapKeyRef)
      env[e.name] = configMapValue(docs, vf.configMapKeyRef.name, vf.configMapKeyRef.key);
    else if (vf.fieldRef) {
      const f = vf.fieldRef.fieldPath as string;
      const known: Record<string, string> = {
        "metadata.name": pod.name,
        "metadata.namespace": pod.namespace,
        "spec.nodeName": "docker",
        "status.podIP": "0.0.0.0",
        "status.hostIP": "0.0.0.0",
      };
      if (known[f] === undefined) throw new Error(`env ${e.name}: fieldRef ${f} is not emulated`);
      env[e.name] = known[f]!;
    } else if (vf.resourceFieldRef) env[e.name] = "0";
    else throw new Error(`env ${e.name}: unsupported valueFrom ${JSON.stringify(vf)}`);
  }
  return env;
}

/** A started container: its Docker name and address on the network. */
export interface StartedPod {
  readonly container: string;
  readonly ip: string;
  /** `docker logs` of the container (for failure messages). */
  logs(): Promise<string>;
  /** Waits for the container to exit and returns its exit code. */
  wait(timeoutMs: number): Promise<number>;
  remove(): Promise<void>;
}

/** What to run and where. */
export interface RunPodOptions {
  readonly docs: readonly K8sObject[];
  readonly workload: K8sObject;
  /** The container to run (default: the first). */
  readonly container?: string;
  /** The pod's name (StatefulSets: `<name>-0`); defaults to the workload's name. */
  readonly podName?: string;
  readonly namespace: string;
  readonly network: string;
  /** Files of Secret/ConfigMap/PVC volumes are written under this directory. */
  readonly workDir: string;
  /** Extra DNS names this pod answers to (beyond the Services selecting it). */
  readonly aliases?: readonly string[];
}

function selects(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** DNS names a pod answers to in the cluster: every Service selecting it, short and qualified. */
export function serviceAliases(
  docs: readonly K8sObject[],
  labels: Record<string, string>,
  namespace: string,
  podName: string,
): string[] {
  const out: string[] = [];
  for (const s of docs.filter((d) => d.kind === "Service")) {
    if (!selects(s["spec"]?.selector, labels)) continue;
    const n = s.metadata.name;
    out.push(n, `${n}.${namespace}`, `${n}.${namespace}.svc`, `${n}.${namespace}.svc.cluster.local`);
    if (s["spec"]?.clusterIP === "None")
      out.push(
        `${podName}.${n}`,
        `${podName}.${n}.${namespace}.svc`,
        `${podName}.${n}.${namespace}.svc.cluster.local`,
      );
  }
  return out;
}

function writeVolumeFiles(
  docs: readonly K8sObject[],
  v: Json,
  dir: string,
  owner: { uid: number; gid: number },
): void {
  mkdirSync(dir, { recursive: true });
  const src = v.secret
    ? {
        kind: "Secret",
        name: v.secret.secretName as string,
        items: v.secret.items,
        mode: v.secret.defaultMode,
      }
    : {
        kind: "ConfigMap",
        name: v.configMap.name as string,
        items: v.configMap.items,
        mode: v.configMap.defaultMode,
      };
  const obj = find(docs, src.kind, src.name);
  const entries: Array<[string, Buffer]> =
    src.kind === "Secret"
      ? [
          ...Object.entries(obj["data"] ?? {}).map(
            ([k, b]) => [k, Buffer.from(String(b), "base64")] as [string, Buffer],
          ),
          ...Object.entries(obj["stringData"] ?? {}).map(
            ([k, s]) => [k, Buffer.from(String(s))] as [string, Buffer],
          ),
        ]
      : Object.entries(obj["data"] ?? {}).map(([k, s]) => [k, Buffer.from(String(s))] as [string, Buffer]);
  const byKey = new Map(entries);
  const files: Array<[string, Buffer, number | undefined]> = src.items
    ? (src.items as Json[]).map((i) => {
        const b = byKey.get(i.key);
        if (!b) throw new Error(`${src.kind}/${src.name} has no key ${i.key}`);
        return [i.path as string, b, i.mode as number | undefined];
      })
    : entries.map(([k, b]) => [k, b, undefined]);
  for (const [path, body, mode] of files) {
    const f = join(dir, path);
    mkdirSync(dirname(f), { recursive: true });
    writeFileSync(f, body);
    // Kubernetes makes projected files readable by the pod's fsGroup; here, by the container's user.
    chmodSync(f, mode ?? src.mode ?? 0o644);
    chownSync(f, owner.uid, owner.gid);
  }
}

function dockerRunArgs(o: RunPodOptions): { args: string[]; name: string } {
  const labels = podLabels(o.workload);
  const spec = podSpec(o.workload);
  const containers: Json[] = spec.containers ?? [];
  const c = o.container ? containers.find((x) => x.name === o.container) : containers[0];
  if (!c)
    throw new Error(
      `${o.workload.kind}/${o.workload.metadata.name} has no container ${o.container ?? "(any)"}`,
    );
  const podName = o.podName ?? o.workload.metadata.name;
  const name = `${o.network}-${podName}-${c.name}`.replace(/[^a-zA-Z0-9_.-]/g, "-");
  const env = resolveEnv(o.docs, c, { name: podName, namespace: o.namespace });
  const sc = { ...(spec.securityContext ?? {}), ...(c.securityContext ?? {}) };
  const uid = sc.runAsUser ?? 0;
  const gid = sc.runAsGroup ?? uid;
  // json-file: the daemon's default here is `none` (sandbox containers), and a failure needs the logs.
  const args = ["run", "-d", "--name", name, "--log-driver", "json-file", "--network", o.network];
  args.push("--hostname", podName);
  for (const a of new Set([...serviceAliases(o.docs, labels, o.namespace, podName), ...(o.aliases ?? [])]))
    args.push("--network-alias", a);
  if (sc.runAsUser !== undefined) args.push("--user", `${uid}:${gid}`);
  if (spec.securityContext?.fsGroup !== undefined)
    args.push("--group-add", String(spec.securityContext.fsGroup));
  if (sc.readOnlyRootFilesystem) args.push("--read-only");
  for (const cap of sc.capabilities?.drop ?? []) args.push("--cap-drop", cap);
  for (const cap of sc.capabilities?.add ?? []) args.push("--cap-add", cap);
  if (sc.allowPrivilegeEscalation === false) args.push("--security-opt", "no-new-privileges");
  if (sc.privileged) throw new Error(`${name}: privileged containers are not run by this test`);
  // Docker's seccomp default is the runtime default Kubernetes means by RuntimeDefault.
  const seccomp = sc.seccompProfile?.type as string | undefined;
  if (seccomp === "Unconfined") args.push("--security-opt", "seccomp=unconfined");
  else if (seccomp === "Localhost") throw new Error(`${name}: Localhost seccomp profiles are not emulated`);
  // An unmasked /proc (Kubernetes asks for a pod user namespace with it, which Docker cannot give one
  // container: that part is not emulated).
  if (sc.procMount === "Unmasked") args.push("--security-opt", "systempaths=unconfined");
  const podAnnotations =
    (o.workload.kind === "Pod"
      ? o.workload.metadata.annotations
      : o.workload["spec"]?.template?.metadata?.annotations) ?? {};
  if (podAnnotations[`container.apparmor.security.beta.kubernetes.io/${c.name}`] === "unconfined")
    args.push("--security-opt", "apparmor=unconfined");
  const mem = c.resources?.limits?.memory as string | undefined;
  if (mem)
    args.push(
      "--memory",
      mem.replace(/i$/, "").replace(/([KMG])$/, (u) => u.toLowerCase()),
    );
  if (c.workingDir) args.push("-w", c.workingDir);
  for (const [k, v] of Object.entries(env)) args.push("-e", `${k}=${v}`);
  const volumes = new Map<string, Json>(((spec.volumes ?? []) as Json[]).map((v) => [v.name, v]));
  const claims = new Map<string, Json>(
    ((o.workload["spec"]?.volumeClaimTemplates ?? []) as Json[]).map((v) => [v.metadata.name, v]),
  );
  for (const m of c.volumeMounts ?? []) {
    const v = volumes.get(m.name);
    const hostDir = join(o.workDir, podName, m.name);
    if (v?.emptyDir) {
      const size = v.emptyDir.sizeLimit
        ? `,tmpfs-size=${String(v.emptyDir.sizeLimit).replace(/i$/, "")}`
        : "";
      args.push("--mount", `type=tmpfs,destination=${m.mountPath},tmpfs-mode=1777${size}`);
      continue;
    }
    if (v?.secret || v?.configMap) {
      writeVolumeFiles(o.docs, v, hostDir, { uid, gid });
      const target = m.subPath ? join(hostDir, m.subPath) : hostDir;
      args.push("--mount", `type=bind,source=${target},destination=${m.mountPath},readonly`);
      continue;
    }
    if (claims.has(m.name) || v?.persistentVolumeClaim) {
      mkdirSync(hostDir, { recursive: true });
      chownSync(hostDir, uid, spec.securityContext?.fsGroup ?? gid);
      args.push("--mount", `type=bind,source=${hostDir},destination=${m.mountPath}`);
      continue;
    }
    throw new Error(`${name}: volume ${m.name} (${JSON.stringify(v)}) is not emulated`);
  }
  const command: string[] = (c.command ?? []).map((s: string) => expand(s, env));
  const cargs: string[] = (c.args ?? []).map((s: string) => expand(s, env));
  if (command.length > 0) args.push("--entrypoint", command[0]!);
  args.push(c.image, ...command.slice(1), ...cargs);
  return { args, name };
}

/** Starts the container; resolves once Docker reports it started (readiness is the caller's). */
export async function runPod(o: RunPodOptions): Promise<StartedPod> {
  const { args, name } = dockerRunArgs(o);
  await run("docker", ["rm", "-f", name]).catch(() => undefined);
  await run("docker", args, { maxBuffer: 1 << 20 });
  const { stdout } = await run("docker", [
    "inspect",
    "-f",
    "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
    name,
  ]);
  return {
    container: name,
    ip: stdout.trim(),
    logs: async () => {
      const r = await run("docker", ["logs", "--tail", "60", name], { maxBuffer: 8 << 20 }).catch(
        (e: Error) => ({ stdout: "", stderr: e.message }),
      );
      return `${r.stdout}${r.stderr}`;
    },
    wait: async (timeoutMs) => {
      const r = await run("docker", ["wait", name], { timeout: timeoutMs });
      return Number(r.stdout.trim());
    },
    remove: async () => {
      await run("docker", ["rm", "-f", "-v", name]).catch(() => undefined);
    },
  };
}

/** A Docker network and scratch directory for one test's pods; `close()` removes both and every pod. */
export async function podNetwork(prefix: string): Promise<{
  readonly network: string;
  readonly workDir: string;
  readonly pods: StartedPod[];
  close(): Promise<void>;
}> {
  const network = `${prefix}-${process.pid}`;
  await run("docker", ["network", "rm", network]).catch(() => undefined);
  await run("docker", ["network", "create", "--driver", "bridge", network]);
  const workDir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  chmodSync(workDir, 0o755);
  const pods: StartedPod[] = [];
  return {
    network,
    workDir,
    pods,
    close: async () => {
      for (const p of pods) await p.remove();
      await run("docker", ["network", "rm", network]).catch(() => undefined);
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}
