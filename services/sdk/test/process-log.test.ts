/**
 * `waitForLogRecord` and `startServiceProcess`'s failure paths, on real child processes: a line split
 * across writes is found, an early exit or a silent child fails with the reason and the stderr tail.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { waitForLogRecord } from "@reward-mesh/sdk";
import { startServiceProcess } from "@reward-mesh/sdk/testing";

/** A real `node -e script` child with stderr piped (and collected). */
function child(script: string) {
  const c = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  c.stderr.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return { c, stderr: () => err };
}

describe("waitForLogRecord", () => {
  it("returns the first matching JSON record, across partial writes, skipping other lines", async () => {
    const { c, stderr } = child(`
      const w = (s) => process.stderr.write(s);
      w("plain text, not JSON\\n{not json either}\\n");
      w(JSON.stringify({ msg: "x ready" }) + "\\n"); // no address: not a match
      w('{"msg":"length ready","addr');
      setTimeout(() => { w('ess":"127.0.0.1:4242","healthAddress":"127.0.0.1:4343"}\\n'); }, 50);
      setTimeout(() => {}, 10_000);
    `);
    try {
      const rec = await waitForLogRecord(c, (r) => typeof r["address"] === "string", {
        what: "the ready line",
        describe: stderr,
        timeoutMs: 10_000,
      });
      assert.equal(rec["address"], "127.0.0.1:4242");
      assert.equal(rec["healthAddress"], "127.0.0.1:4343");
    } finally {
      c.kill();
    }
  });

  it("reads stdout when asked (the PyTorch learner's listening line is there)", async () => {
    const c = spawn(
      process.execPath,
      [
        "-e",
        `console.log("loading"); console.log(JSON.stringify({ event: "listening", address: "127.0.0.1:5151" })); setTimeout(() => {}, 10_000);`,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    try {
      const rec = await waitForLogRecord(c, (r) => r["event"] === "listening", {
        what: "the listening line",
        stream: "stdout",
      });
      assert.equal(rec["address"], "127.0.0.1:5151");
    } finally {
      c.kill();
    }
  });

  it("fails with the exit code and the stderr tail when the process exits first", async () => {
    const { c, stderr } = child(
      `process.stderr.write("config error: LENGTH_CONCURRENCY must be >= 1\\n"); process.exit(3);`,
    );
    await assert.rejects(
      waitForLogRecord(c, () => true, { what: "the ready line", describe: stderr, timeoutMs: 10_000 }),
      (err: Error) => {
        assert.match(err.message, /ended \(exit code 3\) before logging the ready line/);
        assert.match(err.message, /LENGTH_CONCURRENCY must be >= 1/);
        return true;
      },
    );
  });

  it("fails after the timeout, naming it and the stderr so far, when the line never comes", async () => {
    const { c, stderr } = child(
      `process.stderr.write('{"msg":"starting"}\\n'); setTimeout(() => {}, 10_000);`,
    );
    try {
      // The child has started and logged (however slow the machine): the 500 ms is only the wait for a line
      // that never comes.
      const t0 = Date.now();
      while (!stderr().includes('"msg":"starting"')) {
        assert.ok(Date.now() - t0 < 30_000, "the child did not start within 30 s");
        await new Promise((r) => setTimeout(r, 20));
      }
      await assert.rejects(
        waitForLogRecord(c, (r) => r["msg"] === "ready", {
          what: "the ready line",
          describe: stderr,
          timeoutMs: 500,
        }),
        (err: Error) => {
          assert.match(err.message, /did not log the ready line within 500 ms \(still running\)/);
          assert.match(err.message, /"msg":"starting"/);
          return true;
        },
      );
    } finally {
      c.kill();
    }
  });
});

describe("startServiceProcess", () => {
  const lengthMain = fileURLToPath(new URL("../../length/src/main.ts", import.meta.url));

  it("refuses a LOG_LEVEL that hides the ready line, naming it", async () => {
    await assert.rejects(
      startServiceProcess(lengthMain, {
        envPrefix: "LENGTH",
        natsUrl: "nats://127.0.0.1:1",
        env: { LOG_LEVEL: "warn" },
      }),
      /LOG_LEVEL="warn" hides the service's info-level "ready" line/,
    );
  });

  it("fails with the service's own error when it exits before logging its address", async () => {
    await assert.rejects(
      startServiceProcess(lengthMain, {
        envPrefix: "LENGTH",
        natsUrl: "nats://127.0.0.1:1",
        env: { LENGTH_WORKER: "false", LENGTH_CONCURRENCY: "0" },
      }),
      (err: Error) => {
        assert.match(err.message, /ended \(exit code \d+\) before logging the service's "<name> ready" line/);
        assert.match(err.message, /LENGTH_CONCURRENCY/);
        return true;
      },
    );
  });
});
