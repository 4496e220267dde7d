/**
 * The few Python `datetime` operations the travel and workspace tools and checkers use, on a canonical
 * text form:
 * a `datetime` is kept as its `isoformat()` (`2024-05-15T10:00:00`), a `date` as `2024-05-15`. Two
 * values are equal iff their texts are, and {@link PyTemporal} shows them the way PyYAML prints them.
 * @module
 */
import { PyTemporal, pyStr } from "../render.js";
import { ToolError } from "../suite.js";

interface Parts {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
  us: number;
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

function daysIn(y: number, mo: number): number {
  return new Date(Date.UTC(y, mo, 0)).getUTCDate();
}

/** Python's range error for a well-formed but impossible date/time, or undefined when valid. */
function rangeError(p: Parts): string | undefined {
  if (p.y < 1) return `year ${p.y} is out of range`;
  if (p.mo < 1 || p.mo > 12) return "month must be in 1..12";
  if (p.d < 1 || p.d > daysIn(p.y, p.mo)) return "day is out of range for month";
  if (p.h > 23) return "hour must be in 0..23";
  if (p.mi > 59) return "minute must be in 0..59";
  if (p.s > 59) return "second must be in 0..59";
  return undefined;
}

function valid(p: Parts): boolean {
  return rangeError(p) === undefined;
}

function format(p: Parts): string {
  const base = `${pad(p.y, 4)}-${pad(p.mo)}-${pad(p.d)}T${pad(p.h)}:${pad(p.mi)}:${pad(p.s)}`;
  return p.us === 0 ? base : `${base}.${pad(p.us, 6)}`;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d{1,6}))?)?)?)?$/;

function parseIso(s: string): Parts | undefined {
  const p = isoParts(s);
  return p && valid(p) ? p : undefined;
}

function isoParts(s: string): Parts | undefined {
  const m = ISO.exec(s);
  if (!m) return undefined;
  return {
    y: Number(m[1]),
    mo: Number(m[2]),
    d: Number(m[3]),
    h: Number(m[4] ?? 0),
    mi: Number(m[5] ?? 0),
    s: Number(m[6] ?? 0),
    us: m[7] ? Number(m[7].padEnd(6, "0")) : 0,
  };
}

/**
 * `datetime.fromisoformat(s).isoformat()` for the forms the benchmark meets (`YYYY-MM-DD`, with
 * `T`/space and `HH`, `HH:MM`, `HH:MM:SS[.ffffff]`); anything else is Python's
 * `ValueError: Invalid isoformat string: '<s>'` (time zones are not supported here).
 */
export function fromIsoFormat(s: string): string {
  const p = isoParts(s);
  if (!p) throw new ToolError("ValueError", `Invalid isoformat string: ${pyStr(s)}`);
  const range = rangeError(p);
  if (range) throw new ToolError("ValueError", range);
  return format(p);
}

/** Lenient parse of a pydantic `datetime` field from the environment data; undefined if invalid. */
export function parseDataDatetime(s: string): string | undefined {
  const t = s.trim();
  // pydantic (speedate) wants at least `HH:MM` after the date; `fromisoformat`'s bare `HH` is not a datetime.
  if (/[T ]\d{2}$/.test(t)) return undefined;
  const p = parseIso(t);
  return p ? format(p) : undefined;
}

/**
 * The regexes Python's `_strptime` builds for the directives used here (same alternatives in the same
 * order, so backtracking picks the same split), and its whitespace rule (a space matches `\s+`).
 */
const STRPTIME = {
  Y: String.raw`(\d\d\d\d)`,
  m: "(1[0-2]|0[1-9]|[1-9])",
  d: String.raw`(3[01]|[12]\d|0[1-9]|[1-9]| [1-9])`,
  H: String.raw`(2[0-3]|[0-1]\d|\d)`,
  M: String.raw`([0-5]\d|\d)`,
};
const STRPTIME_MINUTES = new RegExp(
  String.raw`^${STRPTIME.Y}-${STRPTIME.m}-${STRPTIME.d}\s+${STRPTIME.H}:${STRPTIME.M}`,
);
const STRPTIME_DAY = new RegExp(`^${STRPTIME.Y}-${STRPTIME.m}-${STRPTIME.d}`);

/**
 * `datetime.strptime(s, format)` for the two formats used: the matched fields, Python's "does not
 * match format" or "unconverted data remains: <rest>" error, or the date's range error.
 */
