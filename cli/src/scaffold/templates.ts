/**
 * The files of a new reward service (`reward-mesh new service <name>`): the same skeleton as every
 * service (src/{config,errors,service,main,index}.ts, README, a unit test and an end-to-end test through
 * real NATS and gRPC), with a `rewardMesh.service` manifest in its package.json so that discovery picks
 * it up. The scoring is a small working example (`words`, `brevity`) meant to be replaced.
 * @module
 */

/** Names derived from the service name. */
export interface ServiceNames {
  /** `word-count` */
  readonly name: string;
  /** `WORD_COUNT` (environment prefix) */
  readonly prefix: string;
  /** `WordCount` */
  readonly pascal: string;
  readonly port: number;
  readonly domains: readonly string[];
}

/** The names of service `name`. */
export function serviceNames(name: string, port: number, domains: readonly string[]): ServiceNames {
  const parts = name.split(/[-_]/).filter(Boolean);
  return {
    name,
    prefix: name.toUpperCase().replace(/[^A-Z0-9]/g, "_"),
    pascal: parts.map((p) => p[0]!.toUpperCase() + p.slice(1)).join(""),
    port,
    domains,
  };
}

const q = (s: string) => JSON.stringify(s);
// Spelled in two parts: scripts/check-boundaries.mjs reads import specifiers in text, and only the
// generated main.ts (not this module) installs the OpenTelemetry SDK.
const OTEL_SDK_NODE = ["@opentelemetry", "sdk-node"].join("/");

/** `package.json`, with the `rewardMesh.service` manifest discovery reads. */
function packageJson(n: ServiceNames): string {
  const { name, prefix: P, pascal } = n;
  return `${JSON.stringify(
    {
      name: `@reward-mesh/${name}`,
      version: "0.1.0",
      private: true,
      type: "module",
      description: `reward-mesh ${name} service.`,
      exports: { ".": "./src/index.ts", "./main": "./src/main.ts" },
      dependencies: {
        [OTEL_SDK_NODE]: "0.223.0",
        "@reward-mesh/proto": "0.1.0",
        "@reward-mesh/sdk": "0.1.0",
      },
      rewardMesh: {
        service: {
          name,
          envPrefix: P,
          defaultPort: n.port,
          domains: [...n.domains],
          factory: `create${pascal}Service`,
        },
      },
    },
    null,
    2,
  )}\n`;
}

/** `src/config.ts`: the environment, declared once (`defineEnv`, `defineServiceEnv`). */
function configTs(n: ServiceNames): string {
  const { name, prefix: P, pascal } = n;
  return `/**
 * Configuration of the ${name} service (prefix \`${P}_\`). The only module here that reads the
 * environment.
 * @module
 */
import {
  defineEnv,
  defineServiceEnv,
  type Env,
  loadEnv,
  loadServiceRuntimeOptions,
  processEnv,
  type ServiceRuntimeOptions,
} from "@reward-mesh/sdk";

/** Default gRPC port of the ${name} service. */
export const ${P}_DEFAULT_PORT = ${n.port};

/** The ${name} service's own variables. */
export const ${P}_ENV = defineEnv({
  ${P}_MAX_WORDS: {
    type: "integer",
    minimum: 1,
    default: 64,
    description: "Responses of this many words or more get brevity 0.",
  },
});

/** Every variable the ${name} process reads (its definition in the published schema). */
export const ${P}_SERVICE_ENV = defineServiceEnv({
  service: ${q(name)},
  prefix: ${q(P)},
  defaultPort: ${P}_DEFAULT_PORT,
  own: ${P}_ENV,
});

/** Scoring options of the ${name} service. */
export interface ${pascal}Options {
  /** Responses of this many words or more get brevity 0. @default 64 */
  readonly maxWords: number;
}

/** Everything the ${name} process needs. */
export interface ${pascal}Config extends ${pascal}Options {
  readonly runtime: ServiceRuntimeOptions;
}

/** Reads \`${P}_MAX_WORDS\` and the runtime options. */
export function loadConfig(env: Env = processEnv()): ${pascal}Config {
  const v = loadEnv(${P}_ENV, env);
  return { maxWords: v.${P}_MAX_WORDS, runtime: loadServiceRuntimeOptions(${q(P)}, ${P}_DEFAULT_PORT, env) };
}
`;
}

