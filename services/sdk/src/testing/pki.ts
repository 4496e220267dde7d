/**
 * Throw-away certificates for TLS tests, made by `openssl` at test time (nothing secret is committed):
 * a CA, a server certificate for `127.0.0.1`, `::1` and `localhost`, a client certificate, and a
 * second, unrelated CA with its own client certificate (for "signed by another CA" cases).
 * @module
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Paths of the PEM files of {@link createTestPki}. */
export interface TestPki {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  /** A CA that signed none of the above. */
  readonly otherCaCert: string;
  /** A client certificate signed by `otherCaCert`. */
  readonly otherClientCert: string;
  readonly otherClientKey: string;
  /** Deletes the directory. */
  remove(): void;
}

const OPENSSL = existsSync("/usr/bin/openssl") ? "/usr/bin/openssl" : "openssl";
const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function openssl(dir: string, args: readonly string[]): void {
  execFileSync(OPENSSL, args, { cwd: dir, stdio: "pipe", timeout: 30_000 });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, [
    "req",
    "-x509",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
}

function makeLeaf(dir: string, name: string, ca: string, extensions: string): void {
  writeFileSync(join(dir, `${name}.ext`), `${extensions}\nbasicConstraints=CA:FALSE\n`);
  openssl(dir, [
    "req",
    "-new",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    `/CN=${name}`,
  ]);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.crt`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  ]);
}

/** Creates a fresh PKI in a temporary directory (about 0.1 s; EC P-256 keys). */
export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), "reward-mesh-pki-"));
  try {
    makeCa(dir, "ca");
    makeCa(dir, "other-ca");
    makeLeaf(
      dir,
      "server",
      "ca",
      "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth",
    );
    makeLeaf(dir, "client", "ca", "extendedKeyUsage=clientAuth");
    makeLeaf(dir, "other-client", "other-ca", "extendedKeyUsage=clientAuth");
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? String(err);
    throw new Error(`createTestPki: openssl failed (${OPENSSL}): ${why}`, { cause: err });
  }
  const p = (f: string) => join(dir, f);
  return {
    dir,
    caCert: p("ca.crt"),
    serverCert: p("server.crt"),
    serverKey: p("server.key"),
    clientCert: p("client.crt"),
    clientKey: p("client.key"),
    otherCaCert: p("other-ca.crt"),
    otherClientCert: p("other-client.crt"),
    otherClientKey: p("other-client.key"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
