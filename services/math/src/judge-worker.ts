/**
 * Worker-thread side of the judging pool: answers `{ id, input }` messages with `{ id, judgement }`
 * or `{ id, error }`. Loaded through `judge-worker.mjs`, which registers the TypeScript loader first.
 * @module
 */
import { parentPort } from "node:worker_threads";
import { type JudgeInput, judge } from "./judge.js";

const port = parentPort;
if (!port) throw new Error("judge-worker.ts must run in a worker thread");
port.on("message", (msg: { id: number; input: JudgeInput }) => {
  try {
    port.postMessage({ id: msg.id, judgement: judge(msg.input) });
  } catch (e) {
    port.postMessage({ id: msg.id, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
});
port.postMessage({ ready: true });
