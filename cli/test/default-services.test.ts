/**
 * A service whose manifest says `defaultEnabled: false` (reward-model: ONNX Runtime and random test
 * weights) is started only when asked for: not by `reward-mesh up` without `--services`, not by the
 * embedded demo unless its run uses it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { resolveRunConfig } from "@reward-mesh/trainer";
import { demoRunDocument, demoServices, torchDemoRunDocument } from "../src/commands/demo.js";
import { UP_COMMAND } from "../src/commands/up.js";
import { defaultServiceNames, SERVICES } from "../src/services.js";

describe("services enabled by default", () => {
  it("up's default set is every service but those with defaultEnabled false", () => {
    const all = SERVICES.map((s) => s.name);
    assert.ok(all.includes("reward-model"), "reward-model is discovered (and can be named)");
    assert.deepEqual(
      defaultServiceNames(),
      all.filter((n) => n !== "reward-model"),
    );
    assert.match(String(UP_COMMAND.options?.["services"]?.defaultText), /^every one enabled by default: /);
    assert.doesNotMatch(String(UP_COMMAND.options?.["services"]?.defaultText), /reward-model/);
  });

  it("the demo starts reward-model only when its run uses it", () => {
    const doc = demoRunDocument(7, 4);
    assert.deepEqual(demoServices(resolveRunConfig(doc), false), defaultServiceNames());
    const withRm = resolveRunConfig({
      ...doc,
      components: [
        ...(doc["components"] as unknown[]),
        { service: "reward-model", component: "score", weight: 1 },
      ],
    });
    assert.deepEqual(demoServices(withRm, false), [...defaultServiceNames(), "reward-model"].sort());
    assert.deepEqual(demoServices(resolveRunConfig(torchDemoRunDocument(7, 4)), true), ["tool-call"]);
  });
});
