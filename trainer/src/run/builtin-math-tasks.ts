/**
 * Built-in `math` task set: MATH / GSM8K-style problems with reference answers, scored for real by the
 * `math` service (`correct`, `format`). The policy writes a short solution from a vocabulary of
 * derivation steps (right and wrong) and final answers — right ones in several notations (`\frac{1}{2}`
 * and `0.5`, `2\sqrt{2}` and `\sqrt{8}`), wrong ones, and unmarked ones that give no answer — so the
 * outcome reward depends on the service's extraction and equivalence, and a right answer can follow a
 * wrong step (the label noise of outcome rewards).
 * @module
 */
import type { WarmupExample } from "./builtin-tool-agent-tasks.js";
import type { FragmentTaskDefinition } from "./tasks.js";

const STOP = "<eos>";

interface MathSpec {
  readonly id: string;
  readonly problem: string;
  readonly answers: readonly string[];
  readonly answerType?: string;
  readonly answerFormat?: string;
  readonly steps: readonly string[];
  /** Final-answer fragments (right and wrong, marked and unmarked). */
  readonly finals: readonly string[];
}

const MATH_SPECS: readonly MathSpec[] = [
  {
    id: "math-half-of-probability",
    problem: "A fair coin is flipped once. What is the probability of heads?",
    answers: ["\\frac{1}{2}"],
    steps: ["There are 2 equally likely outcomes. ", "There are 3 outcomes. ", "Heads is one of them. "],
    finals: [
      "The answer is $\\boxed{\\frac{1}{2}}$.",
      "The answer is $\\boxed{0.5}$.",
      "The answer is $\\boxed{\\frac{1}{3}}$.",
      "So it is about a half.",
    ],
  },
  {
    id: "math-diagonal-of-square",
    problem: "What is the length of the diagonal of a square with side 2?",
    answers: ["2\\sqrt{2}"],
    steps: ["By Pythagoras, d^2 = 2^2 + 2^2 = 8. ", "d = 2 + 2 = 4. ", "Take the square root. "],
    finals: ["$\\boxed{2\\sqrt{2}}$", "$\\boxed{\\sqrt{8}}$", "$\\boxed{4}$", "$\\boxed{8}$"],
  },
  {
    id: "math-quadratic-roots",
    problem: "Find all solutions of x^2 - 5x + 6 = 0, separated by commas.",
    answers: ["2, 3"],
    steps: ["Factor: (x-2)(x-3) = 0. ", "Factor: (x+2)(x+3) = 0. ", "Set each factor to zero. "],
    finals: ["$\\boxed{3, 2}$", "$\\boxed{2, 3}$", "$\\boxed{-2, -3}$", "$\\boxed{x = 2}$"],
  },
  {
    id: "math-inequality-interval",
    problem: "Solve 2x - 1 < 5. Express the answer in interval notation.",
    answers: ["(-\\infty, 3)"],
    answerType: "interval",
    steps: ["Add 1: 2x < 6. ", "Divide by 2: x < 3. ", "Subtract 1: 2x < 4. "],
    finals: [
      "$\\boxed{(-\\infty, 3)}$",
      "$\\boxed{\\left(-\\infty, 3\\right)}$",
      "$\\boxed{(-\\infty, 3]}$",
      "$\\boxed{(3, \\infty)}$",
    ],
  },
  {
    id: "gsm8k-clips",
    problem:
      "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?",
    answers: ["72"],
    answerFormat: "gsm8k",
    steps: ["In May she sold 48 / 2 = 24 clips. ", "In May she sold 48 * 2 = 96 clips. ", "48 + 24 = 72. "],
    finals: ["#### 72", "#### 144", "#### 24", "The total is 72."],
  },
  {
    id: "gsm8k-wages",
    problem:
      "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?",
    answers: ["10"],
    answerFormat: "gsm8k",
    steps: ["She earns 12 / 60 = $0.2 per minute. ", "0.2 * 50 = 10. ", "12 * 50 = 600. "],
    finals: ["#### 10", "#### $10", "#### 600", "She earned ten dollars."],
  },
];

function mathTask(s: MathSpec): FragmentTaskDefinition {
  return {
    id: s.id,
    set: "math",
    task: {
      id: s.id,
      prompt: s.problem,
      kind: {
        case: "math",
        value: {
          problem: s.problem,
          answers: [...s.answers],
          answerType: s.answerType ?? "",
          answerFormat: s.answerFormat ?? "",
        },
      },
    },
    vocabulary: [STOP, ...s.steps, ...s.finals],
    stopToken: 0,
    maxTokens: 4,
    render: (f) => f.filter((x) => x !== STOP).join(""),
  };
}

/** The built-in `math` set (domain `math`, scored by the `math` service). */
export const MATH_TASKS: readonly FragmentTaskDefinition[] = MATH_SPECS.map(mathTask);

/**
 * Format examples for warming a text policy up on the `math` tasks before RL (the math counterpart of
 * `toolCallWarmupExamples`): for each task, `perTask` solutions of 0–2 derivation steps and one final
 * answer, each drawn at random from the task's fragments — right and wrong steps, right answers in either
 * notation, wrong and unmarked answers alike. Supervised training on them teaches a randomly initialised
 * model the layout and the candidate answers, not which one is right: that is left to the rewards.
 */
export function mathWarmupExamples(rng: () => number, perTask: number): WarmupExample[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
  const out: WarmupExample[] = [];
  for (const s of MATH_SPECS) {
    for (let i = 0; i < perTask; i++) {
      const steps = Array.from({ length: Math.floor(rng() * 3) }, () => pick(s.steps));
      out.push({ prompt: s.problem, response: [...steps, pick(s.finals)].join("") });
    }
  }
  return out;
}
