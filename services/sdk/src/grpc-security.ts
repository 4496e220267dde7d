/**
 * gRPC transport security for every mesh server and client, in one place: TLS and mutual TLS
 * credentials, bearer-token metadata auth, and the plaintext policy (plaintext only on a loopback
 * address unless explicitly allowed). The settings come from `loadGrpcServerSecurity` /
 * `loadGrpcClientSecurity` in `config.ts` (environment variables); this module never reads the
 * environment.
 *
 * Health checks (`grpc.health.v1.Health/*`) are exempt from the token, so that load balancers and
 * probes that cannot send metadata still work; they are never exempt from TLS or from client
 * certificates (those are checked at the handshake, before any method).
 * @module
 */
import { createHash, timingSafeEqual, X509Certificate } from "node:crypto";
import { isIP } from "node:net";
import { createSecureContext } from "node:tls";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { type Client, type ClientOptions, createGrpcClient, grpc } from "@reward-mesh/proto";
import { ConfigError } from "./errors.js";

/** PEM text read at start-up, with the setting it came from (named in every error about it). */
export interface PemFile {
  readonly pem: Buffer;
  /** The variable or flag that named the file, e.g. `LENGTH_GRPC_TLS_CERT_FILE`. */
  readonly key: string;
  readonly path: string;
}

/** A bearer token, with the setting it came from. */
export interface BearerToken {
  readonly value: string;
  /** The variable it came from (never the value: the value is never logged or put in a message). */
  readonly key: string;
}

/** The names of the settings a refusal message tells the user to set. */
export interface SecurityHints {
  /** How to turn TLS on, e.g. `LENGTH_GRPC_TLS_CERT_FILE and LENGTH_GRPC_TLS_KEY_FILE`. */
  readonly tls: string;
  /** The setting of the explicit plaintext opt-in, e.g. `LENGTH_GRPC_INSECURE` (to be set to 1). */
  readonly insecure: string;
}

/** TLS of a server: its certificate chain and key, and for mutual TLS the CAs of its clients. */
export interface GrpcServerTls {
  readonly cert: PemFile;
  readonly key: PemFile;
  /** When set, every client must present a certificate signed by one of these CAs (mutual TLS). */
  readonly clientCa?: PemFile;
}

/** How a gRPC server secures its port. `{}` is plaintext, allowed on loopback binds only. */
export interface GrpcServerSecurity {
  /** TLS (or mutual TLS); absent = plaintext. */
  readonly tls?: GrpcServerTls;
  /** When set, every call but health checks must carry `authorization: Bearer <token>`. */
  readonly token?: BearerToken;
  /**
   * Plaintext on a non-loopback address, explicitly allowed (e.g. behind a service mesh that
   * encrypts). @default false
   */
  readonly insecure?: boolean;
  /** Named in the refusal message. @default generic wording */
  readonly hints?: SecurityHints;
}

/** TLS of a client: the CAs it trusts and, for mutual TLS, its own certificate. */
export interface GrpcClientTls {
  /** CAs that sign the servers' certificates. @default the system's roots */
  readonly ca?: PemFile;
  /** This client's certificate chain (mutual TLS); needs `key`. */
  readonly cert?: PemFile;
  readonly key?: PemFile;
  /** The name checked against the server's certificate instead of the dialled host. */
  readonly serverName?: string;
}

/** How a gRPC client connects. `{}` is plaintext, allowed to loopback addresses only. */
export interface GrpcClientSecurity {
  /** TLS (or mutual TLS); absent = plaintext. */
  readonly tls?: GrpcClientTls;
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly token?: BearerToken;
  /** Plaintext to a non-loopback address, explicitly allowed. @default false */
  readonly insecure?: boolean;
  /** Named in the refusal message. @default the `REWARD_MESH_GRPC_*` variables */
  readonly hints?: SecurityHints;
}

/** The hints of {@link GrpcClientSecurity} when it names none (the client variables of `config.ts`). */
export const CLIENT_SECURITY_HINTS: SecurityHints = {
  tls: "REWARD_MESH_GRPC_TLS_CA_FILE (the CA that signed the server's certificate)",
  insecure: "REWARD_MESH_GRPC_INSECURE",
};

/** The hints of {@link GrpcServerSecurity} when it names none (options set in code). */
export const SERVER_SECURITY_HINTS: SecurityHints = {
  tls: "security.tls (a certificate and its key)",
  insecure: "security.insecure",
};

