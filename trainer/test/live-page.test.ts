/**
 * The live page (`--ui`) in a real headless browser: Debian's `chromium` driven by playwright-core
 * (`bash scripts/bootstrap.sh --with-browser` installs it; `REWARD_MESH_CHROMIUM` points elsewhere).
 * The page loads, a new step appears without a reload, the console stays free of errors, and a
 * screenshot is written to runs/ui-screenshots/ for a person to look at. Plus the server's contract
 * over plain HTTP: backlog on connect, routes, the Host check, and a close that leaves nothing open.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { get, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { type StepReport, startLivePage } from "../src/index.js";

const CHROMIUM = process.env["REWARD_MESH_CHROMIUM"] ?? "/usr/bin/chromium";
const SCREENSHOTS = fileURLToPath(new URL("../../runs/ui-screenshots/", import.meta.url));
const COMPS = ["tool-call/format", "tool-call/args", "length/overlong"];

/** A step as the training loop reports it (the fields of a metrics.jsonl line the page reads). */
function stepReport(step: number, steps: number): StepReport {
  const w = 0.2 + 0.05 * step;
  return {
    step,
    steps,
    metrics: {
      step,
      runId: "ui-test",
      estimator: "grpo_covariance_coefficient",
      weightedReward: w,
      weightedRewardStd: 0.1,
      components: {
        [COMPS[0]!]: { mean: 0.5 + 0.1 * step, std: 0.2, notApplicable: 0 },
        [COMPS[1]!]: { mean: 0.1 * step, std: 0.3, notApplicable: 0 },
        [COMPS[2]!]: { mean: 0, std: 0, notApplicable: 0 },
      },
      correlation: {
        components: COMPS,
        matrix: [
          [1, 0.6 - 0.2 * step, null],
          [0.6 - 0.2 * step, 1, null],
          [null, null, null],
        ],
      },
      denominatorShares: {
        components: COMPS,
        grpoRow: [0.7 - 0.05 * step, 0.3 + 0.05 * step, 0],
        corrGrpoRow: [0.5, 0.5, 0],
      },
      droppedGroups: step === 2 ? 1 : 0,
      // Step 3: CorrGRPO's degenerate-group guard fired for one group.
      groups: { used: 2, imputed: 0, corrFallback: step === 3 ? 1 : 0 },
      loss: 0.05 / step,
      kl: 0.001 * step,
      clipFraction: 0.01,
      entropy: Number.NaN, // a skipped update: must reach the page as "–", never as NaN
      timingsMs: { total: 120 + step },
    },
    groups: [
      {
        groupId: `s${step}-p0`,
        taskId: "tool_call/weather<script>",
        domain: "tool_call",
        kept: true,
        degenerate: false,
        imputed: false,
        corrFallback: step === 3,
        weightedRewards: [0, 1, 0.5, 1],
        advantages: [-1.2, 0.8, -0.2, 0.6],
      },
      {
        groupId: `s${step}-p1`,
        taskId: "tool_call/search",
        domain: "tool_call",
        kept: false,
        degenerate: false,
        imputed: false,
        corrFallback: false,
        weightedRewards: [1, 1, 1, 1],
        advantages: [0, 0, 0, 0],
      },
    ],
  };
}

/** GET `path` on the page's server with an optional Host header; resolves with the response. */
function request(url: string, path: string, host?: string): Promise<IncomingMessage> {
  const u = new URL(path, url);
  return new Promise((resolve, reject) => {
    get(
      { host: u.hostname, port: u.port, path: u.pathname, headers: host ? { host } : {}, agent: false },
      resolve,
    ).on("error", reject);
  });
}