function strptime(s: string, re: RegExp, fmt: string): Parts {
  const m = re.exec(s);
  if (!m) throw new ToolError("ValueError", `time data ${pyStr(s)} does not match format '${fmt}'`);
  const rest = s.slice(m[0].length);
  if (rest !== "") throw new ToolError("ValueError", `unconverted data remains: ${rest}`);
  const p: Parts = {
    y: Number(m[1]),
    mo: Number(m[2]),
    d: Number(m[3]!.trim()),
    h: Number(m[4] ?? 0),
    mi: Number(m[5] ?? 0),
    s: 0,
    us: 0,
  };
  const range = rangeError(p);
  if (range) throw new ToolError("ValueError", range);
  return p;
}

/** `datetime.strptime(s, "%Y-%m-%d %H:%M").isoformat()` (1-digit fields, any run of whitespace). */
export function strptimeMinutes(s: string): string {
  return format(strptime(s, STRPTIME_MINUTES, "%Y-%m-%d %H:%M"));
}

/** `datetime.strptime(s, "%Y-%m-%d").date().isoformat()`. */
export function strptimeDay(s: string): string {
  const p = strptime(s, STRPTIME_DAY, "%Y-%m-%d");
  return `${pad(p.y, 4)}-${pad(p.mo)}-${pad(p.d)}`;
}

/** `dt.date().isoformat()` of a canonical datetime text. */
export function dateOf(dt: string): string {
  return dt.slice(0, 10);
}

/** `dt.strftime("%H:%M")`. */
export function hourMinute(dt: string): string {
  return dt.slice(11, 16);
}

/** `dt.strftime("%m-%d")`. */
export function monthDay(dt: string): string {
  return dt.slice(5, 10);
}

/** `dt + timedelta(hours=h)` on a canonical datetime text. */
export function addHours(dt: string, h: number): string {
  const p = parseIso(dt)!;
  const t = new Date(Date.UTC(p.y, p.mo - 1, p.d, p.h + h, p.mi, p.s));
  return format({
    y: t.getUTCFullYear(),
    mo: t.getUTCMonth() + 1,
    d: t.getUTCDate(),
    h: t.getUTCHours(),
    mi: t.getUTCMinutes(),
    s: t.getUTCSeconds(),
    us: p.us,
  });
}

/** `str(dt)` / PyYAML's text of a datetime: the ISO form with a space. */
export function pyDatetimeStr(dt: string): string {
  return dt.replace("T", " ");
}

/** The value to put in a dumped structure for a datetime or date. */
export function temporal(dt: string): PyTemporal {
  return new PyTemporal(pyDatetimeStr(dt));
}

/** The `time().isoformat()` part of a canonical datetime text (`HH:MM:SS[.ffffff]`). */
export function timePart(dt: string): string {
  return dt.slice(11);
}

/** Microseconds since the epoch of a canonical (naive) datetime text, for differences and additions. */
export function datetimeMicros(dt: string): number {
  const p = isoParts(dt);
  if (!p) throw new Error(`not a datetime: ${dt}`);
  return Date.UTC(p.y, p.mo - 1, p.d, p.h, p.mi, p.s) * 1000 + p.us;
}

/** The canonical datetime text of microseconds since the epoch (inverse of {@link datetimeMicros}). */
export function datetimeFromMicros(us: number): string {
  const micro = ((us % 1_000_000) + 1_000_000) % 1_000_000;
  const d = new Date((us - micro) / 1000);
  return format({
    y: d.getUTCFullYear(),
    mo: d.getUTCMonth() + 1,
    d: d.getUTCDate(),
    h: d.getUTCHours(),
    mi: d.getUTCMinutes(),
    s: d.getUTCSeconds(),
    us: micro,
  });
}

let lastNowMicros = 0;

/**
 * Python's `datetime.datetime.now()` (local wall-clock time, naive, microseconds). JavaScript's clock
 * has millisecond resolution, so two calls within a millisecond are kept strictly increasing (1 µs
 * apart), as Python's microsecond clock practically always is (checkers compare such timestamps).
 */
export function pyNow(): string {
  const t = new Date();
  const wall = Date.UTC(
    t.getFullYear(),
    t.getMonth(),
    t.getDate(),
    t.getHours(),
    t.getMinutes(),
    t.getSeconds(),
    t.getMilliseconds(),
  );
  lastNowMicros = Math.max(wall * 1000, lastNowMicros + 1);
  return datetimeFromMicros(lastNowMicros);
}
