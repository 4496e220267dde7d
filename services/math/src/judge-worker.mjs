// Entry of a judging worker thread: worker threads do not inherit tsx's loader, so register it,
// then load the TypeScript worker.
import { register } from "tsx/esm/api";

register();
await import("./judge-worker.ts");
