/**
 * The chart's documentation stays in step with its values: every key has a `## @param` comment (its own or
 * an ancestor's), every `@param` names a value, and README.md's values table is the one values.yaml generates
 * (`node --import tsx helm/test/values-doc.ts --write` rewrites it).
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { resolveRunConfig } from "@reward-mesh/trainer";
import { parse as parseYaml } from "yaml";
import { chartDir, find, helm, renderChart, repoRoot } from "./helm.js";
import { validateAll } from "./validate.js";
import { coverageProblems, paramDocs, valuesTable, withTable } from "./values-doc.js";

const valuesText = readFileSync(join(chartDir, "values.yaml"), "utf8");
const readme = readFileSync(join(chartDir, "README.md"), "utf8");

describe("chart docs", () => {
  it("document every values key with a ## @param comment, and no @param names a missing key", () => {
    assert.deepEqual(coverageProblems(valuesText), []);
    assert.ok(paramDocs(valuesText).length > 100);
  });

  it("README.md's values table is current (regenerate with node --import tsx helm/test/values-doc.ts --write)", () => {
    assert.equal(readme, withTable(readme, valuesTable(valuesText)));
    for (const d of paramDocs(valuesText)) assert.ok(readme.includes(`| \`${d.path}\` |`), d.path);
  });

  it("helm/README.md no longer says the chart is not written, and the root README says how to install it", () => {
    const top = readFileSync(join(repoRoot, "helm", "README.md"), "utf8");
    assert.doesNotMatch(top, /not part of this build|once it is written/);
    assert.match(top, /README\.md#deploy-with-helm/);
    const root = readFileSync(join(repoRoot, "README.md"), "utf8");
    assert.match(root, /^## Deploy with Helm$/m);
    assert.match(root, /helm install mesh \.\/helm\/reward-mesh/);
  });

  it("every description fits a table cell (at most 220 characters)", () => {
    for (const d of paramDocs(valuesText))
      assert.ok(d.description.length <= 220, `${d.path}: ${d.description.length} chars`);
  });

  it("the GPU values of the root README render, validate, and give the trainer a run config it accepts", async () => {
    const top = readFileSync(join(repoRoot, "README.md"), "utf8");
    const m = /```yaml\n# values-gpu\.yaml\n([\s\S]*?)```/.exec(top);
    assert.ok(m, "the values-gpu.yaml block");
    const objs = await renderChart(parseYaml(m[1]!));
    validateAll(objs);
    const run = parseYaml(find(objs, "ConfigMap", "rm-reward-mesh-trainer")["data"]["run.yaml"]);
    assert.deepEqual(run.learner, { kind: "grpc", address: "rm-reward-mesh-learner:50051" });
    resolveRunConfig(run);
  });

  it("the default trainer.config is a valid run configuration (with and without the learner)", async () => {
    for (const values of [{}, { learner: { enabled: true } }]) {
      const objs = await renderChart(values);
      resolveRunConfig(parseYaml(find(objs, "ConfigMap", "rm-reward-mesh-trainer")["data"]["run.yaml"]));
    }
  });

  it("NOTES.txt renders (defaults, learner + mTLS, external NATS, plaintext)", async () => {
    // helm renders NOTES only on install; a copy of the chart renders it as a template instead.
    const dir = mkdtempSync(join(tmpdir(), "rm-helm-notes-"));
    try {
      const chart = join(dir, "reward-mesh");
      cpSync(chartDir, chart, { recursive: true });
      const notes = readFileSync(join(chart, "templates", "NOTES.txt"), "utf8");
      rmSync(join(chart, "templates", "NOTES.txt"));
      writeFileSync(
        join(chart, "templates", "_notes.tpl"),
        `{{- define "rm.notes" -}}\n${notes}{{- end -}}\n`,
      );
      writeFileSync(
        join(chart, "templates", "zz-notes.yaml"),
        'notes: |\n  {{- include "rm.notes" . | nindent 2 }}\n',
      );
      const cases: [string[], RegExp][] = [
        [[], /helm test rm -n mesh/],
        [
          ["--set", "learner.enabled=true,grpc.tls.mtls.enabled=true"],
          /Learner: {3}rm-reward-mesh-learner:50051 \(1 x nvidia\.com\/gpu\)/,
        ],
        [
          ["--set", "nats.enabled=false,nats.external.url=nats://n:4222,nats.external.existingSecret=s"],
          /NATS: {6}nats:\/\/n:4222/,
        ],
        [["--set", "grpc.tls.enabled=false"], /WARNING: grpc\.tls\.enabled=false/],
      ];
      for (const [args, want] of cases) {
        const r = await helm([
          "template",
          "rm",
          chart,
          "-n",
          "mesh",
          "--kube-version",
          "1.33.0",
          "--show-only",
          "templates/zz-notes.yaml",
          ...args,
        ]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, want);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
