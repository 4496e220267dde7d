/**
 * Reports: one self-contained HTML page (inline SVG, no scripts, no network) per run
 * (`reward-mesh report <run dir>`) and one per experiment (mean ± spread across seeds per estimator).
 * @module
 */
import { readFileSync } from "node:fs";

/** One metrics.jsonl line (the fields the report reads). */
export interface MetricsLine {
  readonly step: number;
  readonly weightedReward: number | null;
  readonly weightedRewardStd?: number | null;
  /** With injected label noise: the weighted reward of the services' values, before the flips. */
  readonly weightedRewardClean?: number | null;
  readonly rewardNoise?: { p: number; components: string[]; flipped: number };
  readonly estimator?: string;
  readonly components?: Record<
    string,
    { mean: number | null; std: number | null; cleanMean?: number | null }
  >;
  readonly correlation?: { components: string[]; matrix: (number | null)[][] };
  readonly denominatorShares?: {
    components: string[];
    grpoRow: (number | null)[];
    corrGrpoRow: (number | null)[];
  };
  readonly entropy?: number;
  readonly loss?: number;
  readonly kl?: number;
  readonly clipFraction?: number;
  readonly droppedGroups?: number;
  /** Results still missing at the step's deadline, per service. */
  readonly missingResults?: Record<string, number>;
  /** `groups.deadlineMs` of the run. */
  readonly deadlineMs?: number;
  readonly groups?: { used: number; imputed?: number; corrFallback?: number };
  readonly samples?: number;
  /** The assembler's counters (cumulative over the process). */
  readonly assembler?: {
    received?: number;
    late?: number;
    unexpected?: number;
    mismatched?: number;
    rejected?: number;
  };
  /** Results that failed validation in that step, per service and reason. */
  readonly rejectedResults?: Record<string, Record<string, number>>;
  readonly sgrpo?: { meanWeight: number | null; gatedGroups: number } | null;
  readonly timingsMs?: { total: number };
}

/** Reads `metrics.jsonl` (torn or blank lines are skipped). */
export function readMetrics(path: string): MetricsLine[] {
  const out: MetricsLine[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    try {
      out.push(JSON.parse(line) as MetricsLine);
    } catch {
      // a torn last line after a crash
    }
  }
  return out.sort((a, b) => a.step - b.step);
}

/**
 * 24 categorical colours: Tableau 10 (the report's colours so far), then 14 more chosen greedily, each the
 * colour farthest in CIELAB from all before it among readable ones (lightness 30–75 on white) — Glasbey's
 * method. Any two differ by ΔE*ab ≥ 27 (the closest pair is Tableau's purple and pink), so 24 series stay
 * apart by colour alone; series 25–48 reuse them dashed, 49–72 dotted.
 */
export const PALETTE: readonly string[] = [
  "#1f77b4",
  "#d62728",
  "#2ca02c",
  "#ff7f0e",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#17becf",
  "#7f7f7f",
  "#bcbd22",
  "#0000ff",
  "#ff1eff",
  "#4b5a0f",
  "#690fb4",
  "#ff0078",
  "#d2b478",
  "#0078ff",
  "#960f4b",
  "#ff8787",
  "#5aa578",
  "#965a00",
  "#c300a5",
  "#00d200",
  "#b4b4e1",
];

/** How a series is drawn: stroke colour and SVG `stroke-dasharray` ("" = solid). */
export interface SeriesStyle {
  readonly color: string;
  readonly dash: string;
}

const DASHES = ["", "6 3", "1.5 2.5"] as const;
const DASH_CSS = ["solid", "dashed", "dotted"] as const;

/** The style of the `i`-th series (or component): distinct for i < 72, distinct by colour alone for i < 24. */
export function seriesStyle(i: number): SeriesStyle {
  return {
    color: PALETTE[i % PALETTE.length]!,
    dash: DASHES[Math.floor(i / PALETTE.length) % DASHES.length]!,
  };
}

/** One style per name, by position: the same component keeps its style in every chart of a page. */
export function componentStyles(names: readonly string[]): Map<string, SeriesStyle> {
  return new Map([...new Set(names)].map((n, i) => [n, seriesStyle(i)]));
}

/** Escapes text for HTML content and attribute values. */
export const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
/** A value with full precision (the shortest text that reads back as the same double). */
const exact = (v: number | null | undefined) =>
  v === null || v === undefined || !Number.isFinite(v) ? "n/a" : String(v);
const fmt = (v: number) =>
  Math.abs(v) >= 100 || v === 0 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(2);

/** One line (optionally with a band) of a chart. */
export interface Series {
  readonly name: string;
  readonly points: ReadonlyArray<readonly [number, number | null]>;
  /** Lower/upper band per point (same x as `points`). */
  readonly band?: ReadonlyArray<readonly [number, number | null, number | null]>;
  /** The unsmoothed value per point (same x as `points`), shown in the hover title of a smoothed series. */
  readonly raw?: ReadonlyArray<number | null>;
  /** Colour and dash; by default the series' position in the chart ({@link seriesStyle}). */
  readonly style?: SeriesStyle;
}