/** Collects a streaming response; `until` resolves once the text so far satisfies `pred`. */
function collect(res: IncomingMessage) {
  let text = "";
  let ended = false;
  const waiters = new Set<() => void>();
  res.on("data", (d: Buffer) => {
    text += d.toString("utf8");
    for (const w of waiters) w();
  });
  res.on("end", () => {
    ended = true;
    for (const w of waiters) w();
  });
  return {
    until(pred: (text: string) => boolean): Promise<string> {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pred(text)) {
            waiters.delete(check);
            resolve(text);
          } else if (ended) {
            waiters.delete(check);
            reject(new Error(`stream ended early:\n${text}`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** The whole body of a response. */
async function body(res: IncomingMessage): Promise<string> {
  let text = "";
  for await (const d of res) text += (d as Buffer).toString("utf8");
  return text;
}

const events = (text: string) => [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);

it("serves the page, a backlog and each new step over SSE, refuses other hosts, and closes with no stream left open", async () => {
  const dir = mkdtempSync(join(tmpdir(), "live-page-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  // A resumed run: step 1 is already in metrics.jsonl.
  const metricsFile = join(dir, "metrics.jsonl");
  writeFileSync(metricsFile, `${JSON.stringify(stepReport(1, 4).metrics)}\n`);
  const live = await startLivePage({ runId: "ui-test", steps: 4, metricsFile });
  try {
    assert.match(live.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const pageRes = await request(live.url, "/");
    assert.equal(pageRes.statusCode, 200);
    assert.match(String(pageRes.headers["content-security-policy"]), /default-src 'none'/);
    const html = await body(pageRes);
    assert.ok(!/\b(src|href)="(https?:)?\/\//.test(html), "no external assets");
    assert.equal((await request(live.url, "/nope")).statusCode, 404);
    assert.equal((await request(live.url, "/", "evil.example:80")).statusCode, 421);

    const es = await request(live.url, "/events");
    assert.match(String(es.headers["content-type"]), /^text\/event-stream/);
    const stream = collect(es);
    const backlog = await stream.until((t) => events(t).includes("charts"));
    assert.deepEqual(events(backlog), ["reset", "step", "charts"], "the resumed run's step 1 as backlog");
    live.push(stepReport(2, 4));
    const more = await stream.until((t) => events(t).filter((e) => e === "charts").length >= 2);
    assert.deepEqual(events(more), ["reset", "step", "charts", "step", "charts"]);
    assert.match(more, /"step":2/);
    assert.ok(!more.includes("NaN"), "NaN is sent as null");

    const metrics = JSON.parse(await body(await request(live.url, "/metrics.json"))) as Array<{
      step: number;
    }>;
    assert.deepEqual(
      metrics.map((l) => l.step),
      [1, 2],
    );

    live.finish("finished at step 2");
    const all = await stream.until((t) => events(t).includes("end"));
    assert.match(all, /event: end\ndata: "finished at step 2"\n\n$/);
  } finally {
    await live.close();
  }
  await assert.rejects(request(live.url, "/"), /ECONNREFUSED/, "nothing listens after close");
});

it("the live page in headless Chromium: loads, shows a new step without reload, no console errors, screenshot", async (t) => {
  assert.ok(
    existsSync(CHROMIUM),
    `no Chromium at ${CHROMIUM}: run 'bash scripts/bootstrap.sh --with-browser' (Debian: apt-get install chromium) or set REWARD_MESH_CHROMIUM`,
  );
  const t0 = performance.now();
  const live = await startLivePage({ runId: "ui-test", steps: 4 });
  t.after(() => live.close());
  live.push(stepReport(1, 4));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // As root in a container Chromium needs --no-sandbox.
    args: ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(15_000); // a step that never shows fails in 15 s, not the default 30 s
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    // The page closes its own stream on the run's `end` event: Chromium calls that request aborted.
    if (r.url() === `${live.url}events` && r.failure()?.errorText === "net::ERR_ABORTED") return;
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on("request", (r) => {
    if (!r.url().startsWith(live.url) && !r.url().startsWith("data:")) problems.push(`external: ${r.url()}`);
  });
  let loads = 0;
  page.on("load", () => loads++);

  await page.goto(live.url);
  await page.waitForSelector('#latest[data-step="1"]');
  await page.waitForSelector("#charts svg");
  assert.match((await page.textContent("#latest")) ?? "", /step 1 \/ 4 · weighted reward 0\.2500/);
  assert.equal(await page.locator("#steps tr[data-step]").count(), 1);
  assert.equal(await page.locator("#groups tr").count(), 3, "header and the step's two groups");
  assert.match((await page.textContent("#groups")) ?? "", /tool_call\/weather<script>/, "task ids as text");
  const charts = (await page.textContent("#charts")) ?? "";
  for (const title of [
    "Weighted reward",
    "Per-component mean reward",
    "Correlation between components",
    "GRPO: each component's share",
    "CorrGRPO: each component's share",
  ])
    assert.ok(charts.includes(title), `chart '${title}' on the page`);
  assert.ok(!(await page.content()).includes("NaN"), "no NaN on the page");

  // A new step arrives: it shows without a reload (a marker set on the document survives).
  // (Page-side code as strings: the tests compile without the DOM library. Waits are locators, not
  // waitForFunction, whose polling evals a string, which the page's CSP rightly refuses.)
  await page.evaluate("window.marker = 42");
  live.push(stepReport(2, 4));
  await page.waitForSelector('#latest[data-step="2"]');
  await page.waitForSelector('#steps tr[data-step="2"]');
  // The charts are redrawn with step 2 (every point and heatmap cell has a title "<series> · step N: <value>").
  await page
    .locator("#charts title", { hasText: / · step 2: / })
    .first()
    .waitFor({ state: "attached" });
  assert.equal(await page.evaluate("window.marker"), 42, "same document");
  assert.equal(loads, 1, "loaded once");
  assert.equal(await page.locator("#steps tr[data-step]").count(), 2);
  assert.match((await page.textContent("#groups")) ?? "", /s2-p0/);
  assert.equal(await page.locator("#charts .warn").count(), 0, "no guard warning before it fires");
  live.push(stepReport(3, 4));
  await page.waitForSelector('#latest[data-step="3"]');
  // The guard fired at step 3: a warning above the charts, the step's count, the group marked.
  await page
    .locator("#charts .warn", { hasText: /degenerate-group guard fired for 1 group .*\(step 3\)/ })
    .waitFor();
  assert.match((await page.textContent("#steps")) ?? "", /CorrGRPO fallback/);
  assert.equal(
    (await page.textContent('#steps tr[data-step="3"] td:nth-last-child(2)'))?.trim(),
    "1",
    "step 3's fallback count",
  );
  assert.match((await page.textContent("#groups")) ?? "", /yes, CorrGRPO fallback \(GRPO scale\)/);

  mkdirSync(SCREENSHOTS, { recursive: true });
  const shot = join(SCREENSHOTS, "live-page.png");
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(statSync(shot).size > 10_000, "a screenshot with something on it");

  live.finish("finished at step 3");
  await page.locator("#state", { hasText: /^run over/ }).waitFor();
  assert.deepEqual(problems, [], "no console errors or warnings, no failed or external requests");
  console.log(
    `live page browser test: ${((performance.now() - t0) / 1000).toFixed(2)} s; screenshot ${shot}`,
  );
});
