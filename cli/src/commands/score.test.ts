import assert from "node:assert/strict";
import { Readable, Writable } from "node:stream";
import { describe, it } from "node:test";
import { runScore } from "./score.js";

function sink(): { stream: Writable; text: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

describe("runScore (in process)", () => {
  it("a bad line is one stderr line even when its message quotes a line break (fuzz finding)", async () => {
    const out = sink();
    const err = sink();
    const line = '{"id": "r", "task": {"id": "t", "toolCall": {"groundTruth": "\\r\\n"}}}';
    const code = await runScore(["tool-call"], Readable.from([`${line}\n`]), out.stream, err.stream);
    assert.equal(code, 2);
    assert.equal(out.text(), "");
    assert.equal(
      err.text(),
      'line 1: cannot decode field rewardmesh.v1.ToolCallTask.ground_truth from JSON: expected Array, got "\\r\\n"\n',
    );
  });
});
