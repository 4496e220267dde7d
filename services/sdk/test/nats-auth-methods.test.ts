/**
 * Every way the mesh authenticates to NATS, each against a real `nats-server` configured for it and
 * read from the environment as a process would (`loadBusOptions`): user/password, token, NKEY seed file,
 * `.creds` file (operator/JWT mode, JWTs signed here with NKEYs) and mutual TLS with a CA made by
 * `openssl` in the test's temporary directory. Bad settings fail with an error naming the variable.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createAccount, createOperator, createUser, type KeyPair } from "@nats-io/nkeys";
import { connect } from "@nats-io/transport-node";
import {
  connectBus,
  type Env,
  loadBusOptions,
  loadNatsAuthOptions,
  type LocalNats,
  type NatsAuthOptions,
  natsConnectionOptions,
  openBus,
  startNatsServer,
} from "../src/index.js";
import { createTestPki } from "../src/testing/pki.js";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "rm-nats-auth-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function file(text: string): string {
  const p = join(dir, `f${++files}`);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
}

/** Starts nats-server with `config`, checks a process configured by `env` works, then stops it. */
async function withServer(
  config: string,
  env: Env,
  check: (url: string, env: Env) => Promise<void>,
): Promise<void> {
  const auth = loadNatsAuthOptions(env);
  let nats: LocalNats | undefined;
  try {
    nats = await startNatsServer({ configFile: file(config), auth });
    await check(nats.url, env);
  } finally {
    await nats?.stop();
  }
}

/** Opens the mesh bus as a process with `env` would, and makes a JetStream round trip. */
async function works(url: string, env: Env): Promise<void> {
  const bus = await openBus(loadBusOptions({ ...env, NATS_URL: url }), "auth-test");
  try {
    const info = await bus.jsm.getAccountInfo();
    assert.ok(info.streams >= 4, "the mesh streams exist");
  } finally {
    await bus.close();
  }
}

describe("NATS authentication methods", () => {
  it("user and password", async () => {
    const env = { NATS_USER: "mesh", NATS_PASSWORD: 'pa ss"word' };
    await withServer(
      `authorization { user: "mesh", password: ${JSON.stringify(env.NATS_PASSWORD)} }`,
      env,
      async (url) => {
        await works(url, env);
        await assert.rejects(
          connectBus(url, "wrong", loadNatsAuthOptions({ NATS_USER: "mesh", NATS_PASSWORD: "nope" })),
          /refused the connection.*check the credentials/,
        );
        await assert.rejects(connectBus(url, "anonymous"), /requires credentials/);
      },
    );
  });

  it("token", async () => {
    const env = { NATS_TOKEN: "t0ken-with-entropy" };
    await withServer(`authorization { token: "${env.NATS_TOKEN}" }`, env, async (url) => {
      await works(url, env);
      await assert.rejects(connectBus(url, "wrong", { token: "other" }), /refused the connection/);
    });
  });

  it("NKEY seed file", async () => {
    const kp = createUser();
    const env = { NATS_NKEY_SEED_FILE: file(`${new TextDecoder().decode(kp.getSeed())}\n`) };
    await withServer(`authorization { users: [ { nkey: "${kp.getPublicKey()}" } ] }`, env, async (url) => {
      await works(url, env);
      const other = file(new TextDecoder().decode(createUser().getSeed()));
      await assert.rejects(connectBus(url, "wrong", { nkeySeedFile: other }), /refused the connection/);
    });
  });

  it(".creds file (operator mode: operator, account and user JWTs signed with NKEYs)", async () => {
    const operator = createOperator();
    const account = createAccount();
    const system = createAccount();
    const user = createUser();
    const accountJwt = encodeJwt(operator, account, "mesh", {
      type: "account",
      version: 2,
      limits: {
        subs: -1,
        data: -1,
        payload: -1,
        imports: -1,
        exports: -1,
        wildcards: true,
        conn: -1,
        leaf: -1,
        mem_storage: -1,
        disk_storage: -1,
        streams: -1,
        consumer: -1,
      },
    });
    const systemJwt = encodeJwt(operator, system, "SYS", { type: "account", version: 2, limits: {} });
    const operatorJwt = encodeJwt(operator, operator, "op", {
      type: "operator",
      version: 2,
      system_account: system.getPublicKey(),
    });
    const userJwt = encodeJwt(account, user, "trainer", {
      type: "user",
      version: 2,
      pub: {},
      sub: {},
      subs: -1,
      data: -1,
      payload: -1,
    });
    const creds = [
      "-----BEGIN NATS USER JWT-----",
      userJwt,
      "------END NATS USER JWT------",
      "",
      "************************* IMPORTANT *************************",
      "NKEY Seed printed below can be used to sign and prove identity.",
      "",
      "-----BEGIN USER NKEY SEED-----",
      new TextDecoder().decode(user.getSeed()),
      "------END USER NKEY SEED------",
      "",
    ].join("\n");
    const env = { NATS_CREDS_FILE: file(creds) };
    const config = [
      `operator: "${operatorJwt}"`,
      `system_account: "${system.getPublicKey()}"`,
      "resolver: MEMORY",
      `resolver_preload: { ${account.getPublicKey()}: "${accountJwt}", ${system.getPublicKey()}: "${systemJwt}" }`,
    ].join("\n");
    await withServer(config, env, async (url) => {
      await works(url, env);
      await assert.rejects(connectBus(url, "anonymous"), /refused the connection/);
    });
  });

  it("mutual TLS with a CA made by openssl (and token auth over it)", async (t) => {
    const tls = createTestPki();
    t.after(() => tls.remove());
    const env = {
      NATS_TLS_CA_FILE: tls.caCert,
      NATS_TLS_CERT_FILE: tls.clientCert,
      NATS_TLS_KEY_FILE: tls.clientKey,
      NATS_TOKEN: "over-tls",
    };
    const config = [
      `tls { cert_file: "${tls.serverCert}", key_file: "${tls.serverKey}", ca_file: "${tls.caCert}", verify: true }`,
      'authorization { token: "over-tls" }',
    ].join("\n");
    await withServer(config, env, async (url) => {
      await works(url, env);
      // Refused: no client certificate (the server requires one), and no CA (the client cannot trust
      // the server). A short connect timeout: a refused TLS handshake may surface only as one.
      const attempt = (auth: NatsAuthOptions) =>
        connect({ ...natsConnectionOptions(auth), servers: url, timeout: 3000, reconnect: false }).then(
          (nc) => nc.close(),
        );
      await assert.rejects(attempt({ tlsCaFile: tls.caCert, token: "over-tls" }));
      await assert.rejects(
        attempt({ tlsCertFile: tls.clientCert, tlsKeyFile: tls.clientKey, token: "over-tls" }),
      );
      await attempt({
        tlsCaFile: tls.caCert,
        tlsCertFile: tls.clientCert,
        tlsKeyFile: tls.clientKey,
        token: "over-tls",
      });
    });
  });
});

