/**
 * The one bridge between protobuf-es service descriptors and grpc-js.
 *
 * protoc-gen-es v2 emits no grpc-js service definitions (bufbuild/protobuf-es#252), so this file maps a
 * `DescService` to a grpc-js `ServiceDefinition` whose (de)serialisers are protobuf-es `toBinary` /
 * `fromBinary`, adapts promise/async-iterable handlers to grpc-js handlers, and builds typed clients.
 * Nothing else in the repository (de)serialises gRPC messages by hand.
 * @module
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type {
  DescMessage,
  DescMethod,
  DescService,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import * as grpc from "@grpc/grpc-js";

type Methods<S> = S extends GenService<infer M> ? M : never;
type In<M extends GenServiceMethods[string]> = MessageShape<M["input"]>;
type Out<M extends GenServiceMethods[string]> = MessageShape<M["output"]>;
type OutInit<M extends GenServiceMethods[string]> = MessageInitShape<M["output"]>;
type InInit<M extends GenServiceMethods[string]> = MessageInitShape<M["input"]>;

/** What every handler receives besides its request(s). */
export interface HandlerContext {
  /** Aborted when the call's deadline passes or the client cancels. `signal.reason` says which. */
  readonly signal: AbortSignal;
  /** Request metadata (carries `traceparent` / `tracestate`). */
  readonly metadata: grpc.Metadata;
  /** Absolute deadline in ms since the epoch, or `Infinity` when the client set none. */
  readonly deadline: number;
  /** Fully qualified method path, e.g. `/rewardmesh.v1.RewardService/Score`. */
  readonly path: string;
  /** The remote peer's address. */
  readonly peer: string;
  /** The protocol the call came over: `grpc` (default, unset) or `http` (HTTP/JSON, the Connect adapters). */
  readonly transport?: "grpc" | "http";
}

/** Handler shape for one method, by method kind (connect-es `ServiceImpl` style). */
export type MethodImpl<M extends GenServiceMethods[string]> = M["methodKind"] extends "unary"
  ? (req: In<M>, ctx: HandlerContext) => Promise<OutInit<M>>
  : M["methodKind"] extends "server_streaming"
    ? (req: In<M>, ctx: HandlerContext) => AsyncIterable<OutInit<M>>
    : M["methodKind"] extends "client_streaming"
      ? (reqs: AsyncIterable<In<M>>, ctx: HandlerContext) => Promise<OutInit<M>>
      : (reqs: AsyncIterable<In<M>>, ctx: HandlerContext) => AsyncIterable<OutInit<M>>;

/** One typed object with a handler per RPC: a missing or mistyped RPC is a compile error. */
export type ServiceImpl<S extends GenService<GenServiceMethods>> = {
  [K in keyof Methods<S>]: MethodImpl<Methods<S>[K]>;
};

/** A gRPC status to send when a handler throws. */
export interface GrpcStatusInfo {
  readonly code: grpc.status;
  readonly details: string;
}

/** Options for {@link createGrpcHandlers}. */
export interface HandlerOptions {
  /**
   * Maps anything a handler throws to the status sent on the wire. Must never leak stack traces.
   * @default every error becomes INTERNAL with its message
   */
  readonly toStatus?: (err: unknown) => GrpcStatusInfo;
}

/** Error raised when a call is aborted because its deadline passed. */
export class DeadlineExceededError extends Error {
  override readonly name = "DeadlineExceededError";
}

/** Error raised when the client cancelled the call. */
export class CallCancelledError extends Error {
  override readonly name = "CallCancelledError";
}

function methodPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