/**
 * An SVG line chart (pure: data in, HTML out); null values leave gaps. Every point has a hover target
 * whose `<title>` holds the series, the step and the exact value (and band and unsmoothed value where
 * given); every line's `<title>` names its series and range.
 */
export function lineChart(
  title: string,
  series: readonly Series[],
  opts: { yMin?: number; yMax?: number; width?: number; height?: number } = {},
): string {
  const W = opts.width ?? 560;
  const H = opts.height ?? 240;
  const m = { l: 52, r: 12, t: 26, b: 28 };
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series
    .flatMap((s) => [...s.points.map((p) => p[1]), ...(s.band ?? []).flatMap((b) => [b[1], b[2]])])
    .filter((v): v is number => v !== null && Number.isFinite(v));
  if (xs.length === 0 || ys.length === 0)
    return `<figure><figcaption>${esc(title)}</figcaption><p class="empty">no data</p></figure>`;
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
  let y0 = opts.yMin ?? Math.min(...ys);
  let y1 = opts.yMax ?? Math.max(...ys);
  if (y1 === y0) {
    y0 -= 0.5;
    y1 += 0.5;
  }
  const X = (x: number) => m.l + ((x - x0) / (x1 - x0)) * (W - m.l - m.r);
  const Y = (y: number) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  const parts: string[] = [];
  for (let i = 0; i <= 4; i++) {
    const y = y0 + ((y1 - y0) * i) / 4;
    parts.push(
      `<line x1="${m.l}" x2="${W - m.r}" y1="${Y(y)}" y2="${Y(y)}" class="grid"/><text x="${m.l - 4}" y="${Y(y) + 4}" text-anchor="end">${fmt(y)}</text>`,
    );
  }
  parts.push(
    `<text x="${m.l}" y="${H - 8}">step ${Math.round(x0)}</text><text x="${W - m.r}" y="${H - 8}" text-anchor="end">step ${Math.round(x1)}</text>`,
  );
  const styles = series.map((s, si) => s.style ?? seriesStyle(si));
  const markers: string[] = [];
  series.forEach((s, si) => {
    const { color, dash } = styles[si]!;
    if (s.band) {
      const ok = s.band.filter((b): b is readonly [number, number, number] => b[1] !== null && b[2] !== null);
      if (ok.length > 1) {
        const up = ok.map((b) => `${X(b[0])},${Y(b[2])}`);
        const down = ok.map((b) => `${X(b[0])},${Y(b[1])}`).reverse();
        parts.push(
          `<polygon points="${[...up, ...down].join(" ")}" fill="${color}" fill-opacity="0.15" stroke="none"/>`,
        );
      }
    }
    let d = "";
    let pen = false;
    const defined: number[] = [];
    const points: string[] = [];
    s.points.forEach(([x, y], i) => {
      if (y === null || !Number.isFinite(y)) {
        pen = false;
        return;
      }
      defined.push(y);
      d += `${pen ? "L" : "M"}${X(x).toFixed(1)},${Y(y).toFixed(1)}`;
      pen = true;
      const band = s.band?.[i];
      const extra = [
        band && (band[1] !== null || band[2] !== null) ? `band ${exact(band[1])} … ${exact(band[2])}` : "",
        s.raw ? `this step ${exact(s.raw[i])}` : "",
      ].filter(Boolean);
      points.push(
        `<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3"><title>${esc(`${s.name} · step ${x}: ${exact(y)}${extra.length ? ` (${extra.join("; ")})` : ""}`)}</title></circle>`,
      );
    });
    if (defined.length === 0) return;
    // One group per series: the colour once, not on every point (long runs have many).
    markers.push(`<g class="pts" fill="${color}">${points.join("")}</g>`);
    const range = `${s.name}: ${defined.length} steps, ${exact(Math.min(...defined))} … ${exact(Math.max(...defined))}`;
    parts.push(
      `<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"${dash ? ` stroke-dasharray="${dash}"` : ""}><title>${esc(range)}</title></path>`,
    );
  });
  // Markers last, so every point's hover target lies above every line.
  parts.push(...markers);
  const legend = series
    .map((s, si) => {
      const { color, dash } = styles[si]!;
      const kind = DASH_CSS[DASHES.indexOf(dash as (typeof DASHES)[number])] ?? "dashed";
      return `<span><i style="border-top:3px ${kind} ${color}"></i>${esc(s.name)}</span>`;
    })
    .join("");
  return `<figure><figcaption>${esc(title)}</figcaption><svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(title)}">${parts.join("")}</svg><div class="legend" style="max-width:${W}px">${legend}</div></figure>`;
}

/** Colour for a correlation in [−1, 1] (blue – white – red). */
function corrColor(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return "#eee";
  const t = Math.max(-1, Math.min(1, v));
  const c = (a: number) => Math.round(255 - a * 200);
  return t >= 0 ? `rgb(255,${c(t)},${c(t)})` : `rgb(${c(-t)},${c(-t)},255)`;
}

