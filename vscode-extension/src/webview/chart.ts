/// <reference lib="dom" />
// The context chart's page script (bundled into dist/chart.js for the webview): it holds the
// folder's history, appends the turns the extension forwards, and draws chart.ts's SVG into the
// page, with a tooltip per turn. It reports every drawing back (turns, series, marks drawn).
import { chartSvg, esc, markLabel, scales, seriesLabel, seriesOf, summary, turnTooltip } from '../chart';
import { applyUpdate } from '../history';
import type { HistoryResult, HistoryTurn } from '../protocol';

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

type Message =
  | { type: 'history'; history: HistoryResult }
  | { type: 'turn'; turn: HistoryTurn; revision: number }
  | { type: 'empty' };

const vscode = acquireVsCodeApi();
const chart = element('chart');
const legend = element('legend');
const caption = element('summary');
const tooltip = element('tooltip');
let history: HistoryResult | undefined;
let drawn = { width: 0, height: 0 };

function element(id: string): HTMLElement {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found;
}

window.addEventListener('message', (event: MessageEvent<Message>) => {
  const message = event.data;
  if (message.type === 'history') history = message.history;
  else if (message.type === 'turn' && history) {
    const next = applyUpdate(history, {
      folder: history.folder,
      revision: message.revision,
      turn: message.turn,
    });
    history = next.history;
  } else if (message.type === 'empty') history = undefined;
  draw();
});

new ResizeObserver(() => {
  if (chart.clientWidth !== drawn.width || chart.clientHeight !== drawn.height) draw();
}).observe(chart);

function draw(): void {
  const size = { width: Math.max(320, chart.clientWidth), height: Math.max(220, chart.clientHeight) };
  drawn = { width: chart.clientWidth, height: chart.clientHeight };
  if (!history || history.turns.length === 0) {
    caption.textContent = history ? summary(history) : 'No run in this folder yet.';
    chart.innerHTML = '<p class="empty">The chart fills in as the run’s turns come.</p>';
    legend.innerHTML = '';
    report(0, 0, 0, size.width);
    return;
  }
  const h = history;
  caption.textContent = summary(h);
  chart.innerHTML = chartSvg(h, size);
  const series = seriesOf(h.turns);
  legend.innerHTML = [
    ...series.map((s) => `<li><span class="swatch ${s.colour}"></span>${esc(seriesLabel(s))}</li>`),
    '<li><span class="dash window"></span>window</li>',
    '<li><span class="dash threshold"></span>handoff threshold</li>',
    '<li><span class="dash warn"></span>handoff near</li>',
  ].join('');
  const svg = chart.querySelector('svg');
  if (svg) hover(svg, h, size);
  report(h.turns.length, series.length, h.marks.length, size.width);
}

function hover(svg: SVGSVGElement, h: HistoryResult, size: { width: number; height: number }): void {
  const s = scales(h, size);
  const cursor = svg.querySelector<SVGLineElement>('line.cursor');
  svg.addEventListener('mousemove', (event) => {
    const box = svg.getBoundingClientRect();
    const i = s.nearest(event.clientX - box.left);
    const lines = turnTooltip(h, i);
    if (!lines.length) return;
    tooltip.textContent = lines.join('\n');
    tooltip.hidden = false;
    const x = box.left + s.x(i);
    const y = box.top + s.y(h.turns[i].used);
    const left = Math.min(x + 12, window.innerWidth - tooltip.offsetWidth - 8);
    tooltip.style.transform = `translate(${Math.max(4, left)}px, ${Math.max(4, y - tooltip.offsetHeight - 10)}px)`;
    if (cursor) {
      cursor.setAttribute('x1', String(s.x(i)));
      cursor.setAttribute('x2', String(s.x(i)));
      cursor.setAttribute('visibility', 'visible');
    }
    svg.querySelectorAll('circle.active').forEach((c) => {
      c.classList.remove('active');
    });
    svg.querySelector(`circle[data-turn="${i}"]`)?.classList.add('active');
  });
  svg.addEventListener('mouseleave', () => {
    tooltip.hidden = true;
    cursor?.setAttribute('visibility', 'hidden');
  });
  for (const mark of h.marks) {
    // a mark's own title says what happened there; keep it for screen readers as well
    svg.querySelector(`g.mark[data-turn="${mark.turn}"]`)?.setAttribute('aria-label', markLabel(mark));
  }
}

function report(turns: number, series: number, marks: number, width: number): void {
  vscode.postMessage({ type: 'rendered', revision: history?.revision ?? 0, turns, series, marks, width });
}

vscode.postMessage({ type: 'ready' });