function serializer(desc: DescMessage) {
  return (value: MessageShape<DescMessage>): Buffer => {
    const bytes = toBinary(desc, value);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer(desc: DescMessage) {
  return (buf: Buffer): MessageShape<DescMessage> => fromBinary(desc, buf);
}

const UNDECODABLE = Symbol("undecodable");

/** What the server's request deserialiser returns for bytes that are not the method's input message. */
interface Undecodable {
  readonly [UNDECODABLE]: string;
}

/**
 * The server side never lets a decode error escape into grpc-js (which would answer INTERNAL): it
 * returns a marker that the handler adapter turns into INVALID_ARGUMENT naming the problem.
 */
function requestDeserializer(desc: DescMessage) {
  return (buf: Buffer): MessageShape<DescMessage> | Undecodable => {
    try {
      return fromBinary(desc, buf);
    } catch (err) {
      return { [UNDECODABLE]: err instanceof Error ? err.message : String(err) };
    }
  };
}

/** A request's bytes are not a valid message of the method's input type; sent as INVALID_ARGUMENT. */
export class UndecodableRequestError extends Error {
  override readonly name = "UndecodableRequestError";
}

/** Returns `msg`, or throws {@link UndecodableRequestError} naming `what` when it could not be decoded. */
function decoded(msg: unknown, input: DescMessage, what: string): unknown {
  if (msg !== null && typeof msg === "object" && UNDECODABLE in msg) {
    throw new UndecodableRequestError(
      `${what} is not a valid ${input.typeName}: ${(msg as Undecodable)[UNDECODABLE]}`,
    );
  }
  return msg;
}

/** The grpc-js `ServiceDefinition` for a protobuf-es service descriptor. */
export function createGrpcServiceDefinition(service: DescService): grpc.ServiceDefinition {
  const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    def[method.localName] = {
      path: methodPath(method),
      originalName: method.localName,
      requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
      responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
      requestSerialize: serializer(method.input) as (v: unknown) => Buffer,
      requestDeserialize: requestDeserializer(method.input),
      responseSerialize: serializer(method.output) as (v: unknown) => Buffer,
      responseDeserialize: deserializer(method.output),
    };
  }
  return def;
}

function defaultToStatus(err: unknown): GrpcStatusInfo {
  return { code: grpc.status.INTERNAL, details: err instanceof Error ? err.message : String(err) };
}

type AnyCall =
  | grpc.ServerUnaryCall<unknown, unknown>
  | grpc.ServerReadableStream<unknown, unknown>
  | grpc.ServerWritableStream<unknown, unknown>
  | grpc.ServerDuplexStream<unknown, unknown>;

function deadlineMs(call: AnyCall): number {
  const d = call.getDeadline();
  if (d instanceof Date) return d.getTime();
  return typeof d === "number" ? d : Number.POSITIVE_INFINITY;
}

/** Builds the context of one call; `done()` must be called when the call ends. */
function contextFor(
  call: AnyCall,
  method: DescMethod,
): { ctx: HandlerContext; done: () => void; fail: (err: unknown) => void } {
  const controller = new AbortController();
  const deadline = deadlineMs(call);
  let timer: NodeJS.Timeout | undefined;
  if (Number.isFinite(deadline)) {
    const ms = Math.max(0, deadline - Date.now());
    timer = setTimeout(
      () => controller.abort(new DeadlineExceededError(`deadline of ${ms} ms exceeded`)),
      ms,
    );
    timer.unref();
  }
  const onCancel = () => {
    if (!controller.signal.aborted) controller.abort(new CallCancelledError("call cancelled by the client"));
  };
  const events = call as unknown as NodeJS.EventEmitter;
  events.on("cancelled", onCancel);
  const ctx: HandlerContext = {
    signal: controller.signal,
    metadata: call.metadata,
    deadline,
    path: methodPath(method),
    peer: call.getPeer(),
  };
  return {
    ctx,
    done: () => {
      if (timer) clearTimeout(timer);
      events.removeListener("cancelled", onCancel);
    },
    // The call has failed: work still running for it (e.g. later items of a stream) stops now.
    fail: (err: unknown) => {
      if (!controller.signal.aborted) controller.abort(err);
    },
  };
}

function toServiceError(
  err: unknown,
  toStatus: (err: unknown) => GrpcStatusInfo,
): Partial<grpc.StatusObject> {
  // Bytes that are not the input message are the caller's fault, whatever the service's mapping says.
  if (err instanceof Error && err.name === UndecodableRequestError.name)
    return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  const { code, details } = toStatus(err);
  return { code, details };
}

/**
 * The request stream of a client- or bidi-streaming call, decoded, as an async iterable. Unlike
 * `call.iterator()` it never destroys the call: an error the handler raises must still reach the client
 * as the call's status (a destroyed server stream sends nothing, and the client waits forever). It ends
 * at the client's half-close and throws the signal's reason when the call is aborted (deadline,
 * cancellation, or the handler having failed).
 */
function requestsOf(
  call: grpc.ServerReadableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>,
  input: DescMessage,
  signal: AbortSignal,
): AsyncIterable<unknown> {
  const high = 16;
  return {
    async *[Symbol.asyncIterator]() {
      const buffered: unknown[] = [];
      let ended = false;
      let wake: (() => void) | undefined;
      const onData = (m: unknown) => {
        buffered.push(m);
        if (buffered.length >= high) call.pause();
        wake?.();
      };
      const onEnd = () => {
        ended = true;
        wake?.();
      };
      const onAbort = () => wake?.();
      call.on("data", onData);
      call.once("end", onEnd);
      signal.addEventListener("abort", onAbort, { once: true });
      try {
        for (let i = 0; ; ) {
          if (signal.aborted) throw signal.reason;
          if (buffered.length > 0) {
            const msg = buffered.shift();
            if (call.isPaused() && buffered.length < high / 2) call.resume();
            yield decoded(msg, input, `requests[${i++}]`);
            continue;
          }
          if (ended) return;
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      } finally {
        call.removeListener("data", onData);
        call.removeListener("end", onEnd);
        signal.removeEventListener("abort", onAbort);
      }
    },
  };
}

/** Writes to a server stream honouring back-pressure (waits for `drain`). */
async function writeWithBackpressure(
  call: grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>,
  msg: unknown,
  signal: AbortSignal,
): Promise<void> {
  if (call.write(msg)) return;
  await new Promise<void>((resolve, reject) => {
    const onDrain = () => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    };
    const onAbort = () => {
      call.removeListener("drain", onDrain);
      reject(signal.reason);
    };
    call.once("drain", onDrain);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Adapts a typed {@link ServiceImpl} to grpc-js handlers for `server.addService(definition, handlers)`.
 * Handler results are `create()`d from their init shape, so handlers may return plain objects.
 */
export function createGrpcHandlers<S extends GenService<GenServiceMethods>>(
  service: S,
  impl: ServiceImpl<S>,
  options: HandlerOptions = {},
): grpc.UntypedServiceImplementation {
  const toStatus = options.toStatus ?? defaultToStatus;
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const method of service.methods) {
    const fn = (impl as Record<string, unknown>)[method.localName];
    if (typeof fn !== "function") {
      throw new TypeError(`handler for ${method.parent.typeName}.${method.name} is missing`);
    }
    const output = method.output;
    const input = method.input;
    const make = (init: unknown) => create(output, init as MessageInitShape<DescMessage>);
    switch (method.methodKind) {
      case "unary":
        handlers[method.localName] = (
          call: grpc.ServerUnaryCall<unknown, unknown>,
          callback: grpc.sendUnaryData<unknown>,
        ) => {
          const { ctx, done, fail } = contextFor(call, method);
          Promise.resolve()
            .then(() => fn.call(impl, decoded(call.request, input, "request"), ctx) as Promise<unknown>)
            .then(
              (res) => callback(null, make(res)),
              (err: unknown) => {
                fail(err);
                callback(toServiceError(err, toStatus));
              },
            )
            .finally(done);
        };
        break;
      case "client_streaming":
        handlers[method.localName] = (
          call: grpc.ServerReadableStream<unknown, unknown>,
          callback: grpc.sendUnaryData<unknown>,
        ) => {
          const { ctx, done, fail } = contextFor(call, method);
          Promise.resolve()
            .then(() => fn.call(impl, requestsOf(call, input, ctx.signal), ctx) as Promise<unknown>)
            .then(
              (res) => callback(null, make(res)),
              (err: unknown) => {
                fail(err);
                callback(toServiceError(err, toStatus));
              },
            )
            .finally(done);
        };
        break;
      case "server_streaming":
      case "bidi_streaming": {
        const streamingInput = method.methodKind === "bidi_streaming";
        handlers[method.localName] = (
          call: grpc.ServerWritableStream<unknown, unknown> | grpc.ServerDuplexStream<unknown, unknown>,
        ) => {
          const { ctx, done, fail } = contextFor(call, method);
          (async () => {
            // Not `call.iterator()`: an iterator over the Duplex destroys it on error or return, and a
            // destroyed call never sends its status (see requestsOf).
            const arg = streamingInput
              ? requestsOf(call as grpc.ServerDuplexStream<unknown, unknown>, input, ctx.signal)
              : decoded((call as grpc.ServerWritableStream<unknown, unknown>).request, input, "request");
            const out = fn.call(impl, arg, ctx) as AsyncIterable<unknown>;
            for await (const res of out) {
              await writeWithBackpressure(call, make(res), ctx.signal);
            }
            call.end();
          })()
            .catch((err: unknown) => {
              fail(err);
              // grpc-js turns an emitted 'error' into the call's final status (destroy() would drop it).
              if (!call.cancelled) call.emit("error", toServiceError(err, toStatus));
            })
            .finally(done);
        };
        break;
      }
    }
  }
  return handlers;
}

/** Per-call options for {@link Client} methods. */
export interface CallOptions {
  /** Cancels the call. */
  readonly signal?: AbortSignal;
  /** Timeout in milliseconds (turned into a gRPC deadline). */
  readonly timeoutMs?: number;
  /** Request metadata. */
  readonly metadata?: grpc.Metadata;
}

/** A typed promise / async-iterable client for a protobuf-es service. */
export type Client<S extends GenService<GenServiceMethods>> = {
  [K in keyof Methods<S>]: Methods<S>[K]["methodKind"] extends "unary"
    ? (req: InInit<Methods<S>[K]>, opts?: CallOptions) => Promise<Out<Methods<S>[K]>>
    : Methods<S>[K]["methodKind"] extends "server_streaming"
      ? (req: InInit<Methods<S>[K]>, opts?: CallOptions) => AsyncIterable<Out<Methods<S>[K]>>
      : Methods<S>[K]["methodKind"] extends "client_streaming"
        ? (reqs: AsyncIterable<InInit<Methods<S>[K]>>, opts?: CallOptions) => Promise<Out<Methods<S>[K]>>
        : (
            reqs: AsyncIterable<InInit<Methods<S>[K]>>,
            opts?: CallOptions,
          ) => AsyncIterable<Out<Methods<S>[K]>>;
} & { readonly raw: grpc.Client } & ("close" extends keyof Methods<S>
    ? unknown
    : { readonly close: () => void });

/** Options of a whole client ({@link createGrpcClient}). */
export interface ClientOptions {
  /**
   * Deadline of every call that sets no `timeoutMs` of its own, in milliseconds, so that no call can wait
   * forever on a server that never answers.
   * @default none (calls without `timeoutMs` have no deadline)
   */
  readonly defaultTimeoutMs?: number;
}

function callOptionsFor(
  opts: CallOptions | undefined,
  defaultTimeoutMs: number | undefined,
): grpc.CallOptions {
  const o: grpc.CallOptions = {};
  const timeoutMs = opts?.timeoutMs ?? defaultTimeoutMs;
  if (timeoutMs !== undefined) o.deadline = Date.now() + timeoutMs;
  return o;
}

function wireAbort(call: grpc.ClientUnaryCall | grpc.ClientReadableStream<unknown>, signal?: AbortSignal) {
  if (!signal) return;
  if (signal.aborted) call.cancel();
  else signal.addEventListener("abort", () => call.cancel(), { once: true });
}

async function pipeRequests(
  // biome-ignore lint/suspicious/noExplicitAny: grpc-js stream generics are invariant in the request type
  stream: grpc.ClientWritableStream<any> | grpc.ClientDuplexStream<any, unknown>,
  reqs: AsyncIterable<unknown>,
  input: DescMessage,
): Promise<void> {
  try {
    for await (const r of reqs) {
      if (!stream.write(create(input, r as MessageInitShape<DescMessage>))) {
        await new Promise<void>((resolve) => stream.once("drain", resolve));
      }
    }
    stream.end();
  } catch (err) {
    stream.cancel();
    throw err;
  }
}

/**
 * Creates a typed client for `service` at `address` (`host:port`).
 * @param credentials defaults to insecure (plaintext, as inside a cluster behind a mesh).
 */
export function createGrpcClient<S extends GenService<GenServiceMethods>>(
  service: S,
  address: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  channelOptions: grpc.ChannelOptions = {},
  clientOptions: ClientOptions = {},
): Client<S> {
  const raw = new grpc.Client(address, credentials, channelOptions);
  const timeout = clientOptions.defaultTimeoutMs;
  if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0))
    throw new RangeError(`'defaultTimeoutMs' must be a positive number of milliseconds, got ${timeout}`);
  // A service with an RPC named `close` (e.g. AgentEnvironment.Close) gets the RPC there; its channel is
  // closed with `client.raw.close()`. The type of the client says which one a caller has.
  const client: Record<string, unknown> = { close: () => raw.close(), raw };
  for (const method of (service as DescService).methods) {
    if (method.localName === "raw")
      throw new TypeError(`${service.typeName}.${method.name} clashes with the client's 'raw' channel`);
    const path = methodPath(method);
    const ser = serializer(method.input);
    const de = deserializer(method.output);
    const input = method.input;
    const mk = (r: unknown) => create(input, r as MessageInitShape<DescMessage>);
    switch (method.methodKind) {
      case "unary":
        client[method.localName] = (req: unknown, opts?: CallOptions) =>
          new Promise((resolve, reject) => {
            const call = raw.makeUnaryRequest(
              path,
              ser,
              de,
              mk(req),
              opts?.metadata ?? new grpc.Metadata(),
              callOptionsFor(opts, timeout),
              (err, res) => (err ? reject(err) : resolve(res)),
            );
            wireAbort(call, opts?.signal);
          });
        break;
      case "server_streaming":
        client[method.localName] = (req: unknown, opts?: CallOptions) => {
          const call = raw.makeServerStreamRequest(
            path,
            ser,
            de,
            mk(req),
            opts?.metadata ?? new grpc.Metadata(),
            callOptionsFor(opts, timeout),
          );
          wireAbort(call, opts?.signal);
          return call as AsyncIterable<unknown>;
        };
        break;
      case "client_streaming":
        client[method.localName] = (reqs: AsyncIterable<unknown>, opts?: CallOptions) =>
          new Promise((resolve, reject) => {
            const call = raw.makeClientStreamRequest(
              path,
              ser,
              de,
              opts?.metadata ?? new grpc.Metadata(),
              callOptionsFor(opts, timeout),
              (err, res) => (err ? reject(err) : resolve(res)),
            );
            wireAbort(call, opts?.signal);
            pipeRequests(call, reqs, input).catch(reject);
          });
        break;
      case "bidi_streaming":
        client[method.localName] = (reqs: AsyncIterable<unknown>, opts?: CallOptions) => {
          const call = raw.makeBidiStreamRequest(
            path,
            ser,
            de,
            opts?.metadata ?? new grpc.Metadata(),
            callOptionsFor(opts, timeout),
          );
          wireAbort(call, opts?.signal);
          pipeRequests(call, reqs, input).catch((err: unknown) =>
            call.destroy(err instanceof Error ? err : new Error(String(err))),
          );
          return call as AsyncIterable<unknown>;
        };
        break;
    }
  }
  return client as Client<S>;
}

export { grpc };