/** The metadata key of the bearer token (lower case, as HTTP/2 sends it). */
export const AUTHORIZATION_METADATA_KEY = "authorization";

/** Methods exempt from the token: the standard health service (probes cannot send metadata). */
export const TOKEN_EXEMPT_PREFIX = "/grpc.health.v1.Health/";

// ---- checks ----

/** True for an address that only this machine can reach: `localhost`, 127.0.0.0/8, `::1`. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^::ffff:127\./.test(h) || h === "0:0:0:0:0:0:0:1";
  return false;
}

/**
 * The host of a gRPC target: `host:port`, `[v6]:port`, `dns:///host:port`, `ipv4:a.b.c.d:port`;
 * `unix:` targets give `localhost` (only this machine reaches a socket file).
 */
export function hostOfTarget(target: string): string {
  if (/^unix(-abstract)?:/.test(target)) return "localhost";
  let t = target.replace(/^dns:(\/\/[^/]*)?\/?/, "").replace(/^ipv[46]:/, "");
  t = t.split(",")[0]!;
  const v6 = t.match(/^\[([^\]]+)\]/);
  if (v6) return v6[1]!;
  if (isIP(t) === 6) return t;
  return t.replace(/:\d*$/, "");
}

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Checks that `file` holds at least one PEM certificate and that each parses; throws
 * {@link ConfigError} naming its setting otherwise. Returns the certificates.
 */
