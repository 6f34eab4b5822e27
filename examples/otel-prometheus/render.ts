// The picture in docs/diagnostics.md: grafana-dashboard.json's panels, from a real run of main.ts.
// It starts a private redis-server and `main.ts --serve --port=0` on it, scrapes its /metrics every
// second as Prometheus would, then evaluates each panel's queries (the dashboard's own expressions,
// with $kind = All) over the scrapes, as Prometheus does (rate() with its extrapolation,
// histogram_quantile() with linear interpolation in the bucket), and draws them as one plain SVG.
// A rendering of the dashboard's queries, not a Grafana screenshot. Not one of `npm run examples`.
//
//   npm run build && node --import tsx examples/otel-prometheus/render.ts [seconds]  # default 45
//                                                     # writes docs/images/otel-dashboard.svg
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startRedis } from 'relock/testing';

const seconds = Number(process.argv[2] ?? 45);
const SCRAPE_S = 1;
/** Grafana's $__rate_interval for a 1 s scrape interval: 4 scrape intervals. */
const RATE_WINDOW_S = 4 * SCRAPE_S;
const dashboardFile = fileURLToPath(new URL('grafana-dashboard.json', import.meta.url));
const output = fileURLToPath(new URL('../../docs/images/otel-dashboard.svg', import.meta.url));

type Labels = Record<string, string>;
/** One line of a scrape: `name{labels} value`. */
interface Sample {
  name: string;
  labels: Labels;
  value: number;
}
/** One scrape: its time in seconds from the first, and its samples. */
interface Scrape {
  t: number;
  samples: Sample[];
}
/** One series of a query's result at one time. */
interface Point {
  labels: Labels;
  value: number;
}
/** What render.ts reads of a panel of grafana-dashboard.json. */
interface Panel {
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  fieldConfig: { defaults: { unit: string } };
  targets: { expr: string; legendFormat: string }[];
}

/** The samples of a Prometheus text exposition (comments and blank lines skipped). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([\w:]+)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!match) continue;
    const labels: Labels = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!.replace(/\\(.)/g, '$1');
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

const keyOf = (labels: Labels) => JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

/** Prometheus' rate(): the increase over the window, counter resets handled, extrapolated to its edges. */
function rate(points: { t: number; v: number }[], end: number): number | undefined {
  if (points.length < 2) return undefined;
  const first = points[0]!;
  const last = points.at(-1)!;
  let increase = last.v - first.v;
  for (let i = 1; i < points.length; i++) if (points[i]!.v < points[i - 1]!.v) increase += points[i - 1]!.v;
  const sampled = last.t - first.t;
  const average = sampled / (points.length - 1);
  let toStart = first.t - (end - RATE_WINDOW_S);
  if (increase > 0 && first.v >= 0) toStart = Math.min(toStart, sampled * (first.v / increase));
  const toEnd = end - last.t;
  const extrapolated = sampled + (toStart < average * 1.1 ? toStart : average / 2) + (toEnd < average * 1.1 ? toEnd : average / 2);
  return (increase * (extrapolated / sampled)) / RATE_WINDOW_S;
}

/** Prometheus' histogram_quantile() over one set of cumulative buckets (`le` → count). */
function quantile(q: number, buckets: { le: number; count: number }[]): number | undefined {
  buckets.sort((a, b) => a.le - b.le);
  for (let i = 1; i < buckets.length; i++) buckets[i]!.count = Math.max(buckets[i]!.count, buckets[i - 1]!.count);
  const total = buckets.at(-1)?.count ?? 0;
  if (buckets.length < 2 || buckets.at(-1)!.le !== Infinity || !(total > 0)) return undefined;
  let rank = q * total;
  const b = buckets.findIndex((bucket) => bucket.count >= rank);
  if (b === buckets.length - 1) return buckets[b - 1]!.le;
  const start = b > 0 ? buckets[b - 1]!.le : 0;
  const count = buckets[b]!.count - (b > 0 ? buckets[b - 1]!.count : 0);
  if (b > 0) rank -= buckets[b - 1]!.count;
  return start + (buckets[b]!.le - start) * (rank / count);
}

/**
 * One of the dashboard's expressions at scrape i. The subset it uses: `histogram_quantile(q, …)`,
 * `sum [by (labels)] (…)`, `rate(selector[$__rate_interval])`, a selector with `=` and `=~`
 * matchers (a dashboard variable matches all: `$kind` is All).
 */
