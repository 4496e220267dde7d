import assert from "node:assert/strict";
import { it } from "node:test";
import { UsageError } from "./io.js";
import { takeUiFlag } from "./live-ui.js";

it("--ui takes an optional port and leaves the other arguments to the command's flags", () => {
  assert.deepEqual(takeUiFlag(["--config", "r.yaml"]), { rest: ["--config", "r.yaml"], ui: undefined });
  assert.deepEqual(takeUiFlag(["--ui", "--config", "r.yaml"]), { rest: ["--config", "r.yaml"], ui: 0 });
  assert.deepEqual(takeUiFlag(["--config", "r.yaml", "--ui"]), { rest: ["--config", "r.yaml"], ui: 0 });
  assert.deepEqual(takeUiFlag(["--ui", "8123", "--quiet"]), { rest: ["--quiet"], ui: 8123 });
  assert.deepEqual(takeUiFlag(["--ui=8123"]), { rest: [], ui: 8123 });
  assert.deepEqual(takeUiFlag(["--uix"]), { rest: ["--uix"], ui: undefined }, "another option's name");
  for (const bad of [["--ui=x"], ["--ui=70000"], ["--ui="]])
    assert.throws(() => takeUiFlag(bad), UsageError, bad.join(" "));
});