export function checkCertificates(file: PemFile): X509Certificate[] {
  const blocks = file.pem.toString("utf8").match(CERT_BLOCK) ?? [];
  if (blocks.length === 0)
    throw new ConfigError(file.key, `'${file.path}' holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((b, i) => {
    try {
      return new X509Certificate(b);
    } catch (err) {
      throw new ConfigError(file.key, `'${file.path}': certificate ${i + 1} does not parse (${String(err)})`);
    }
  });
}

/** Checks that `key` is a PEM private key matching the first certificate of `cert`. */
export function checkKeyPair(cert: PemFile, key: PemFile): void {
  checkCertificates(cert);
  try {
    createSecureContext({ cert: cert.pem, key: key.pem });
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    const problem = /mismatch/.test(why)
      ? `'${key.path}' is not the private key of the certificate in ${cert.key} ('${cert.path}')`
      : `'${key.path}' is not a usable PEM private key (${why})`;
    throw new ConfigError(key.key, problem);
  }
}

// ---- server ----

function describeTls(s: GrpcServerSecurity): string {
  if (!s.tls) return s.insecure ? "plaintext (explicitly allowed)" : "plaintext (loopback only)";
  return s.tls.clientCa ? "mutual TLS" : "TLS";
}

/** One line for logs: the transport and whether a token is required (never the token). */
export function describeServerSecurity(s: GrpcServerSecurity): string {
  return `${describeTls(s)}${s.token ? ", bearer token" : ""}`;
}

/**
 * The credentials of a server bound to `host`. Refuses (throws {@link ConfigError}) plaintext on a
 * non-loopback host unless `security.insecure`: a mesh port open to the network must be TLS or an
 * explicit choice.
 */
export function createServerCredentials(
  host: string,
  security: GrpcServerSecurity = {},
): grpc.ServerCredentials {
  const tls = security.tls;
  if (!tls) {
    if (!security.insecure && !isLoopbackHost(host)) {
      const h = security.hints ?? SERVER_SECURITY_HINTS;
      throw new ConfigError(
        h.insecure,
        `is not set and TLS is not configured: refusing a plaintext gRPC server on '${host}', which is not a loopback address. Set ${h.tls} for TLS, or ${h.insecure}=1 to accept plaintext explicitly (e.g. behind a mesh that encrypts)`,
      );
    }
    return grpc.ServerCredentials.createInsecure();
  }
  checkKeyPair(tls.cert, tls.key);
  if (tls.clientCa) checkCertificates(tls.clientCa);
  return grpc.ServerCredentials.createSsl(
    tls.clientCa?.pem ?? null,
    [{ cert_chain: tls.cert.pem, private_key: tls.key.pem }],
    tls.clientCa !== undefined,
  );
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

/**
 * Whether `metadata` carries `authorization: Bearer <token>` with the expected token (compared in
 * constant time over SHA-256 digests, so neither content nor length leaks through timing).
 * Returns the problem, or `undefined` when it does.
 */
export function checkBearerToken(metadata: grpc.Metadata, expected: Buffer): string | undefined {
  const values = metadata.get(AUTHORIZATION_METADATA_KEY);
  if (values.length === 0) return "missing bearer token: send metadata 'authorization: Bearer <token>'";
  if (values.length > 1) return "more than one 'authorization' metadata value";
  const m = typeof values[0] === "string" ? values[0].match(/^Bearer +(\S+)$/i) : null;
  if (!m) return "the 'authorization' metadata is not 'Bearer <token>'";
  return timingSafeEqual(digest(m[1]!), expected) ? undefined : "invalid bearer token";
}

/**
 * A server interceptor that ends every call without the right bearer token with UNAUTHENTICATED
 * before its handler runs (health checks exempt, see the module comment).
 */
export function bearerTokenInterceptor(token: BearerToken): grpc.ServerInterceptor {
  const expected = digest(token.value);
  return (method, call) =>
    new grpc.ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, nextMetadata) {
            const problem = method.path.startsWith(TOKEN_EXEMPT_PREFIX)
              ? undefined
              : checkBearerToken(metadata, expected);
            if (problem === undefined) nextMetadata(metadata);
            else call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: problem });
          },
        });
      },
    });
}

/** The interceptors a server with `security` needs (the token check when a token is set). */
export function serverInterceptors(security: GrpcServerSecurity = {}): grpc.ServerInterceptor[] {
  return security.token ? [bearerTokenInterceptor(security.token)] : [];
}

// ---- client ----

/** A client interceptor that adds `authorization: Bearer <token>` to every call. */
export function bearerTokenClientInterceptor(token: BearerToken): grpc.Interceptor {
  const value = `Bearer ${token.value}`;
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set(AUTHORIZATION_METADATA_KEY, value);
        next(metadata, listener);
      },
    });
}

/** What `new grpc.Client(target, credentials, options)` needs for {@link GrpcClientSecurity}. */
export interface GrpcChannelSettings {
  readonly credentials: grpc.ChannelCredentials;
  readonly options: grpc.ClientOptions;
}

/**
 * Credentials and client options to dial `target` with `security`. Refuses (throws
 * {@link ConfigError}) plaintext to a non-loopback target unless `security.insecure`.
 */
export function grpcChannelSettings(target: string, security: GrpcClientSecurity = {}): GrpcChannelSettings {
  const tls = security.tls;
  const options: grpc.ClientOptions = {};
  if (security.token) options.interceptors = [bearerTokenClientInterceptor(security.token)];
  if (!tls) {
    if (!security.insecure && !isLoopbackHost(hostOfTarget(target))) {
      const h = security.hints ?? CLIENT_SECURITY_HINTS;
      throw new ConfigError(
        h.insecure,
        `is not set and TLS is not configured: refusing plaintext gRPC to '${target}', which is not a loopback address. Set ${h.tls} for TLS, or ${h.insecure}=1 to send plaintext explicitly`,
      );
    }
    return { credentials: grpc.credentials.createInsecure(), options };
  }
  if (tls.ca) checkCertificates(tls.ca);
  if (tls.cert && tls.key) checkKeyPair(tls.cert, tls.key);
  if (tls.serverName) {
    options["grpc.ssl_target_name_override"] = tls.serverName;
    options["grpc.default_authority"] = tls.serverName;
  }
  return {
    credentials: grpc.credentials.createSsl(tls.ca?.pem ?? null, tls.key?.pem ?? null, tls.cert?.pem ?? null),
    options,
  };
}

/**
 * A typed client for `service` at `target` with `security` (TLS, client certificate, token), over the
 * one grpc-js bridge. Every mesh client is built with it.
 * @param channelOptions more channel options (e.g. `grpc.max_receive_message_length`)
 */
export function createSecureGrpcClient<S extends GenService<GenServiceMethods>>(
  service: S,
  target: string,
  security: GrpcClientSecurity = {},
  channelOptions: grpc.ChannelOptions = {},
  clientOptions: ClientOptions = {},
): Client<S> {
  const { credentials, options } = grpcChannelSettings(target, security);
  return createGrpcClient(service, target, credentials, { ...channelOptions, ...options }, clientOptions);
}