function evaluate(expr: string, scrapes: Scrape[], i: number): Point[] {
  let match = /^histogram_quantile\(([\d.]+), (.+)\)$/.exec(expr);
  if (match) {
    const groups = new Map<string, { labels: Labels; buckets: { le: number; count: number }[] }>();
    for (const { labels, value } of evaluate(match[2]!, scrapes, i)) {
      const { le, ...rest } = labels;
      const key = keyOf(rest);
      if (!groups.has(key)) groups.set(key, { labels: rest, buckets: [] });
      groups.get(key)!.buckets.push({ le: le === '+Inf' ? Infinity : Number(le), count: value });
    }
    return [...groups.values()].flatMap(({ labels, buckets }) => {
      const value = quantile(Number(match![1]), buckets);
      return value === undefined ? [] : [{ labels, value }];
    });
  }
  match = /^sum(?: by \(([\w, ]+)\))? ?\((.+)\)$/.exec(expr);
  if (match) {
    const by = match[1]?.split(',').map((label) => label.trim()) ?? [];
    const groups = new Map<string, Point>();
    for (const { labels, value } of evaluate(match[2]!, scrapes, i)) {
      const kept = Object.fromEntries(by.filter((label) => label in labels).map((label) => [label, labels[label]!]));
      const group = groups.get(keyOf(kept)) ?? groups.set(keyOf(kept), { labels: kept, value: 0 }).get(keyOf(kept))!;
      group.value += value;
    }
    return [...groups.values()];
  }
  match = /^rate\((.+)\[\$__rate_interval\]\)$/.exec(expr);
  if (match) {
    const end = scrapes[i]!.t;
    const series = new Map<string, { labels: Labels; points: { t: number; v: number }[] }>();
    for (const scrape of scrapes.filter(({ t }) => t > end - RATE_WINDOW_S && t <= end)) {
      for (const { labels, value } of select(match[1]!, scrape)) {
        const key = keyOf(labels);
        if (!series.has(key)) series.set(key, { labels, points: [] });
        series.get(key)!.points.push({ t: scrape.t, v: value });
      }
    }
    return [...series.values()].flatMap(({ labels, points }) => {
      const value = rate(points, end);
      return value === undefined ? [] : [{ labels, value }];
    });
  }
  return select(expr, scrapes[i]!);
}

/** An instant selector, `name{label="value",label=~"regex"}`, over one scrape. */
function select(selector: string, scrape: Scrape): Point[] {
  const match = /^(\w+)(?:\{(.*)\})?$/.exec(selector);
  if (!match) throw new Error(`render.ts does not evaluate this expression: ${selector}`);
  const matchers = [...(match[2] ?? '').matchAll(/(\w+)(=~|=)"([^"]*)"/g)].map(([, label, op, value]) => {
    const pattern = value!.replace(/\$\w+/g, '.*');
    return (labels: Labels) => (op === '=' ? labels[label!] === pattern : new RegExp(`^(?:${pattern})$`).test(labels[label!] ?? ''));
  });
  return scrape.samples.filter((sample) => sample.name === match[1] && matchers.every((test) => test(sample.labels)));
}

/** A value with the panel's unit, as Grafana shows it (s, reqps, short). */
function format(value: number, unit: string): string {
  const number = (n: number) => String(Number(n.toPrecision(3)));
  if (unit === 's') return value === 0 ? '0' : value < 1 ? `${number(value * 1000)} ms` : `${number(value)} s`;
  return unit === 'reqps' ? `${number(value)}/s` : number(value);
}

/** About four round steps from 0 to max. */
function ticks(max: number): number[] {
  const raw = (max > 0 ? max : 1) / 4;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw)!;
  return Array.from({ length: Math.ceil((max > 0 ? max : 1) / step - 1e-9) + 1 }, (_, n) => n * step);
}

const COLORS = ['#56a64b', '#e0b400', '#3274d9', '#ff780a', '#e02f44', '#a352cc'];
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** One panel: title, y axis in its unit, x axis in seconds of the run, one line per series, legend. */
function drawPanel(panel: Panel, scrapes: Scrape[], box: { x: number; y: number; w: number; h: number }): string {
  // Each series' value at each scrape; a missing one (no rate yet, nothing in the window) is a gap.
  const lines = new Map<string, (number | undefined)[]>();
  for (const target of panel.targets) {
    scrapes.forEach((_, i) => {
      for (const { labels, value } of evaluate(target.expr, scrapes, i)) {
        const legend = target.legendFormat.replace(/\{\{(\w+)\}\}/g, (_, label: string) => labels[label] ?? '').trim();
        (lines.get(legend) ?? lines.set(legend, new Array(scrapes.length).fill(undefined)).get(legend)!)[i] = value;
      }
    });
  }
  const unit = panel.fieldConfig.defaults.unit;
  const yTicks = ticks(Math.max(0, ...[...lines.values()].flat().filter((v) => v !== undefined)));
  const yMax = yTicks.at(-1)!;
  const tMax = scrapes.at(-1)!.t;
  const plot = { x: box.x + 62, y: box.y + 34, w: box.w - 78, h: box.h - 86 };
  const px = (t: number) => (plot.x + (t / tMax) * plot.w).toFixed(1);
  const py = (v: number) => (plot.y + plot.h - (v / yMax) * plot.h).toFixed(1);
  const parts = [
    `<rect x="${box.x}" y="${box.y}" width="${box.w}" height="${box.h}" rx="3" fill="#fff" stroke="#d8d9da"/>`,
    `<text x="${box.x + 10}" y="${box.y + 20}" font-weight="600" font-size="13">${escape(panel.title)}</text>`,
  ];
  for (const tick of yTicks) {
    parts.push(`<line x1="${plot.x}" x2="${plot.x + plot.w}" y1="${py(tick)}" y2="${py(tick)}" stroke="#eee"/>`);
    parts.push(`<text x="${plot.x - 6}" y="${Number(py(tick)) + 4}" text-anchor="end">${format(tick, unit)}</text>`);
  }
  for (let t = 0; t <= tMax; t += 10) parts.push(`<text x="${px(t)}" y="${plot.y + plot.h + 15}" text-anchor="middle">${t} s</text>`);
  let legendX = plot.x;
  [...lines].forEach(([legend, values], n) => {
    const color = COLORS[n % COLORS.length];
    const d = values.map((v, i) => (v === undefined ? '' : `${values[i - 1] === undefined ? 'M' : 'L'}${px(scrapes[i]!.t)},${py(v)}`)).join('');
    parts.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
    parts.push(`<rect x="${legendX}" y="${box.y + box.h - 19}" width="14" height="4" fill="${color}"/>`);
    parts.push(`<text x="${legendX + 19}" y="${box.y + box.h - 13}">${escape(legend)}</text>`);
    legendX += 30 + legend.length * 6.5;
  });
  return parts.join('\n');
}

