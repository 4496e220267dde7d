/**
 * `reward-mesh new service`: the scaffold, generated into a temporary workspace that shares this
 * repository's node_modules, typechecks, passes its own tests unchanged (a unit test and one through
 * real NATS and gRPC), is discovered from its manifest, and takes part in a short training run.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import {
  discoverServices,
  loadDiscoveredService,
  type MeshBus,
  openBus,
  type RunningService,
  silentLogger,
  startRewardService,
} from "@reward-mesh/sdk";
import { type LocalNats, startTestNats, testBusOptions, testRuntimeOptions } from "@reward-mesh/sdk/testing";
import {
  builtinTasks,
  createEmbeddedLearner,
  readMetrics,
  resolveRunConfig,
  runTraining,
} from "@reward-mesh/trainer";
import { runNew } from "../src/commands/new.js";

const run = promisify(execFile);
// A test file run from a test must not report to this runner (Node sets NODE_TEST_CONTEXT for children).
const { NODE_TEST_CONTEXT: _, ...childEnv } = process.env;
const repo = fileURLToPath(new URL("../..", import.meta.url));

/** A workspace whose node_modules entries are links to this repository's (its own @reward-mesh scope). */
function tempWorkspace(): string {
  const root = mkdtempSync(join(tmpdir(), "rm-new-"));
  writeFileSync(
    join(root, "package.json"),
    JSON.stringify({ name: "scaffold-test", private: true, type: "module", workspaces: ["services/*"] }),
  );
  writeFileSync(
    join(root, "tsconfig.json"),
    JSON.stringify({ extends: join(repo, "tsconfig.json"), include: ["services/*/src", "services/*/test"] }),
  );
  mkdirSync(join(root, "services"));
  const nm = join(root, "node_modules");
  mkdirSync(join(nm, "@reward-mesh"), { recursive: true });
  for (const e of readdirSync(join(repo, "node_modules"))) {
    if (e === "@reward-mesh") continue;
    symlinkSync(join(repo, "node_modules", e), join(nm, e));
  }
  for (const e of readdirSync(join(repo, "node_modules", "@reward-mesh")))
    symlinkSync(join(repo, "node_modules", "@reward-mesh", e), join(nm, "@reward-mesh", e));
  return root;
}

function capture() {
  let text = "";
  const w = new Writable({
    write(chunk, _enc, cb) {
      text += String(chunk);
      cb();
    },
  });
  return { w, text: () => text };
}

