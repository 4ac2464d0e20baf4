// The context growth chart as plain SVG: the context after every main-thread turn across the
// whole run, one line per session generation of each step (a judge's turns as points), the
// window and the handoff threshold as lines, judged rounds, handoffs and later wakes as marks.
// Pure (no DOM, no `vscode`): the webview sets the markup, Node tests and benchmarks read it.
// Colours are classes the webview's style sheet maps to the theme's chart colours.
import { formatTokens } from './format';
import { formatTime, verdictWord } from './history';
import type { HistoryMark, HistoryResult, HistoryTurn } from './protocol';

export interface Size {
  width: number;
  height: number;
}

export interface Series {
  key: string;
  lane: string;
  generation: number;
  /** Indices into `turns`. */
  points: number[];
  /** A judge's turns: each judge is a fresh session, so points, not a line. */
  scatter: boolean;
  /** Colour class (c0 ... c7) of the theme's chart palette. */
  colour: string;
}

const MARGIN = { left: 58, right: 18, top: 14, bottom: 34 };
const PALETTE = 8; // c0 ... c7 in the style sheet
const JUDGE = '·判定';

/** The chart's series: one per (lane, generation), in the order they first speak. */
export function seriesOf(turns: readonly HistoryTurn[]): Series[] {
  const out = new Map<string, Series>();
  const lanes: string[] = [];
  turns.forEach((t, i) => {
    const scatter = t.lane.includes(JUDGE);
    const key = scatter ? t.lane : `${t.lane}#${t.generation}`;
    let series = out.get(key);
    if (!series) {
      if (!lanes.includes(t.lane)) lanes.push(t.lane);
      series = { key, lane: t.lane, generation: t.generation, points: [], scatter, colour: '' };
      out.set(key, series);
    }
    series.points.push(i);
  });
  let next = 0;
  for (const series of out.values()) series.colour = `c${next++ % PALETTE}`;
  return [...out.values()];
}

export function seriesLabel(series: Series): string {
  if (series.scatter) return `${series.lane} (each judge)`;
  return series.generation > 1 ? `${series.lane} · generation ${series.generation}` : series.lane;
}

/** The top of the y axis: the window, or the largest turn if one went past it. */
export function yTop(h: HistoryResult): number {
  let top = Math.max(h.window, h.at);
  for (const t of h.turns) if (t.used > top) top = t.used;
  return top > 0 ? top * 1.04 : 1;
}

/** Plot geometry: where turn `i` and `tokens` land. */
export function scales(h: HistoryResult, size: Size) {
  const plotW = Math.max(10, size.width - MARGIN.left - MARGIN.right);
  const plotH = Math.max(10, size.height - MARGIN.top - MARGIN.bottom);
  const n = Math.max(1, h.turns.length - 1);
  const top = yTop(h);
  return {
    plotW,
    plotH,
    x: (i: number) => MARGIN.left + (h.turns.length > 1 ? (i / n) * plotW : plotW / 2),
    y: (tokens: number) => MARGIN.top + plotH - (Math.max(0, tokens) / top) * plotH,
    /** The turn nearest to an x position (for the tooltip). */
    nearest: (px: number) =>
      Math.min(h.turns.length - 1, Math.max(0, Math.round(((px - MARGIN.left) / plotW) * n))),
  };
}

