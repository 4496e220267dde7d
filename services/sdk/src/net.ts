/**
 * Network helpers for local processes (`reward-mesh up`, tests).
 * @module
 */
import { createServer } from "node:net";

/** A TCP port on 127.0.0.1 that was free a moment ago (for handing to a child process). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
    });
  });
}
