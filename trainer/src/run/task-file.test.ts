/** Task files: valid lines load as `Task`s; every bad line is reported with its file, line and field. */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isMessage } from "@bufbuild/protobuf";
import { TaskSchema } from "@reward-mesh/proto";
import {
  DEFAULT_TASK_FILE_MAX_TOKENS,
  loadTaskFile,
  parseTaskFile,
  TaskFileError,
  taskFileDomain,
} from "./task-file.js";

const dir = mkdtempSync(join(tmpdir(), "task-file-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const line = (o: unknown) => JSON.stringify(o);
const code = {
  language: "python",
  test: "def check(candidate):\n    assert candidate(1) == 2\n",
  entryPoint: "inc",
};

/** The TaskFileError `parseTaskFile` throws for `text`. */
function errorOf(text: string): TaskFileError {
  try {
    parseTaskFile(text, "tasks.jsonl");
  } catch (err) {
    assert.ok(err instanceof TaskFileError, `expected a TaskFileError, got ${String(err)}`);
    return err;
  }
  assert.fail("expected the file to be rejected");
}

describe("loadTaskFile", () => {
  it("loads camelCase and snake_case lines, skipping blank and '#' lines", () => {
    const path = join(dir, "ok.jsonl");
    writeFileSync(
      path,
      [
        "# two tasks",
        line({ id: "inc", prompt: "Write inc(x) returning x + 1.", code }),
        "",
        "   ",
        line({
          id: "weather",
          domain: "tool_call_eval",
          messages: [
            { role: "system", content: "You can call get_weather(city)." },
            { role: "user", content: "Weather in Oslo?" },
          ],
          tool_call: {
            format: "rlla",
            tools_json: "[]",
            ground_truth: [{ name: "get_weather", arguments_json: '{"city": "Oslo"}' }],
          },
        }),
        line({ id: "free", prompt: "Say hi.", custom: { rubric: "greets", max: 1 } }),
      ].join("\r\n"),
    );
    const tasks = loadTaskFile(path);
    assert.deepEqual(
      tasks.map((t) => [t.id, t.set, t.maxTokens, taskFileDomain(t.task)]),
      [
        ["inc", "jsonl", DEFAULT_TASK_FILE_MAX_TOKENS, "code"],
        ["weather", "jsonl", DEFAULT_TASK_FILE_MAX_TOKENS, "tool_call_eval"],
        ["free", "jsonl", DEFAULT_TASK_FILE_MAX_TOKENS, "custom"],
      ],
    );
    const weather = tasks[1]!.task;
    assert.ok(isMessage(weather, TaskSchema));
    assert.equal(weather.messages[1]!.content, "Weather in Oslo?");
    assert.equal(weather.kind.case, "toolCall");
    if (weather.kind.case === "toolCall") {
      assert.equal(weather.kind.value.groundTruth[0]!.argumentsJson, '{"city": "Oslo"}');
    }
    assert.equal(tasks[0]!.metadata, undefined);
    assert.deepEqual(
      loadTaskFile(path, { maxTokens: 64 }).map((t) => t.maxTokens),
      [64, 64, 64],
    );
  });

  it("names the line and field of each problem", () => {
    const ok = line({ id: "a", prompt: "p", code });
    const cases: Array<[string, number, string | null, string]> = [
      ['{"id": "b", ', 2, null, "tasks.jsonl:2: not valid JSON ("],
      ["[1, 2]", 2, null, "tasks.jsonl:2: not a JSON object (one rewardmesh.v1.Task): a list"],
      [
        line({ id: "b", prompt: "p", code, foo: 1 }),
        2,
        "foo",
        'tasks.jsonl:2: cannot decode message rewardmesh.v1.Task from JSON: key "foo" is unknown',
      ],
      [line({ prompt: "p", code }), 2, "id", "tasks.jsonl:2: 'id' must be a non-empty string"],
      [line({ id: "b", prompt: "p" }), 2, "kind", "tasks.jsonl:2: 'kind' is missing: set one of code,"],
      [line({ id: "b", prompt: "p", code, agent: {} }), 2, "kind", "tasks.jsonl:2: cannot decode oneof"],
      [line({ id: "b", prompt: "  ", code }), 2, "prompt", "tasks.jsonl:2: 'prompt' must be non-empty text"],
      [line({ id: "b", messages: [], code }), 2, "prompt", "tasks.jsonl:2: 'prompt' must be non-empty text"],
      [
        line({
          id: "b",
          code,
          messages: [
            { role: "user", content: "hi" },
            { role: "bot", content: "x" },
          ],
        }),
        2,
        "messages[1].role",
        `tasks.jsonl:2: 'messages[1].role' must be one of system, user, assistant, tool, got "bot"`,
      ],
      [
        line({ id: "b", code, messages: [{ role: "user", content: 3 }] }),
        2,
        "messages[0].content",
        "tasks.jsonl:2: 'messages[0].content' must be a string, got 3",
      ],
      [
        line({ id: "b", code, messages: "hi" }),
        2,
        "messages",
        "tasks.jsonl:2: 'messages' must be a list of {role, content}",
      ],
      [
        line({ id: "b", code, messages: [{ role: "user", content: " " }] }),
        2,
        "messages",
        "tasks.jsonl:2: 'messages' must have at least one message with non-empty content",
      ],
      [
        line({ id: "b", prompt: "p", code: { timeLimitMs: -1 } }),
        2,
        "CodeTask.time_limit_ms",
        "tasks.jsonl:2: cannot decode field rewardmesh.v1.CodeTask.time_limit_ms from JSON",
      ],
      [ok, 2, "id", `tasks.jsonl:2: 'id' duplicates the task on line 1: "a"`],
    ];
    for (const [bad, lineNo, field, message] of cases) {
      const err = errorOf(`${ok}\n${bad}\n`);
      assert.ok(err.message.startsWith(message), `${err.message}\n  does not start with\n${message}`);
      assert.equal(err.path, "tasks.jsonl");
      assert.equal(err.line, lineNo, err.message);
      assert.equal(err.field, field, err.message);
    }
  });

  it("counts lines from 1 including blank and comment lines", () => {
    const err = errorOf(`# header\n\n${line({ id: "a", prompt: "p" })}\n`);
    assert.equal(err.line, 3);
    assert.equal(err.field, "kind");
  });

  it("rejects an empty file, a file of comments and a missing file", () => {
    for (const text of ["", "\n\n", "# nothing yet\n"]) {
      const err = errorOf(text);
      assert.equal(err.line, 0);
      assert.equal(err.message, "tasks.jsonl: has no tasks (only blank or '#' comment lines)");
    }
    const missing = join(dir, "missing.jsonl");
    assert.throws(
      () => loadTaskFile(missing),
      (err: unknown) => err instanceof TaskFileError && err.message === `${missing}: cannot be read (ENOENT)`,
    );
  });

  it("rejects a generation cap that is not a positive integer", () => {
    assert.throws(
      () => parseTaskFile(line({ id: "a", prompt: "p", code }), "t", { maxTokens: 0 }),
      RangeError,
    );
  });
});
