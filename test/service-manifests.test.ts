/**
 * Every reward service of this repository declares itself (`rewardMesh.service` in its package.json),
 * and the declaration agrees with the service: its definition (name, domains), its config's default
 * port and environment prefix (the published environment schema), and the Helm chart's values block.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { discoverServices, loadDiscoveredService } from "@reward-mesh/sdk";
import { parse } from "yaml";
import {
  DOCKERFILE_PATH,
  dockerfileWithWorkspaces,
  MANIFESTS_TPL_PATH,
  manifestsTemplate,
  VALUES_PATH,
  valuesWithServices,
  // @ts-expect-error a plain-JS script without declarations
} from "../scripts/gen-service-lists.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const services = discoverServices(root);

describe("service manifests", () => {
  it("reward-model (random test weights, ONNX Runtime) is the one service off by default", () => {
    assert.deepEqual(
      services.filter((s) => s.manifest.defaultEnabled === false).map((s) => s.manifest.name),
      ["reward-model"],
    );
  });

  it("every services/* folder with a main.ts has a valid manifest", () => {
    const withMain = readdirSync(join(root, "services"))
      .filter((d) => existsSync(join(root, "services", d, "src", "main.ts")))
      .sort();
    assert.deepEqual(services.map((s) => s.dir.split("/").at(-1)).sort(), withMain);
  });

  for (const s of services) {
    it(`${s.manifest.name}: the definition, the env schema and the Helm values agree with the manifest`, async () => {
      const def = await loadDiscoveredService(s); // checks name and domains
      // A service with a life cycle (reward-model's ONNX session) is closed, as its process would.
      await (def as { close?: () => Promise<void> }).close?.();
      assert.equal(def.name, s.manifest.name);
      const schema = JSON.parse(
        readFileSync(join(root, "services/sdk/schema/service-env.schema.json"), "utf8"),
      );
      const env = schema.definitions[s.manifest.name];
      assert.ok(env, `service-env.schema.json has no definition of '${s.manifest.name}'`);
      assert.equal(
        env.properties[`${s.manifest.envPrefix}_GRPC_PORT`]?.default,
        String(s.manifest.defaultPort),
      );
      const values = parse(readFileSync(join(root, "helm/reward-mesh/values.yaml"), "utf8"));
      const block = values.services[s.manifest.name];
      assert.ok(
        block,
        `helm/reward-mesh/values.yaml has no services.${s.manifest.name} (npm run generate adds it)`,
      );
      assert.equal(block.port, s.manifest.defaultPort);
      assert.deepEqual(block.domains, s.manifest.domains);
      // A service that runs untrusted code is off in the chart until the user chooses its sandbox mode.
      assert.equal(block.enabled, (s.manifest.defaultEnabled ?? true) && block.sandbox?.enabled !== true);
    });
  }

  it("the Helm values' services are what scripts/gen-service-lists.mjs writes; a new service gets a block", () => {
    const text = readFileSync(VALUES_PATH as string, "utf8");
    const gen = valuesWithServices as (t: string, s?: unknown[]) => string;
    assert.equal(gen(text, services), text);
    const extra = {
      manifest: {
        name: "word-count",
        envPrefix: "WORD_COUNT",
        defaultPort: 50090,
        domains: ["custom"],
        factory: "f",
      },
    };
    const grown = parse(gen(text, [...services, extra]));
    assert.equal(grown.services["word-count"].port, 50090);
    assert.equal(grown.services["word-count"].healthPort, 50100);
    assert.deepEqual(grown.services["word-count"].domains, ["custom"]);
    assert.deepEqual(Object.keys(grown.services["word-count"]), Object.keys(grown.services.length));
    assert.equal(grown.services["word-count"].enabled, true);
    const off = parse(gen(text, [...services, { manifest: { ...extra.manifest, defaultEnabled: false } }]));
    assert.equal(off.services["word-count"].enabled, false, "defaultEnabled: false → enabled: false");
    assert.throws(() => gen(text, services.slice(1)), /services\.\S+ is no discovered service/);
    const flipped = text.replace(/^( {2}code-exec:\n {4}enabled: )false$/m, "$1true");
    assert.notEqual(flipped, text);
    assert.equal(gen(flipped, services), text, "a sandboxed block is set back to enabled: false");
  });

  it("the chart's templates/_manifests.tpl (what each service consumes) is what scripts/gen-service-lists.mjs writes", () => {
    const gen = manifestsTemplate as (s?: unknown[]) => string;
    assert.equal(gen(services), readFileSync(MANIFESTS_TPL_PATH as string, "utf8"));
    const extra = { manifest: { name: "word-count", domains: ["custom"], domainsEnv: "WORD_COUNT_DOMAINS" } };
    assert.match(
      gen([...services, extra]),
      /\n {2}"word-count": \{"domains":\["custom"\],"domainsEnv":"WORD_COUNT_DOMAINS"\}\n/,
    );
  });

  it("the mesh image copies every workspace's package.json (scripts/gen-service-lists.mjs); a new one gets a line", () => {
    const text = readFileSync(DOCKERFILE_PATH as string, "utf8");
    const gen = dockerfileWithWorkspaces as (t: string, f?: string[]) => string;
    assert.equal(gen(text), text);
    const grown = gen(text, [join(root, "proto"), join(root, "services", "word-count"), join(root, "cli")]);
    assert.match(
      grown,
      /checks it too\)\.\nCOPY proto\/package.json proto\/\nCOPY services\/word-count\/package.json services\/word-count\/\nCOPY cli\/package.json cli\/\nRUN /,
    );
  });
});