/** `src/errors.ts`. */
function errorsTs(n: ServiceNames): string {
  const { name } = n;
  return `/**
 * Errors of the ${name} service. Bad metadata is the caller's fault: an {@link InvalidArgumentError}
 * naming the metadata key (INVALID_ARGUMENT over gRPC, dead-lettered over JetStream).
 * @module
 */
import { InvalidArgumentError } from "@reward-mesh/sdk";

/** A metadata value that cannot be used; the field is \`rollout.metadata["<key>"]\`. */
export function invalidMetadata(key: string, problem: string): InvalidArgumentError {
  return new InvalidArgumentError(\`rollout.metadata["\${key}"]\`, problem);
}
`;
}

/** `src/service.ts`: the definition and its (example) scoring. */
function serviceTs(n: ServiceNames): string {
  const { name, prefix: P, pascal } = n;
  const domains = `[${n.domains.map(q).join(", ")}]`;
  return `/**
 * The ${name} service: \`words\` (whitespace-separated words of the response) and \`brevity\`
 * (1 − min(1, words / max_words)). Replace this scoring with yours: declare each component (name,
 * range) and return one value per declared component.
 *
 * Per-rollout override: metadata \`${name}.max_words\` (a positive integer).
 * @module
 */
import type { Rollout } from "@reward-mesh/proto";
import { defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import type { ${pascal}Options } from "./config.js";
import { invalidMetadata } from "./errors.js";

/** Version of the scoring logic (reported in every result). */
export const ${P}_SERVICE_VERSION = "0.1.0";

/** Metadata key overriding \`maxWords\` for one rollout. */
export const MAX_WORDS_METADATA = ${q(`${name}.max_words`)};

function maxWordsOf(rollout: Rollout, def: number): number {
  const v = rollout.metadata[MAX_WORDS_METADATA];
  if (v === undefined || v.trim() === "") return def;
  if (!/^\\d{1,9}$/.test(v.trim()) || Number(v) < 1)
    throw invalidMetadata(MAX_WORDS_METADATA, \`must be a positive integer, got \${JSON.stringify(v)}\`);
  return Number(v);
}

/** Creates the ${name} service. */
export function create${pascal}Service(options: ${pascal}Options): RewardServiceDefinition {
  return defineRewardService({
    name: ${q(name)},
    version: ${P}_SERVICE_VERSION,
    // Keep equal to rewardMesh.service.domains in package.json (discovery checks it).
    domains: ${domains},
    components: [
      { name: "words", description: "whitespace-separated words of the response", min: 0, max: Number.POSITIVE_INFINITY },
      { name: "brevity", description: "1 - min(1, words / max_words)", min: 0, max: 1 },
    ],
    validate: (rollout) => {
      maxWordsOf(rollout, options.maxWords);
    },
    score: async (rollout) => {
      const words = rollout.response.split(/\\s+/).filter(Boolean).length;
      const maxWords = maxWordsOf(rollout, options.maxWords);
      return [
        { name: "words", value: words },
        { name: "brevity", value: 1 - Math.min(1, words / maxWords), details: \`\${words} of \${maxWords} words\` },
      ];
    },
  });
}
`;
}

/** `src/main.ts`: the process entrypoint. */
function mainTs(n: ServiceNames): string {
  const { name, pascal } = n;
  return `/**
 * Entrypoint of the ${name} service: config, OpenTelemetry SDK, gRPC + JetStream worker, drain on SIGTERM.
 * Run with \`reward-mesh serve ${name}\`.
 */
import { NodeSDK } from "${OTEL_SDK_NODE}";
import { applyTelemetryDefaults, createLogger, serveRewardService } from "@reward-mesh/sdk";
import { loadConfig } from "./config.js";
import { create${pascal}Service } from "./service.js";

const config = loadConfig();
applyTelemetryDefaults();
const otel = new NodeSDK({ serviceName: ${q(`reward-mesh-${name}`)} });
otel.start();
const logger = createLogger({ service: ${q(name)}, level: config.runtime.logLevel });
await serveRewardService(create${pascal}Service(config), config.runtime, logger, () => otel.shutdown());
`;
}