/**
 * Correlation of each component pair (rows) over steps (columns), pure (metrics lines in, HTML out);
 * every cell's `<title>` holds the pair, the step and the exact value.
 */
export function correlationHeatmap(lines: readonly MetricsLine[]): string {
  const withCorr = lines.filter((l) => l.correlation);
  if (withCorr.length === 0) return "";
  const names = withCorr[0]!.correlation!.components;
  const pairs: Array<[number, number]> = [];
  for (let k = 0; k < names.length; k++) for (let l = k + 1; l < names.length; l++) pairs.push([k, l]);
  const active = pairs.filter(([k, l]) =>
    withCorr.some(
      (m) => m.correlation!.matrix[k]?.[l] !== null && m.correlation!.matrix[k]?.[l] !== undefined,
    ),
  );
  if (active.length === 0)
    return `<figure><figcaption>Correlation between components over time</figcaption><p class="empty">no component pair varied together in any group</p></figure>`;
  const cw = Math.max(3, Math.min(16, Math.floor(600 / withCorr.length)));
  const ch = 16;
  const lw = 330;
  const W = lw + cw * withCorr.length + 10;
  const H = ch * active.length + 30;
  const cells: string[] = [];
  active.forEach(([k, l], r) => {
    cells.push(
      `<text x="${lw - 6}" y="${r * ch + 12}" text-anchor="end">${esc(`${names[k]} × ${names[l]}`)}</text>`,
    );
    withCorr.forEach((m, c) => {
      const v = m.correlation!.matrix[k]?.[l] ?? null;
      const what = v === null ? "n/a (no group where both varied)" : exact(v);
      cells.push(
        `<rect x="${lw + c * cw}" y="${r * ch}" width="${cw}" height="${ch - 1}" fill="${corrColor(v)}"><title>${esc(`${names[k]} × ${names[l]} · step ${m.step}: ${what}`)}</title></rect>`,
      );
    });
  });
  cells.push(
    `<text x="${lw}" y="${H - 6}">step ${withCorr[0]!.step}</text><text x="${W - 10}" y="${H - 6}" text-anchor="end">step ${withCorr.at(-1)!.step}</text>`,
  );
  return `<figure><figcaption>Correlation between components over time (blue −1, white 0, red +1; averaged over groups where both vary)</figcaption><svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${cells.join("")}</svg></figure>`;
}

/** The page's style sheet, chart rules included (a page that embeds the charts should include it). */
export const CHART_CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1250px}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
figure{display:inline-block;margin:8px 12px 8px 0;vertical-align:top}figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:11px;fill:#444}.grid{stroke:#e5e5e5}.legend span{margin-right:12px;font-size:12px;white-space:nowrap}.legend i{display:inline-block;width:18px;height:0;margin-right:4px;vertical-align:middle}
.pts circle{fill-opacity:0}.pts circle:hover{fill-opacity:1}.notice{border-left:4px solid #d62728;background:#fdf3f3;padding:8px 14px;margin:12px 0}.notice.warn{border-left-color:#ff7f0e;background:#fff7ee}.notice ul{margin:4px 0}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f6f6f6}.empty{color:#888}`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title><style>${CHART_CSS}</style></head><body><h1>${esc(title)}</h1>${body}</body></html>\n`;
}

const series = (
  lines: readonly MetricsLine[],
  name: string,
  f: (l: MetricsLine) => number | null | undefined,
): Series => ({
  name,
  points: lines.map((l) => [l.step, f(l) ?? null] as const),
});

/** Trailing moving average over the last `window` defined values (steps mix task domains, so raw curves are jumpy). */
export function smooth(s: Series, window = 5): Series {
  const out: Array<readonly [number, number | null]> = [];
  const recent: number[] = [];
  for (const [x, y] of s.points) {
    if (y !== null && Number.isFinite(y)) {
      recent.push(y);
      if (recent.length > window) recent.shift();
    }
    out.push([x, recent.length ? recent.reduce((a, b) => a + b, 0) / recent.length : null]);
  }
  return {
    name: s.name,
    points: out,
    raw: s.points.map((p) => p[1]),
    ...(s.style ? { style: s.style } : {}),
  };
}

/** Whether the step trained nothing (no group was used: every group dropped, or none). */
const trainedNothing = (l: MetricsLine) =>
  l.groups ? l.groups.used === 0 : l.samples !== undefined ? l.samples === 0 : false;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function stepList(steps: readonly number[]): string {
  const shown = steps.slice(0, 12).join(", ");
  return steps.length > 12 ? `${shown}, … (${steps.length} in all)` : shown;
}

/**
 * Why a run (or some of its steps) trained nothing, in sentences built from what `metrics.jsonl`
 * records: no lines at all (the run stopped before step 1), or steps whose every group was dropped —
 * with the deadline, the services whose results were missing at it (`missingResults`), the rejected
 * results (`rejectedResults`) and the assembler's counters. Empty when every step trained.
 */
