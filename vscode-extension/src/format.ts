// Pure text helpers: no `vscode` import, so that plain Node tests can run them. Their words go
// through @vscode/l10n, which activate() loads with the extension's bundle for VS Code's language.
import * as l10n from '@vscode/l10n';
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
  const used = `Flower ${formatTokens(ctx.used)} / ${formatTokens(ctx.window)}`;
  return ctx.handing_off ? l10n.t('{0} (handing off)', used) : used;
}

/** Tooltip lines: what the context is and where the run stands. */
export function meterTooltip(ctx: ContextParams | undefined): string {
  if (!ctx) return l10n.t('Flower: no run has reported its context yet. Click for the context chart.');
  const pct = ctx.window > 0 ? Math.round((100 * ctx.used) / ctx.window) : 0;
  const lines = [
    l10n.t(
      'Context: {0} of {1} tokens ({2}%)',
      ctx.used.toLocaleString('en-US'),
      ctx.window.toLocaleString('en-US'),
      pct,
    ),
  ];
  const where: string[] = [];
  if (ctx.step) where.push(l10n.t('step {0}', ctx.step));
  if (ctx.round) where.push(l10n.t('round {0}', ctx.round));
  if (ctx.generation) where.push(l10n.t('generation {0}', ctx.generation));
  if (where.length) lines.push(where.join(' · '));
  if (ctx.cost_usd != null) lines.push(l10n.t('Cost so far: {0}', `$${ctx.cost_usd.toFixed(2)}`));
  if (ctx.handing_off) lines.push(l10n.t('Handing off to a fresh session.'));
  else if (ctx.near)
    lines.push(
      l10n.t('Near the handoff threshold: a fresh session takes over at {0}.', formatTokens(ctx.at)),
    );
  lines.push(l10n.t('Click for the context chart.'));
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

const yesNo = (b: boolean) => (b ? l10n.t('yes') : l10n.t('no'));

/** The `flower/state` answer as a Markdown page. */
export function renderState(s: StateResult | undefined): string {
  if (!s)
    return `# ${l10n.t('Flower state')}\n\n_${l10n.t('The language server has not reported a state yet.')}_\n`;
  const row = (label: string, value: string) => `- **${label}**: ${value}`;
  const out = [`# ${l10n.t('Flower state: {0}', s.workspace)}`, ''];
  const where = s.step
    ? s.total
      ? l10n.t(' (step {0}, {1} of {2})', s.step, s.index, s.total)
      : l10n.t(' (step {0})', s.step)
    : '';
  out.push(row(l10n.t('Running'), `${yesNo(s.running)}${where}`));
  if (s.round) out.push(row(l10n.t('Round'), String(s.round)));
  out.push(row(l10n.t('Generation'), String(s.generation)));
  const threshold = s.handing_off
    ? l10n.t(' (handing off)')
    : s.near
      ? l10n.t(' (near the handoff threshold)')
      : '';
  out.push(row(l10n.t('Context'), `${formatTokens(s.used)} / ${formatTokens(s.window)}${threshold}`));
  out.push(row(l10n.t('Cost'), `$${(s.cost_usd ?? 0).toFixed(2)}`));
  const woken = s.woke === 1 ? l10n.t('woken 1 time') : l10n.t('woken {0} times', s.woke);
  out.push(row(l10n.t('Can be continued'), `${yesNo(s.waking)}; ${woken}`));
  out.push(row(l10n.t('Brief'), s.brief));
  out.push(row(l10n.t('Goal'), `${s.goal}${s.checks ? l10n.t(' ({0} checks)', s.checks) : ''}`));
  out.push(row(l10n.t('Run directory'), s.run_dir));
  if (s.verdict) {
    const v = s.verdict;
    const heading = l10n.t('Last verdict (round {0}): {1}', v.round, v.state || l10n.t('no conclusion'));
    out.push('', `## ${heading}`, '', v.reason || '');
    for (const f of v.failed) out.push(`- [ ] ${f}`);
  }
  if (s.pending?.length) {
    out.push('', `## ${l10n.t('Questions waiting')}`, '');
    for (const q of s.pending)
      out.push(`- ${q.question}${q.options.length ? ` (${q.options.join(' / ')})` : ''}`);
  }
  const steps = Object.entries(s.steps ?? {});
  if (steps.length) {
    out.push('', `## ${l10n.t('Sessions')}`, '');
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
  const cost = `$${(result.cost_usd ?? 0).toFixed(4)}`;
  return l10n.t('Flower, aside ({0}, the run was not disturbed): {1}', cost, shown);
}

/** A limit's wait, as its event's payload carries it (engine LimitWait). */
export interface LimitWaitPayload {
  phase: 'wait' | 'resumed';
  limit: string;
  until: number; // epoch seconds
}

/** The limit's wait in an event of the run's log, if the event is one. */
export function limitWaitOf(ev: EventParams): LimitWaitPayload | undefined {
  const p = ev.payload as Record<string, unknown>;
  if (ev.kind !== 'retry' || p.subtype !== 'limit') return undefined;
  if ((p.phase !== 'wait' && p.phase !== 'resumed') || typeof p.until !== 'number') return undefined;
  return { phase: p.phase, limit: String(p.limit ?? ''), until: p.until };
}

/** `1:02:05`, `4:59`, `0:07`: what is left of a wait, rounded up to the second. */
export function formatCountdown(seconds: number): string {
  const total = Math.max(0, Math.ceil(seconds));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** The status bar while a run waits for a limit: `Flower: usage limit · resumes in 4:59`. */
export function countdownText(wait: LimitWaitPayload, nowSeconds: number): string {
  const left = formatCountdown(wait.until - nowSeconds);
  if (wait.limit === 'usage') return l10n.t('$(clock) Flower: usage limit · resumes in {0}', left);
  if (wait.limit === 'rate') return l10n.t('$(clock) Flower: rate limited · resumes in {0}', left);
  return l10n.t('$(clock) Flower: model overloaded · resumes in {0}', left);
}
