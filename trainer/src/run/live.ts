/**
 * The live page of a run (`reward-mesh train --ui`, `reward-mesh demo --ui`): a local HTTP server
 * (node:http, 127.0.0.1, an ephemeral port unless one is asked for) that serves one self-contained page
 * (inline script and style, no external assets, no build step) and a server-sent-event stream that
 * carries each step as the loop applies it.
 *
 * Routes: `/` the page; `/events` the stream (on connect: `reset`, then the backlog — one `step` event
 * per step so far and one `charts` event — then each new step as `step` + `charts`, and `end` when the
 * run is over); `/metrics.json` the steps so far. The charts are rendered here with the static report's
 * functions (report.ts), so the live page and `report.html` draw the same curves.
 *
 * Steps come from the training loop's `onStep` hook ({@link LivePage.push}); a resumed run's earlier
 * steps are read once from its `metrics.jsonl`.
 * @module
 */
import { existsSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  corrFallbackSummary,
  correlationHeatmap,
  esc,
  lineChart,
  type MetricsLine,
  readMetrics,
  type Series,
  smooth,
} from "./report.js";
import type { StepGroup, StepReport } from "./train.js";

/** Options of {@link startLivePage}. */
export interface LivePageOptions {
  readonly runId: string;
  /** Steps the run is to reach (shown as "step n / steps"). */
  readonly steps: number;
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  readonly port?: number;
  /** The run's metrics.jsonl: the steps already in it (a resumed run) are the page's first backlog. */
  readonly metricsFile?: string;
  /** How many of the last steps keep their groups for the page (default 3). */
  readonly groupSteps?: number;
}

/** A running live page. */
export interface LivePage {
  /** `http://127.0.0.1:PORT/`. */
  readonly url: string;
  /** Sends one applied step to every open page (an onStep listener). */
  push(r: StepReport): void;
  /** Tells open pages the run is over (`note`: how it ended). */
  finish(note: string): void;
  /** Ends every open stream and stops the server. Idempotent. */
  close(): Promise<void>;
}

const HOST = "127.0.0.1";
const HEARTBEAT_MS = 15_000;

const series = (
  lines: readonly MetricsLine[],
  name: string,
  f: (l: MetricsLine) => number | null | undefined,
): Series => ({ name, points: lines.map((l) => [l.step, f(l) ?? null] as const) });

/** The page's charts for the steps so far (HTML fragment: inline SVG from report.ts's chart functions). */
export function liveCharts(lines: readonly MetricsLine[]): string {
  const comps = Object.keys(lines.find((l) => l.components)?.components ?? {});
  const shares = lines.find((l) => l.denominatorShares)?.denominatorShares?.components ?? [];
  const band = (l: MetricsLine, sign: 1 | -1) =>
    l.weightedReward === null || l.weightedRewardStd == null
      ? null
      : l.weightedReward + sign * l.weightedRewardStd;
  const fallback = corrFallbackSummary(lines);
  const parts = [
    fallback === null ? "" : `<p class="warn" role="status">${esc(fallback)}</p>`,
    `<h2>Reward</h2>`,
    lineChart("Weighted reward (mean ± std over rollouts)", [
      {
        ...series(lines, "weighted reward (band: ± std over rollouts)", (l) => l.weightedReward),
        band: lines.map((l) => [l.step, band(l, -1), band(l, 1)] as const),
      },
      smooth(series(lines, "moving average (5 steps)", (l) => l.weightedReward)),
    ]),
    lineChart(
      "Per-component mean reward (per step)",
      comps.map((c) => series(lines, c, (l) => l.components?.[c]?.mean)),
    ),
  ];
  const heatmap = correlationHeatmap(lines);
  if (heatmap || shares.length) parts.push(`<h2>Correlation and the advantage denominator</h2>`, heatmap);
  if (shares.length)
    parts.push(
      lineChart(
        "GRPO: each component's share of the denominator (row share of Σ Cov)",
        shares.map((c, k) => series(lines, c, (l) => l.denominatorShares?.grpoRow[k])),
      ),
      lineChart(
        "CorrGRPO: each component's share of the denominator (row share of Σ ρ)",
        shares.map((c, k) => series(lines, c, (l) => l.denominatorShares?.corrGrpoRow[k])),
      ),
    );
  parts.push(
    `<h2>Policy</h2>`,
    lineChart("Loss, KL to reference, clip fraction", [
      series(lines, "loss", (l) => l.loss),
      series(lines, "kl", (l) => l.kl),
      series(lines, "clip fraction", (l) => l.clipFraction),
    ]),
    lineChart("Entropy (nats / token)", [series(lines, "entropy", (l) => l.entropy)]),
  );
  return parts.join("\n");
}