export function explainRun(lines: readonly MetricsLine[]): string[] {
  if (lines.length === 0)
    return [
      "No step finished: metrics.jsonl has no lines, so the run stopped before step 1 was applied — a start-up check failed (a service that did not answer Describe, a component its service does not emit, a task domain no service consumes), the learner failed to start, or the run was stopped. The error that `reward-mesh train` printed says which; once that is fixed, the same command starts the run again.",
    ];
  const idle = lines.filter(trainedNothing);
  // Steps that trained but lost groups at the deadline (dropped, or imputed): said too, more quietly.
  const lossy = lines.filter((l) => (l.droppedGroups ?? 0) > 0 || (l.groups?.imputed ?? 0) > 0);
  const affected = idle.length > 0 ? idle : lossy;
  if (affected.length === 0) return [];
  const out: string[] = [];
  const dropped = affected.reduce((a, l) => a + (l.droppedGroups ?? 0), 0);
  const imputed = affected.reduce((a, l) => a + (l.groups?.imputed ?? 0), 0);
  out.push(
    idle.length === 0
      ? `Groups were incomplete at the deadline in ${affected.length} of ${lines.length} steps (${affected.length === 1 ? "step" : "steps"} ${stepList(affected.map((l) => l.step))}); the run trained on the rest.`
      : idle.length === lines.length
        ? `No step trained: ${dropped > 0 ? "every group was dropped" : "no step had a group to train on"} in all ${plural(lines.length, "step")}, so the policy was never updated.`
        : `${idle.length} of ${lines.length} steps trained nothing (${dropped > 0 ? "every group dropped" : "no group"}): ${idle.length === 1 ? "step" : "steps"} ${stepList(idle.map((l) => l.step))}.`,
  );
  const deadlines = [
    ...new Set(affected.map((l) => l.deadlineMs).filter((d): d is number => d !== undefined)),
  ];
  const deadline = `groups.deadlineMs = ${deadlines.length ? deadlines.map((d) => `${d} ms`).join(", ") : "not recorded"}`;
  if (dropped > 0)
    out.push(
      `${plural(dropped, "group was", "groups were")} dropped at the deadline (${deadline}) with results still missing.`,
    );
  if (imputed > 0)
    out.push(
      `${plural(imputed, "group was", "groups were")} imputed at the deadline (${deadline}; groups.missing = impute): a missing result takes its group's mean, so that component carried no signal there.`,
    );
  const missing = new Map<string, number>();
  let recordsMissing = false;
  for (const l of affected) {
    if (l.missingResults) recordsMissing = true;
    for (const [svc, n] of Object.entries(l.missingResults ?? {}))
      missing.set(svc, (missing.get(svc) ?? 0) + n);
  }
  if (missing.size > 0)
    out.push(
      `Missing at the deadline: ${[...missing]
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .map(([svc, n]) => `${plural(n, "result")} from service '${svc}'`)
        .join(
          ", ",
        )} — a service that is down, overloaded or slower than the deadline (is it running? raise groups.deadlineMs?).`,
    );
  else if ((dropped > 0 || imputed > 0) && !recordsMissing)
    out.push(
      "These metrics do not record which service was missing (written before `missingResults` was recorded).",
    );
  const rejected = new Map<string, number>();
  for (const l of affected)
    for (const [svc, reasons] of Object.entries(l.rejectedResults ?? {}))
      for (const [reason, n] of Object.entries(reasons))
        rejected.set(`service '${svc}' ${reason}`, (rejected.get(`service '${svc}' ${reason}`) ?? 0) + n);
  if (rejected.size > 0)
    out.push(
      `Rejected results (their slots stay empty, so their groups could not complete): ${[...rejected]
        .sort((a, b) => a[0].localeCompare(b[0]))
        .map(([k, n]) => `${k}: ${n}`)
        .join(", ")}.`,
    );
  const a = lines.at(-1)!.assembler;
  if (a) {
    if (a.received === 0)
      out.push(
        "The trainer received no result at all (assembler.received = 0): no service scored a rollout of this run.",
      );
    if (a.mismatched)
      out.push(
        `${plural(a.mismatched, "result")} named another run, service or rollout than its subject and ${a.mismatched === 1 ? "was" : "were"} ignored (assembler.mismatched).`,
      );
    if (a.late)
      out.push(
        `${plural(a.late, "result")} arrived after ${a.late === 1 ? "its" : "their"} step was applied (assembler.late): scored after the deadline.`,
      );
    if (a.unexpected)
      out.push(
        `${plural(a.unexpected, "result")} came from a service no group expects (assembler.unexpected).`,
      );
  }
  return out;
}