/** The whole chart as one SVG element's markup. */
export function chartSvg(h: HistoryResult, size: Size): string {
  const { width, height } = size;
  const s = scales(h, size);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="Context growth">`,
  ];
  const left = MARGIN.left;
  const right = MARGIN.left + s.plotW;
  const bottom = MARGIN.top + s.plotH;
  // y grid and labels, at round figures
  for (const tokens of yTicks(yTop(h))) {
    const y = s.y(tokens);
    out.push(`<line class="grid" x1="${left}" x2="${right}" y1="${n(y)}" y2="${n(y)}"/>`);
    out.push(
      `<text class="tick" x="${left - 6}" y="${n(y + 4)}" text-anchor="end">${formatTokens(tokens)}</text>`,
    );
  }
  // x labels: turns
  for (const i of xTicks(h.turns.length)) {
    out.push(`<text class="tick" x="${n(s.x(i))}" y="${bottom + 16}" text-anchor="middle">${i + 1}</text>`);
  }
  out.push(`<text class="axis" x="${right}" y="${height - 4}" text-anchor="end">turn</text>`);
  // the window and the thresholds
  for (const [cls, value, label] of [
    ['window', h.window, `window ${formatTokens(h.window)}`],
    ['threshold', h.at, `handoff at ${formatTokens(h.at)}`],
    ['warn', h.warn_at, `near ${formatTokens(h.warn_at)}`],
  ] as const) {
    if (!value) continue;
    const y = n(s.y(value));
    out.push(`<line class="${cls}" x1="${left}" x2="${right}" y1="${y}" y2="${y}" data-tokens="${value}"/>`);
    if (cls !== 'warn')
      out.push(
        `<text class="limit ${cls}" x="${right - 4}" y="${n(s.y(value) - 4)}" text-anchor="end">${label}</text>`,
      );
  }
  // marks under the lines
  for (const mark of h.marks) out.push(markSvg(mark, s.x(mark.turn), MARGIN.top, bottom));
  // the series
  const series = seriesOf(h.turns);
  for (const ser of series) {
    if (!ser.scatter && ser.points.length > 1) {
      const d = ser.points.map((i, k) => `${k ? 'L' : 'M'}${n(s.x(i))},${n(s.y(h.turns[i].used))}`).join('');
      out.push(`<path class="line ${ser.colour}" d="${d}" data-series="${esc(ser.key)}"/>`);
    }
    for (const i of ser.points)
      out.push(
        `<circle class="point ${ser.colour}${ser.scatter ? ' judge' : ''}" cx="${n(s.x(i))}" cy="${n(s.y(h.turns[i].used))}" r="${ser.scatter ? 2.2 : 2.6}" data-turn="${i}"/>`,
      );
  }
  out.push(`<line class="cursor" x1="0" x2="0" y1="${MARGIN.top}" y2="${bottom}" visibility="hidden"/>`);
  out.push('</svg>');
  return out.join('');
}

function markSvg(mark: HistoryMark, x: number, top: number, bottom: number): string {
  const at = n(x);
  const title = esc(markLabel(mark));
  if (mark.kind === 'verdict') {
    const cls = mark.state || 'none';
    return `<g class="mark verdict ${cls}" data-turn="${mark.turn}"><title>${title}</title><line x1="${at}" x2="${at}" y1="${bottom - 8}" y2="${bottom}"/><path d="M${at},${bottom - 14}l4,4l-4,4l-4,-4z"/></g>`;
  }
  const cls = mark.kind === 'handoff' ? 'handoff' : 'wake';
  const label = mark.kind === 'handoff' ? 'handoff' : esc(mark.label);
  return `<g class="mark ${cls}" data-turn="${mark.turn}"><title>${title}</title><line x1="${at}" x2="${at}" y1="${top}" y2="${bottom}"/><text x="${n(x + 4)}" y="${top + 10}">${label}</text></g>`;
}

export function markLabel(mark: HistoryMark): string {
  if (mark.kind === 'verdict') return `${mark.label} judged: ${verdictWord(mark.state)}`;
  if (mark.kind === 'handoff') return `${mark.label}: handed over to a fresh session`;
  return `${mark.label} began`;
}

/** What the tooltip of turn `i` says. */
export function turnTooltip(h: HistoryResult, i: number): string[] {
  const t = h.turns[i];
  if (!t) return [];
  const pct = h.window ? Math.round((100 * t.used) / h.window) : 0;
  const out = [
    `Turn ${i + 1} · ${t.step}`,
    `${t.used.toLocaleString('en-US')} tokens (${formatTokens(t.used)}, ${pct}% of ${formatTokens(h.window)})`,
    `${t.lane}${t.lane.includes(JUDGE) ? '' : ` · generation ${t.generation}`} · wake ${t.wake}`,
    formatTime(t.at),
  ];
  for (const mark of h.marks) if (mark.turn === i) out.push(markLabel(mark));
  return out;
}

/** One line for people above the chart. */
export function summary(h: HistoryResult): string {
  const last = h.turns[h.turns.length - 1];
  const judged = h.marks.filter((m) => m.kind === 'verdict').length;
  const handoffs = h.marks.filter((m) => m.kind === 'handoff').length;
  const parts = [
    last ? `context ${formatTokens(last.used)} of ${formatTokens(h.window)}` : 'no turns yet',
    `handoff at ${formatTokens(h.at)}`,
    `${h.turns.length} turns`,
    `${judged} judged round${judged === 1 ? '' : 's'}`,
    `${handoffs} handoff${handoffs === 1 ? '' : 's'}`,
    `${h.wakes.length} wake${h.wakes.length === 1 ? '' : 's'}`,
  ];
  if (h.live) parts.unshift('running');
  return parts.join(' · ');
}

/** Round figures from 0 up to `top`, four to eight of them: 0, 50K, 100K ... */
export function yTicks(top: number): number[] {
  const rough = top / 6;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * magnitude).find((v) => v >= rough) ?? rough;
  const out: number[] = [];
  for (let v = 0; v <= top; v += step) out.push(v);
  return out;
}

function xTicks(count: number): number[] {
  if (count <= 0) return [];
  const step = Math.max(1, Math.ceil(count / 8));
  const out: number[] = [];
  for (let i = 0; i < count; i += step) out.push(i);
  if (out[out.length - 1] !== count - 1) out.push(count - 1);
  return out;
}

function n(value: number): string {
  return (Math.round(value * 10) / 10).toString();
}

export function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
