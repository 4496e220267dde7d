/**
 * Python's `repr` of floats and strings, for services whose scores or tool outputs must match what the
 * Python reference implementations print (AgentDojo tool results, ToolRL / BFCL value comparisons).
 * @module
 */

/** Python's `repr(float)` / `str(float)`: shortest round-trip digits, `.0` on integral values, `1e+16` exponents. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Number.POSITIVE_INFINITY) return "inf";
  if (x === Number.NEGATIVE_INFINITY) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mant, expPart] = x.toExponential().split("e") as [string, string];
  const exp = Number(expPart);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${neg ? "-" : ""}${m}e${exp < 0 ? "-" : "+"}${Math.abs(exp).toString().padStart(2, "0")}`;
  }
  let s: string;
  if (exp < 0) s = `0.${"0".repeat(-exp - 1)}${digits}`;
  else if (digits.length <= exp + 1) s = `${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
  else s = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  return `${neg ? "-" : ""}${s}`;
}

/** Python's `repr(str)`: single quotes unless the string has one and no double quote; escapes as CPython. */
export function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch < " " || ch === "\x7f") out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return out + quote;
}
