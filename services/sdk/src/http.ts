/**
 * HTTP/JSON beside gRPC: the same hosted services (their very handler objects, so the same validation and
 * the same errors) over the Connect protocol (`@connectrpc/connect-node`), on a second port.
 *
 * - `POST /<package.Service>/<Method>` with `Content-Type: application/json` and the request in the proto
 *   JSON mapping (field names in lowerCamelCase or as written in the .proto) answers the response in the
 *   proto JSON mapping, every field emitted (zeros included). `application/proto` bodies work too.
 * - Errors: the gRPC status of the same failure, as Connect's `{"code":"invalid_argument","message":…}` with
 *   the matching HTTP status (INVALID_ARGUMENT → 400, NOT_FOUND → 404, UNAVAILABLE → 503, INTERNAL → 500, …).
 * - Unary and server-streaming methods work over HTTP/1.1; the bidirectional ScoreStream needs HTTP/2, which
 *   the port offers with TLS (h2 and HTTP/1.1 on one port). Plaintext is HTTP/1.1 only (Node 20 cannot serve
 *   h2c and HTTP/1.1 on one port): use gRPC for streaming there.
 * - `GET /healthz` (no token needed): 200 `{"status":"SERVING","services":{…}}` while serving, 503 otherwise;
 *   `POST /grpc.health.v1.Health/Check` is the Connect form of the gRPC health check.
 * - `close(graceMs)` drains like the gRPC server: it stops accepting connections, answers `/healthz` 503 and
 *   any new request on a kept-alive connection 503 `unavailable` (HTTP/2 sessions get a GOAWAY), waits for the
 *   calls in flight up to `graceMs`, then aborts what is left (the handlers' signal) and closes every socket.
 * - Security follows the gRPC port's: TLS (and client certificates) with the same files, and the bearer token
 *   (`Authorization: Bearer <token>`) on everything but health.
 * @module
 */
import { createHash } from "node:crypto";
import http from "node:http";
import http2 from "node:http2";
import type { Socket } from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import {
  type Code,
  ConnectError,
  type ConnectRouter,
  type HandlerContext as ConnectContext,
} from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { type GrpcStatusInfo, grpc, type HandlerContext } from "@reward-mesh/proto";
import { checkBearerToken, type GrpcServerSecurity } from "./grpc-security.js";
import { type HealthState, HealthStatus } from "./health.js";
import type { Logger } from "./logger.js";

/** The handler object of a hosted service, as HTTP/JSON calls it (the same object gRPC calls). */
export interface ConnectHostable {
  readonly descriptor: DescService;
  /** The service's `ServiceImpl` (promise / async-iterable handlers taking our `HandlerContext`). */
  // biome-ignore lint/suspicious/noExplicitAny: handlers of any service, checked by `grpcService`'s types.
  readonly impl: Readonly<Record<string, (...args: any[]) => any>>;
  readonly toStatus: (err: unknown) => GrpcStatusInfo;
}

/** Options of {@link startHttpServer}. */
export interface HttpServerOptions {
  readonly host: string;
  /** 0 = any free port. */
  readonly port: number;
  readonly services: readonly ConnectHostable[];
  readonly health: HealthState;
  readonly logger: Logger;
  /** Largest request body, in bytes. */
  readonly maxMessageBytes: number;
  /** The gRPC port's security (TLS files, bearer token); plaintext was already allowed or refused there. */
  readonly security?: GrpcServerSecurity;
}

/** A running HTTP/JSON server. */
export interface RunningHttpServer {
  readonly port: number;
  /** `http://host:port` (or `https://`) clients can call. */
  readonly url: string;
  /** Drains (see the module doc): in-flight calls get up to `graceMs` (default 5 s), then are cut. */
  close(graceMs?: number): Promise<void>;
}

/** Our gRPC handler context from Connect's: the request headers become the metadata (`traceparent`, …). */
function handlerContext(ctx: ConnectContext): HandlerContext {
  const metadata = new grpc.Metadata();
  ctx.requestHeader.forEach((value, key) => {
    if (!key.startsWith(":") && !key.endsWith("-bin")) metadata.add(key, value);
  });
  const timeout = ctx.timeoutMs();
  return {
    signal: ctx.signal,
    metadata,
    deadline: timeout === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeout,
    path: `/${ctx.service.typeName}/${ctx.method.name}`,
    peer: ctx.requestHeader.get("x-forwarded-for") ?? "http",
    transport: "http",
  };
}

function connectError(err: unknown, toStatus: ConnectHostable["toStatus"]): ConnectError {
  if (err instanceof ConnectError) return err;
  const st = toStatus(err);
  return new ConnectError(st.details, st.code as number as Code);
}

async function* mapStreamErrors<T>(
  it: AsyncIterable<T>,
  toStatus: ConnectHostable["toStatus"],
): AsyncIterable<T> {
  try {
    yield* it;
  } catch (err) {
    throw connectError(err, toStatus);
  }
}

/** Connect handlers calling `s.impl` with our context and mapping its errors to the gRPC codes it would send. */
function connectImpl(s: ConnectHostable) {
  // biome-ignore lint/suspicious/noExplicitAny: one adapter per method kind, shapes fixed by the descriptor.
  const out: Record<string, (req: any, ctx: ConnectContext) => any> = {};
  for (const method of s.descriptor.methods) {
    const fn = s.impl[method.localName];
    if (!fn) continue;
    if (method.methodKind === "unary" || method.methodKind === "client_streaming") {
      out[method.localName] = async (req, ctx) => {
        try {
          return await fn(req, handlerContext(ctx));
        } catch (err) {
          throw connectError(err, s.toStatus);
        }
      };
    } else {
      out[method.localName] = (req, ctx) => mapStreamErrors(fn(req, handlerContext(ctx)), s.toStatus);
    }
  }
  return out;
}

