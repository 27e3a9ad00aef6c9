/**
 * Two small chart kinds in plain SVG (no dependency): lines through points (by default x linear,
 * y log; either axis may be linear or log), and ranges per row (x log; a row per configuration, a
 * marker per percentile). Every series is a
 * `<g class="series" data-series="...">` and appears in the legend, so a test can find each one.
 */

/** A colour-blind-safe qualitative palette (Okabe-Ito, its yellow last: it is faint on white), then Tableau's. */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#000000', '#8c564b', '#7f7f7f', '#bcbd22', '#17becf', '#F0E442'];

export function colour(i: number): string {
  return PALETTE[i % PALETTE.length];
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const FONT = 'font-family="Helvetica, Arial, sans-serif"';
const num = (v: number): string => (Math.round(v * 10) / 10).toString();

function text(x: number, y: number, s: string, attrs = ''): string {
  return `<text x="${num(x)}" y="${num(y)}" ${FONT} ${attrs}>${escapeXml(s)}</text>`;
}

/** Decade ticks with 2 and 5 between when the range is short, and every digit under one decade. */
function logTicks(lo: number, hi: number): number[] {
  const ticks: number[] = [];
  const decades = Math.log10(hi) - Math.log10(lo);
  const steps = decades > 4 ? [1] : decades > 2 ? [1, 3] : decades > 1 ? [1, 2, 5] : [1, 2, 3, 4, 5, 6, 7, 8, 9];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of steps) {
      const v = m * 10 ** e;
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push(v);
    }
  }
  return ticks;
}

/** A log axis from a power-of-ten below the smallest value to one above the largest. */
function logDomain(values: number[]): [number, number] {
  const pos = values.filter((v) => v > 0 && Number.isFinite(v));
  if (!pos.length) return [1, 10];
  let lo = 10 ** Math.floor(Math.log10(Math.min(...pos)));
  let hi = 10 ** Math.ceil(Math.log10(Math.max(...pos)));
  if (hi <= lo) hi = lo * 10;
  // Keep at least one decade but do not pad a short range out to two.
  if (Math.max(...pos) / Math.min(...pos) < 10) {
    lo = Math.min(...pos) / 1.5;
    hi = Math.max(...pos) * 1.5;
  }
  return [lo, hi];
}

function formatTick(v: number): string {
  if (v >= 1e6) return `${v / 1e6}M`;
  if (v >= 1e4) return `${v / 1e3}k`;
  return Number(v.toPrecision(3)).toString();
}

interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Reserves room for a 10px label with its baseline at (x, y); false if it would overlap one placed. */
function placeLabel(placed: Box[], x: number, y: number, label: string): boolean {
  const box = { x, y: y - 9, w: 6 * label.length, h: 11 };
  if (placed.some((b) => box.x < b.x + b.w && b.x < box.x + box.w && box.y < b.y + b.h && b.y < box.y + box.h)) return false;
  placed.push(box);
  return true;
}

export interface LinePoint {
  x: number;
  y: number;
  /** Short text beside the marker (a parameter value). */
  label?: string;
  /** Drawn with a ring: the point is on the Pareto front. */
  highlight?: boolean;
  /** This point's marker, in place of its series' (a second property shown by shape). */
  marker?: MarkerShape;
}

export type MarkerShape = 'circle' | 'square' | 'diamond' | 'triangle' | 'triangle-down';

export interface LineSeries {
  name: string;
  points: LinePoint[];
  /** Default: the palette by series order. */
  colour?: string;
  /** Default circle. */
  marker?: MarkerShape;
}

export type AxisScale = 'linear' | 'log';

export interface LineChart {
  title: string[];
  xLabel: string;
  yLabel: string;
  series: LineSeries[];
  /** Legend entry for highlighted points. */
  highlightLabel: string;
  /** Default linear (a recall: from a tenth below the smallest value to 1). */
  xScale?: AxisScale;
  /** Default log. */
  yScale?: AxisScale;
  /** Only for a linear x axis. */
  xDomain?: [number, number];
  /** false: markers only, no line through a series' points (default true). */
  lines?: boolean;
  /**
   * A legend label: when given, the highlighted points of all series are joined by a step line
   * (across to the next point's x, then to its y), the front of what is attainable.
   */
  frontier?: string;
  /** Legend entries for per-point markers (LinePoint.marker), drawn grey after the series. */
  markerKey?: { marker: MarkerShape; label: string }[];
}

/** An axis: value to pixel, and its ticks with their text. */
interface Axis {
  at: (v: number) => number;
  ticks: { v: number; text: string }[];
  /** Whether a value can be drawn (log axes drop values <= 0). */
  shows: (v: number) => boolean;
}

