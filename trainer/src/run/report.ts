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
  readonly estimator?: string;
  readonly components?: Record<string, { mean: number | null; std: number | null }>;
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

const PALETTE = [
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
];
const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const fmt = (v: number) =>
  Math.abs(v) >= 100 || v === 0 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(2);

/** One line (optionally with a band) of a chart. */
export interface Series {
  readonly name: string;
  readonly points: ReadonlyArray<readonly [number, number | null]>;
  /** Lower/upper band per point (same x as `points`). */
  readonly band?: ReadonlyArray<readonly [number, number | null, number | null]>;
}

/** An SVG line chart; null values leave gaps. */
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
  series.forEach((s, si) => {
    const color = PALETTE[si % PALETTE.length]!;
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
    for (const [x, y] of s.points) {
      if (y === null || !Number.isFinite(y)) {
        pen = false;
        continue;
      }
      d += `${pen ? "L" : "M"}${X(x).toFixed(1)},${Y(y).toFixed(1)}`;
      pen = true;
    }
    parts.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"/>`);
  });
  const legend = series
    .map((s, si) => `<span><i style="background:${PALETTE[si % PALETTE.length]}"></i>${esc(s.name)}</span>`)
    .join("");
  return `<figure><figcaption>${esc(title)}</figcaption><svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(title)}">${parts.join("")}</svg><div class="legend">${legend}</div></figure>`;
}

/** Colour for a correlation in [−1, 1] (blue – white – red). */
function corrColor(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return "#eee";
  const t = Math.max(-1, Math.min(1, v));
  const c = (a: number) => Math.round(255 - a * 200);
  return t >= 0 ? `rgb(255,${c(t)},${c(t)})` : `rgb(${c(-t)},${c(-t)},255)`;
}

/** Correlation of each component pair (rows) over steps (columns). */
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
      cells.push(
        `<rect x="${lw + c * cw}" y="${r * ch}" width="${cw}" height="${ch - 1}" fill="${corrColor(v)}"><title>step ${m.step}: ${v === null ? "n/a" : v.toFixed(3)}</title></rect>`,
      );
    });
  });
  cells.push(
    `<text x="${lw}" y="${H - 6}">step ${withCorr[0]!.step}</text><text x="${W - 10}" y="${H - 6}" text-anchor="end">step ${withCorr.at(-1)!.step}</text>`,
  );
  return `<figure><figcaption>Correlation between components over time (blue −1, white 0, red +1; averaged over groups where both vary)</figcaption><svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">${cells.join("")}</svg></figure>`;
}

const CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1250px}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
figure{display:inline-block;margin:8px 12px 8px 0;vertical-align:top}figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:11px;fill:#444}.grid{stroke:#e5e5e5}.legend span{margin-right:12px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f6f6f6}.empty{color:#888}`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title><style>${CSS}</style></head><body><h1>${esc(title)}</h1>${body}</body></html>\n`;
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
  return { name: s.name, points: out };
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
  const body = [
    `<p>${lines.length} steps, estimator <b>${esc(lines[0]?.estimator ?? "?")}</b>. ${esc(note)}</p>`,
    `<table><tr><th></th><th>first ${first.length} steps</th><th>last ${last.length} steps</th></tr>${rows}</table>`,
    rejectedTable(lines),
    `<h2>Reward</h2>`,
    lineChart("Weighted reward (mean ± std over rollouts)", [
      {
        ...series(lines, "weighted reward (band: ± std over rollouts)", (l) => l.weightedReward),
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
      smooth(series(lines, "moving average (5 steps)", (l) => l.weightedReward)),
    ]),
    lineChart(
      "Per-component mean reward (moving average over 5 steps)",
      comps.map((c) => smooth(series(lines, c, (l) => l.components?.[c]?.mean))),
    ),
    `<h2>Correlation and the advantage denominator</h2>`,
    correlationHeatmap(lines),
    lineChart(
      "GRPO: each component's share of the denominator (row share of Σ Cov; moving average)",
      shares.map((c, k) => smooth(series(lines, c, (l) => l.denominatorShares?.grpoRow[k]))),
    ),
    lineChart(
      "CorrGRPO: each component's share of the denominator (row share of Σ ρ; moving average)",
      shares.map((c, k) => smooth(series(lines, c, (l) => l.denominatorShares?.corrGrpoRow[k]))),
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
  readonly estimator: string;
  readonly seed: number;
  readonly lines: readonly MetricsLine[];
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

/** The HTML comparison report of an experiment. */
export function renderExperimentReport(title: string, runs: readonly ExperimentRun[], note: string): string {
  const estimators = [...new Set(runs.map((r) => r.estimator))];
  const comps = Object.keys(runs[0]?.lines.find((l) => l.components)?.components ?? {});
  const lastMean = (e: string) => {
    const v = runs
      .filter((r) => r.estimator === e)
      .map((r) => {
        const tail = r.lines
          .slice(-Math.min(10, r.lines.length))
          .map((l) => l.weightedReward)
          .filter((x): x is number => typeof x === "number");
        return tail.reduce((a, b) => a + b, 0) / Math.max(1, tail.length);
      });
    const m = v.reduce((a, b) => a + b, 0) / Math.max(1, v.length);
    const sd = v.length > 1 ? Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1)) : 0;
    return `${m.toFixed(4)} ± ${sd.toFixed(4)} (n=${v.length})`;
  };
  const body = [
    `<p>${esc(note)}</p>`,
    `<table><tr><th>estimator</th><th>weighted reward, last 10 steps (mean ± sd over seeds)</th></tr>${estimators.map((e) => `<tr><th>${esc(e)}</th><td>${lastMean(e)}</td></tr>`).join("")}</table>`,
    lineChart(
      "Weighted reward: mean over seeds, band = min–max",
      estimators.map((e) => bandSeries(runs, e, (l) => l.weightedReward)),
      { width: 760, height: 300 },
    ),
    ...comps.map((c) =>
      lineChart(
        `${c}: mean over seeds`,
        estimators.map((e) => bandSeries(runs, e, (l) => l.components?.[c]?.mean)),
      ),
    ),
  ].join("\n");
  return page(title, body);
}
