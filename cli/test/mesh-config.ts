/** The CLI configuration the mesh-nats tests start meshes and NATS servers with. */
import { join } from "node:path";
import { loadCliConfig } from "../src/config.js";

/**
 * A CliConfig whose NATS store and logs live under `dir/sub` (so each case has its own), with `env` over a
 * bare environment (PATH only); `defaultNatsUrl` replaces the built-in default NATS URL.
 */
export const meshTestConfig = (
  dir: string,
  sub: string,
  env: Record<string, string | undefined>,
  defaultNatsUrl?: string,
) =>
  loadCliConfig(
    {
      REWARD_MESH_NATS_STORE: join(dir, sub, "js"),
      REWARD_MESH_LOG_DIR: join(dir, sub, "logs"),
      PATH: process.env.PATH,
      ...env,
    },
    defaultNatsUrl === undefined ? {} : { natsUrl: defaultNatsUrl },
  );
