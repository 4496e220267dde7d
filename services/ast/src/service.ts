/**
 * The ast service (`specs/rewards.md` §1.3 item 8, §5):
 *
 * * `syntax` — 1 iff tree-sitter parses the extracted code without ERROR/MISSING nodes;
 * * `similarity` — `difflib.SequenceMatcher(None, cand, ref, autojunk=False).ratio()` over the
 *   identifier- and literal-independent node-type sequences of the candidate and the task's
 *   `reference_solution`: renaming variables or changing constants keeps 1.0, changing structure
 *   or operators lowers it. NOT_APPLICABLE (value 0) when there is no reference or it does not
 *   parse (CorrGRPO removes the weight then); 0 with status ERROR when the candidate does not parse.
 *
 * No code runs: the service only parses. Code is extracted from the response exactly as code-exec does.
 * @module
 */
import { type CodeTask, ComponentStatus } from "@reward-mesh/proto";
import { extractCode, referenceCode, validateCodeTask } from "@reward-mesh/sandbox";
import { defineRewardService, type RewardServiceDefinition } from "@reward-mesh/sdk";
import type { AstOptions } from "./config.js";
import { parserUnavailable } from "./errors.js";
import { parseCode, pythonParser } from "./node-sequence.js";
import { equalPairs, MAX_MATCH_PAIRS, sequenceRatio } from "./sequence-matcher.js";

/** Version of the scoring logic. */
export const AST_SERVICE_VERSION = "1.0.0";

/** Creates the ast service. */
export function createAstService(options: AstOptions): RewardServiceDefinition {
  const parser = () => pythonParser().catch((err: unknown) => Promise.reject(parserUnavailable(err)));
  return defineRewardService({
    name: "ast",
    version: AST_SERVICE_VERSION,
    domains: ["code"],
    taskKinds: ["code"],
    components: [
      {
        name: "similarity",
        description:
          "SequenceMatcher ratio of identifier/literal-independent node-type sequences vs the reference",
        min: 0,
        max: 1,
      },
      {
        name: "syntax",
        description: "1 iff the code parses (tree-sitter, no ERROR/MISSING nodes)",
        min: 0,
        max: 1,
      },
    ],
    validate: (rollout) => validateCodeTask(rollout.task!.kind.value as CodeTask, { requireTests: false }),
    score: async (rollout) => {
      const task = rollout.task!.kind.value as CodeTask;
      const p = await parser();
      const candidate = extractCode(rollout.response, task.entryPoint).code;
      const cand = candidate === "" ? undefined : parseCode(p, candidate);
      const syntax = !cand
        ? { name: "syntax", value: 0, status: ComponentStatus.ERROR, details: "no code in the response" }
        : cand.ok
          ? { name: "syntax", value: 1, details: `parses (${cand.tokens.length} node tokens)` }
          : {
              name: "syntax",
              value: 0,
              status: ComponentStatus.ERROR,
              details: `syntax error at ${cand.problem}`,
            };
      const refCode = referenceCode(task);
      const similarity = (() => {
        if (refCode === "")
          return { value: 0, status: ComponentStatus.NOT_APPLICABLE, details: "no reference_solution" };
        const ref = parseCode(p, refCode);
        if (!ref.ok)
          return {
            value: 0,
            status: ComponentStatus.NOT_APPLICABLE,
            details: `reference_solution does not parse (${ref.problem})`,
          };
        if (!cand?.ok)
          return {
            value: 0,
            status: ComponentStatus.ERROR,
            details: cand ? "the candidate does not parse" : "no code in the response",
          };
        const n = cand.tokens.length + ref.tokens.length;
        if (cand.tokens.length > options.maxTokens || ref.tokens.length > options.maxTokens)
          return {
            value: 0,
            status: ComponentStatus.ERROR,
            details: `too large to compare (${cand.tokens.length} vs ${ref.tokens.length} node tokens, limit ${options.maxTokens})`,
          };
        const pairs = equalPairs(cand.tokens, ref.tokens);
        if (pairs > MAX_MATCH_PAIRS)
          return {
            value: 0,
            status: ComponentStatus.ERROR,
            details: `too costly to compare (${pairs} pairs of equal node tokens, limit ${MAX_MATCH_PAIRS})`,
          };
        const ratio = Math.min(1, Math.max(0, sequenceRatio(cand.tokens, ref.tokens)));
        const matched = Math.round((ratio * n) / 2);
        return {
          value: ratio,
          details: `${matched} of ${cand.tokens.length} (candidate) and ${ref.tokens.length} (reference) node tokens match`,
        };
      })();
      return [{ name: "similarity", ...similarity }, syntax];
    },
  });
}