/** {@link explainRun} as a notice box; "" when every step trained. */
export function runNotice(lines: readonly MetricsLine[]): string {
  const [head, ...rest] = explainRun(lines);
  if (head === undefined) return "";
  return `<div class="notice" role="alert"><p><b>${esc(head)}</b></p>${rest.length ? `<ul>${rest.map((r) => `<li>${esc(r)}</li>`).join("")}</ul>` : ""}</div>`;
}

/**
 * Where CorrGRPO's degenerate-group guard fired (`groups.corrFallback`), as one sentence; null when it
 * never did. Those groups' standardised components cancelled (S below `coefficientSumFallbackBelow`)
 * while the weighted total varied, so they were divided by GRPO's std instead of `sqrt(S)`.
 */
export function corrFallbackSummary(lines: readonly MetricsLine[]): string | null {
  const hit = lines.filter((l) => (l.groups?.corrFallback ?? 0) > 0);
  if (hit.length === 0) return null;
  const groups = hit.reduce((a, l) => a + l.groups!.corrFallback!, 0);
  const used = hit.reduce((a, l) => a + l.groups!.used, 0);
  return (
    `CorrGRPO's degenerate-group guard fired for ${plural(groups, "group")} (of ${used} in those steps) in ` +
    `${plural(hit.length, "step")} of ${lines.length} (${hit.length === 1 ? "step" : "steps"} ${stepList(hit.map((l) => l.step))}): ` +
    "their components' correlation sum S was near 0 (anti-correlated rewards cancelling) while the weighted " +
    "total varied, so they were divided by the total's std (GRPO's scale) instead of sqrt(S), which would " +
    "have amplified their advantages up to 1000×. The trainer's log has one warning per such step."
  );
}

/** {@link corrFallbackSummary} as a warning box; "" when the guard never fired. */
function corrFallbackNotice(lines: readonly MetricsLine[]): string {
  const text = corrFallbackSummary(lines);
  return text === null ? "" : `<div class="notice warn" role="status"><p>${esc(text)}</p></div>`;
}

/** The HTML report of one run. */
export function renderRunReport(runId: string, lines: readonly MetricsLine[], note = ""): string {
  const comps = Object.keys(lines.find((l) => l.components)?.components ?? {});
  const first = lines.slice(0, Math.min(10, lines.length));
  const last = lines.slice(-Math.min(10, lines.length));
  const avg = (ls: readonly MetricsLine[], f: (l: MetricsLine) => number | null | undefined) => {
    const v = ls.map(f).filter((x): x is number => typeof x === "number" && Number.isFinite(x));
    return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
  };
  const rows = [
    ["weighted reward", avg(first, (l) => l.weightedReward), avg(last, (l) => l.weightedReward)],
    ...comps.map((c) => [
      c,
      avg(first, (l) => l.components?.[c]?.mean),
      avg(last, (l) => l.components?.[c]?.mean),
    ]),
  ]
    .map(
      ([n, a, b]) =>
        `<tr><th>${esc(String(n))}</th><td>${a === null ? "–" : (a as number).toFixed(4)}</td><td>${b === null ? "–" : (b as number).toFixed(4)}</td></tr>`,
    )
    .join("");
  const shares = lines.find((l) => l.denominatorShares)?.denominatorShares?.components ?? [];
  const corr = lines.find((l) => l.correlation)?.correlation?.components ?? [];
  // One style per component for the whole page, in the run's component order.
  const style = componentStyles([...comps, ...shares, ...corr]);
  const notice = runNotice(lines);
  if (lines.length === 0) return page(`reward-mesh run ${runId}`, `${notice}<p>${esc(note)}</p>`);
  const trained = lines.filter((l) => !trainedNothing(l)).length;
  const body = [
    notice,
    corrFallbackNotice(lines),
    `<p>${lines.length} steps${trained < lines.length ? ` (${trained} trained)` : ""}, estimator <b>${esc(lines[0]?.estimator ?? "?")}</b>. ${esc(note)}</p>`,
    `<table><tr><th></th><th>first ${first.length} steps</th><th>last ${last.length} steps</th></tr>${rows}</table>`,
    rejectedTable(lines),
    `<h2>Reward</h2>`,
    lineChart("Weighted reward (mean ± std over rollouts)", [
      {
        ...series(lines, "weighted reward (band: ± std over rollouts)", (l) => l.weightedReward),
        style: { color: "#7f7f7f", dash: "" },
        band: lines.map(
          (l) =>
            [
              l.step,
              l.weightedReward === null || l.weightedRewardStd == null
                ? null
                : l.weightedReward - l.weightedRewardStd,
              l.weightedReward === null || l.weightedRewardStd == null
                ? null
                : l.weightedReward + l.weightedRewardStd,
            ] as const,
        ),
      },
      smooth({
        ...series(lines, "moving average (5 steps)", (l) => l.weightedReward),
        style: { color: "#222222", dash: "" },
      }),
    ]),
    lineChart(
      "Per-component mean reward (moving average over 5 steps)",
      comps.map((c) => smooth({ ...series(lines, c, (l) => l.components?.[c]?.mean), style: style.get(c)! })),
    ),
    `<h2>Correlation and the advantage denominator</h2>`,
    correlationHeatmap(lines),
    lineChart(
      "GRPO: each component's share of the denominator (row share of Σ Cov; moving average)",
      shares.map((c, k) =>
        smooth({ ...series(lines, c, (l) => l.denominatorShares?.grpoRow[k]), style: style.get(c)! }),
      ),
    ),
    lineChart(
      "CorrGRPO: each component's share of the denominator (row share of Σ ρ; moving average)",
      shares.map((c, k) =>
        smooth({ ...series(lines, c, (l) => l.denominatorShares?.corrGrpoRow[k]), style: style.get(c)! }),
      ),
    ),
    `<h2>Policy</h2>`,
    lineChart("Entropy (nats / token)", [series(lines, "entropy", (l) => l.entropy)]),
    lineChart("Loss, KL to reference, clip fraction", [
      series(lines, "loss", (l) => l.loss),
      series(lines, "kl", (l) => l.kl),
      series(lines, "clip fraction", (l) => l.clipFraction),
    ]),
  ].join("\n");
  return page(`reward-mesh run ${runId}`, body);
}

