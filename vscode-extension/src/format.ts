// Pure text helpers: no `vscode` import, so that plain Node tests can run them.
import type { AsideResult, ContextParams, EventParams, StateResult } from './protocol';

/** 80200 -> "80.2K", 1000000 -> "1M", 512 -> "512". */
export function formatTokens(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '?';
  if (n < 1000) return String(Math.round(n));
  const scaled = (value: number, unit: string) => `${trimZero(value.toFixed(1))}${unit}`;
  const k = n / 1000;
  // 999,960 would round to "1000.0K": say 1M instead.
  if (Number(k.toFixed(1)) < 1000) return scaled(k, 'K');
  return scaled(n / 1_000_000, 'M');
}

function trimZero(s: string): string {
  return s.endsWith('.0') ? s.slice(0, -2) : s;
}

export function meterText(ctx: ContextParams | undefined): string {
  if (!ctx) return 'Flower';
  if (ctx.handing_off) return `Flower ${formatTokens(ctx.used)} / ${formatTokens(ctx.window)} (handing off)`;
  return `Flower ${formatTokens(ctx.used)} / ${formatTokens(ctx.window)}`;
}

/** Tooltip lines: what the context is and where the run stands. */
export function meterTooltip(ctx: ContextParams | undefined): string {
  if (!ctx) return 'Flower: no run has reported its context yet. Click for the context chart.';
  const pct = ctx.window > 0 ? Math.round((100 * ctx.used) / ctx.window) : 0;
  const lines = [
    `Context: ${ctx.used.toLocaleString('en-US')} of ${ctx.window.toLocaleString('en-US')} tokens (${pct}%)`,
  ];
  const where: string[] = [];
  if (ctx.step) where.push(`step ${ctx.step}`);
  if (ctx.round) where.push(`round ${ctx.round}`);
  if (ctx.generation) where.push(`generation ${ctx.generation}`);
  if (where.length) lines.push(where.join(' · '));
  if (ctx.cost_usd != null) lines.push(`Cost so far: $${ctx.cost_usd.toFixed(2)}`);
  if (ctx.handing_off) lines.push('Handing off to a fresh session.');
  else if (ctx.near)
    lines.push(`Near the handoff threshold: a fresh session takes over at ${formatTokens(ctx.at)}.`);
  lines.push('Click for the context chart.');
  return lines.join('\n\n');
}

export type LogLevel = 'info' | 'warn' | 'error';

/** One line of the event log, and how loud it is. */
export function eventLine(ev: EventParams): { level: LogLevel; line: string } {
  const payload = ev.payload ?? {};
  let level: LogLevel = 'info';
  if (ev.kind === 'error' || (ev.kind === 'run' && payload.phase === 'failed')) level = 'error';
  else if (ev.kind === 'retry' || ev.kind === 'handoff') level = 'warn';
  else if (ev.kind === 'verdict' && payload.state !== 'achieved') level = 'warn';
  return { level, line: `[${ev.kind}] ${ev.text ?? ''}`.trimEnd() };
}

const yesNo = (b: boolean) => (b ? 'yes' : 'no');

/** The `flower/state` answer as a Markdown page. */
export function renderState(s: StateResult | undefined): string {
  if (!s) return '# Flower state\n\n_The language server has not reported a state yet._\n';
  const out = [`# Flower state: ${s.workspace}`, ''];
  out.push(
    `- **Running**: ${s.running ? 'yes' : 'no'}${s.step ? ` (step ${s.step}${s.total ? `, ${s.index} of ${s.total}` : ''})` : ''}`,
  );
  if (s.round) out.push(`- **Round**: ${s.round}`);
  out.push(`- **Generation**: ${s.generation}`);
  out.push(
    `- **Context**: ${formatTokens(s.used)} / ${formatTokens(s.window)}${s.handing_off ? ' (handing off)' : s.near ? ' (near the handoff threshold)' : ''}`,
  );
  out.push(`- **Cost**: $${(s.cost_usd ?? 0).toFixed(2)}`);
  out.push(`- **Can be continued**: ${yesNo(s.waking)}; woken ${s.woke} time${s.woke === 1 ? '' : 's'}`);
  out.push(`- **Brief**: ${s.brief}`);
  out.push(`- **Goal**: ${s.goal}${s.checks ? ` (${s.checks} checks)` : ''}`);
  out.push(`- **Run directory**: ${s.run_dir}`);
  if (s.verdict) {
    const v = s.verdict;
    out.push('', `## Last verdict (round ${v.round}): ${v.state || 'no conclusion'}`, '', v.reason || '');
    for (const f of v.failed) out.push(`- [ ] ${f}`);
  }
  if (s.pending?.length) {
    out.push('', '## Questions waiting', '');
    for (const q of s.pending)
      out.push(`- ${q.question}${q.options.length ? ` (${q.options.join(' / ')})` : ''}`);
  }
  const steps = Object.entries(s.steps ?? {});
  if (steps.length) {
    out.push('', '## Sessions', '');
    for (const [step, session] of steps) out.push(`- ${step}: \`${session}\``);
  }
  const page = out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
  return `${page}\n`;
}

/** Quick-pick rows for a question: the options, and the typed text first when free text is allowed. */
export function answerRows(
  options: readonly string[],
  typed: string,
  freeText: boolean,
): { label: string; custom: boolean }[] {
  const rows = options.map((label) => ({ label, custom: false }));
  const text = typed.trim();
  if (freeText && text && !options.includes(text)) rows.unshift({ label: text, custom: true });
  return rows;
}

/** Longest answer a notification shows; the whole one is always in the Flower log. */
export const ASIDE_SHOWN = 400;

/** What the notification says of a side question's answer: its cost, then the answer. */
export function asideText(result: AsideResult): string {
  const answer = (result.answer ?? '').trim().replace(/\s*\n\s*/g, ' ');
  const shown = answer.length > ASIDE_SHOWN ? `${answer.slice(0, ASIDE_SHOWN - 1)}…` : answer;
  return `Flower, aside ($${(result.cost_usd ?? 0).toFixed(4)}, the run was not disturbed): ${shown}`;
}
