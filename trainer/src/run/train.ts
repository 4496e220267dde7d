/**
 * The training loop (`reward-mesh train`): per step, sample G completions per prompt from the learner →
 * publish them as rollouts on `MESH_ROLLOUTS` → assemble every service's results from `MESH_REWARDS` →
 * advantages (the engine) → `learner.trainStep` → checkpoint → publish advantages and metrics on
 * `mesh.advantages.<run>` and append them to `runs/<run-id>/metrics.jsonl`.
 *
 * Restart: a run started again with the same run id resumes after its last checkpoint. The step in
 * progress is journalled before its rollouts are published (`pending-step.json`), so the resumed process
 * republishes the same rollouts (de-duplicated by `Nats-Msg-Id`), replays the results already stored, and
 * applies that step exactly once (the learner's idempotency key is `<run>:<step>`).
 * @module
 */
import { appendFileSync } from "node:fs";
import { create, type JsonObject, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { AdvantageBatchSchema, AgentEnvironment, RolloutSchema } from "@reward-mesh/proto";
import {
  advantageSubject,
  createSecureGrpcClient,
  type GrpcClientSecurity,
  type Logger,
  type MeshBus,
  publishRollout,
  silentLogger,
} from "@reward-mesh/sdk";
import { computeAdvantages } from "../advantage/engine.js";
import type { CompiledAdvantageConfig } from "../advantage/engine.js";
import { placeEpsilon } from "../advantage/kernels.js";
import type { AdvantageBatchResult } from "../advantage/types.js";
import {
  type Completion,
  FRAGMENT_TOKENIZER,
  type Learner,
  type LearnerInfo,
  type Sample,
  type TrainStepResult,
} from "../learner/index.js";
import { type AssembledGroup, createGroupAssembler, type ExpectedGroup } from "./assembler.js";
import {
  type AgentEnvironmentSessions,
  type EpisodeResult,
  type EpisodeTask,
  episodeTaskOf,
  episodeVocabulary,
  isEpisodeTask,
  runEpisodes,
} from "./episodes.js";
import { withCompactTools } from "./episode-tools.js";
import { learnerInfoWaiting, waitForDomainsConsumed } from "./startup.js";
import {
  componentId,
  missingResultsByService,
  type PreparedGroup,
  prepareGroups,
  rewardMetrics,
  weightedTotal,
} from "./batch.js";
import { compileAdvantage, type RunConfig, RunConfigError } from "./config.js";
import {
  prepareRunDirectory,
  readJsonIfExists,
  reconcileMetrics,
  removeIfExists,
  runPaths,
  type TrainerCheckpoint,
  writeAtomic,
} from "./state.js";
import {
  mixSeed,
  promptSpecOf,
  promptsForStep,
  type TaskDefinition,
  TaskPolicyMismatchError,
  taskDomainOf,
} from "./tasks.js";
import {
  advantageSettingsOf,
  appendExplainRecord,
  EXPLAIN_RECORD_VERSION,
  type ExplainStepRecord,
  explainGroupRecord,
  explainPath,
  reconcileExplain,
} from "./explain.js";
import { type StepTrace, startStepTrace } from "./step-trace.js";
import { forgetRunMetrics, recordStepMetrics } from "./trainer-metrics.js";
import { checkDomainsScored, createResultValidator, describeRunServices } from "./validation.js";

/** One group of a step as progress listeners see it (the live page's "last groups"). */
export interface StepGroup {
  readonly groupId: string;
  readonly taskId: string;
  readonly domain: string;
  /** False when dynamic sampling dropped the group (no signal). */
  readonly kept: boolean;
  readonly degenerate: boolean;
  readonly imputed: boolean;
  /** CorrGRPO's degenerate-group guard divided this group by GRPO's std instead of sqrt(S). */
  readonly corrFallback: boolean;
  /** Per rollout, in index order. */
  readonly weightedRewards: readonly number[];
  readonly advantages: readonly number[];
}

/** What one step reports to progress listeners. */
export interface StepReport {
  readonly step: number;
  readonly steps: number;
  readonly metrics: Record<string, unknown>;
  /** The step's groups that reached the engine (dropped incomplete groups are counted in the metrics). */
  readonly groups?: readonly StepGroup[];
}

/** Options of {@link runTraining}. */
export interface TrainingOptions {
  readonly config: RunConfig;
  readonly tasks: readonly TaskDefinition[];
  readonly bus: MeshBus;
  readonly learner: Learner;
  readonly logger?: Logger;
  /** Called after every applied step (progress bar, tests). */
  readonly onStep?: (r: StepReport) => void;
  /**
   * Stops the loop (clean shutdown): before the next step, or while a step waits for its rewards (that
   * step stays journalled and is resumed by the next run). A policy update in progress is finished.
   */
  readonly signal?: AbortSignal;
  /**
   * How long start-up waits for the learner to answer (gRPC UNAVAILABLE: a remote learner not listening
   * yet) and for a service to consume every task domain, in seconds (`REWARD_MESH_START_WAIT_SECONDS`
   * through the CLI). 0 = fail at once.
   * @default 0
   */
  readonly startWaitSeconds?: number;
  /** Where the learner is, for the wait's log line (`reward-mesh train` passes the address). */
  readonly learnerWhere?: string;
  /** Called before each retry of a start-up wait (tests). */
  readonly onStartRetry?: (kind: "learner" | "consumer", err: unknown) => void;
  /**
   * The AgentEnvironment sessions episodes are played in (`config.episodes`); absent: a client to
   * `config.episodes.environment` is opened (with `environmentSecurity`) and closed when the run ends.
   */
  readonly environment?: AgentEnvironmentSessions;
  /** TLS / token of the environment client the run opens. @default plaintext to a loopback address */
  readonly environmentSecurity?: GrpcClientSecurity;
}

/** How a run ended. */
export interface TrainingResult {
  readonly runId: string;
  readonly dir: string;
  readonly firstStep: number;
  readonly lastStep: number;
  readonly resumedFrom: number;
  readonly stopped: boolean;
}

/**
 * A rollout's generation: a completion, or an episode (its sample's sequence, mask and context, and
 * the trajectory that is the rollout's response).
 */
interface PendingCompletion extends Completion {
  readonly episode?: {
    readonly response: string;
    readonly lossMask: readonly number[];
    readonly vocabularySize: number;
    readonly turns: number;
    readonly calls: number;
    readonly stopReason: string;
    /** The transcript is invalid for the agentdojo service (the response is then the transcript). */
    readonly invalid?: boolean;
  };
}

/** A step's generated work, journalled before publishing. */
interface PendingStep {
  readonly step: number;
  readonly createdAt: number;
  readonly groups: ReadonlyArray<{
    readonly groupId: string;
    readonly taskId: string;
    readonly completions: readonly PendingCompletion[];
  }>;
}

/** An episode as a journalled completion. */
function episodeCompletion(r: EpisodeResult, promptId: string, index: number): PendingCompletion {
  return {
    promptId,
    contextKey: r.contextKey,
    index,
    tokenIds: [...r.tokenIds],
    text: r.finalAnswer,
    logprobs: [...r.logprobs],
    policyVersion: r.policyVersion,
    truncated: r.truncated,
    finishReason: r.truncated ? "length" : "stop",
    // A whole episode (its turns' stop strings are in its text already), not one stop-ended completion.
    matchedStop: "",
    promptTokenIds: [...r.promptTokenIds],
    episode: {
      response: r.response,
      lossMask: r.lossMask,
      vocabularySize: r.vocabularySize,
      turns: r.turns,
      calls: r.calls,
      stopReason: r.stopReason,
      ...(r.invalid !== undefined ? { invalid: true } : {}),
    },
  };
}

/** The tokens of a completion the loss counts (an episode's policy tokens). */
const trainedLength = (c: PendingCompletion) =>
  c.episode ? c.episode.lossMask.reduce((a, m) => a + m, 0) : c.tokenIds.length;

/** The step's episode statistics (absent when no episode ran). */
function episodeMetrics(pending: PendingStep): Record<string, unknown> {
  const eps = pending.groups.flatMap((g) => g.completions.flatMap((c) => (c.episode ? [c.episode] : [])));
  if (eps.length === 0) return {};
  const stopReasons: Record<string, number> = {};
  for (const e of eps) stopReasons[e.stopReason] = (stopReasons[e.stopReason] ?? 0) + 1;
  const mean = (f: (e: (typeof eps)[number]) => number) => eps.reduce((a, e) => a + f(e), 0) / eps.length;
  return {
    episodes: {
      count: eps.length,
      meanTurns: mean((e) => e.turns),
      meanCalls: mean((e) => e.calls),
      stopReasons,
      invalid: eps.filter((e) => e.invalid).length,
    },
  };
}

const rolloutId = (runId: string, groupId: string, i: number) => `${runId}-${groupId}-${i}`;

function servicesFor(config: RunConfig, domain: string): string[] {
  const services = new Set<string>();
  for (const c of config.components)
    if ((config.serviceDomains[c.service] ?? []).includes(domain)) services.add(c.service);
  return [...services];
}

/** Runs (or resumes) a training run to `config.steps`. */
export async function runTraining(o: TrainingOptions): Promise<TrainingResult> {
  const { config, bus, learner, tasks } = o;
  const logger = (o.logger ?? silentLogger).child({ component: "train", runId: config.runId });
  const paths = runPaths(config.outputDir, config.runId);
  prepareRunDirectory(config.outputDir, config.runId);
  const compiled = compileAdvantage(config);
  const taskById = new Map(tasks.map((t) => [t.id, t]));
  writeAtomic(paths.config, `${JSON.stringify(config, null, 2)}\n`);
  const wait = {
    seconds: o.startWaitSeconds ?? 0,
    logger,
    ...(o.learnerWhere !== undefined ? { learnerWhere: o.learnerWhere } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onStartRetry ? { onRetry: o.onStartRetry } : {}),
  };
  // Before anything waits: tasks of a domain no service of the run scores would train at reward 0.
  checkDomainsScored(config, [...new Set(tasks.map(taskDomainOf))]);
  const info = await learnerInfoWaiting(learner, wait);
  const policy = info.tokenizer === FRAGMENT_TOKENIZER ? "fragments" : "text";
  if (policy === "fragments") {
    const text = tasks.find((t) => !t.vocabulary || !t.render);
    if (text) {
      throw new TaskPolicyMismatchError(
        `task '${text.id}' is a text task (no fragment vocabulary) but the learner '${info.name}' is a fragment policy: use a text policy such as learner: {kind: torch}`,
      );
    }
  }
  logger.info({ learner: info.name, model: info.model, policy }, "learner ready");
  // Multi-turn episodes: the run's agent tasks are played against the AgentEnvironment.
  const episodeTasks = new Map<string, EpisodeTask>();
  if (config.episodes) {
    for (const t of tasks) if (isEpisodeTask(t)) episodeTasks.set(t.id, episodeTaskOf(t));
    if (episodeTasks.size === 0) {
      throw new RunConfigError(
        "episodes.environment",
        "is set but none of the run's tasks is an agent task (kind agent): add the 'agent' set or agent tasks to the task file, or remove 'episodes'",
      );
    }
    if (policy === "fragments")
      for (const e of episodeTasks.values()) episodeVocabulary(e, config.episodes.maxTurns);
    if (!o.environment && config.episodes.environment === undefined) {
      throw new RunConfigError(
        "episodes.environment",
        "is not set: give host:port of the AgentEnvironment server, or run with `reward-mesh train --with-mesh` / `demo` (the mesh's agentdojo service) or REWARD_MESH_AGENT_ENV_ADDR (a running mesh), which fill it in",
      );
    }
  }
  // A rollout on a domain no service consumes would sit in the stream, never scored: refuse to start
  // (first: it names the domain, where the Describe check below would name a silent service).
  await waitForDomainsConsumed(bus, new Set(tasks.map(taskDomainOf)), wait);
  // Before step 1: every service of the run answers Describe and offers what the config asks.
  const contracts = await describeRunServices(bus, config, [...new Set(tasks.map(taskDomainOf))], {
    timeoutMs: config.validation.describeTimeoutMs,
    logger,
  });
  const validator = createResultValidator({
    runId: config.runId,
    contracts,
    logger,
    logIntervalMs: config.validation.logIntervalMs,
  });

  const ckpt = readJsonIfExists<TrainerCheckpoint>(paths.checkpoint);
  if (ckpt && ckpt.runId !== config.runId)
    throw new Error(`checkpoint in ${paths.dir} belongs to run '${ckpt.runId}'`);
  reconcileMetrics(paths.metrics, ckpt);
  reconcileExplain(explainPath(config.outputDir, config.runId), ckpt?.step ?? 0);
  const resumedFrom = ckpt?.step ?? 0;
  if (ckpt) logger.info({ step: ckpt.step, policyVersion: ckpt.policyVersion }, "resuming from checkpoint");

  const assembler = await createGroupAssembler({
    bus,
    runId: config.runId,
    logger,
    ackWaitMs: Math.max(60_000, 2 * config.groups.deadlineMs),
    admit: validator.admit,
  });
  assembler.markApplied(resumedFrom);
  const ownEnvironment =
    config.episodes && episodeTasks.size > 0 && !o.environment
      ? createSecureGrpcClient(AgentEnvironment, config.episodes.environment!, o.environmentSecurity)
      : undefined;
  // `episodes.tools: compact`: the policy is shown compact tool schemas (small-context text policies).
  const sessions = o.environment ?? ownEnvironment;
  const environment =
    sessions && config.episodes?.tools === "compact" ? withCompactTools(sessions) : sessions;
  let step = resumedFrom + 1;
  let stopped = false;
  let st: StepTrace | undefined;
  try {
    let pending = readJsonIfExists<PendingStep>(paths.pending);
    if (pending && pending.step !== step) pending = undefined;
    if (pending) {
      const n = await assembler.replaySince(pending.createdAt - 60_000);
      logger.info({ step, replayed: n }, "resuming the step in progress");
    }
    for (; step <= config.steps; step++) {
      if (o.signal?.aborted) {
        stopped = true;
        break;
      }
      const t0 = performance.now();
      st?.end();
      st = startStepTrace(config.runId, step, { "reward.estimator": compiled.definition.name });
      const stepTrace = st;
      // 1. Generate (or take the journalled generation of a resumed step).
      if (!pending) {
        const prompts = promptsForStep(tasks, config.seed, step, config.promptsPerStep);
        const g = config.generation;
        const played = prompts.map((t) => episodeTasks.get(t.id));
        const generateRequest = {
          prompts: prompts.flatMap((t, j) =>
            played[j] ? [] : [promptSpecOf(t, `s${step}-p${j}`, policy, g.maxNewTokens)],
          ),
          n: config.groupSize,
          seed: mixSeed(config.seed, step),
          ...(policy === "text"
            ? {
                temperature: g.temperature,
                topP: g.topP,
                maxNewTokens: g.maxNewTokens,
                ...(g.stop.length ? { stop: g.stop } : {}),
              }
            : {}),
        };
        const completions =
          generateRequest.prompts.length === 0
            ? []
            : await stepTrace.child("trainer/generate", { "reward.step": step }, [], () =>
                learner.generate(generateRequest),
              );
        // Agent tasks with episodes on: G episodes each, all of the step's in one bounded pool.
        const episodeList = prompts.flatMap((_, j) =>
          played[j] ? Array.from({ length: config.groupSize }, () => ({ j, task: played[j]! })) : [],
        );
        const episodes =
          episodeList.length === 0
            ? []
            : await playStepEpisodes(o, environment!, info, step, stepTrace, episodeList);
        if (!episodes) {
          stopped = true; // stopped while playing: nothing journalled, the step is played again on resume
          break;
        }
        pending = {
          step,
          createdAt: Date.now(),
          groups: prompts.map((t, j) => ({
            groupId: `s${step}-p${j}`,
            taskId: t.id,
            completions: played[j]
              ? episodes
                  .filter((_, k) => episodeList[k]!.j === j)
                  .map((r, i) => episodeCompletion(r, `s${step}-p${j}`, i))
              : completions.filter((c) => c.promptId === `s${step}-p${j}`).sort((a, b) => a.index - b.index),
          })),
        };
        writeAtomic(paths.pending, JSON.stringify(pending));
      }
      const tGen = performance.now();

      // 2. Publish rollouts and wait for every service's results.
      const domainByGroup = new Map<string, string>();
      // The response each service scores, per group (explain.jsonl stores it).
      const responsesByGroup = new Map<string, string[]>();
      const expected: ExpectedGroup[] = [];
      const publishes: Promise<unknown>[] = [];
      for (const g of pending.groups) {
        const task = taskById.get(g.taskId);
        if (!task) throw new Error(`pending step refers to unknown task '${g.taskId}'`);
        const domain = taskDomainOf(task);
        domainByGroup.set(g.groupId, domain);
        const ids = g.completions.map((_, i) => rolloutId(config.runId, g.groupId, i));
        expected.push({ groupId: g.groupId, step, rolloutIds: ids, services: servicesFor(config, domain) });
        const responses = g.completions.map((c) =>
          c.episode
            ? c.episode.response
            : policy === "text"
              ? c.text
              : task.render!(c.tokenIds.map((id) => task.vocabulary![id]!)),
        );
        responsesByGroup.set(g.groupId, responses);
        g.completions.forEach((c, i) => {
          const rollout = create(RolloutSchema, {
            id: ids[i]!,
            runId: config.runId,
            step,
            groupId: g.groupId,
            index: i,
            groupSize: g.completions.length,
            task: task.task as MessageInitShape<typeof RolloutSchema>["task"],
            response: responses[i]!,
            policyVersion: c.policyVersion,
            // A fragment policy's tokens are task fragments, not tokenizer tokens: leave the count unset
            // so length-based rewards measure the text the services see.
            responseTokens: policy === "text" ? trainedLength(c) : 0,
            metadata: { ...(task.metadata ?? {}) },
          });
          publishes.push(
            stepTrace.rollout(
              { runId: config.runId, step, groupId: g.groupId, id: ids[i]!, index: i, domain },
              (ctx) => publishRollout(bus.js, rollout, ctx),
            ),
          );
        });
      }
      for (const e of expected) assembler.expect(e);
      await Promise.all(publishes);
      const publishedAt = Date.now();
      const assembled: AssembledGroup[] = await assembler.collect(
        expected.map((e) => e.groupId),
        Date.now() + config.groups.deadlineMs,
        o.signal,
      );
      // Stopped while scoring: the step stays journalled and is resumed (republished, its stored results
      // replayed) by the next run with this run id.
      if (o.signal?.aborted) {
        stopped = true;
        break;
      }
      const tScore = performance.now();
      stepTrace.assembled(assembled, publishedAt);

      // 3. Advantages.
      const { prepared, droppedIncomplete, partialNotApplicable } = prepareGroups(
        assembled,
        config,
        (id) => domainByGroup.get(id)!,
        step,
      );
      const result: AdvantageBatchResult = prepared.length
        ? computeAdvantages(
            {
              groups: prepared.map((g) => ({ rewards: g.rewards, lengths: pendingLengths(pending!, g) })),
              weights: config.components.map((c) => c.weight),
              components: config.components.map(componentId),
            },
            compiled,
            { diagnostics: true },
          )
        : { estimator: compiled.definition.name, groups: [] };
      const tAdv = performance.now();
      warnCorrFallback(logger, step, prepared, result, compiled);
      stepTrace.advantages(prepared.map((g, gi) => ({ source: g.source, result: result.groups[gi]! })));

      // 4. Policy update (idempotent per step).
      const samples: Sample[] = [];
      prepared.forEach((g, gi) => {
        const pg = pending!.groups.find((x) => x.groupId === g.source.group.groupId)!;
        const task = taskById.get(pg.taskId)!;
        const adv = result.groups[gi]!;
        pg.completions.forEach((c, i) => {
          samples.push({
            sampleId: rolloutId(config.runId, pg.groupId, i),
            groupId: pg.groupId,
            // An episode's sample: its own context (fragment policies) and the tool outputs masked out.
            contextKey: c.episode ? c.contextKey : task.id,
            vocabularySize:
              policy === "text" ? 0 : c.episode ? c.episode.vocabularySize : task.vocabulary!.length,
            ...(policy === "text" ? { promptTokenIds: c.promptTokenIds } : {}),
            ...(c.episode ? { lossMask: c.episode.lossMask } : {}),
            tokenIds: c.tokenIds,
            rolloutLogprobs: c.logprobs,
            advantage: adv.advantages[i]!,
            policyVersion: c.policyVersion,
            truncated: c.truncated,
          });
        });
      });
      // Every group dropped (e.g. a service down past the deadline): no update this step, the run goes on.
      const train: TrainStepResult =
        samples.length === 0
          ? await skippedUpdate(learner, logger, step)
          : await stepTrace.child(
              "trainer/train_step",
              { "reward.run_id": config.runId, "reward.step": step, "reward.samples": samples.length },
              stepTrace.rolloutSpans(samples.map((x) => x.sampleId)),
              () =>
                learner.trainStep({
                  step,
                  idempotencyKey: `${config.runId}:${step}`,
                  samples,
                  loss: {
                    lossType: config.loss.type,
                    epsLow: config.loss.epsLow,
                    epsHigh: config.loss.epsHigh,
                    dualClipC: config.loss.dualClipC,
                    klBeta: config.loss.klBeta,
                    maxCompletionLength: config.loss.maxCompletionLength,
                  },
                  optim: {
                    lr: config.optim.lr,
                    epochs: config.optim.epochs,
                    maxGradNorm: config.optim.maxGradNorm,
                  },
                }),
            );
      const tTrain = performance.now();

      // 5. Metrics, checkpoint, publish.
      const metrics: Record<string, unknown> = {
        step,
        runId: config.runId,
        policyVersion: train.policyVersion,
        estimator: compiled.definition.name,
        ...rewardMetrics(prepared, result, config),
        ...episodeMetrics(pending!),
        droppedGroups: droppedIncomplete,
        // Results still missing when the step's deadline passed, per service (dropped or imputed groups),
        // and that deadline: a report can then say whose results a dropped group waited for.
        missingResults: missingResultsByService(assembled),
        deadlineMs: config.groups.deadlineMs,
        // Results that failed validation this step, per service and reason (never used).
        rejectedResults: validator.takeStepCounts(),
        partialNotApplicable,
        loss: train.metrics.loss,
        clipFraction: train.metrics.clipFraction,
        kl: train.metrics.klRef,
        approxKlOld: train.metrics.approxKlOld,
        entropy: train.metrics.entropy,
        gradNorm: train.metrics.gradNorm,
        samples: train.metrics.nSamples,
        droppedStale: train.metrics.nDroppedStale,
        assembler: assembler.stats(),
        timingsMs: {
          generate: tGen - t0,
          score: tScore - tGen,
          advantages: tAdv - tScore,
          train: tTrain - tAdv,
          total: performance.now() - t0,
        },
        time: new Date().toISOString(),
      };
      // Before the checkpoint: a checkpointed step always has its record (resume drops later ones).
      appendExplainRecord(
        explainPath(config.outputDir, config.runId),
        explainStepRecord(config, step, result, stepTrace, prepared, assembled, pending!, {
          domainByGroup,
          responsesByGroup,
        }),
      );
      if (step % config.checkpointEvery === 0 || step === config.steps) {
        await learner.saveCheckpoint(
          policy === "text" ? paths.learnerCheckpointDir : paths.learnerCheckpoint,
        );
      }
      const ck: TrainerCheckpoint = {
        runId: config.runId,
        step,
        policyVersion: train.policyVersion,
        metrics,
        writtenAt: Date.now(),
      };
      writeAtomic(paths.checkpoint, JSON.stringify(ck));
      appendFileSync(paths.metrics, `${JSON.stringify(metrics)}\n`);
      recordStepMetrics(metrics as unknown as Parameters<typeof recordStepMetrics>[0]);
      removeIfExists(paths.pending);
      assembler.markApplied(step);
      await publishAdvantages(bus, config, step, train.policyVersion, prepared, result, metrics);
      stepTrace.end();
      const journalled = pending;
      pending = undefined;
      o.onStep?.({
        step,
        steps: config.steps,
        metrics,
        groups: prepared.map((g, gi): StepGroup => {
          const id = g.source.group.groupId;
          const r = result.groups[gi]!;
          return {
            groupId: id,
            taskId: journalled.groups.find((x) => x.groupId === id)!.taskId,
            domain: domainByGroup.get(id)!,
            kept: r.kept,
            degenerate: r.degenerate,
            imputed: g.imputed,
            corrFallback: r.corrFallback,
            weightedRewards: g.rewards.map((row) => weightedTotal(row, config.components)),
            advantages: [...r.advantages],
          };
        }),
      });
    }
  } catch (err) {
    st?.end(err); // the failed step's span ends with error status
    throw err;
  } finally {
    st?.end();
    await assembler.close();
    ownEnvironment?.raw.close();
    forgetRunMetrics(config.runId); // a process running many runs (experiment) keeps no finished run's gauges
  }
  return {
    runId: config.runId,
    dir: paths.dir,
    firstStep: resumedFrom + 1,
    lastStep: step - 1,
    resumedFrom,
    stopped,
  };
}

/**
 * The step's episodes (`list`: a played prompt's task, G times each), in one pool bounded by
 * `episodes.concurrency`; undefined when the run was stopped meanwhile (every session is closed).
 */
async function playStepEpisodes(
  o: TrainingOptions,
  env: AgentEnvironmentSessions,
  info: LearnerInfo,
  step: number,
  stepTrace: StepTrace,
  list: ReadonlyArray<{ readonly task: EpisodeTask }>,
): Promise<EpisodeResult[] | undefined> {
  const ep = o.config.episodes!;
  const g = o.config.generation;
  try {
    return await stepTrace.child(
      "trainer/episodes",
      { "reward.step": step, "reward.episodes": list.length },
      [],
      () =>
        runEpisodes(
          list.map((e) => e.task),
          {
            env,
            learner: o.learner,
            info,
            settings: { maxTurns: ep.maxTurns, maxTokens: ep.maxTokens, concurrency: ep.concurrency },
            sampling: {
              temperature: g.temperature,
              topP: g.topP,
              maxNewTokens: g.maxNewTokens,
              stop: g.stop,
            },
            seed: mixSeed(o.config.seed, step),
            callTimeoutMs: ep.callTimeoutMs,
            ...(o.signal ? { signal: o.signal } : {}),
          },
        ),
    );
  } catch (err) {
    if (o.signal?.aborted) return undefined;
    throw err;
  }
}

/**
 * One warning line per step in which CorrGRPO's degenerate-group guard fired: which groups, their
 * coefficient sums, and how large their advantages would have been with `sqrt(S)` as the divisor.
 */
function warnCorrFallback(
  logger: Logger,
  step: number,
  prepared: readonly PreparedGroup[],
  result: AdvantageBatchResult,
  compiled: CompiledAdvantageConfig,
): void {
  const hit = result.groups.flatMap((g, gi) =>
    g.corrFallback ? [{ g, id: prepared[gi]!.source.group.groupId }] : [],
  );
  if (hit.length === 0) return;
  const p = compiled.params;
  const unguarded = (S: number) => placeEpsilon(Math.max(S, p.coefficientSumFloor), p);
  const groups = hit.map(({ g, id }) => {
    const d = g.diagnostics;
    const S = d?.coefficientSum ?? Number.NaN;
    const maxCentred = Math.max(...(d?.centeredTotal ?? [Number.NaN]).map(Math.abs));
    return {
      groupId: id,
      coefficientSum: S,
      maxAdvantage: Math.max(...g.advantages.map(Math.abs)),
      maxAdvantageWithoutGuard: maxCentred / unguarded(S),
    };
  });
  const worst = Math.max(...groups.map((x) => x.maxAdvantageWithoutGuard));
  logger.warn(
    { step, corrFallback: groups, threshold: p.coefficientSumFallbackBelow },
    `${compiled.definition.name}: ${hit.length} of ${result.groups.length} groups had a correlation sum S below ` +
      `${p.coefficientSumFallbackBelow} while their weighted total varied (anti-correlated components cancel); ` +
      `they were divided by the total's std (GRPO's scale) instead of sqrt(S), which would have made |advantage| ` +
      `up to ${worst.toPrecision(4)}. Set options.coefficientSumFallbackBelow: 0 for the paper's behaviour.`,
  );
}

async function skippedUpdate(learner: Learner, logger: Logger, step: number): Promise<TrainStepResult> {
  logger.warn({ step }, "no complete group this step: policy update skipped");
  const { policyVersion } = await learner.info();
  const nan = Number.NaN;
  return {
    policyVersion,
    replayed: false,
    metrics: {
      loss: nan,
      clipFraction: nan,
      klRef: nan,
      approxKlOld: nan,
      entropy: nan,
      gradNorm: nan,
      nTokens: 0,
      nSamples: 0,
      nDroppedStale: 0,
    },
  };
}

/** The step's explain record: the engine's input and output, its advantage settings, its trace when sampled. */
function explainStepRecord(
  config: RunConfig,
  step: number,
  result: AdvantageBatchResult,
  stepTrace: StepTrace,
  prepared: readonly PreparedGroup[],
  assembled: readonly AssembledGroup[],
  pending: PendingStep,
  byGroup: {
    readonly domainByGroup: ReadonlyMap<string, string>;
    readonly responsesByGroup: ReadonlyMap<string, readonly string[]>;
  },
): ExplainStepRecord {
  return {
    v: EXPLAIN_RECORD_VERSION,
    step,
    estimator: result.estimator,
    advantage: advantageSettingsOf(config),
    // Only a sampled span is exported: an unsampled trace id would link to nothing (each rollout's own
    // trace id is stored in its group the same way).
    ...(stepTrace.recording ? { traceId: stepTrace.traceId } : {}),
    components: config.components.map(componentId),
    weights: config.components.map((c) => c.weight),
    groups: prepared.map((g, gi) => {
      const pg = pending.groups.find((x) => x.groupId === g.source.group.groupId)!;
      return explainGroupRecord(
        g,
        config,
        pg.taskId,
        byGroup.domainByGroup.get(pg.groupId)!,
        pendingLengths(pending, g),
        result.groups[gi]!.advantages,
        g.source.group.rolloutIds.map((id) => stepTrace.rolloutTraceId(id)),
        byGroup.responsesByGroup.get(pg.groupId),
      );
    }),
    dropped: assembled
      .filter((a) => !prepared.some((p) => p.source === a))
      .map((a) => ({ groupId: a.group.groupId, rolloutIds: a.group.rolloutIds, missing: a.missing })),
  };
}

function pendingLengths(pending: PendingStep, g: PreparedGroup): number[] {
  const pg = pending.groups.find((x) => x.groupId === g.source.group.groupId)!;
  return pg.completions.map((c) => Math.max(1, trainedLength(c)));
}

async function publishAdvantages(
  bus: MeshBus,
  config: RunConfig,
  step: number,
  policyVersion: number,
  prepared: readonly PreparedGroup[],
  result: AdvantageBatchResult,
  metrics: Record<string, unknown>,
): Promise<void> {
  const batch = create(AdvantageBatchSchema, {
    runId: config.runId,
    step,
    estimator: result.estimator,
    components: config.components.map(componentId),
    weights: config.components.map((c) => c.weight),
    policyVersion,
    groups: prepared.map((g, gi) => {
      const r = result.groups[gi]!;
      return {
        groupId: g.source.group.groupId,
        kept: r.kept,
        degenerate: r.degenerate,
        imputed: g.imputed,
        corrFallback: r.corrFallback,
        sgrpoWeight: r.diagnostics?.sgrpo?.weight ?? 1,
        denominator: r.diagnostics?.denominator ?? 0,
        rollouts: g.source.group.rolloutIds.map((id, i) => ({
          rolloutId: id,
          index: i,
          advantage: r.advantages[i]!,
          weightedReward: weightedTotal(g.rewards[i]!, config.components),
        })),
      };
    }),
    // google.protobuf.Struct is a plain JSON object in protobuf-es.
    metrics: JSON.parse(JSON.stringify(metrics)) as JsonObject,
  });
  await bus.js.publish(advantageSubject(config.runId), toBinary(AdvantageBatchSchema, batch), {
    msgID: `${config.runId}:advantages:${step}`,
  });
}
