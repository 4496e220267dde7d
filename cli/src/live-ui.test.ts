import assert from "node:assert/strict";
import { createServer } from "node:net";
import { PassThrough } from "node:stream";
import { it } from "node:test";
import { UsageError } from "./io.js";
import { openLivePage, takeUiFlag } from "./live-ui.js";

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

it("--ui PORT on a busy port is a usage error naming it; a free port prints the page's address", async () => {
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
  const port = (busy.address() as { port: number }).port;
  const config = { runId: "ui", steps: 3, outputDir: "/nonexistent-reward-mesh-runs" };
  try {
    await assert.rejects(openLivePage(config, port, new PassThrough()), (e: Error) => {
      assert.ok(e instanceof UsageError);
      assert.match(e.message, new RegExp(`port ${port} is in use`));
      return true;
    });
  } finally {
    await new Promise((r) => busy.close(r));
  }
  const out = new PassThrough();
  const live = await openLivePage(config, 0, out);
  try {
    assert.equal(String(out.read()), `live page: ${live.url}\n`);
  } finally {
    await live.close();
  }
});