describe("reward-mesh new service", () => {
  let root: string;
  let output: string;
  before(() => {
    root = tempWorkspace();
    const out = capture();
    assert.equal(runNew(["service", "word-count", "--domain", "custom", "--root", root], out.w, root), 0);
    output = out.text();
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("writes the skeleton, links the workspace, prints three next steps", () => {
    const dir = join(root, "services", "word-count");
    for (const f of [
      "package.json",
      "README.md",
      "src/index.ts",
      "src/main.ts",
      "src/service.ts",
      "src/config.ts",
      "src/errors.ts",
      "src/service.test.ts",
      "test/word-count.test.ts",
    ])
      assert.ok(existsSync(join(dir, f)), f);
    assert.ok(lstatSync(join(root, "node_modules", "@reward-mesh", "word-count")).isSymbolicLink());
    assert.match(
      output,
      /created services\/word-count\/ \(service 'word-count', port 50061, domains custom\)/,
    );
    assert.match(output, /\n {2}1\. [\s\S]*\n {2}2\. [\s\S]*\n {2}3\. /);
  });

  it("refuses a bad name, an existing service, a bad domain, naming what is wrong", () => {
    const out = capture().w;
    assert.throws(
      () => runNew(["service", "Word Count", "--root", root], out, root),
      /'<name>' must be at most 20 lower case letters/,
    );
    assert.throws(() => runNew(["service", "word-count", "--root", root], out, root), /already exists/);
    assert.throws(
      () => runNew(["service", "x", "--domain", "Tool Call", "--root", root], out, root),
      /'--domain' values must be subject tokens/,
    );
  });

  it("refuses a name another package of the workspace, or an installed @reward-mesh package, has", () => {
    const out = capture().w;
    // node_modules/@reward-mesh/proto is installed (linked) here: a service 'proto' would clash with it.
    assert.throws(
      () => runNew(["service", "proto", "--root", root], out, root),
      /'proto' would be package @reward-mesh\/proto, which node_modules\/@reward-mesh\/proto already is/,
    );
    assert.equal(existsSync(join(root, "services", "proto")), false);
    // A workspace package outside services/ (as trainer/ and cli/ are in this repository).
    const ws = mkdtempSync(join(tmpdir(), "rm-new-clash-"));
    try {
      writeFileSync(join(ws, "package.json"), JSON.stringify({ workspaces: ["trainer", "services/*"] }));
      mkdirSync(join(ws, "services"));
      mkdirSync(join(ws, "trainer"));
      writeFileSync(join(ws, "trainer", "package.json"), JSON.stringify({ name: "@reward-mesh/trainer" }));
      assert.throws(
        () => runNew(["service", "trainer", "--root", ws], out, ws),
        /'trainer' would be package @reward-mesh\/trainer, which trainer\/ is already/,
      );
      assert.deepEqual(readdirSync(join(ws, "services")), []);
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it("a failing generator leaves no half-made service folder, link or scratch folder", () => {
    const ws = tempWorkspace();
    try {
      mkdirSync(join(ws, "scripts"));
      writeFileSync(
        join(ws, "scripts", "gen-service-lists.mjs"),
        'console.error("generator broke"); process.exit(3);\n',
      );
      assert.throws(
        () => runNew(["service", "half-made", "--root", ws], capture().w, ws),
        /scripts\/gen-service-lists.mjs failed:\ngenerator broke/,
      );
      assert.equal(existsSync(join(ws, "services", "half-made")), false, "no services/half-made");
      assert.equal(existsSync(join(ws, "node_modules", "@reward-mesh", "half-made")), false, "no link");
      assert.deepEqual(
        readdirSync(ws).filter((f) => f.startsWith(".new-service")),
        [],
        "no scratch folder",
      );
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it("is discovered from its manifest, and its definition agrees with it", async () => {
    const [s] = discoverServices(root);
    assert.equal(s?.manifest.name, "word-count");
    assert.deepEqual(s.manifest, {
      name: "word-count",
      envPrefix: "WORD_COUNT",
      defaultPort: 50061,
      domains: ["custom"],
      factory: "createWordCountService",
    });
    assert.equal((await loadDiscoveredService(s)).name, "word-count");
  });

  it("typechecks", async () => {
    await run(
      process.execPath,
      [join(repo, "node_modules", "typescript", "bin", "tsc"), "--noEmit", "-p", join(root, "tsconfig.json")],
      { cwd: root },
    );
  });

  it("passes its own tests unchanged (unit, and through real NATS and gRPC)", async () => {
    const r = await run(
      process.execPath,
      [
        "--import",
        "tsx",
        "--test",
        "services/word-count/src/service.test.ts",
        "services/word-count/test/word-count.test.ts",
      ],
      { cwd: root, env: childEnv },
    );
    assert.match(r.stdout, /# fail 0/);
    assert.match(r.stdout, /# pass 6/);
  });

  describe("in a training run", () => {
    let nats: LocalNats;
    let bus: MeshBus;
    let service: RunningService;
    before(async () => {
      nats = await startTestNats();
      bus = await openBus(testBusOptions(nats.url), "new-service-test");
      const m = await import(pathToFileURL(join(root, "services/word-count/src/index.ts")).href);
      service = await startRewardService(
        m.createWordCountService({ maxWords: 4 }),
        testRuntimeOptions(nats.url),
        silentLogger,
      );
    });
    after(async () => {
      await service?.close(1000);
      await bus?.close();
      await nats?.stop();
    });

    it("scores every step", async () => {
      const config = resolveRunConfig({
        run: { id: "scaffolded", seed: 2, outputDir: join(root, "runs") },
        tasks: { sets: ["custom"] },
        services: { "word-count": ["custom"] },
        groupSize: 4,
        promptsPerStep: 2,
        steps: 3,
        components: [{ service: "word-count", component: "brevity", weight: 1 }],
        groups: { deadlineMs: 20_000 },
      });
      const learner = createEmbeddedLearner({ seed: config.seed });
      try {
        assert.equal(
          (await runTraining({ config, tasks: builtinTasks(["custom"]), bus, learner, startWaitSeconds: 30 }))
            .lastStep,
          3,
        );
      } finally {
        await learner.close();
      }
      const lines = readMetrics(join(root, "runs", "scaffolded", "metrics.jsonl"));
      assert.deepEqual(
        lines.map((l) => typeof l.weightedReward),
        ["number", "number", "number"],
      );
    });
  });
});
