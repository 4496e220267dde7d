/**
 * Network helpers for local processes (`reward-mesh up`, tests).
 * @module
 */
import { createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that was free a moment ago. Racy: it is released before the caller's process
 * binds it, and any other process on the machine (an outgoing connection's ephemeral port, another test
 * run) can take it in between. Prefer port 0: let the process that listens bind any free port and report
 * the one it got (a service logs it in its `<name> ready` line; `startServiceProcess` in
 * `@reward-mesh/sdk/testing` reads it from there). Use this only where a port must be known before
 * anything starts: a process that cannot bind 0 or cannot report its port, a URL written into another
 * process's configuration first, or an address where nothing should be listening.
 */
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
