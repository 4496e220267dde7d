/**
 * `images/lib/debian-base.sh`'s `debian_mirror`: the mirror comes from DEBIAN_MIRROR or this machine's apt
 * sources for exactly the suite (deb822 and one-line entries), never from an address built into the
 * repository; with neither, it fails naming DEBIAN_MIRROR. Runs the shell function on fixture apt dirs.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const lib = fileURLToPath(new URL("../lib/debian-base.sh", import.meta.url));
const run = promisify(execFile);
const dirs: string[] = [];

/** An apt directory holding `files` (path relative to it → content). */
function aptDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "rm-apt-"));
  dirs.push(dir);
  mkdirSync(join(dir, "sources.list.d"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** `debian_mirror <suite>` with the apt directory `apt`: its stdout, or the error's stderr and code. */
async function mirror(
  apt: string,
  suite: string,
  env: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await run("bash", ["-c", `. "${lib}"; debian_mirror "$1"`, "x", suite], {
      env: { PATH: process.env["PATH"] ?? "", DEBIAN_BASE_APT_DIR: apt, ...env },
    });
    return { code: 0, out: stdout.trim(), err: stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, out: x.stdout.trim(), err: x.stderr };
  }
}

after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("debian_mirror", () => {
  it("takes the deb822 URI whose Suites list the suite, not a -security stanza or a third-party one", async () => {
    const apt = aptDir({
      "sources.list.d/extra.sources": "Types: deb\nURIs: https://apt.vendor.example/repo\nSuites: nodistro\nComponents: main\n",
      "sources.list.d/debian.sources": [
        "Types: deb",
        "URIs: http://security.mirror.example/debian-security",
        "Suites: bookworm-security",
        "Components: main",
        "",
        "Types: deb-src deb",
        "URIs: http://mirror.example/debian",
        "Suites: bookworm bookworm-updates",
        "Components: main",
        "",
      ].join("\n"),
    });
    const r = await mirror(apt, "bookworm");
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "http://mirror.example/debian");
  });

  it("skips a disabled deb822 stanza, wherever its Enabled line is", async () => {
    const apt = aptDir({
      "sources.list.d/a.sources":
        "Enabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: trixie\n\nTypes: deb\nURIs: http://on.example/debian\nSuites: trixie\n",
    });
    assert.equal((await mirror(apt, "trixie")).out, "http://on.example/debian");
  });

  it("reads one-line entries, options in brackets included", async () => {
    const apt = aptDir({
      "sources.list":
        "# comment\ndeb-src http://src.example/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main contrib\n",
      "sources.list.d/vendor.list": "deb https://apt.vendor.example/apt cloud-sdk-bookworm main\n",
    });
    assert.equal((await mirror(apt, "bookworm")).out, "http://one.example/debian");
  });

  it("DEBIAN_MIRROR wins", async () => {
    const apt = aptDir({ "sources.list": "deb http://one.example/debian bookworm main\n" });
    assert.equal(
      (await mirror(apt, "bookworm", { DEBIAN_MIRROR: "http://chosen.example/debian" })).out,
      "http://chosen.example/debian",
    );
  });

  it("no source for the suite and no DEBIAN_MIRROR: fails, naming the suite and DEBIAN_MIRROR (no built-in address)", async () => {
    const apt = aptDir({ "sources.list": "deb http://one.example/debian bookworm main\n" });
    const r = await mirror(apt, "trixie");
    assert.equal(r.code, 1);
    assert.equal(r.out, "");
    assert.match(r.err, /no Debian mirror for suite 'trixie'.*set DEBIAN_MIRROR/);
  });
});
