/**
 * `@reward-mesh/sdk`: everything a reward-service author imports.
 *
 * ```ts
 * import { defineRewardService } from "@reward-mesh/sdk";
 * export const myService = defineRewardService({ name, version, domains, components, score });
 * ```
 * @module
 */

// ---- mesh plumbing (trainer, CLI, tests, benchmarks) ----
export type { MeshBus, OpenBusHooks, ProvisionedStream } from "./bus.js";
export {
  busMessageLimit,
  connectBus,
  ensureStreams,
  INSTANCE_HEADER,
  isStartupTransient,
  NotStreamAdminError,
  openBus,
  provisionMeshStreams,
  provisionStreams,
  publishDeadLetter,
  publishReward,
  publishRollout,
  StreamsNotProvisionedError,
} from "./bus.js";
export type { BusOptions, Env, NatsAuthOptions, ServiceEnv, ServiceRuntimeOptions } from "./config.js";
export {
  applyTelemetryDefaults,
  BUS_ENV,
  COMMON_SERVICE_ENV,
  defineServiceEnv,
  envBool,
  envEnum,
  envInt,
  envNumber,
  envString,
  GRPC_CLIENT_SECURITY_ENV,
  configuredServiceDomains,
  GRPC_SHARED_PREFIX,
  grpcServerSecurityEnv,
  isServiceEnv,
  LOG_ENV,
  loadBusOptions,
  loadGrpcClientSecurity,
  loadGrpcServerSecurity,
  loadNatsAuthOptions,
  loadServiceRuntimeOptions,
  MIN_TOKEN_LENGTH,
  NATS_AUTH_ENV,
  NatsAuthEnv,
  processEnv,
  serviceEnvSchema,
  serviceRuntimeEnv,
  TELEMETRY_ENV,
  installTelemetryDiagnostics,
  signalExportConfigured,
  telemetryExportConfigured,
} from "./config.js";
export type { DescribeRequestOptions, DescribeResponder } from "./describe.js";
export type { DiscoveredService, ServiceManifest } from "./discovery.js";
export {
  discoverServices,
  findWorkspaceRoot,
  loadDiscoveredService,
  parseServiceManifest,
  SERVICE_MANIFEST_SCHEMA,
  ServiceManifestError,
  workspaceFolders,
} from "./discovery.js";
export { DESCRIBE_QUEUE, requestDescribe, startDescribeResponder } from "./describe.js";
export type { EnvSpec, EnvValue, EnvValues, EnvVarSpec } from "./env-spec.js";
export {
  BOOLEAN_VALUES,
  defineEnv,
  envSchema,
  envVarSchema,
  loadEnv,
  prefixEnv,
  readEnv,
} from "./env-spec.js";
export {
  ConfigError,
  InvalidArgumentError,
  isInvalidArgumentError,
  isRetryable,
  MeshError,
  NotFoundError,
  ServiceContractError,
  toGrpcStatus,
  UnavailableError,
} from "./errors.js";
export type {
  BearerToken,
  GrpcChannelSettings,
  GrpcClientSecurity,
  GrpcClientTls,
  GrpcServerSecurity,
  GrpcServerTls,
  PemFile,
  SecurityHints,
} from "./grpc-security.js";
export {
  AUTHORIZATION_METADATA_KEY,
  bearerTokenClientInterceptor,
  bearerTokenInterceptor,
  CLIENT_SECURITY_HINTS,
  checkBearerToken,
  checkCertificates,
  checkKeyPair,
  createSecureGrpcClient,
  createServerCredentials,
  describeServerSecurity,
  grpcChannelSettings,
  hostOfTarget,
  isLoopbackHost,
  SERVER_SECURITY_HINTS,
  serverInterceptors,
  TOKEN_EXEMPT_PREFIX,
} from "./grpc-security.js";
export type { HealthState } from "./health.js";
export { createHealthState, HealthStatus } from "./health.js";
export type { WaitServingOptions } from "./health-client.js";
export { waitServing } from "./health-client.js";
export type { Limiter } from "./limiter.js";
export { createLimiter } from "./limiter.js";
export type { LocalNats, StartNatsOptions } from "./local-nats.js";
export {
  ensureNats,
  findNatsServerBinary,
  isJetStreamReachable,
  NatsAuthRefusedError,
  startNatsServer,
  waitForJetStream,
} from "./local-nats.js";
export type { ClosableLogger, LogFields, LogFormat, Logger, LoggerOptions } from "./logger.js";
export { createLogger, formatHumanLogLine, LOG_FORMATS, silentLogger } from "./logger.js";
export type { MeshAuth, NatsPermissions, ServiceIdentity } from "./nats-accounts.js";
export {
  adminPermissions,
  inboxPrefixOf,
  MESH_ACCOUNT,
  servicePermissions,
  serviceUser,
  trainerPermissions,
  writeMeshAuth,
} from "./nats-accounts.js";
export {
  explainPermissionViolation,
  isAuthorizationError,
  isPermissionViolation,
  NatsPermissionError,
  natsAuthEnv,
  natsConnectionOptions,
  natsRoleOf,
  permissionViolationOf,
} from "./nats-auth.js";
export { freePort } from "./net.js";
export type { LogRecord, WaitForLogRecordOptions } from "./process-log.js";
export { waitForLogRecord } from "./process-log.js";
export type { RetryUntilOptions } from "./retry.js";
export { retryUntil } from "./retry.js";
export type { RemoteService, RemoteServiceOptions } from "./remote.js";
export { connectRemoteService } from "./remote.js";
export type { RewardServiceClientOptions, ScoreBatchOutcome } from "./reward-client.js";
export {
  createRewardServiceClient,
  DEFAULT_REWARD_CALL_TIMEOUT_MS,
  MAX_SCORE_BATCH_BYTES,
  SCORE_BATCH_RETRY_AFTER_MS,
  scoreBatch,
  splitScoreBatch,
} from "./reward-client.js";
export type { RunningService, ServiceExtras } from "./runtime.js";
export { serveRewardService, startRewardService } from "./runtime.js";
export type { GrpcServerOptions, GrpcServicesOptions, HostedService, RunningGrpcServer } from "./server.js";
export {
  createRewardServiceImpl,
  grpcService,
  MAX_SCORE_BATCH,
  startGrpcServer,
  startGrpcServices,
} from "./server.js";
// ---- for service authors ----
export type {
  ComponentDeclaration,
  ComponentValue,
  RewardServiceDefinition,
  RewardServiceSpec,
  ScoreCallOptions,
  ScoreContext,
  ServiceStats,
} from "./service.js";
export { checkedComponent, defineRewardService } from "./service.js";
export type { StoredMessage } from "./stream-reader.js";
export { readStream } from "./stream-reader.js";
export type { StreamName } from "./subjects.js";
export {
  advantageSubject,
  checkSubjectToken,
  consumerName,
  describeSubject,
  dlqSubject,
  isSubjectToken,
  parseRewardSubject,
  rewardSubject,
  rolloutSubject,
  StreamSubjects,
  Streams,
} from "./subjects.js";
export { closestName, didYouMean, editDistance } from "./suggest.js";
export type {
  OtlpReceiver,
  OtlpReceiverOptions,
  ReadStoredSpansOptions,
  StoredSpan,
} from "./otlp-receiver.js";
export {
  flattenOtlpTraces,
  readStoredSpans,
  renderWaterfall,
  spansOfRollout,
  startOtlpReceiver,
} from "./otlp-receiver.js";
export {
  activeContext,
  extractFromHeaders,
  extractFromMetadata,
  INSTRUMENTATION_SCOPE,
  injectIntoHeaders,
  injectIntoMetadata,
  inSpan,
  meshMeter,
  meshTracer,
  type RolloutSpanFields,
  rolloutSpanAttributes,
  SECONDS_BUCKETS,
  spanContextOf,
} from "./telemetry.js";
export type { OrphanSubject, RolloutConsumer, RolloutTopology } from "./topology.js";
export {
  checkDomainsConsumed,
  consumersOf,
  findOrphanSubjects,
  inspectRollouts,
  listRolloutConsumers,
  subjectMatches,
  UnconsumedDomainError,
} from "./topology.js";
export {
  MAX_MESSAGE_BYTES,
  MAX_RESPONSE_CHARS,
  NATS_HEADER_ROOM,
  NATS_MAX_PAYLOAD,
  taskDomain,
  validateRollout,
} from "./validate.js";
export type { RunningWorker, WorkerOptions, WorkerStats } from "./worker.js";
export { ensureConsumer, nakDelay, startWorker } from "./worker.js";