/** `src/index.ts`: the public exports. */
function indexTs(n: ServiceNames): string {
  const { name, prefix: P, pascal } = n;
  return `/**
 * \`@reward-mesh/${name}\`: the ${name} reward service.
 * @module
 */
export type { ${pascal}Config, ${pascal}Options } from "./config.js";
export { ${P}_DEFAULT_PORT, ${P}_ENV, ${P}_SERVICE_ENV, loadConfig } from "./config.js";
export { create${pascal}Service, MAX_WORDS_METADATA, ${P}_SERVICE_VERSION } from "./service.js";
`;
}

/** `src/service.test.ts`: the scoring and the configuration, in process. */
function serviceTestTs(n: ServiceNames): string {
  const { name, prefix: P, pascal } = n;
  return `import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { makeRollout } from "@reward-mesh/sdk/testing";
import { loadConfig } from "./config.js";
import { create${pascal}Service } from "./service.js";

describe("${name} service", () => {
  const svc = create${pascal}Service({ maxWords: 4 });
  const values = async (response: string, metadata: Record<string, string> = {}) =>
    (await svc.scoreRollout(makeRollout({ response, metadata }))).components.map((c) => [c.name, c.value]);

  it("scores words and brevity", async () => {
    assert.deepEqual(await values("one two"), [["words", 2], ["brevity", 0.5]]);
    assert.deepEqual(await values("a b c d e f"), [["words", 6], ["brevity", 0]]);
    assert.deepEqual(await values("a b c d e f", { ${q(`${name}.max_words`)}: "12" }), [["words", 6], ["brevity", 0.5]]);
  });

  it("rejects bad metadata naming the key", async () => {
    await assert.rejects(
      svc.scoreRollout(makeRollout({ metadata: { ${q(`${name}.max_words`)}: "many" } })),
      (e: Error) =>
        e.name === "InvalidArgumentError" &&
        e.message.startsWith(${q(`'rollout.metadata["${name}.max_words"]' must be a positive integer`)}),
    );
  });

  it("loads its configuration and refuses a bad value naming the variable", () => {
    assert.equal(loadConfig({}).maxWords, 64);
    assert.equal(loadConfig({}).runtime.grpcPort, ${n.port});
    assert.throws(() => loadConfig({ ${P}_MAX_WORDS: "0" }), /'${P}_MAX_WORDS' must be in \\[1, /);
  });
});
`;
}

/** `test/<name>.test.ts`: the real process through real NATS and gRPC. */
function e2eTestTs(n: ServiceNames): string {
  const { name, prefix: P } = n;
  const domains = `[${n.domains.map(q).join(", ")}]`;
  return `/** The ${name} service end to end: its real process entrypoint, real NATS, real gRPC. */
import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { createGrpcClient, RewardResultSchema, RewardService } from "@reward-mesh/proto";
import { type MeshBus, openBus, publishRollout, readStream, Streams } from "@reward-mesh/sdk";
import {
  type LocalNats,
  makeRollout,
  type ServiceProcess,
  startServiceProcess,
  startTestNats,
  testBusOptions,
} from "@reward-mesh/sdk/testing";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
let nats: LocalNats;
let bus: MeshBus;
let service: ServiceProcess;

before(async () => {
  nats = await startTestNats();
  bus = await openBus(testBusOptions(nats.url), "${name}-test");
  service = await startServiceProcess(main, { envPrefix: ${q(P)}, natsUrl: nats.url, env: { ${P}_MAX_WORDS: "4" } });
});

after(async () => {
  await service.stop();
  await bus.close();
  await nats.stop();
});

it("scores over gRPC", async () => {
  const c = createGrpcClient(RewardService, service.address);
  try {
    const res = await c.score({ rollout: makeRollout({ response: "one two" }) });
    assert.deepEqual(res.components.map((x) => [x.name, x.value]), [["words", 2], ["brevity", 0.5]]);
    assert.deepEqual((await c.describe({})).domains, ${domains});
  } finally {
    c.close();
  }
});

it("scores rollouts published on JetStream", async () => {
  const runId = "${name}-e2e";
  const sent = makeRollout({
    runId,
    response: "a b c",
    task: { id: "t", domain: ${q(n.domains[0]!)}, kind: { case: "custom", value: {} } },
  });
  await publishRollout(bus.js, sent);
  const [got] = await readStream(bus, Streams.rewards, \`mesh.rewards.\${runId}.${name}.*\`, (d) => fromBinary(RewardResultSchema, d), 1);
  assert.equal(got!.value.rolloutId, sent.id);
  assert.deepEqual(got!.value.components.map((x) => [x.name, x.value]), [["words", 3], ["brevity", 0.25]]);
});

it("drains and exits 0 on SIGTERM", async () => {
  assert.equal(await service.stop(), 0);
});
`;
}