/** An SSE frame (JSON data on one line: JSON.stringify escapes newlines). */
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** Starts the live page of a run; resolves once it listens. */
export async function startLivePage(o: LivePageOptions): Promise<LivePage> {
  const lines = new Map<number, MetricsLine>();
  const groups = new Map<number, readonly StepGroup[]>();
  const keepGroups = Math.max(1, o.groupSteps ?? 3);
  if (o.metricsFile && existsSync(o.metricsFile))
    for (const l of readMetrics(o.metricsFile)) lines.set(l.step, l);
  let charts = "";
  let chartsFor = -1;
  let version = 0;
  let ended: string | null = null;
  const clients = new Set<ServerResponse>();
  const ordered = () => [...lines.values()].sort((a, b) => a.step - b.step);
  const currentCharts = () => {
    if (chartsFor !== version) {
      charts = liveCharts(ordered());
      chartsFor = version;
    }
    return charts;
  };
  const stepFrame = (l: MetricsLine) =>
    frame("step", { steps: o.steps, metrics: l, groups: groups.get(l.step) ?? null });
  const page = livePageHtml(o.runId);
  let port = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // Only this machine's own names: another site's page resolving a name to 127.0.0.1 gets nothing.
    const host = req.headers.host ?? "";
    if (host !== `${HOST}:${port}` && host !== `localhost:${port}`) {
      res.writeHead(421, { "content-type": "text/plain; charset=utf-8" }).end("misdirected request\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/") {
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        // Nothing but this page's own inline code and its own stream.
        "content-security-policy":
          "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'",
      });
      res.end(req.method === "HEAD" ? undefined : page);
    } else if (path === "/metrics.json") {
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(req.method === "HEAD" ? undefined : JSON.stringify(ordered()));
    } else if (path === "/events") {
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        connection: "keep-alive",
      });
      if (req.method === "HEAD") {
        res.end();
        return;
      }
      res.write(frame("reset", { runId: o.runId, steps: o.steps, groupSteps: keepGroups }));
      for (const l of ordered()) res.write(stepFrame(l));
      if (lines.size) res.write(frame("charts", currentCharts()));
      if (ended !== null) {
        res.end(frame("end", ended));
        return;
      }
      clients.add(res);
      res.on("close", () => clients.delete(res));
    } else {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found\n");
    }
  });
  const heartbeat = setInterval(() => {
    for (const c of clients) c.write(": heartbeat\n\n");
  }, HEARTBEAT_MS);
  heartbeat.unref();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port ?? 0, HOST, () => {
      server.off("error", reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const broadcast = (text: string) => {
    for (const c of clients) c.write(text);
  };
  let closing: Promise<void> | undefined;
  return {
    url: `http://${HOST}:${port}/`,
    push(r) {
      if (ended !== null) return;
      const l = JSON.parse(JSON.stringify(r.metrics)) as MetricsLine; // NaN → null, as in metrics.jsonl
      lines.set(r.step, l);
      if (r.groups) {
        groups.set(r.step, r.groups);
        for (const s of [...groups.keys()].sort((a, b) => a - b).slice(0, -keepGroups)) groups.delete(s);
      }
      version++;
      if (clients.size === 0) return;
      broadcast(stepFrame(l) + frame("charts", currentCharts()));
    },
    finish(note) {
      if (ended !== null) return;
      ended = note;
      for (const c of clients) c.end(frame("end", note));
      clients.clear();
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(heartbeat);
        for (const c of clients) c.end();
        clients.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

const CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1250px}h1{font-size:20px;margin-bottom:4px}h2{font-size:16px;margin-top:24px}
#status{color:#555;margin:0 0 12px}#status b{color:#222}.state-running{color:#1a7f37}.state-ended{color:#555}.state-lost{color:#b35900}
figure{display:inline-block;margin:8px 12px 8px 0;vertical-align:top}figcaption{font-weight:600;margin-bottom:4px}
svg text{font-size:11px;fill:#444}.grid{stroke:#e5e5e5}.legend span{margin-right:12px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f6f6f6}td.l{text-align:left}
.empty{color:#888}.num{font-variant-numeric:tabular-nums}.dropped{color:#999}.warn{border-left:4px solid #ff7f0e;background:#fff7ee;padding:8px 14px}.wide{overflow-x:auto}`;

/** The page's script: follows `/events`, renders the status, the last steps and groups, swaps the charts. */
const SCRIPT = `"use strict";
const $ = (id) => document.getElementById(id);
const lines = new Map();
const groups = new Map();
let steps = 0;
let groupSteps = 3;
const fmt = (v, d = 4) => (typeof v === "number" && Number.isFinite(v) ? v.toFixed(d) : "–");
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}
function row(cells, tag = "td") {
  const tr = el("tr");
  for (const c of cells) tr.append(typeof c === "string" ? el(tag, c) : c);
  return tr;
}
function setState(text, cls) {
  const s = $("state");
  s.textContent = text;
  s.className = cls;
}
function render() {
  const ordered = [...lines.values()].sort((a, b) => a.step - b.step);
  const last = ordered.at(-1);
  const latest = $("latest");
  latest.dataset.step = last ? String(last.step) : "0";
  latest.textContent = last
    ? "step " + last.step + " / " + steps + " · weighted reward " + fmt(last.weightedReward) + " · estimator " + (last.estimator ?? "?")
    : "waiting for the first step…";
  const comps = Object.keys(ordered.find((l) => l.components)?.components ?? {});
  const t = $("steps");
  t.replaceChildren(row(["step", "weighted reward", ...comps, "loss", "kl", "dropped groups", "CorrGRPO fallback", "ms"], "th"));
  for (const l of ordered.slice(-10).reverse()) {
    const tr = row([
      String(l.step),
      fmt(l.weightedReward),
      ...comps.map((c) => fmt(l.components?.[c]?.mean)),
      fmt(l.loss),
      fmt(l.kl),
      String(l.droppedGroups ?? 0),
      String(l.groups?.corrFallback ?? 0),
      fmt(l.timingsMs?.total, 0),
    ]);
    tr.dataset.step = String(l.step);
    tr.className = "num";
    t.append(tr);
  }
  const g = $("groups");
  g.replaceChildren(row(["step", "group", "task", "domain", "used", "weighted reward per rollout", "advantage per rollout"], "th"));
  for (const s of [...groups.keys()].sort((a, b) => b - a)) {
    for (const x of groups.get(s)) {
      const used = x.degenerate ? "degenerate" : x.kept ? (x.imputed ? "yes (imputed)" : "yes") + (x.corrFallback ? ", CorrGRPO fallback (GRPO scale)" : "") : "dropped (no variance)";
      const tr = row([String(s), x.groupId, x.taskId, x.domain, used, x.weightedRewards.map((v) => fmt(v, 2)).join(" "), x.advantages.map((v) => fmt(v, 2)).join(" ")]);
      for (const i of [1, 2, 3, 5, 6]) tr.children[i].className = "l";
      if (!x.kept) tr.classList.add("dropped");
      g.append(tr);
    }
  }
  $("groups-empty").hidden = groups.size > 0;
}
const es = new EventSource("/events");
es.addEventListener("reset", (e) => {
  const m = JSON.parse(e.data);
  lines.clear();
  groups.clear();
  steps = m.steps;
  groupSteps = m.groupSteps;
  setState("running", "state-running");
  render();
});
es.addEventListener("step", (e) => {
  const m = JSON.parse(e.data);
  steps = m.steps;
  lines.set(m.metrics.step, m.metrics);
  if (m.groups) {
    groups.set(m.metrics.step, m.groups);
    for (const s of [...groups.keys()].sort((a, b) => a - b).slice(0, -groupSteps)) groups.delete(s);
  }
  render();
});
es.addEventListener("charts", (e) => {
  $("charts").innerHTML = JSON.parse(e.data);
});
es.addEventListener("end", (e) => {
  es.close();
  setState("run over: " + JSON.parse(e.data), "state-ended");
});
es.addEventListener("error", () => {
  if (es.readyState === EventSource.CLOSED) setState("disconnected: the run's page server stopped", "state-lost");
  else setState("reconnecting…", "state-lost");
});
`;

const escHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** The live page (self-contained: inline style and script; the data comes from `/events`). */
export function livePageHtml(runId: string): string {
  const title = `reward-mesh run ${escHtml(runId)} (live)`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title><link rel="icon" href="data:,"><style>${CSS}</style></head><body>
<h1>${title}</h1>
<p id="status"><b id="latest" data-step="0">connecting…</b> · <span id="state">connecting</span></p>
<h2>Last steps</h2><div class="wide"><table id="steps"></table></div>
<div id="charts"></div>
<h2>Last groups</h2><p id="groups-empty" class="empty">no group yet</p><div class="wide"><table id="groups"></table></div>
<script>${SCRIPT}</script>
</body></html>
`;
}
