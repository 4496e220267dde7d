/** The logger's console formats and its JSON-lines file. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { formatHumanLogLine } from "../src/index.js";

describe("formatHumanLogLine", () => {
  it("writes level, message and the record's own fields as key=value", () => {
    const rec = {
      level: 40,
      time: 1,
      pid: 2,
      hostname: "h",
      service: "trainer",
      component: "train",
      runId: "r",
      step: 3,
      reason: "no answer",
      ok: false,
      err: { type: "Error", message: "boom", stack: "…" },
      msg: "policy update skipped",
    };
    assert.equal(
      formatHumanLogLine(JSON.stringify(rec)),
      'warn  policy update skipped step=3 reason="no answer" ok=false err="boom"\n',
    );
    assert.equal(formatHumanLogLine('{"level":50,"msg":"down"}\n'), "error down\n");
    assert.equal(
      formatHumanLogLine(JSON.stringify({ level: 40, msg: "two\nlines", why: "a\nb" })),
      'warn  two\\nlines why="a\\nb"\n',
      "one line per record",
    );
  });

  it("passes a line that is not JSON through unchanged", () => {
    assert.equal(formatHumanLogLine("plain"), "plain\n");
  });
});

describe("createLogger", () => {
  it("human: only warnings and errors on the console, readable; every record in the file as JSON", () => {
    const dir = mkdtempSync(join(tmpdir(), "rm-logger-"));
    try {
      const file = join(dir, "logs", "run.jsonl");
      const logger = fileURLToPath(new URL("../src/logger.ts", import.meta.url));
      const script = `
        import { createLogger } from ${JSON.stringify(logger)};
        for (const format of ["human", "json"]) {
          const l = createLogger({ service: "t", format, file: ${JSON.stringify(file)} });
          l.info({ format }, "hello");
          l.warn({ step: 1 }, "careful");
          l.debug({}, "hidden");
          l.close();
        }`;
      const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        encoding: "utf8",
      });
      assert.equal(r.status, 0, r.stderr);
      const err = r.stderr.trim().split("\n");
      assert.equal(err[0], "warn  careful step=1");
      const json = err.slice(1).map((l) => JSON.parse(l) as { msg: string; level: number });
      assert.deepEqual(
        json.map((l) => [l.level, l.msg]),
        [
          [30, "hello"],
          [40, "careful"],
        ],
      );
      const records = readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { msg: string; format?: string; service: string });
      assert.deepEqual(
        records.map((l) => [l.msg, l.format, l.service]),
        [
          ["hello", "human", "t"],
          ["careful", undefined, "t"],
          ["hello", "json", "t"],
          ["careful", undefined, "t"],
        ],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