/**
 * A linear axis for a recall: from a tenth below the smallest value (0 at least) to 1, or over
 * `domain`; ticks every 0.1 (0.05 on a short range). `from`, `to`: the pixels of the domain's ends.
 */
function linearAxis(values: number[], domain: [number, number] | undefined, from: number, to: number): Axis {
  const [v0, v1] = domain ?? [Math.max(0, Math.floor(Math.min(...values, 1) * 10) / 10 - 0.05), 1.0];
  const step = v1 - v0 > 0.5 ? 0.1 : 0.05;
  const ticks: Axis['ticks'] = [];
  for (let v = Math.ceil(v0 / step - 1e-9) * step; v <= v1 + 1e-9; v += step) ticks.push({ v, text: v.toFixed(2) });
  return { at: (v) => from + ((v - v0) / (v1 - v0)) * (to - from), ticks, shows: () => true };
}

function logAxis(values: number[], from: number, to: number): Axis {
  const [v0, v1] = logDomain(values);
  const at = (v: number): number => from + ((Math.log10(v) - Math.log10(v0)) / (Math.log10(v1) - Math.log10(v0))) * (to - from);
  return { at, ticks: logTicks(v0, v1).map((v) => ({ v, text: formatTick(v) })), shows: (v) => v > 0 };
}

const W = 1000;
const LEGEND_W = 300;

/** Breaks long title lines at spaces so that each fits the chart's width. */
function wrapTitle(lines: string[], maxChars = 140): string[] {
  return lines.flatMap((line) => {
    const out: string[] = [];
    let cur = '';
    for (const word of line.split(' ')) {
      if (cur && cur.length + 1 + word.length > maxChars) {
        out.push(cur);
        cur = word;
      } else cur = cur ? `${cur} ${word}` : word;
    }
    return [...out, cur];
  });
}