describe("NATS credential settings", () => {
  const seed = () => file(new TextDecoder().decode(createUser().getSeed()));
  const cases: Array<[string, Env, RegExp]> = [
    ["a user without a password", { NATS_USER: "u" }, /'NATS_PASSWORD' must be set together with NATS_USER/],
    [
      "a password without a user",
      { NATS_PASSWORD: "p" },
      /'NATS_USER' must be set together with NATS_PASSWORD/,
    ],
    [
      "two methods",
      { NATS_TOKEN: "t", NATS_USER: "u", NATS_PASSWORD: "p" },
      /'NATS_TOKEN' cannot be combined with NATS_USER/,
    ],
    [
      "a missing seed file",
      { NATS_NKEY_SEED_FILE: "/nonexistent/seed.nk" },
      /'NATS_NKEY_SEED_FILE' names a file that cannot be read/,
    ],
    ["a directory for a file", { NATS_CREDS_FILE: "/tmp" }, /'NATS_CREDS_FILE' must name a file/],
    [
      "a client certificate without its key",
      { NATS_TLS_CERT_FILE: "/etc/hostname" },
      /'NATS_TLS_KEY_FILE' must be set together with NATS_TLS_CERT_FILE/,
    ],
    [
      "an inbox prefix with a wildcard",
      { NATS_INBOX_PREFIX: "_INBOX.*" },
      /'NATS_INBOX_PREFIX' must be a NATS subject without wildcards/,
    ],
  ];
  for (const [what, env, message] of cases)
    it(`refuses ${what}, naming the variable`, () => assert.throws(() => loadBusOptions(env), message));

  it("refuses key files that do not hold what they should, naming the variable", () => {
    assert.ok(loadNatsAuthOptions({ NATS_NKEY_SEED_FILE: seed() }).nkeySeedFile);
    assert.throws(
      () => natsConnectionOptions({ nkeySeedFile: file("not a seed") }),
      /'NATS_NKEY_SEED_FILE' '.*' does not hold a NATS user NKEY seed/,
    );
    assert.throws(
      () =>
        natsConnectionOptions({ nkeySeedFile: file(new TextDecoder().decode(createAccount().getSeed())) }),
      /'NATS_NKEY_SEED_FILE' .* not a user key/,
    );
    assert.throws(
      () => natsConnectionOptions({ credsFile: file("just text") }),
      /'NATS_CREDS_FILE' '.*' is not a NATS \.creds file/,
    );
  });
});

/** A JWT as NATS expects it: `ed25519-nkey` signed by `issuer`, about `subject`. */
function encodeJwt(issuer: KeyPair, subject: KeyPair, name: string, nats: Record<string, unknown>): string {
  const b64 = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");
  const header = b64(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const claims = b64(
    JSON.stringify({
      jti: b64(crypto.getRandomValues(new Uint8Array(16))),
      iat: Math.floor(Date.now() / 1000),
      iss: issuer.getPublicKey(),
      name,
      sub: subject.getPublicKey(),
      nats,
    }),
  );
  const sig = issuer.sign(new TextEncoder().encode(`${header}.${claims}`));
  return `${header}.${claims}.${b64(sig)}`;
}
