/**
 * Test helpers (`@reward-mesh/sandbox/testing`): make sure a Docker daemon and the harness image
 * exist for `*.docker.test.ts`, or say exactly why they cannot.
 * @module
 */
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { processEnv } from "@reward-mesh/sdk";
import Docker from "dockerode";
import { loadSandboxConfig, type SandboxConfig } from "./config.js";
import { dockerAnswers, dockerOptions } from "./docker.js";

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** Docker is usable for tests, or the reason it cannot exist here. */
export type DockerForTests =
  | { readonly ok: true; readonly config: SandboxConfig }
  | { readonly ok: false; readonly reason: string };

/**
 * Returns a config for the Docker backend, starting dockerd (`sandbox-images/dockerd.sh`, as
 * `scripts/bootstrap.sh` does) and building the image when root can; `ok: false` only when Docker
 * truly cannot exist here (not root and no daemon). Anything else throws, so CI cannot silently skip.
 */
export async function ensureDockerForTests(
  env: Record<string, string | undefined> = processEnv(),
): Promise<DockerForTests> {
  const config = { ...loadSandboxConfig(env), backend: "docker" as const };
  if (!(await dockerAnswers(config.dockerHost, 2_000, config.dockerCertPath))) {
    if (process.getuid?.() !== 0) {
      return {
        ok: false,
        reason: `no Docker daemon at ${config.dockerHost} and not root (cannot start one)`,
      };
    }
    await run("bash", [`${repoRoot}sandbox-images/dockerd.sh`, "start"], {
      env: { ...env, DOCKER_HOST: config.dockerHost },
      timeout: 120_000,
    });
  }
  const docker = new Docker(dockerOptions(config.dockerHost, config.dockerCertPath));
  const present = await docker
    .getImage(config.dockerImage)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (!present) {
    await run("bash", [`${repoRoot}sandbox-images/python/build.sh`], {
      env: { ...env, DOCKER_HOST: config.dockerHost },
      timeout: 900_000,
      maxBuffer: 64 << 20,
    });
  }
  return { ok: true, config };
}

/**
 * Why the bwrap backend's rootless mode cannot run on this machine (user namespaces disabled, no
 * bwrap), or undefined: rootless tests skip with this reason.
 */
export function rootlessBwrapUnsupported(): string | undefined {
  const read = (p: string) => {
    try {
      return readFileSync(p, "utf8").trim();
    } catch {
      return undefined;
    }
  };
  if (read("/proc/sys/kernel/unprivileged_userns_clone") === "0")
    return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)";
  if (read("/proc/sys/user/max_user_namespaces") === "0")
    return "user namespaces are disabled (user.max_user_namespaces = 0)";
  if (spawnSync("bwrap", ["--version"]).status !== 0) return "bwrap is not installed";
  return undefined;
}