function frame(width: number, height: number, title: string[], body: string[]): string {
  const titleLines = title.map((t, i) => text(width / 2, 26 + i * 20, t, `font-size="${i ? 13 : 17}" text-anchor="middle"${i ? ' fill="#333"' : ' font-weight="bold"'}`));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...titleLines,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

/** Lines (or markers only) per series: recall (x, linear) against throughput (y, log) by default. */
export function lineChartSvg(chart: LineChart): string {
  const c = { ...chart, title: wrapTitle(chart.title) };
  const top = 30 + c.title.length * 20;
  const plot = { x: 80, y: top, w: W - 80 - LEGEND_W - 40, h: 440 };
  const legendRows = c.series.length + 1 + (c.frontier ? 1 : 0) + (c.markerKey?.length ?? 0);
  const height = Math.max(plot.y + plot.h + 70, plot.y + 10 + legendRows * 22 + 20);
  const all = c.series.flatMap((s) => s.points);
  const xs = all.map((p) => p.x);
  const ys = all.map((p) => p.y);
  const xAxis = (c.xScale ?? 'linear') === 'log' ? logAxis(xs, plot.x, plot.x + plot.w) : linearAxis(xs, c.xDomain, plot.x, plot.x + plot.w);
  const yAxis = (c.yScale ?? 'log') === 'log' ? logAxis(ys, plot.y + plot.h, plot.y) : linearAxis(ys, undefined, plot.y + plot.h, plot.y);
  const px = xAxis.at;
  const py = yAxis.at;
  const body: string[] = [];
  // Grid and axes.
  for (const t of xAxis.ticks) {
    body.push(`<line x1="${num(px(t.v))}" y1="${plot.y}" x2="${num(px(t.v))}" y2="${plot.y + plot.h}" stroke="#e5e5e5"/>`);
    body.push(text(px(t.v), plot.y + plot.h + 18, t.text, 'font-size="12" text-anchor="middle"'));
  }
  for (const t of yAxis.ticks) {
    body.push(`<line x1="${plot.x}" y1="${num(py(t.v))}" x2="${plot.x + plot.w}" y2="${num(py(t.v))}" stroke="#e5e5e5"/>`);
    body.push(text(plot.x - 6, py(t.v) + 4, t.text, 'font-size="12" text-anchor="end"'));
  }
  body.push(`<rect x="${plot.x}" y="${plot.y}" width="${plot.w}" height="${plot.h}" fill="none" stroke="#333"/>`);
  body.push(text(plot.x + plot.w / 2, plot.y + plot.h + 42, c.xLabel, 'font-size="14" text-anchor="middle"'));
  body.push(text(22, plot.y + plot.h / 2, c.yLabel, `font-size="14" text-anchor="middle" transform="rotate(-90 22 ${num(plot.y + plot.h / 2)})"`));
  // Series. Point labels that would overlap one already drawn are left out (crowded corners, such
  // as many configurations at recall 1, stay legible; the table has every value).
  const placed: Box[] = [];
  if (c.frontier) {
    const front = all.filter((p) => p.highlight && xAxis.shows(p.x) && yAxis.shows(p.y)).sort((a, b) => a.x - b.x || a.y - b.y);
    const d = front.map((p, j) => `${j ? `H${num(px(p.x))} V` : `M${num(px(p.x))},`}${num(py(p.y))}`).join(' ');
    if (front.length) body.push(`<path class="frontier" d="${d}" fill="none" stroke="#444" stroke-width="1.5" stroke-dasharray="5 3"/>`);
  }
  c.series.forEach((s, i) => {
    const col = s.colour ?? colour(i);
    const pts = [...s.points].filter((p) => xAxis.shows(p.x) && yAxis.shows(p.y)).sort((a, b) => a.x - b.x || b.y - a.y);
    const g: string[] = [`<g class="series" data-series="${escapeXml(s.name)}">`, `<title>${escapeXml(s.name)}</title>`];
    if (pts.length > 1 && c.lines !== false) {
      const d = pts.map((p, j) => `${j ? 'L' : 'M'}${num(px(p.x))},${num(py(p.y))}`).join(' ');
      g.push(`<path d="${d}" fill="none" stroke="${col}" stroke-width="2"/>`);
    }
    for (const p of pts) {
      g.push(shape(p.marker ?? s.marker ?? 'circle', px(p.x), py(p.y), col, true, 'marker'));
      if (p.highlight) g.push(`<circle class="pareto" cx="${num(px(p.x))}" cy="${num(py(p.y))}" r="9" fill="none" stroke="black" stroke-width="1.5"/>`);
      if (p.label && placeLabel(placed, px(p.x) + 7, py(p.y) - 7, p.label)) g.push(text(px(p.x) + 7, py(p.y) - 7, p.label, `font-size="10" fill="${col}"`));
    }
    g.push('</g>');
    body.push(...g);
  });
  // Legend, clear of the point labels beside x = 1.
  const lx = plot.x + plot.w + 40;
  const entries = c.series.map((s, i) => {
    const y = plot.y + 10 + i * 22;
    const col = s.colour ?? colour(i);
    return [
      c.lines === false ? '' : `<line x1="${lx}" y1="${y}" x2="${lx + 26}" y2="${y}" stroke="${col}" stroke-width="2"/>`,
      shape(s.marker ?? 'circle', lx + 13, y, col, true),
      text(lx + 34, y + 4, s.name, 'font-size="13" class="legend"'),
    ].join('');
  });
  let py2 = plot.y + 10 + c.series.length * 22;
  for (const k of c.markerKey ?? []) {
    entries.push(shape(k.marker, lx + 13, py2, '#666', true) + text(lx + 34, py2 + 4, k.label, 'font-size="13"'));
    py2 += 22;
  }
  entries.push(`<circle cx="${lx + 13}" cy="${py2}" r="9" fill="none" stroke="black" stroke-width="1.5"/>` + text(lx + 34, py2 + 4, c.highlightLabel, 'font-size="13"'));
  if (c.frontier) {
    py2 += 22;
    entries.push(`<path d="M${lx},${py2 + 6} H${lx + 13} V${py2 - 6} H${lx + 26}" fill="none" stroke="#444" stroke-width="1.5" stroke-dasharray="5 3"/>` + text(lx + 34, py2 + 4, c.frontier, 'font-size="13"'));
  }
  body.push(...entries);
  return frame(W, height, c.title, body);
}

export interface RangeRow {
  label: string;
  /** Rows of one series share a colour and a legend entry. */
  series: string;
  /** Values by marker name, in marker order. */
  values: number[];
}

export interface RangeChart {
  title: string[];
  xLabel: string;
  /** Marker names, in order (p50, p95, p99): a filled circle, then outlined diamond and square. */
  markers: string[];
  /** Colour by series name; default: the palette by order of first appearance. */
  colours?: Record<string, string>;
  rows: RangeRow[];
}

/** A marker: filled, or white with a coloured outline; `cls` its class attribute, if any. */
function shape(kind: MarkerShape, x: number, y: number, col: string, filled: boolean, cls?: string): string {
  const paint = `${cls ? `class="${cls}" ` : ''}${filled ? `fill="${col}"` : `fill="white" stroke="${col}" stroke-width="1.5"`}`;
  if (kind === 'circle') return `<circle cx="${num(x)}" cy="${num(y)}" r="4.5" ${paint}/>`;
  if (kind === 'diamond') return `<path d="M${num(x)},${num(y - 6)} L${num(x + 6)},${num(y)} L${num(x)},${num(y + 6)} L${num(x - 6)},${num(y)} Z" ${paint}/>`;
  if (kind === 'triangle') return `<path d="M${num(x)},${num(y - 6)} L${num(x + 6)},${num(y + 4.5)} L${num(x - 6)},${num(y + 4.5)} Z" ${paint}/>`;
  if (kind === 'triangle-down') return `<path d="M${num(x)},${num(y + 6)} L${num(x + 6)},${num(y - 4.5)} L${num(x - 6)},${num(y - 4.5)} Z" ${paint}/>`;
  return `<rect x="${num(x - 4.5)}" y="${num(y - 4.5)}" width="9" height="9" ${paint}/>`;
}

const PERCENTILE_MARKERS: MarkerShape[] = ['circle', 'diamond', 'square'];

function percentileMarker(i: number, x: number, y: number, col: string): string {
  return shape(PERCENTILE_MARKERS[i % 3], x, y, col, i === 0);
}

/** A row per configuration (grouped by series, coloured by it), x on a log axis. */
export function rangeChartSvg(chart: RangeChart): string {
  const c = { ...chart, title: wrapTitle(chart.title) };
  const top = 30 + c.title.length * 20;
  const labelW = 330;
  const rowH = 20;
  const plot = { x: labelW, y: top + 10, w: W - labelW - LEGEND_W - 20, h: Math.max(1, c.rows.length) * rowH };
  const seriesNames = [...new Set(c.rows.map((r) => r.series))];
  const legendH = (c.markers.length + 1 + seriesNames.length) * 22;
  const height = plot.y + Math.max(plot.h, legendH) + 70;
  const [x0, x1] = logDomain(c.rows.flatMap((r) => r.values));
  const px = (x: number): number => plot.x + ((Math.log10(x) - Math.log10(x0)) / (Math.log10(x1) - Math.log10(x0))) * plot.w;
  const body: string[] = [];
  for (const v of logTicks(x0, x1)) {
    body.push(`<line x1="${num(px(v))}" y1="${plot.y}" x2="${num(px(v))}" y2="${plot.y + plot.h}" stroke="#e5e5e5"/>`);
    body.push(text(px(v), plot.y + plot.h + 18, formatTick(v), 'font-size="12" text-anchor="middle"'));
  }
  body.push(`<rect x="${plot.x}" y="${plot.y}" width="${plot.w}" height="${plot.h}" fill="none" stroke="#333"/>`);
  body.push(text(plot.x + plot.w / 2, plot.y + plot.h + 42, c.xLabel, 'font-size="14" text-anchor="middle"'));
  for (const [si, name] of seriesNames.entries()) {
    const col = c.colours?.[name] ?? colour(si);
    const g: string[] = [`<g class="series" data-series="${escapeXml(name)}">`, `<title>${escapeXml(name)}</title>`];
    c.rows.forEach((r, i) => {
      if (r.series !== name) return;
      const y = plot.y + rowH * i + rowH / 2;
      g.push(text(plot.x - 8, y + 4, r.label, `font-size="12" text-anchor="end" fill="${col}"`));
      const xs = r.values.filter((v) => v > 0).map(px);
      if (xs.length > 1) g.push(`<line x1="${num(Math.min(...xs))}" y1="${num(y)}" x2="${num(Math.max(...xs))}" y2="${num(y)}" stroke="${col}" stroke-width="2"/>`);
      r.values.forEach((v, m) => v > 0 && g.push(percentileMarker(m, px(v), y, col)));
    });
    g.push('</g>');
    body.push(...g);
  }
  const lx = plot.x + plot.w + 20;
  c.markers.forEach((m, i) => {
    const y = plot.y + 10 + i * 22;
    body.push(percentileMarker(i, lx + 13, y, '#333') + text(lx + 34, y + 4, m, 'font-size="13"'));
  });
  seriesNames.forEach((name, i) => {
    const y = plot.y + 10 + (c.markers.length + 1 + i) * 22;
    body.push(`<line x1="${lx}" y1="${y}" x2="${lx + 26}" y2="${y}" stroke="${c.colours?.[name] ?? colour(i)}" stroke-width="3"/>` + text(lx + 34, y + 4, name, 'font-size="13" class="legend"'));
  });
  return frame(W, height, c.title, body);
}