/** `README.md`. */
function readme(n: ServiceNames): string {
  const { name, prefix: P } = n;
  return `# ${name}

A reward service (gRPC \`rewardmesh.v1.RewardService\` + a JetStream worker), made by
\`reward-mesh new service ${name}\`. It declares itself in \`package.json\` (\`rewardMesh.service\`:
name, environment prefix, default port ${n.port}, domains, factory), which is how \`serve\`, \`score\`,
\`up\`, the demo and the trainer find it. The contract it implements is in \`docs/reward-services.md\`.

## Components

| name      | range    | meaning                                                                       |
| --------- | -------- | ----------------------------------------------------------------------------- |
| \`words\`   | \`[0, ∞)\` | whitespace-separated words of the response                                    |
| \`brevity\` | \`[0, 1]\` | 1 − min(1, words / max_words); metadata \`${name}.max_words\` overrides max_words |

Domains: ${n.domains.map((d) => `\`${d}\``).join(", ")}.

## Configuration (environment)

| variable | default | what |
| --- | --- | --- |
| \`${P}_MAX_WORDS\` | \`64\` | responses of this many words get brevity 0 |
| \`${P}_GRPC_HOST\` / \`${P}_GRPC_PORT\` | \`127.0.0.1\` / \`${n.port}\` | gRPC address (\`0\` = any free port) |
| \`${P}_GRPC_TLS_CERT_FILE\` / \`_TLS_KEY_FILE\`, \`_TLS_CLIENT_CA_FILE\`, \`_TOKEN\` / \`_TOKEN_FILE\`, \`_INSECURE\` | unset | TLS, mutual TLS, bearer token (fall back to \`REWARD_MESH_GRPC_*\`) |
| \`${P}_HEALTH_PORT\` | unset | a plaintext health-only port for Kubernetes probes |
| \`${P}_CONCURRENCY\` | \`8\` | rollouts scored at once |
| \`${P}_WORKER\` | \`true\` | run the JetStream worker (consumer \`${name}--<domain>\`) |
| \`${P}_ACK_WAIT_MS\`, \`${P}_MAX_DELIVER\`, \`${P}_NAK_BACKOFF_MS\`, \`${P}_NAK_BACKOFF_MAX_MS\` | \`30000\`, \`10\`, \`500\`, \`30000\` | redelivery and back-off |

\`NATS_URL\`, NATS credentials, \`LOG_LEVEL\` and \`OTEL_*\` are shared by every service (see the SDK's README).

## Run and test

\`\`\`
reward-mesh serve ${name}
node scripts/run-tests.mjs services/${name}/
\`\`\`
`;
}

/** Every file, by path relative to the service folder. */
export function serviceFiles(n: ServiceNames): Record<string, string> {
  return {
    "package.json": packageJson(n),
    "src/config.ts": configTs(n),
    "src/errors.ts": errorsTs(n),
    "src/service.ts": serviceTs(n),
    "src/main.ts": mainTs(n),
    "src/index.ts": indexTs(n),
    "src/service.test.ts": serviceTestTs(n),
    [`test/${n.name}.test.ts`]: e2eTestTs(n),
    "README.md": readme(n),
  };
}