function healthBody(h: HealthState, services: readonly ConnectHostable[]): { ok: boolean; body: string } {
  const name = (st: number | undefined) => HealthStatus[st ?? HealthStatus.SERVICE_UNKNOWN] ?? "UNKNOWN";
  const overall = h.get("");
  const perService = Object.fromEntries(
    services
      .filter((s) => !s.descriptor.typeName.startsWith("grpc."))
      .map((s) => [s.descriptor.typeName, name(h.get(s.descriptor.typeName))]),
  );
  return {
    ok: overall === HealthStatus.SERVING,
    body: `${JSON.stringify({ status: name(overall), services: perService })}\n`,
  };
}

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Starts the HTTP/JSON (Connect protocol) server for `services` on `host:port`. Accepts HTTP/1.1 and HTTP/2
 * (with TLS) on the one port.
 */
export async function startHttpServer(o: HttpServerOptions): Promise<RunningHttpServer> {
  const logger = o.logger.child({ component: "http" });
  const shutdown = new AbortController();
  const token = o.security?.token;
  const expected = token ? createHash("sha256").update(token.value, "utf8").digest() : undefined;
  const connect = connectNodeAdapter({
    grpc: false,
    grpcWeb: false,
    connect: true,
    readMaxBytes: o.maxMessageBytes,
    shutdownSignal: shutdown.signal,
    jsonOptions: { alwaysEmitImplicit: true, ignoreUnknownFields: false },
    routes(router: ConnectRouter) {
      for (const s of o.services)
        router.service(s.descriptor, connectImpl(s) as unknown as Parameters<ConnectRouter["service"]>[1]);
    },
    fallback(req, res) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        `${JSON.stringify({ code: "unimplemented", message: `no route for ${req.method} ${req.url}` })}\n`,
      );
    },
  });
  let draining = false;
  let inFlight = 0;
  let onIdle: (() => void) | undefined;
  const handler = (req: NodeRequest, res: NodeResponse) => {
    const path = (req.url ?? "").split("?")[0];
    // HTTP/1.1 only: HTTP/2 forbids connection-specific headers (its sessions get a GOAWAY instead).
    const closeHeader: Record<string, string> =
      req.httpVersionMajor === 1 && draining ? { connection: "close" } : {};
    if (path === "/healthz" && (req.method === "GET" || req.method === "HEAD")) {
      const { ok, body } = healthBody(o.health, o.services);
      res.writeHead(ok && !draining ? 200 : 503, { "content-type": "application/json", ...closeHeader });
      if (req.method === "HEAD") res.end();
      else res.end(body);
      return;
    }
    if (draining) {
      res.writeHead(503, { "content-type": "application/json", ...closeHeader });
      res.end(`${JSON.stringify({ code: "unavailable", message: "the server is shutting down" })}\n`);
      return;
    }
    inFlight++;
    res.once("close", () => {
      inFlight--;
      if (inFlight === 0) onIdle?.();
    });
    if (expected && !path?.startsWith("/grpc.health.v1.Health/")) {
      const md = new grpc.Metadata();
      const auth = req.headers["authorization"];
      if (typeof auth === "string") md.set("authorization", auth);
      const problem = checkBearerToken(md, expected);
      if (problem) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end(
          `${JSON.stringify({ code: "unauthenticated", message: problem.replace("metadata", "header") })}\n`,
        );
        return;
      }
    }
    connect(req, res);
  };
  const tls = o.security?.tls;
  const server = tls
    ? http2.createSecureServer(
        {
          allowHTTP1: true,
          cert: tls.cert.pem,
          key: tls.key.pem,
          ...(tls.clientCa ? { ca: tls.clientCa.pem, requestCert: true, rejectUnauthorized: true } : {}),
        },
        handler,
      )
    : http.createServer({ keepAliveTimeout: 65_000 }, handler);
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      const addr = server.address();
      resolve(typeof addr === "object" && addr ? addr.port : o.port);
    });
  });
  const dialHost =
    o.host === "0.0.0.0" || o.host === "::" ? "127.0.0.1" : o.host.includes(":") ? `[${o.host}]` : o.host;
  const url = `${tls ? "https" : "http"}://${dialHost}:${port}`;
  logger.info({ port, host: o.host, url, tls: Boolean(tls) }, "HTTP/JSON (Connect) server listening");
  return {
    port,
    url,
    async close(graceMs = 5_000) {
      if (draining) return;
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Stop taking requests: idle HTTP/1.1 connections close, HTTP/2 sessions get a GOAWAY (their open
      // streams go on).
      (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      for (const session of sessions) session.close();
      if (inFlight > 0) {
        logger.info({ inFlight, graceMs }, "HTTP/JSON server draining");
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, graceMs);
          onIdle = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      if (inFlight > 0) logger.warn({ inFlight }, "HTTP/JSON drain timed out: cancelling the calls left");
      shutdown.abort();
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
      await Promise.race([closed, new Promise<void>((r) => setTimeout(r, 2_000).unref())]);
    },
  };
}
