/**
 * Final-answer extraction from a response, the way the MATH and GSM8K graders read it: the last
 * `\boxed{…}` / `\fbox{…}` (braces nested to any depth), else the last "The answer is …", else the
 * GSM8K `#### n` line, else — when allowed — the last number of the response.
 *
 * Linear in the response's length (one backwards scan per marker, one brace walk), so a megabyte
 * response costs milliseconds, not a hang.
 * @module
 */

/** Where an answer must be found. */
export const AnswerFormat = {
  /** Boxed, then "the answer is", then `####`, then (if allowed) the last number. */
  auto: "auto",
  /** Only `\boxed{…}` / `\fbox{…}`. */
  boxed: "boxed",
  /** Only GSM8K's `#### n`. */
  gsm8k: "gsm8k",
  /** Only the last number of the response. */
  lastNumber: "last_number",
} as const;
/** One of {@link AnswerFormat}'s values. */
export type AnswerFormat = (typeof AnswerFormat)[keyof typeof AnswerFormat];

/** How the final answer was found. */
export type AnswerSource = "boxed" | "fbox" | "the_answer_is" | "gsm8k" | "last_number";

/** A final answer and where it came from. */
export interface ExtractedAnswer {
  readonly answer: string;
  readonly source: AnswerSource;
  /** How many `\boxed`/`\fbox` the response has (the last one counts, as in MATH's `last_boxed_only_string`). */
  readonly boxedCount: number;
}

const BOX_MARKERS = ["\\boxed", "\\fbox"] as const;

/** The content of the brace group opening at `open` (`s[open] === "{"`), or undefined when unbalanced. */
export function braceGroup(s: string, open: number): { content: string; end: number } | undefined {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (c === "\\") {
      i++; // an escaped brace (`\{`) does not count
      continue;
    }
    if (c === "{") depth++;
    else if (c === "}") {
      depth--;
      if (depth === 0) return { content: s.slice(open + 1, i), end: i + 1 };
    }
  }
  return undefined;
}

function countOccurrences(s: string, needle: string): number {
  let n = 0;
  for (let i = s.indexOf(needle); i !== -1; i = s.indexOf(needle, i + needle.length)) n++;
  return n;
}

function lastBoxed(response: string): ExtractedAnswer | undefined {
  let best: { at: number; marker: (typeof BOX_MARKERS)[number] } | undefined;
  for (const marker of BOX_MARKERS) {
    const at = response.lastIndexOf(marker);
    if (at !== -1 && (!best || at > best.at)) best = { at, marker };
  }
  if (!best) return undefined;
  const boxedCount = BOX_MARKERS.reduce((n, m) => n + countOccurrences(response, m), 0);
  let i = best.at + best.marker.length;
  while (response[i] === " ") i++;
  const source: AnswerSource = best.marker === "\\boxed" ? "boxed" : "fbox";
  if (response[i] === "{") {
    const g = braceGroup(response, i);
    if (!g) return undefined;
    return { answer: g.content, source, boxedCount };
  }
  // `\boxed 5` (MATH's graders accept the space form): up to the next `$` or whitespace.
  const m = /^[^\s$]+/.exec(response.slice(i, i + 200));
  return m ? { answer: m[0], source, boxedCount } : undefined;
}

const THE_ANSWER_IS = /(?:the\s+)?(?:final\s+)?answer\s+is\s*:?\s*/gi;

function theAnswerIs(response: string): ExtractedAnswer | undefined {
  let last: RegExpExecArray | undefined;
  for (let m = THE_ANSWER_IS.exec(response); m !== null; m = THE_ANSWER_IS.exec(response)) last = m;
  if (!last) return undefined;
  let rest = response.slice(last.index + last[0].length, last.index + last[0].length + 2000);
  const math = /^\$\$?([^$]+)\$\$?/.exec(rest) ?? /^\\\((.+?)\\\)/.exec(rest) ?? /^\\\[(.+?)\\\]/.exec(rest);
  if (math) return { answer: math[1]!.trim(), source: "the_answer_is", boxedCount: 0 };
  // Plain text: up to the end of the line or sentence (a period followed by a space or the end).
  rest = rest.split("\n")[0]!;
  const end = /\.(\s|$)/.exec(rest);
  const answer = (end ? rest.slice(0, end.index) : rest).trim();
  return answer === "" ? undefined : { answer, source: "the_answer_is", boxedCount: 0 };
}

function gsm8kHashes(response: string): ExtractedAnswer | undefined {
  const at = response.lastIndexOf("####");
  if (at === -1) return undefined;
  const line = response
    .slice(at + 4, at + 4 + 500)
    .split("\n")[0]!
    .trim();
  return line === "" ? undefined : { answer: line, source: "gsm8k", boxedCount: 0 };
}

const NUMBER = /-?\d[\d,]*(?:\.\d+)?|-?\.\d+/g;

function lastNumber(response: string): ExtractedAnswer | undefined {
  // Only the tail: the last number of a megabyte response is near its end.
  const tail = response.slice(-4000);
  let last: string | undefined;
  for (let m = NUMBER.exec(tail); m !== null; m = NUMBER.exec(tail)) last = m[0];
  if (last === undefined) return undefined;
  return { answer: last.replace(/,$/, ""), source: "last_number", boxedCount: 0 };
}

/**
 * The final answer of `response`, or undefined when the format's marker is absent.
 * @param allowLastNumber whether `auto` may fall back to the last number (GSM8K-style lenient
 *   grading); off, a response without a marker has no answer (`format = 0`).
 */
export function extractAnswer(
  response: string,
  format: AnswerFormat,
  allowLastNumber: boolean,
): ExtractedAnswer | undefined {
  switch (format) {
    case "boxed":
      return lastBoxed(response);
    case "gsm8k":
      return gsm8kHashes(response);
    case "last_number":
      return lastNumber(response);
    case "auto":
      return (
        lastBoxed(response) ??
        theAnswerIs(response) ??
        gsm8kHashes(response) ??
        (allowLastNumber ? lastNumber(response) : undefined)
      );
  }
}