/** The dashboard's panels laid out by their gridPos (24 columns, 30 px a row), with a caption. */
function draw(dashboard: { title: string; panels: Panel[] }, scrapes: Scrape[], date: string): string {
  const width = 960;
  const column = width / 24;
  const rowHeight = 30;
  const top = 40;
  const height = top + Math.max(...dashboard.panels.map(({ gridPos }) => (gridPos.y + gridPos.h) * rowHeight)) + 44;
  const panels = dashboard.panels.map((panel) => {
    const { x, y, w, h } = panel.gridPos;
    return drawPanel(panel, scrapes, { x: x * column + 4, y: top + y * rowHeight + 4, w: w * column - 8, h: h * rowHeight - 8 });
  });
  const caption = [
    `Rendered on ${date} by examples/otel-prometheus/render.ts from a ${Math.round(scrapes.at(-1)!.t)} s run of main.ts --serve, its /metrics scraped every ${SCRAPE_S} s:`,
    `grafana-dashboard.json's queries evaluated over the scrapes as Prometheus does (rate window ${RATE_WINDOW_S} s). A rendering of the dashboard, not a Grafana screenshot.`,
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11" fill="#464c54">`,
    `<rect width="${width}" height="${height}" fill="#f4f5f5"/>`,
    `<text x="8" y="26" font-size="16" font-weight="600">${escape(dashboard.title)}</text>`,
    ...panels,
    ...caption.map((line, n) => `<text x="8" y="${height - 24 + n * 14}" font-size="10.5">${escape(line)}</text>`),
    '</svg>',
    '',
  ].join('\n');
}

const dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8')) as { title: string; panels: Panel[] };
const redis = await startRedis({ sources: ['redis-server'] });
const example = spawn(process.execPath, ['--import', 'tsx', 'main.ts', '--serve', '--port=0'], {
  cwd: fileURLToPath(new URL('.', import.meta.url)),
  env: { ...process.env, REDIS_URL: redis.url },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const scrapes: Scrape[] = [];
try {
  let url: string | undefined;
  for await (const line of createInterface({ input: example.stdout })) {
    url = /^serving (\S+)/.exec(line)?.[1];
    if (url) break;
  }
  if (!url) throw new Error('main.ts --serve ended before it served /metrics');
  const started = performance.now();
  for (let n = 0; n <= seconds / SCRAPE_S; n++) {
    await sleep(Math.max(0, started + n * SCRAPE_S * 1000 - performance.now()));
    const t = (performance.now() - started) / 1000;
    scrapes.push({ t, samples: parse(await (await fetch(url)).text()) });
  }
} finally {
  example.kill('SIGTERM');
  if (example.exitCode === null && example.signalCode === null) await once(example, 'exit');
  // relock/testing unref()s its redis-server: keep this process up until stop() has seen it exit.
  const up = setInterval(() => {}, 1_000);
  await redis.stop();
  clearInterval(up);
}
mkdirSync(dirname(output), { recursive: true });
writeFileSync(output, draw(dashboard, scrapes, new Date().toISOString().slice(0, 10)));
const last = scrapes.at(-1)!.samples;
const total = (name: string, result?: string) => last.filter((x) => x.name === name && (result === undefined || x.labels.relock_lock_result === result)).reduce((sum, x) => sum + x.value, 0);
console.log(
  `wrote ${output} from ${scrapes.length} scrapes: acquired ${total('relock_lock_acquires_total', 'acquired')}, busy ${total('relock_lock_acquires_total', 'busy')},` +
    ` lost ${total('relock_lock_lost_leases_total')}, renewals ${total('relock_lock_renewals_total')}, wake-ups ${total('relock_lock_wakeups_total')}`,
);
