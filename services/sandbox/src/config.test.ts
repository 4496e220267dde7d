import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_DOCKER_IMAGE, loadSandboxConfig } from "./config.js";
import { tarFiles } from "./docker.js";
import { execFileSync } from "node:child_process";
import { HARNESS_SHA256 } from "./harness-file.js";

describe("sandbox configuration", () => {
  it("has documented defaults; DOCKER_HOST is honoured; blank means unset", () => {
    const c = loadSandboxConfig({ SANDBOX_TIME_LIMIT_MS: " ", DOCKER_HOST: "unix:///tmp/d.sock" });
    assert.equal(c.backend, "auto");
    assert.equal(c.timeLimitMs, 5_000);
    assert.equal(c.memoryLimitMb, 1_024);
    assert.equal(c.dockerHost, "unix:///tmp/d.sock");
    assert.equal(c.dockerImage, DEFAULT_DOCKER_IMAGE);
    assert.ok(DEFAULT_DOCKER_IMAGE.endsWith(`:h-${HARNESS_SHA256.slice(0, 12)}`));
    assert.equal(c.bwrapPrepared, c.concurrency);
    assert.equal(c.bwrapMode, "auto");
    assert.equal(loadSandboxConfig({ SANDBOX_BWRAP_MODE: "rootless" }).bwrapMode, "rootless");
    assert.equal(
      loadSandboxConfig({ SANDBOX_DOCKER_HOST: "tcp://h:2375", DOCKER_HOST: "unix:///x" }).dockerHost,
      "tcp://h:2375",
    );
  });

  it("fails start-up naming the key", () => {
    assert.throws(
      () => loadSandboxConfig({ SANDBOX_BACKEND: "podman" }),
      /'SANDBOX_BACKEND' must be one of auto, docker, bwrap/,
    );
    assert.throws(
      () => loadSandboxConfig({ SANDBOX_MEMORY_LIMIT_MB: "8" }),
      /'SANDBOX_MEMORY_LIMIT_MB' must be in \[32/,
    );
    assert.throws(
      () => loadSandboxConfig({ SANDBOX_DOCKER_HOST: "/var/run/docker.sock" }),
      /'SANDBOX_DOCKER_HOST' must be unix/,
    );
    assert.throws(
      () => loadSandboxConfig({ SANDBOX_BWRAP_MODE: "user" }),
      /'SANDBOX_BWRAP_MODE' must be one of auto, root, rootless/,
    );
    assert.throws(() => loadSandboxConfig({ SANDBOX_DOCKER_CPUS: "0" }), /'SANDBOX_DOCKER_CPUS'/);
  });
});

describe("tarFiles", () => {
  it("writes a ustar archive that tar(1) lists and extracts byte for byte", () => {
    const data = Buffer.from([0, 1, 2, 255, 10]);
    const tar = tarFiles([
      ["a.txt", Buffer.from("hello")],
      ["bin.dat", data],
    ]);
    assert.equal(tar.length % 512, 0);
    const list = execFileSync("tar", ["-tvf", "-"], { input: tar, encoding: "utf8" });
    assert.match(list, /a\.txt/);
    assert.match(list, /bin\.dat/);
    assert.deepEqual(execFileSync("tar", ["-xOf", "-", "bin.dat"], { input: tar }), data);
  });
});
