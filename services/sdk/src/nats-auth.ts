/**
 * NATS credentials and TLS as nats.js connection options, using nats.js's own authenticators
 * (user/password, token, NKEY, `.creds`) and the Node transport's TLS options. Key material is read
 * and checked here, once, so a bad file fails start-up with an error naming its variable.
 * @module
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { fromSeed } from "@nats-io/nkeys";
import {
  AuthorizationError,
  type ConnectionOptions,
  credsAuthenticator,
  nkeyAuthenticator,
  PermissionViolationError,
  RequestError,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
} from "@nats-io/transport-node";
import { NatsAuthEnv, type NatsAuthOptions } from "./config.js";
import { ConfigError, MeshError } from "./errors.js";

function readKeyFile(key: string, path: string): Uint8Array {
  try {
    return new Uint8Array(readFileSync(path));
  } catch (err) {
    throw new ConfigError(key, `names a file that cannot be read: ${(err as Error).message}`, { cause: err });
  }
}

/** The NKEY seed in `path` (surrounding whitespace ignored); checked to be a user seed. */
function nkeySeed(path: string): Uint8Array {
  const key = NatsAuthEnv.nkeySeedFile;
  const text = new TextDecoder().decode(readKeyFile(key, path)).trim();
  const seed = new TextEncoder().encode(text);
  try {
    const kp = fromSeed(seed);
    if (!kp.getPublicKey().startsWith("U"))
      throw new Error("not a user key (its public key must start with U)");
  } catch (err) {
    throw new ConfigError(
      key,
      `'${path}' does not hold a NATS user NKEY seed (SU...): ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  return seed;
}

/** The `.creds` file at `path`, checked to hold a JWT and a user seed. */
function credsFile(path: string): Uint8Array {
  const key = NatsAuthEnv.credsFile;
  const bytes = readKeyFile(key, path);
  try {
    // Parses the file the way the authenticator will (throws on a malformed file).
    credsAuthenticator(bytes)("");
  } catch (err) {
    throw new ConfigError(key, `'${path}' is not a NATS .creds file: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return bytes;
}

/**
 * The nats.js connection options for `auth`: an authenticator (at most one method), `tls` when a CA or
 * client certificate is given, and the inbox prefix. Empty for an anonymous plain-text connection.
 */
export function natsConnectionOptions(auth: NatsAuthOptions = {}): Partial<ConnectionOptions> {
  const o: Partial<ConnectionOptions> = {};
  if (auth.user !== undefined)
    o.authenticator = usernamePasswordAuthenticator(auth.user, auth.password ?? "");
  else if (auth.token !== undefined) o.authenticator = tokenAuthenticator(auth.token);
  else if (auth.nkeySeedFile !== undefined) o.authenticator = nkeyAuthenticator(nkeySeed(auth.nkeySeedFile));
  else if (auth.credsFile !== undefined) o.authenticator = credsAuthenticator(credsFile(auth.credsFile));
  if (auth.tlsCaFile !== undefined || auth.tlsCertFile !== undefined) {
    for (const [k, p] of [
      [NatsAuthEnv.tlsCaFile, auth.tlsCaFile],
      [NatsAuthEnv.tlsCertFile, auth.tlsCertFile],
      [NatsAuthEnv.tlsKeyFile, auth.tlsKeyFile],
    ] as const)
      if (p !== undefined) readKeyFile(k, p);
    o.tls = {
      ...(auth.tlsCaFile !== undefined ? { caFile: auth.tlsCaFile } : {}),
      ...(auth.tlsCertFile !== undefined ? { certFile: auth.tlsCertFile } : {}),
      ...(auth.tlsKeyFile !== undefined ? { keyFile: auth.tlsKeyFile } : {}),
    };
  }
  if (auth.inboxPrefix !== undefined) o.inboxPrefix = auth.inboxPrefix;
  return o;
}

/** The environment variables that hand `auth` to a child process (for `reward-mesh up`). */
export function natsAuthEnv(auth: NatsAuthOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(auth))
    if (v !== undefined) env[NatsAuthEnv[k as keyof NatsAuthOptions]] = v;
  return env;
}

/** True when the server refused the connection's credentials (or an anonymous connection). */
export function isAuthorizationError(err: unknown): boolean {
  return (
    err instanceof AuthorizationError ||
    (err instanceof Error && err.cause instanceof AuthorizationError) ||
    (err instanceof Error && /authorization violation/i.test(err.message))
  );
}

/** True when the server refused a publish or request because the user lacks the permission. */
export function isPermissionViolation(err: unknown): boolean {
  return (
    err instanceof PermissionViolationError ||
    (err instanceof RequestError && err.cause instanceof PermissionViolationError) ||
    (err instanceof Error && /permissions violation/i.test(err.message))
  );
}

/**
 * The NATS user (role) `auth` connects as, for messages: the user of a generated inbox prefix
 * (`_INBOX_<user>`: `trainer`, `service-<name>`, `admin`), else `NATS_USER`, the seed or `.creds` file's
 * name, `token`, or `anonymous` without credentials.
 */
export function natsRoleOf(auth: NatsAuthOptions | undefined): string {
  const inbox = /^_INBOX_(.+)$/.exec(auth?.inboxPrefix ?? "")?.[1];
  if (inbox) return inbox;
  if (auth?.user !== undefined) return auth.user;
  if (auth?.nkeySeedFile !== undefined) return `the user of ${basename(auth.nkeySeedFile)}`;
  if (auth?.credsFile !== undefined) return `the user of ${basename(auth.credsFile)}`;
  if (auth?.token !== undefined) return "the NATS_TOKEN user";
  return "anonymous";
}

/** The operation and subject of the permission violation in `err`'s cause chain, if any. */
export function permissionViolationOf(
  err: unknown,
): { readonly operation: string; readonly subject: string } | undefined {
  for (let e: unknown = err, i = 0; e !== undefined && e !== null && i < 8; e = (e as Error).cause, i++) {
    if (e instanceof PermissionViolationError) return { operation: e.operation, subject: e.subject };
    const m =
      e instanceof Error
        ? /permissions violation for (publish|subscription) to "([^"]+)"/i.exec(e.message)
        : null;
    if (m)
      return { operation: m[1]!.toLowerCase() === "publish" ? "publish" : "subscription", subject: m[2]! };
  }
  return undefined;
}

/**
 * NATS refused this process's user a subject: names the subject, the operation, the role it connected as
 * and the role it needs.
 */
export class NatsPermissionError extends MeshError {
  override readonly name = "NatsPermissionError";
  readonly retryable = false;
  readonly subject: string;
  readonly role: string;
  constructor(subject: string, role: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.subject = subject;
    this.role = role;
  }
}

/**
 * `err` as a {@link NatsPermissionError} when it is a permission violation (else undefined): "NATS refused
 * <role> <publish to|subscribe to> <subject>", then `need` (what the process needs, and how to get it).
 */
export function explainPermissionViolation(
  err: unknown,
  auth: NatsAuthOptions | undefined,
  need: string,
): NatsPermissionError | undefined {
  if (!isPermissionViolation(err)) return undefined;
  const v = permissionViolationOf(err);
  const role = natsRoleOf(auth);
  const subject = v?.subject ?? "(a subject the server did not name)";
  const what = v?.operation === "subscription" ? "subscribe to" : "publish to";
  return new NatsPermissionError(
    subject,
    role,
    `NATS refused the role '${role}' permission to ${what} '${subject}' (Permissions Violation): ${need}`,
    { cause: err },
  );
}
