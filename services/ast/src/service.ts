/**
 * The ast service (`specs/rewards.md` §1.3 item 8, §5), computed exactly as CorrGRPO's released code
 * reward does, by CPython itself (a pool of parser helpers, `parser-pool.ts`):
 *
 * * `syntax` — 1 iff CPython's `ast.parse` accepts the extracted code;
 * * `similarity` — `difflib.SequenceMatcher(None, cand, ref, autojunk=False).ratio()` over the
 *   node-type sequences of the candidate and the task's `reference_solution` (pre-order class names
 *   of CPython's `ast`, children by `ast.iter_child_nodes`, a closing `/Name` after each node):
 *   renaming variables or changing constants keeps 1.0, changing structure or operators lowers it.
 *   NOT_APPLICABLE (value 0) when there is no reference or it does not parse (CorrGRPO removes the
 *   weight then); 0 with status ERROR when the candidate does not parse.
 *
 * No code runs: the helpers only parse. Code is extracted from the response exactly as code-exec
 * does. A helper that dies twice on one rollout (out of memory, killed, past its timeout) makes both
 * components NOT_APPLICABLE with the reason — an infrastructure error, never the candidate's 0.
 * @module
 */
import { type CodeTask, ComponentStatus } from "@reward-mesh/proto";
import { extractCode, referenceCode, validateCodeTask } from "@reward-mesh/sandbox";
import { type ComponentValue, defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import type { AstOptions } from "./config.js";
import { infrastructureDetails } from "./errors.js";
import { ParserPool } from "./parser-pool.js";

/** Version of the scoring logic. */
export const AST_SERVICE_VERSION = "2.0.0";

/** Most pairs of equal node tokens compared (SequenceMatcher's worst case is quadratic in them). */
export const MAX_MATCH_PAIRS = 4_000_000;

/** Options of {@link createAstService} besides the scoring options. */
export interface AstServiceExtras {
  /** A pool created by the caller (main.ts closes it on shutdown); otherwise one is created on first use. */
  readonly parserPool?: ParserPool;
}

/** Creates the ast service. */
export function createAstService(
  options: AstOptions,
  extras: AstServiceExtras = {},
): RewardServiceDefinition {
  let pool = extras.parserPool;
  const parsers = () => {
    pool ??= new ParserPool(options.parser);
    return pool;
  };
  return defineRewardService({
    name: "ast",
    version: AST_SERVICE_VERSION,
    domains: ["code"],
    taskKinds: ["code"],
    components: [
      {
        name: "similarity",
        description:
          "difflib ratio of CPython ast node-type sequences (CorrGRPO's) of the candidate vs the reference",
        min: 0,
        max: 1,
      },
      {
        name: "syntax",
        description: "1 iff CPython's ast.parse accepts the code",
        min: 0,
        max: 1,
      },
    ],
    validate: (rollout) => validateCodeTask(rollout.task!.kind.value as CodeTask, { requireTests: false }),
    score: async (rollout): Promise<ComponentValue[]> => {
      const task = rollout.task!.kind.value as CodeTask;
      const candidate = extractCode(rollout.response, task.entryPoint).code;
      const refCode = referenceCode(task);
      if (candidate === "" && refCode === "")
        return [
          {
            name: "similarity",
            value: 0,
            status: ComponentStatus.NOT_APPLICABLE,
            details: "no reference_solution",
          },
          { name: "syntax", value: 0, status: ComponentStatus.ERROR, details: "no code in the response" },
        ];
      const answer = await parsers().compare(candidate || undefined, refCode || undefined, {
        maxTokens: options.maxTokens,
        maxPairs: MAX_MATCH_PAIRS,
      });
      if (!answer.ok) {
        // The helpers died twice on this pair. Only the candidate's code is untrusted: when the
        // reference (or a trivial program) alone still parses on a fresh helper, the helpers work and
        // it was the candidate's code that killed them (too large or slow to parse within the limits)
        // — its 0, never a NOT_APPLICABLE it could aim for.
        if (candidate) {
          const probe = await parsers().compare(undefined, refCode || "pass\n", {
            maxTokens: options.maxTokens,
            maxPairs: MAX_MATCH_PAIRS,
          });
          if (probe.ok && probe.reference?.ok !== false) {
            const details = `the candidate's code could not be parsed within the parser helpers' limits: ${answer.reason}`;
            return [
              { name: "similarity", value: 0, status: ComponentStatus.ERROR, details },
              { name: "syntax", value: 0, status: ComponentStatus.ERROR, details },
            ];
          }
        }
        const details = infrastructureDetails(answer.reason);
        return [
          { name: "similarity", value: 0, status: ComponentStatus.NOT_APPLICABLE, details },
          { name: "syntax", value: 0, status: ComponentStatus.NOT_APPLICABLE, details },
        ];
      }
      const cand = answer.candidate;
      const syntax: ComponentValue = !cand
        ? { name: "syntax", value: 0, status: ComponentStatus.ERROR, details: "no code in the response" }
        : cand.ok
          ? { name: "syntax", value: 1, details: `parses (${cand.tokens} node tokens)` }
          : {
              name: "syntax",
              value: 0,
              status: ComponentStatus.ERROR,
              details: `syntax error: ${cand.error}`,
            };
      const similarity = ((): Omit<ComponentValue, "name"> => {
        const ref = answer.reference;
        if (!ref)
          return { value: 0, status: ComponentStatus.NOT_APPLICABLE, details: "no reference_solution" };
        if (!ref.ok)
          return {
            value: 0,
            status: ComponentStatus.NOT_APPLICABLE,
            details: `reference_solution does not parse (${ref.error})`,
          };
        if (!cand?.ok)
          return {
            value: 0,
            status: ComponentStatus.ERROR,
            details: cand ? "the candidate does not parse" : "no code in the response",
          };
        if (answer.tooLarge && ref.tokens > options.maxTokens && cand.tokens <= options.maxTokens)
          return {
            value: 0,
            status: ComponentStatus.NOT_APPLICABLE,
            details: `reference_solution too large to compare (${ref.tokens} node tokens, limit ${options.maxTokens})`,
          };
        if (answer.tooLarge || answer.ratio === undefined)
          return {
            value: 0,
            status: ComponentStatus.ERROR,
            details:
              cand.tokens > options.maxTokens || ref.tokens > options.maxTokens
                ? `too large to compare (${cand.tokens} vs ${ref.tokens} node tokens, limit ${options.maxTokens})`
                : `too costly to compare (${answer.pairs} pairs of equal node tokens, limit ${MAX_MATCH_PAIRS})`,
          };
        return {
          value: answer.ratio,
          details: `${answer.matched} of ${cand.tokens} (candidate) and ${ref.tokens} (reference) node tokens match`,
        };
      })();
      return [{ name: "similarity", ...similarity }, syntax];
    },
  });
}
