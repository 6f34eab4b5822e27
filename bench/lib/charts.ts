// One SVG chart per scenario, plotted by vega-lite and rendered by vega headless (no canvas, no
// browser): the figures come straight from the run's medians.
import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { Kind } from '../adapters/types.ts';

/** One bar or point: a library's median of one figure. */
export interface Datum {
  library: string;
  kind: Kind;
  figure: string;
  value: number;
  /** herd: the number of waiters. */
  waiters?: number;
}

/** relock in red, as in the bar charts; the others from a palette without red. */
const LIBRARY_COLORS = ['#d62728', '#4c78a8', '#f58518', '#54a24b', '#b279a2', '#9d755d', '#eeca3b', '#a0a0a0', '#72b7b2', '#ff9da6'];
const KIND_COLORS: Record<Kind, string> = { relock: '#d62728', peer: '#4c78a8', floor: '#a0a0a0', baseline: '#ff9896' };

/** The colour scale of the kinds present, so the legend names no kind without a bar. */
function kindScale(data: Datum[]): { domain: Kind[]; range: string[] } {
  const kinds = (Object.keys(KIND_COLORS) as Kind[]).filter((kind) => data.some((datum) => datum.kind === kind));
  return { domain: kinds, range: kinds.map((kind) => KIND_COLORS[kind]) };
}

async function render(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}

/** Side-by-side bar charts, one per figure, libraries in report order, coloured by kind. */
export function bars(title: string, data: Datum[], figures: { name: string; title: string }[], order: string[], options: { legend?: boolean } = {}): Promise<string> {
  return render({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, anchor: 'start', fontSize: 14 },
    data: { values: data.filter((datum) => Number.isFinite(datum.value)) as unknown as Record<string, unknown>[] },
    config: { view: { stroke: null }, axis: { labelFontSize: 11, titleFontSize: 11 } },
    hconcat: figures.map((figure) => ({
      width: 200,
      height: { step: 18 },
      transform: [{ filter: { field: 'figure', equal: figure.name } }],
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: { field: 'library', type: 'nominal', sort: order, title: null, axis: { labelLimit: 240 } },
        x: { field: 'value', type: 'quantitative', title: figure.title },
        color: { field: 'kind', type: 'nominal', scale: kindScale(data), legend: options.legend === false ? null : { title: null, orient: 'bottom' } },
      },
    })),
    resolve: { scale: { x: 'independent' } },
  } as TopLevelSpec);
}

/** Lines over the number of waiters (log scales), one per library, one panel per figure. */
export function growth(title: string, data: Datum[], figures: { name: string; title: string }[], order: string[]): Promise<string> {
  // Each library keeps its colour; the legend lists only the libraries that have a line.
  const present = order.filter((library) => data.some((datum) => datum.library === library && Number.isFinite(datum.value)));
  const colors = present.map((library) => LIBRARY_COLORS[order.indexOf(library) % LIBRARY_COLORS.length]!);
  return render({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, anchor: 'start', fontSize: 14 },
    data: { values: data.filter((datum) => Number.isFinite(datum.value) && datum.value > 0) as unknown as Record<string, unknown>[] },
    config: { view: { stroke: null }, axis: { labelFontSize: 11, titleFontSize: 11 } },
    hconcat: figures.map((figure) => ({
      width: 240,
      height: 220,
      transform: [{ filter: { field: 'figure', equal: figure.name } }],
      mark: { type: 'line', point: true, tooltip: true },
      encoding: {
        x: { field: 'waiters', type: 'quantitative', scale: { type: 'log' }, axis: { values: [50, 200, 800] }, title: 'waiters' },
        y: { field: 'value', type: 'quantitative', scale: { type: 'log' }, title: figure.title },
        color: { field: 'library', type: 'nominal', scale: { domain: present, range: colors }, legend: { title: null, labelLimit: 240 } },
        strokeWidth: { condition: { test: "datum.kind === 'relock'", value: 3.5 }, value: 1.5 },
        strokeDash: { condition: { test: "datum.kind === 'floor'", value: [4, 3] }, value: [1, 0] },
      },
    })),
    resolve: { scale: { y: 'independent' } },
  } as TopLevelSpec);
}
