/**
 * Code extraction from a model response, CorrGRPO style (`specs/rewards.md` §1.3 item 1), shared by
 * code-exec, ast and efficiency so all three score the same code.
 * @module
 */

/** What {@link extractCode} found. */
export interface ExtractedCode {
  /** The code (normalised: `\n` line ends, no BOM, leading tabs expanded). Empty when none. */
  readonly code: string;
  /** True when it came from a closed ```` ``` ````/```` ```python ```` fence. */
  readonly fenced: boolean;
  /** True when the code defines the entry point's root (`class Solution`, `def f`). */
  readonly definesEntryPoint: boolean;
  /** How the code was found, for `details`. */
  readonly how: string;
}

/** The definition a response must contain for an entry point: `Solution().twoSum` → class `Solution`. */
export function entryPointRoot(
  entryPoint: string,
): { readonly kind: "class" | "def"; readonly name: string } | undefined {
  const m = entryPoint.trim().match(/^([A-Za-z_][A-Za-z0-9_]*)\s*([(.])?/);
  if (!m) return undefined;
  return { kind: m[2] ? "class" : "def", name: m[1]! };
}

function definitionPattern(entryPoint: string): RegExp | undefined {
  const root = entryPointRoot(entryPoint);
  if (!root) return undefined;
  return root.kind === "class"
    ? new RegExp(`^[ \\t]*class[ \\t]+${root.name}\\b`, "m")
    : new RegExp(`^[ \\t]*(?:async[ \\t]+)?def[ \\t]+${root.name}[ \\t]*\\(`, "m");
}

/**
 * Normalises line ends (`\r\n`, lone `\r` → `\n`), drops a BOM, and expands tabs in leading
 * whitespace to 4-column stops, so tab-indented or mixed code parses as its author meant.
 */
export function normalizeCode(code: string): string {
  return code
    .replace(/^\uFEFF/, "")
    .replace(/\r\n?/g, "\n")
    .replace(/^[ \t]+/gm, (ws) => {
      let col = 0;
      for (const ch of ws) col = ch === "\t" ? col + 4 - (col % 4) : col + 1;
      return " ".repeat(col);
    });
}

/**
 * The fenced blocks of `text` (`\n` line ends) as the regex ``/```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n([\s\S]*?)^[ \t]*```/gm``
 * finds them — an opening ```` ``` ```` anywhere, its tag, the body up to the first line that starts
 * with ```` ``` ```` — in linear time: that regex rescans to the end from every unclosed opening, so a
 * response of many `` a```⏎ `` lines took minutes.
 */
function fencedBlocks(text: string): Array<{ readonly tag: string; readonly body: string }> {
  const out: Array<{ tag: string; body: string }> = [];
  const lineBreak = /[\n\u2028\u2029]/g; // where `^` matches in multiline mode (text has no \r)
  let from = 0;
  while (true) {
    const open = text.indexOf("```", from);
    if (open === -1) return out;
    let p = open + 3;
    while (text[p] === " " || text[p] === "\t") p++;
    const tagStart = p;
    while (p < text.length && /[A-Za-z0-9_+-]/.test(text[p]!)) p++;
    const tag = text.slice(tagStart, p);
    const headerEnd = text.indexOf("\n", p);
    if (headerEnd === -1) return out;
    // The first line at or after the body's start that begins with optional blanks and ```.
    let line = headerEnd + 1;
    let close = -1;
    while (close === -1) {
      let q = line;
      while (text[q] === " " || text[q] === "\t") q++;
      if (text.startsWith("```", q)) {
        close = q;
        break;
      }
      lineBreak.lastIndex = q;
      if (!lineBreak.exec(text)) return out; // no closing line after this opening: none after later ones
      line = lineBreak.lastIndex;
    }
    out.push({ tag, body: text.slice(headerEnd + 1, line) });
    from = close + 3;
  }
}

const PYTHON_TAGS = new Set(["", "python", "python3", "py"]);
const CODE_START =
  /^(?:from[ \t]+\S+[ \t]+import\b|import[ \t]+\S|class[ \t]|def[ \t]|async[ \t]+def[ \t]|@)/m;

/**
 * Extracts the solution from a response. Fenced blocks tagged `python`/`py`/`python3` or untagged
 * are candidates; the one defining the entry point wins (longest on ties, longest overall when none
 * does). Without a fence: the text after the last `</think>`, from the first line that starts code
 * (`import`, `from … import`, `class`, `def`, a decorator) when that is at or before the entry
 * point's definition, else the whole text. An unclosed fence (a truncated response) yields the
 * text after it, as unfenced.
 */
export function extractCode(response: string, entryPoint = ""): ExtractedCode {
  const text = response.replace(/\r\n?/g, "\n");
  const defines = definitionPattern(entryPoint);
  const hasDef = (code: string) => (defines ? defines.test(code) : true);
  const blocks: string[] = [];
  for (const b of fencedBlocks(text)) {
    if (PYTHON_TAGS.has(b.tag.toLowerCase())) blocks.push(b.body);
  }
  if (blocks.length > 0) {
    const withDef = blocks.filter(hasDef);
    const pool = withDef.length > 0 ? withDef : blocks;
    const best = pool.reduce((a, b) => (b.length > a.length ? b : a));
    const code = `${normalizeCode(best).trimEnd()}\n`;
    return {
      code: code.trim() === "" ? "" : code,
      fenced: true,
      definesEntryPoint: hasDef(best),
      how: `fenced block${blocks.length > 1 ? ` (1 of ${blocks.length})` : ""}`,
    };
  }
  let rest = text;
  const think = rest.lastIndexOf("</think>");
  if (think >= 0) rest = rest.slice(think + "</think>".length);
  let how = "whole response (no fence)";
  // One run of blanks on each side of the tag (`[ \t]*(?:py)?[ \t]*` backtracks quadratically).
  const open = rest.match(/```[ \t]*(?:(?:python3?|py)[ \t]*)?\n/i);
  if (open && open.index !== undefined) {
    rest = rest.slice(open.index + open[0].length);
    how = "after an unclosed fence";
  } else {
    const def = defines?.exec(rest);
    const start = CODE_START.exec(rest);
    if (start && (!def || start.index <= def.index)) {
      if (start.index > 0) how = "from the first line of code (no fence)";
      rest = rest.slice(start.index);
    } else if (def) {
      rest = rest.slice(def.index);
      how = "from the entry point's definition (no fence)";
    }
  }
  const code = `${normalizeCode(rest).trimEnd()}\n`;
  return { code: code.trim() === "" ? "" : code, fenced: false, definesEntryPoint: hasDef(rest), how };
}
