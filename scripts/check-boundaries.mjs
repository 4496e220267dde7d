#!/usr/bin/env node
// Architecture checks that the compiler cannot make (verl tests/special_sanity style):
//   1. services never import other services (only @reward-mesh/proto, /sdk, /sandbox);
//   2. only entrypoints (main.ts) install the OpenTelemetry SDK — library code imports @opentelemetry/api;
//   3. no process.env outside config modules (config.ts);
//   4. no deep imports into another package's src/ (exports maps are the boundary);
//   5. every service folder has the same skeleton and a README;
//   6. the advantage engine stays pure (no node: I/O modules outside its test helpers);
//   7. the repository is self-contained: nothing reads or links ../shared, no Markdown link leaves it;
//   8. the trainer imports no service: it knows reward services and environments only through the
//      contract (proto; e.g. the agent tasks come from AgentEnvironment.ListTasks). Its tests may.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const LIBS = new Set(["sdk", "sandbox"]);
const SKELETON = [
  "src/index.ts",
  "src/main.ts",
  "src/service.ts",
  "src/config.ts",
  "src/errors.ts",
  "README.md",
];
const OTEL_SDK = /^@opentelemetry\/(?!api$)/;
const problems = [];

function walk(dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir)) {
    if (e === "node_modules" || e === "gen") continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (e.endsWith(".ts")) out.push(p);
  }
  return out;
}

const isTest = (f) => f.endsWith(".test.ts") || f.includes(`${sep}test${sep}`) || f.endsWith(".fixture.ts");
const importsOf = (src) =>
  [
    ...src.matchAll(/(?:import|export)\s[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g),
  ].map((m) => m[1] ?? m[2]);

const serviceDirs = readdirSync(join(root, "services")).filter((d) =>
  statSync(join(root, "services", d)).isDirectory(),
);
const srcRoots = [
  join(root, "proto", "src"),
  join(root, "trainer", "src"),
  join(root, "cli", "src"),
  ...serviceDirs.map((d) => join(root, "services", d, "src")),
];

for (const dir of srcRoots) {
  for (const file of walk(dir)) {
    const rel = relative(root, file);
    const src = readFileSync(file, "utf8");
    const test = isTest(file);
    for (const spec of importsOf(src)) {
      if (!test && OTEL_SDK.test(spec) && basename(file) !== "main.ts") {
        problems.push(
          `${rel}: imports ${spec}; only main.ts may install the OpenTelemetry SDK (use @opentelemetry/api)`,
        );
      }
      const deep = spec.match(/^@reward-mesh\/[^/]+\/src\//);
      if (deep) problems.push(`${rel}: deep import '${spec}'; use the package's exports`);
      const svc = rel.match(/^services\/([^/]+)\//)?.[1];
      if (svc && !LIBS.has(svc)) {
        const target = spec.match(/^@reward-mesh\/([^/]+)/)?.[1];
        if (target && !["proto", "sdk", "sandbox"].includes(target)) {
          problems.push(
            `${rel}: service '${svc}' imports @reward-mesh/${target}; services share only proto, sdk and sandbox`,
          );
        }
        if (
          spec.startsWith("..") &&
          relative(join(root, "services", svc), join(file, "..", spec)).startsWith("..")
        ) {
          problems.push(`${rel}: relative import '${spec}' leaves the service folder`);
        }
      }
      const trainerTarget = rel.startsWith(`trainer${sep}src${sep}`) && spec.match(/^@reward-mesh\/([^/]+)/)?.[1];
      if (!test && trainerTarget && !["proto", "sdk", "trainer"].includes(trainerTarget)) {
        problems.push(
          `${rel}: the trainer imports @reward-mesh/${trainerTarget}; it reaches services only through the contract (proto)`,
        );
      }
      if (
        rel.startsWith(`trainer${sep}src${sep}advantage`) &&
        !test &&
        !/(testing|reference)\.ts$/.test(file) &&
        /^node:/.test(spec)
      ) {
        problems.push(`${rel}: the advantage engine is pure; '${spec}' is I/O`);
      }
    }
    if (!test && /process\.env\b/.test(src) && basename(file) !== "config.ts") {
      problems.push(`${rel}: reads process.env; only config.ts modules read the environment`);
    }
  }
}

for (const d of serviceDirs) {
  if (LIBS.has(d)) continue;
  for (const f of SKELETON) {
    if (!existsSync(join(root, "services", d, f)))
      problems.push(`services/${d}: missing ${f} (every service has the same skeleton)`);
  }
}

// Self-contained: no tracked file reads or links the reference folder beside the repository, and no
// Markdown link resolves outside it (a user's clone has neither).
const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
  .split("\0")
  .filter((f) => /\.(md|ts|mjs|js|py|sh|yaml|json)$/.test(f) && !f.startsWith("proto/src/gen/"));
for (const rel of tracked) {
  const file = join(root, rel);
  if (!existsSync(file)) continue;
  const src = readFileSync(file, "utf8");
  if (/\.\.\/shared\/|(^|[^\w/-])shared\/specs\//m.test(src) && rel !== "scripts/check-boundaries.mjs")
    problems.push(
      `${rel}: refers to the reference folder outside the repository (shared/); a clone has none`,
    );
  if (!rel.endsWith(".md")) continue;
  for (const m of src.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
    const target = m[1];
    if (/^[a-z]+:/i.test(target)) continue; // a URL
    const resolved = resolve(dirname(file), target);
    if (relative(root, resolved).startsWith(".."))
      problems.push(`${rel}: link '${target}' leaves the repository`);
  }
}

if (problems.length) {
  for (const p of problems) console.error(`check-boundaries: ${p}`);
  process.exit(1);
}
console.log(
  `check-boundaries: ok (${srcRoots.length} source roots, ${serviceDirs.length - [...LIBS].filter((l) => serviceDirs.includes(l)).length} services)`,
);
