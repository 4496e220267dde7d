#!/usr/bin/env node
// Writes the lists of services into the files that cannot discover them at run time, from the services'
// manifests (`rewardMesh.service` in each service's package.json, found by @reward-mesh/sdk
// discoverServices) and the root's workspaces:
// * images/mesh/Dockerfile: the deps stage copies every workspace's package.json before `npm ci` (a
//   Dockerfile cannot glob folders and keep their paths without BuildKit-only syntax), between the
//   `# Every workspace's package.json` comment and its RUN line;
// * helm/reward-mesh/values.yaml: the chart cannot read package.json at install time, so:
//   * a discovered service without a block gets one (the defaults of every block, its manifest's port,
//     health port = port + 10, domains, enabled unless `defaultEnabled: false`) and a `## @param services.<name>` line; the README's values
//     table is rewritten;
//   * an existing block's `enabled` (the manifest's `defaultEnabled`, default true), `port` and
//     `domains` are set to the manifest's (everything else — resources, sandbox, autoscaling — is the
//     chart's own and left alone);
//   * a block no service declares is an error (remove it, or add the service's manifest).
// The edit is textual, so that the rest of values.yaml (comments, flow style) is kept byte for byte.
//   node --import tsx scripts/gen-service-lists.mjs          write both (and the chart README's table)
//   node --import tsx scripts/gen-service-lists.mjs --check  fail when either differs
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { relative } from "node:path";
import { discoverServices, workspaceFolders } from "@reward-mesh/sdk";
import { parse } from "yaml";
import { valuesTable, withTable } from "../helm/test/values-doc.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
export const VALUES_PATH = `${root}helm/reward-mesh/values.yaml`;
const README_PATH = `${root}helm/reward-mesh/README.md`;
export const DOCKERFILE_PATH = `${root}images/mesh/Dockerfile`;

/** The mesh Dockerfile's text with one `COPY <ws>/package.json <ws>/` line per workspace. */
export function dockerfileWithWorkspaces(text, folders = workspaceFolders(root)) {
  const lines = text.split("\n");
  let start = lines.findIndex((l) => l.startsWith("# Every workspace's package.json"));
  while (start >= 0 && lines[start + 1]?.startsWith("#")) start++; // the rest of the comment
  const end = lines.findIndex((l, i) => i > start && l.startsWith("RUN "));
  if (start < 0 || end < 0)
    throw new Error(
      "images/mesh/Dockerfile: no '# Every workspace's package.json' comment followed by a RUN line",
    );
  const copies = folders.map((f) => relative(root, f)).map((ws) => `COPY ${ws}/package.json ${ws}/`);
  lines.splice(start + 1, end - start - 1, ...copies);
  return lines.join("\n");
}

/** A manifest's `defaultEnabled` (default true): the block's `enabled`. */
const enabledOf = (m) => m.defaultEnabled !== false;

/** The lines of a new service block (two-space indented under `services:`). */
function newBlock(m) {
  return [
    `  ${m.name}:`,
    `    enabled: ${enabledOf(m)}`,
    '    image: {repository: "", tag: "", digest: ""}',
    '    envPrefix: ""',
    `    port: ${m.defaultPort}`,
    `    healthPort: ${m.defaultPort + 10}`,
    `    domains: [${m.domains.join(", ")}]`,
    "    args: []",
    "    env: {}",
    "    replicas: 1",
    "    resources: {requests: {cpu: 100m, memory: 192Mi}, limits: {memory: 512Mi}}",
    "    autoscaling: {enabled: true, maxReplicas: 4, targetCPUUtilizationPercentage: 80}",
    "    keda: {lagThreshold: 100, minReplicaCount: 1, maxReplicaCount: 8}",
    "    pdb: {enabled: true}",
    '    sandbox: {enabled: false, mode: bwrap, runtimeClassName: gvisor, seccompLocalhostProfile: "", tmpSizeLimit: 1Gi}',
    "    nodeSelector: {}",
    "    tolerations: []",
    "    affinity: {}",
    "    podAnnotations: {}",
  ];
}

/** values.yaml's text with every discovered service's block present and in step with its manifest. */
export function valuesWithServices(text, services = discoverServices(root)) {
  const lines = text.split("\n");
  const start = lines.indexOf("services:");
  if (start < 0) throw new Error("values.yaml has no top-level 'services:' key");
  let end = start + 1;
  while (end < lines.length && (lines[end].startsWith(" ") || lines[end] === "")) end++;
  const blockAt = (name) => lines.findIndex((l, i) => i > start && i < end && l === `  ${name}:`);
  const declared = new Set(services.map((s) => s.manifest.name));
  for (let i = start + 1; i < end; i++) {
    const m = /^ {2}([a-z0-9-]+):$/.exec(lines[i]);
    if (m && !declared.has(m[1]))
      throw new Error(
        `helm/reward-mesh/values.yaml: services.${m[1]} is no discovered service (no package under services/ declares rewardMesh.service.name '${m[1]}')`,
      );
  }
  for (const { manifest: m } of services) {
    const at = blockAt(m.name);
    if (at >= 0) {
      for (let i = at + 1; i < end && lines[i].startsWith("    "); i++) {
        if (lines[i].startsWith("    enabled: ")) lines[i] = `    enabled: ${enabledOf(m)}`;
        if (lines[i].startsWith("    port: ")) lines[i] = `    port: ${m.defaultPort}`;
        if (lines[i].startsWith("    domains: ")) lines[i] = `    domains: [${m.domains.join(", ")}]`;
      }
      continue;
    }
    let last = end;
    while (lines[last - 1] === "") last--;
    lines.splice(last, 0, ...newBlock(m));
    end += newBlock(m).length;
    const docs = lines.findLastIndex((l, i) => i < start && l.startsWith("## @param services."));
    lines.splice(
      docs + 1,
      0,
      `## @param services.${m.name} Reward service ${m.name} (domains ${m.domains.join(", ")}; from its package.json manifest)`,
    );
  }
  const out = lines.join("\n");
  const parsed = parse(out).services;
  for (const { manifest: m } of services) {
    if (
      parsed[m.name]?.enabled !== enabledOf(m) ||
      parsed[m.name]?.port !== m.defaultPort ||
      parsed[m.name]?.domains?.join() !== m.domains.join()
    )
      throw new Error(
        `helm/reward-mesh/values.yaml: services.${m.name} could not be brought in step with its manifest`,
      );
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = readFileSync(VALUES_PATH, "utf8");
  const want = valuesWithServices(text);
  const docker = readFileSync(DOCKERFILE_PATH, "utf8");
  const wantDocker = dockerfileWithWorkspaces(docker);
  if (process.argv.includes("--check")) {
    const stale = [
      want !== text && "helm/reward-mesh/values.yaml",
      wantDocker !== docker && "images/mesh/Dockerfile",
    ];
    if (stale.some(Boolean)) {
      console.error(
        `gen-service-lists: ${stale.filter(Boolean).join(" and ")} differ from the services — run node --import tsx scripts/gen-service-lists.mjs`,
      );
      process.exit(1);
    }
    console.log(
      "gen-service-lists: helm/reward-mesh/values.yaml and images/mesh/Dockerfile match the services",
    );
  } else {
    writeFileSync(VALUES_PATH, want);
    writeFileSync(README_PATH, withTable(readFileSync(README_PATH, "utf8"), valuesTable(want)));
    writeFileSync(DOCKERFILE_PATH, wantDocker);
    console.log(
      "gen-service-lists: wrote helm/reward-mesh/values.yaml (and its README table) and images/mesh/Dockerfile",
    );
  }
}