/**
 * Results rejected by validation over the run, per service and reason (never used for training); a
 * line saying none were when the run had none.
 */
export function rejectedTable(lines: readonly MetricsLine[]): string {
  const sum = new Map<string, number>();
  for (const l of lines)
    for (const [service, reasons] of Object.entries(l.rejectedResults ?? {}))
      for (const [reason, n] of Object.entries(reasons))
        sum.set(`${service}\u0000${reason}`, (sum.get(`${service}\u0000${reason}`) ?? 0) + n);
  if (sum.size === 0) return "<p>Rejected results: none (every result matched its service's Describe).</p>";
  const rows = [...sum]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => {
      const [service, reason] = k.split("\u0000");
      return `<tr><th>${esc(service!)}</th><td>${esc(reason!)}</td><td>${n}</td></tr>`;
    })
    .join("");
  return `<h2>Rejected results</h2><p>Results that failed validation against their service's Describe: counted, logged, never used for training.</p><table><tr><th>service</th><th>reason</th><th>results</th></tr>${rows}</table>`;
}

/** One run of an experiment. */
export interface ExperimentRun {
  /** The arm (an estimator name, `s_grpo`, `s_grpo@0.1`, `<name>+s_grpo@0.1`, …). */
  readonly estimator: string;
  readonly seed: number;
  readonly lines: readonly MetricsLine[];
  /** The condition: the rate at which the trainer flipped the noisy components (absent: 0). */
  readonly noise?: number;
  /** S-GRPO's assumed flip rate p in this run; absent: the arm has no S-GRPO step. */
  readonly assumedP?: number;
}

/** Mean ± spread (min–max over seeds) of `f` per estimator. */
function bandSeries(
  runs: readonly ExperimentRun[],
  estimator: string,
  f: (l: MetricsLine) => number | null | undefined,
): Series {
  const mine = runs.filter((r) => r.estimator === estimator);
  const steps = [...new Set(mine.flatMap((r) => r.lines.map((l) => l.step)))].sort((a, b) => a - b);
  const at = (s: number) =>
    mine
      .map((r) => f(r.lines.find((l) => l.step === s) ?? ({} as MetricsLine)))
      .filter((v): v is number => typeof v === "number" && Number.isFinite(v));
  return {
    name: estimator,
    points: steps.map((s) => {
      const v = at(s);
      return [s, v.length ? v.reduce((a, b) => a + b, 0) / v.length : null] as const;
    }),
    band: steps.map((s) => {
      const v = at(s);
      return [s, v.length ? Math.min(...v) : null, v.length ? Math.max(...v) : null] as const;
    }),
  };
}

/** A mean ± sample sd over seeds (`sd` 0 for one seed). */
export interface SeedStat {
  readonly mean: number;
  readonly sd: number;
  /** Seeds with a value. */
  readonly n: number;
}

/** One arm under one condition of an experiment. */
export interface ExperimentArmSummary {
  readonly seeds: number;
  /** S-GRPO's assumed p (absent: no S-GRPO). */
  readonly assumedP?: number;
  /**
   * The clean weighted reward (the services' values before the injected flips; without noise the
   * observed one): each seed's mean over the window, then mean ± sd over seeds.
   */
  readonly clean: { readonly early: SeedStat | null; readonly final: SeedStat | null };
  /** The observed weighted reward (what the estimator saw), same windows. */
  readonly observed: { readonly early: SeedStat | null; readonly final: SeedStat | null };
  /** S-GRPO: the mean group weight w* and the gated groups per step, over all steps and seeds. */
  readonly sgrpo?: { readonly meanWeight: number | null; readonly gatedGroupsPerStep: number | null };
}

/** One condition (true flip rate) of an experiment: its arms. */
export interface ExperimentCondition {
  readonly noise: number;
  readonly arms: Record<string, ExperimentArmSummary>;
}

