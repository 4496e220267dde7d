import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { it } from "node:test";
import { UsageError } from "../io.js";
import { runReport } from "./train.js";

const sink = () =>
  new Writable({
    write(_c, _e, cb) {
      cb();
    },
  });

it("reward-mesh report explains a run that stopped before step 1, and refuses a directory that is no run", (t) => {
  const root = mkdtempSync(join(tmpdir(), "report-cli-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  // runTraining writes resolved-config.json first; a failed start-up check leaves no metrics.jsonl.
  const run = join(root, "early");
  mkdirSync(run);
  writeFileSync(join(run, "resolved-config.json"), "{}");
  assert.equal(runReport([run], sink()), 0);
  assert.match(
    readFileSync(join(run, "report.html"), "utf8"),
    /No step finished: metrics\.jsonl has no lines/,
  );
  // An empty metrics.jsonl reads the same.
  writeFileSync(join(run, "metrics.jsonl"), "");
  assert.equal(runReport([run], sink()), 0);
  assert.match(readFileSync(join(run, "report.html"), "utf8"), /No step finished/);
  const other = join(root, "other");
  mkdirSync(other);
  assert.throws(() => runReport([other], sink()), UsageError);
});
