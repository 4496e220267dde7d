/**
 * The Docker backend for real (dockerd from Debian's docker.io, the image from sandbox-images/python).
 * Skips with a printed reason only when Docker cannot exist here (not root and no daemon).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import Docker from "dockerode";
import { createSandbox, SANDBOX_LABEL } from "../src/index.js";
import { ensureDockerForTests } from "../src/testing.js";
import { defineSecuritySuite } from "./security-suite.js";
import { defineVerdictSuite } from "./verdict-suite.js";

const docker = await ensureDockerForTests();
if (!docker.ok) console.log(`# skipping Docker sandbox tests: ${docker.reason}`);

defineSecuritySuite("docker", async () => (docker.ok ? createSandbox(docker.config) : undefined));
defineVerdictSuite("docker", async () => (docker.ok ? createSandbox(docker.config) : undefined));

describe("docker sandbox: backend specifics", { skip: docker.ok ? false : docker.reason }, () => {
  it("uses the locked-down container settings and removes every container it created", async () => {
    if (!docker.ok) return;
    const sandbox = await createSandbox(docker.config);
    assert.equal(sandbox.backend, "docker");
    const r = await sandbox.run({
      argv: [
        "sh",
        "-c",
        "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null; touch /x 2>&1 || true; ls /sys/class/net",
      ],
      limits: { maxProcesses: 40 },
    });
    const out = r.stdout.toString();
    assert.match(out, /^65534$/m);
    assert.match(out, /CapEff:\s+0000000000000000/);
    assert.match(out, /NoNewPrivs:\s+1/);
    assert.match(out, /Seccomp:\s+2/);
    assert.match(out, /^40$/m);
    assert.match(out, /Read-only file system/);
    assert.deepEqual(out.trim().split("\n").slice(-1), ["lo"]);
    await sandbox.close();
    const left = await new Docker({ socketPath: new URL(docker.config.dockerHost).pathname }).listContainers({
      all: true,
      filters: { label: [SANDBOX_LABEL] },
    });
    assert.deepEqual(
      left.filter((c) => (c.Labels["io.reward-mesh.owner"] ?? "").endsWith(`:${process.pid}`)),
      [],
    );
  });
});