/**
 * The windows of a run of `n` steps the summary averages: `final` the last 10 steps, `early` the 10
 * steps that end at the run's midpoint (steps 11–20 of 40; 1–10 of 20) — how far each arm got by then.
 * 1-based, inclusive.
 */
export function experimentWindows(n: number): { early: [number, number]; final: [number, number] } {
  const mid = Math.floor(n / 2);
  return {
    early: [Math.max(1, mid - 9), Math.max(1, mid)],
    final: [Math.max(1, n - 9), Math.max(1, n)],
  };
}

/** The clean weighted reward of a step: recorded under noise; without noise the observed one is the clean one. */
export function cleanWeightedReward(l: MetricsLine): number | null | undefined {
  if (typeof l.weightedRewardClean === "number") return l.weightedRewardClean;
  return (l.rewardNoise?.p ?? 0) > 0 ? null : l.weightedReward;
}

const seedStat = (v: readonly number[]): SeedStat | null => {
  if (v.length === 0) return null;
  const m = v.reduce((a, b) => a + b, 0) / v.length;
  const sd = v.length > 1 ? Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1)) : 0;
  return { mean: m, sd, n: v.length };
};

const meanOf = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : undefined);

/** `f` averaged over a run's steps in the 1-based window `[a, b]` of its sorted lines. */
function windowMean(
  r: ExperimentRun,
  [a, b]: readonly [number, number],
  f: (l: MetricsLine) => number | null | undefined,
): number | undefined {
  return meanOf(
    r.lines
      .slice(a - 1, b)
      .map(f)
      .filter((x): x is number => typeof x === "number" && Number.isFinite(x)),
  );
}

/** The conditions (true flip rates) of an experiment's runs, ascending. */
export function experimentConditions(runs: readonly ExperimentRun[]): number[] {
  return [...new Set(runs.map((r) => r.noise ?? 0))].sort((a, b) => a - b);
}

/**
 * Per condition (true flip rate) and arm: the clean and observed weighted reward over the early and the
 * final window ({@link experimentWindows}), each seed's window mean, then mean ± sd over seeds.
 */
export function experimentSummary(runs: readonly ExperimentRun[]): ExperimentCondition[] {
  return experimentConditions(runs).map((noise) => {
    const here = runs.filter((r) => (r.noise ?? 0) === noise);
    const arms: Record<string, ExperimentArmSummary> = {};
    for (const e of new Set(here.map((r) => r.estimator))) {
      const mine = here.filter((r) => r.estimator === e);
      const over = (
        f: (l: MetricsLine) => number | null | undefined,
        which: "early" | "final",
      ): SeedStat | null =>
        seedStat(
          mine
            .map((r) => windowMean(r, experimentWindows(r.lines.length)[which], f))
            .filter((x): x is number => x !== undefined),
        );
      const assumedP = mine.find((r) => r.assumedP !== undefined)?.assumedP;
      const all = mine.flatMap((r) => r.lines);
      arms[e] = {
        seeds: mine.length,
        ...(assumedP !== undefined ? { assumedP } : {}),
        clean: { early: over(cleanWeightedReward, "early"), final: over(cleanWeightedReward, "final") },
        observed: {
          early: over((l) => l.weightedReward, "early"),
          final: over((l) => l.weightedReward, "final"),
        },
        ...(assumedP !== undefined
          ? {
              sgrpo: {
                meanWeight:
                  meanOf(
                    all
                      .map((l) => l.sgrpo?.meanWeight)
                      .filter((x): x is number => typeof x === "number" && Number.isFinite(x)),
                  ) ?? null,
                gatedGroupsPerStep:
                  meanOf(
                    all.map((l) => l.sgrpo?.gatedGroups).filter((x): x is number => typeof x === "number"),
                  ) ?? null,
              },
            }
          : {}),
      };
    }
    return { noise, arms };
  });
}

const fmtStat = (s: SeedStat | null) => (s ? `${s.mean.toFixed(4)} ± ${s.sd.toFixed(4)} (n=${s.n})` : "–");

/**
 * The HTML comparison report of an experiment: per condition (true flip rate) a table of the arms
 * (clean and observed weighted reward, early and final window, mean ± sd over seeds) and the clean and
 * observed curves (mean over seeds, band = min–max); with one condition also the per-component curves.
 */
