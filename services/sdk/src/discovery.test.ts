import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import {
  discoverServices,
  findWorkspaceRoot,
  loadDiscoveredService,
  parseServiceManifest,
  workspaceFolders,
} from "./discovery.js";

const good = {
  name: "demo",
  envPrefix: "DEMO",
  defaultPort: 50090,
  domains: ["custom"],
  factory: "createDemo",
};

describe("service discovery", () => {
  let root: string;
  const pkg = (dir: string, json: unknown, files = true) => {
    mkdirSync(join(root, dir, "src"), { recursive: true });
    writeFileSync(join(root, dir, "package.json"), JSON.stringify(json));
    if (files) {
      writeFileSync(join(root, dir, "src", "index.ts"), "export {};\n");
      writeFileSync(join(root, dir, "src", "main.ts"), "export {};\n");
    }
  };
  const service = (name: string, manifest: unknown) =>
    pkg(`services/${name}`, {
      name: `@x/${name}`,
      exports: { ".": "./src/index.ts", "./main": "./src/main.ts" },
      rewardMesh: { service: manifest },
    });
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "discovery-"));
    writeFileSync(join(root, "package.json"), JSON.stringify({ workspaces: ["lib", "services/*"] }));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("finds the services of the workspace globs, skips packages without a manifest, sorts by name", () => {
    pkg("lib", { name: "@x/lib" });
    pkg("services/sdk", { name: "@x/sdk" });
    service("zeta", { ...good, name: "zeta", envPrefix: "ZETA", defaultPort: 50091 });
    service("alpha", good);
    mkdirSync(join(root, "services", "not-a-package"));
    const found = discoverServices(root);
    assert.deepEqual(
      found.map((s) => [s.manifest.name, s.packageName]),
      [
        ["demo", "@x/alpha"],
        ["zeta", "@x/zeta"],
      ],
    );
    assert.equal(found[0]!.mainPath, join(root, "services", "alpha", "src", "main.ts"));
    assert.equal(found[0]!.indexPath, join(root, "services", "alpha", "src", "index.ts"));
    assert.equal(workspaceFolders(root).length, 4); // lib, sdk, alpha, zeta
    assert.equal(findWorkspaceRoot(join(root, "services", "alpha", "src")), root);
  });

  it("names the package and the field of a bad manifest", () => {
    const where = "services/x/package.json";
    const bad = (m: unknown, re: RegExp) =>
      assert.throws(
        () => parseServiceManifest({ rewardMesh: { service: m } }, where),
        (e: Error) => {
          assert.equal(e.name, "ServiceManifestError");
          assert.match(e.message, re);
          return true;
        },
      );
    bad(
      { ...good, defaultPort: "50090" },
      /^services\/x\/package.json: 'rewardMesh.service.defaultPort' must be integer/,
    );
    bad({ ...good, domains: ["Code"] }, /'rewardMesh.service.domains\[0\]' must match pattern/);
    bad({ ...good, domains: [] }, /'rewardMesh.service.domains' must NOT have fewer than 1 items/);
    const { factory: _, ...noFactory } = good;
    bad(noFactory, /'rewardMesh.service' must have required property 'factory'/);
    bad({ ...good, port: 1 }, /must NOT have additional properties \('port'\)/);
    bad({ ...good, name: "My Service" }, /'rewardMesh.service.name' must match pattern/);
    bad({ ...good, defaultEnabled: "no" }, /'rewardMesh.service.defaultEnabled' must be boolean/);
    bad({ ...good, domainsEnv: "demo_domains" }, /'rewardMesh.service.domainsEnv' must match pattern/);
    assert.equal(
      parseServiceManifest({ rewardMesh: { service: { ...good, defaultEnabled: false } } }, where)
        ?.defaultEnabled,
      false,
    );
    assert.equal(parseServiceManifest({ name: "@x/lib" }, where), undefined);
  });

  it("refuses two services with one port, a missing export, a missing file", () => {
    service("a", good);
    service("b", { ...good, name: "b", envPrefix: "B" });
    assert.throws(
      () => discoverServices(root),
      /@x\/b and @x\/a both declare 'rewardMesh.service.defaultPort' = 50090/,
    );
    rmSync(join(root, "services", "b"), { recursive: true });
    pkg("services/c", {
      name: "@x/c",
      exports: { ".": "./src/index.ts" },
      rewardMesh: { service: { ...good, name: "c", envPrefix: "C", defaultPort: 1500 } },
    });
    assert.throws(
      () => discoverServices(root),
      /services\/c\/package.json: 'exports\["\.\/main"\]' must name a file/,
    );
    pkg("services/c", {
      name: "@x/c",
      exports: { ".": "./src/index.ts", "./main": "./src/nope.ts" },
      rewardMesh: { service: { ...good, name: "c", envPrefix: "C", defaultPort: 1500 } },
    });
    assert.throws(
      () => discoverServices(root),
      /'exports\["\.\/main"\]' names \.\/src\/nope\.ts, which does not exist/,
    );
  });

  it("refuses a workspace glob it cannot read", () => {
    writeFileSync(join(root, "package.json"), JSON.stringify({ workspaces: ["packages/**"] }));
    assert.throws(
      () => discoverServices(root),
      /'workspaces\[0\]' \("packages\/\*\*"\) must be a folder or 'folder\/\*'/,
    );
  });

  it("loads a service's definition from its index (an async factory too) and checks it against the manifest", async () => {
    service("alpha", good);
    const index = join(root, "services", "alpha", "src", "index.ts");
    const write = (name: string, domains: string[]) =>
      writeFileSync(
        index,
        `export const loadConfig = () => ({ greeting: "hi" });\nexport const createDemo = async (c: { greeting: string }) => ({ name: ${JSON.stringify(name)}, domains: ${JSON.stringify(domains)}, greeting: c.greeting });\n`,
      );
    write("demo", ["custom"]);
    const [s] = discoverServices(root);
    assert.equal(((await loadDiscoveredService(s!)) as unknown as { greeting: string }).greeting, "hi");
    // Each check imports a fresh copy of the index (a query string), as a changed file would be.
    const load = async () => {
      const copy = join(root, "services", "alpha", "src", `index-${Math.random().toString(36).slice(2)}.ts`);
      writeFileSync(copy, readFileSync(index));
      return loadDiscoveredService({ ...s!, indexPath: copy });
    };
    write("other", ["custom"]);
    await assert.rejects(
      load(),
      /@x\/alpha: 'rewardMesh.service.name' is 'demo' but its definition is named 'other'/,
    );
    write("demo", ["code"]);
    await assert.rejects(
      load(),
      /'rewardMesh.service.domains' is \[custom\] but its definition consumes \[code\]/,
    );
    writeFileSync(index, "export const loadConfig = () => ({});\n");
    await assert.rejects(load(), /does not export 'createDemo' \(rewardMesh.service.factory\)/);
  });

  it("a manifest's domainsEnv: the variable's list is the configured domains the definition is checked against", async () => {
    service("alpha", { ...good, domainsEnv: "DEMO_DOMAINS" });
    writeFileSync(
      join(root, "services", "alpha", "src", "index.ts"),
      `export const loadConfig = () => ({});\nexport const createDemo = () => ({ name: "demo", domains: ["math", "custom"] });\n`,
    );
    const [unset] = discoverServices(root, {});
    assert.deepEqual(unset!.domains, ["custom"]);
    await assert.rejects(
      loadDiscoveredService(unset!),
      /the configured domains \('rewardMesh.service.domains', or DEMO_DOMAINS when set\) are \[custom\] but its definition consumes \[custom,math\]/,
    );
    const [set] = discoverServices(root, { DEMO_DOMAINS: " custom, math ," });
    assert.deepEqual(set!.domains, ["custom", "math"]);
    assert.deepEqual((await loadDiscoveredService(set!)).domains, ["math", "custom"]);
    assert.throws(() => discoverServices(root, { DEMO_DOMAINS: "custom,Math" }), {
      name: "ConfigError",
      message: "'DEMO_DOMAINS' has an invalid domain 'Math' (want [a-z][a-z0-9_-]*)",
    });
    service("alpha", { ...good, domainsEnv: "OTHER_DOMAINS" });
    assert.throws(
      () => discoverServices(root, {}),
      /'rewardMesh.service.domainsEnv' \(OTHER_DOMAINS\) must be one of the service's own variables \(DEMO_…\)/,
    );
  });
});
