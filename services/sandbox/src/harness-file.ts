/**
 * Where the Python test harness lives, and its content hash (which also names the Docker image tag).
 * @module
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Absolute path of `harness/harness.py` in this package. */
export const HARNESS_PATH: string = fileURLToPath(new URL("../harness/harness.py", import.meta.url));

/** The harness's source. */
export const HARNESS_SOURCE: string = readFileSync(HARNESS_PATH, "utf8");

/** sha256 (hex) of the harness's bytes; the Docker image carries it as a label and in its tag. */
export const HARNESS_SHA256: string = createHash("sha256").update(readFileSync(HARNESS_PATH)).digest("hex");

/** Directory holding the harness inside every sandbox (image: baked in; bwrap: read-only bind). */
export const HARNESS_SANDBOX_DIR = "/opt/reward-mesh";

/** Path of the harness inside every sandbox. */
export const HARNESS_SANDBOX_PATH = `${HARNESS_SANDBOX_DIR}/harness.py`;

/**
 * The harness compiled by the sandbox's own interpreter (image: at build; bwrap: when the sandbox is
 * created), next to its source. The harness runs from it — the judge and the candidate process both —
 * so neither compiles 1,600 lines of source per rollout (≈ 11 ms of CPU each); CPython runs a `.pyc`
 * given as the script and checks its magic number against the interpreter.
 */
export const HARNESS_SANDBOX_BYTECODE = `${HARNESS_SANDBOX_DIR}/harness.pyc`;