export function renderExperimentReport(title: string, runs: readonly ExperimentRun[], note: string): string {
  const conditions = experimentSummary(runs);
  const many = conditions.length > 1;
  const n = Math.max(0, ...runs.map((r) => r.lines.length));
  const w = experimentWindows(n);
  const span = ([a, b]: readonly [number, number]) => (a === b ? `step ${a}` : `steps ${a}–${b}`);
  // A run that trained nothing (or lost groups at the deadline) skews its estimator's curves: say so and why.
  const idle = runs
    .map((r) => ({ r, why: explainRun(r.lines) }))
    .filter((x) => x.why.length > 0)
    .map(
      ({ r, why }) =>
        `<li>${esc(`${r.estimator}${many ? ` at p = ${r.noise ?? 0}` : ""}, seed ${r.seed}: ${why.join(" ")}`)}</li>`,
    );
  const observed = (l: MetricsLine) => l.weightedReward;
  const sections = conditions.map(({ noise, arms }) => {
    const here = runs.filter((r) => (r.noise ?? 0) === noise);
    const names = Object.keys(arms);
    // With injected noise the observed (flipped) reward shrinks towards 1/2 by (1 − 2p) and hides
    // differences: the clean value (what the services reported) is the curve to compare.
    const noisy = here.some((r) => r.lines.some((l) => typeof l.weightedRewardClean === "number"));
    const anySgrpo = names.some((e) => arms[e]!.assumedP !== undefined);
    const header = [
      "<th>arm</th>",
      anySgrpo ? "<th>assumed p</th>" : "",
      noisy
        ? `<th>clean weighted reward, ${span(w.early)} (mean ± sd over seeds)</th><th>clean weighted reward, last 10 steps (mean ± sd over seeds)</th><th>observed (with the injected flips), last 10 steps</th>`
        : `<th>weighted reward, ${span(w.early)} (mean ± sd over seeds)</th><th>weighted reward, last 10 steps (mean ± sd over seeds)</th>`,
      anySgrpo ? "<th>S-GRPO mean w*</th><th>gated groups / step</th>" : "",
    ].join("");
    const row = (e: string) => {
      const a = arms[e]!;
      return [
        `<th>${esc(e)}</th>`,
        anySgrpo ? `<td>${a.assumedP ?? "–"}</td>` : "",
        `<td>${fmtStat(a.clean.early)}</td><td>${fmtStat(a.clean.final)}</td>`,
        noisy ? `<td>${fmtStat(a.observed.final)}</td>` : "",
        anySgrpo
          ? `<td>${a.sgrpo?.meanWeight?.toFixed(3) ?? "–"}</td><td>${a.sgrpo?.gatedGroupsPerStep?.toFixed(2) ?? "–"}</td>`
          : "",
      ].join("");
    };
    const comps = Object.keys(here[0]?.lines.find((l) => l.components)?.components ?? {});
    return [
      many ? `<h2>True flip rate p = ${noise}</h2>` : "",
      `<table><tr>${header}</tr>${names.map((e) => `<tr>${row(e)}</tr>`).join("")}</table>`,
      lineChart(
        noisy
          ? `Clean weighted reward (the services' values, before the injected noise)${many ? `, p = ${noise}` : ""}: mean over seeds, band = min–max`
          : `Weighted reward${many ? `, p = ${noise}` : ""}: mean over seeds, band = min–max`,
        names.map((e) => bandSeries(here, e, cleanWeightedReward)),
        { width: 760, height: 300 },
      ),
      ...(noisy
        ? [
            lineChart(
              `Observed weighted reward (after the injected flips; shrunk by 1 − 2p)${many ? `, p = ${noise}` : ""}: mean over seeds, band = min–max`,
              names.map((e) => bandSeries(here, e, observed)),
              many ? {} : { width: 760, height: 300 },
            ),
          ]
        : []),
      ...(many
        ? []
        : [
            ...comps.map((c) =>
              lineChart(
                `${c}: mean over seeds`,
                names.map((e) => bandSeries(here, e, (l) => l.components?.[c]?.mean)),
              ),
            ),
            ...comps
              .filter((c) =>
                here.some((r) => r.lines.some((l) => typeof l.components?.[c]?.cleanMean === "number")),
              )
              .map((c) =>
                lineChart(
                  `${c}, clean (before the injected flips): mean over seeds`,
                  names.map((e) => bandSeries(here, e, (l) => l.components?.[c]?.cleanMean)),
                ),
              ),
          ]),
    ].join("\n");
  });
  // Several conditions: one overview table, arms × true flip rate, of the clean final window.
  const armNames = [...new Set(runs.map((r) => r.estimator))];
  const overview = many
    ? `<h2>Clean weighted reward by true flip rate</h2><p>Each seed's mean over ${span(w.early)} (early) and over the last 10 steps (final); mean ± sd over seeds.</p><table><tr><th>arm</th>${conditions.map((c) => `<th>p = ${c.noise}, early</th><th>p = ${c.noise}, final</th>`).join("")}</tr>${armNames
        .map(
          (e) =>
            `<tr><th>${esc(e)}</th>${conditions.map((c) => `<td>${fmtStat(c.arms[e]?.clean.early ?? null)}</td><td>${fmtStat(c.arms[e]?.clean.final ?? null)}</td>`).join("")}</tr>`,
        )
        .join("")}</table>`
    : "";
  const body = [
    idle.length ? `<div class="notice" role="alert"><ul>${idle.join("")}</ul></div>` : "",
    `<p>${esc(note)}</p>`,
    overview,
    ...sections,
  ].join("\n");
  return page(title, body);
}
