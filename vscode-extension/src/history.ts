// The history a client holds for a folder, and how `flower/historyUpdate` changes it. Pure: no
// `vscode` import, so that plain Node tests (and the chart's webview) can use it.
import * as l10n from '@vscode/l10n';
import type { HistoryResult, HistoryTurn, HistoryUpdateParams } from './protocol';

/** What an update did: took the place of the history, added a turn, came late, or found a gap. */
export type Applied = 'replaced' | 'appended' | 'stale' | 'missed';

/**
 * Apply one update to the history held (undefined: none yet). A whole history replaces an older
 * one; a turn is appended when its revision follows the one held. `missed` means an update was
 * lost (or no history is held yet): ask `flower/history` again.
 */
export function applyUpdate(
  held: HistoryResult | undefined,
  update: HistoryUpdateParams,
): { history: HistoryResult | undefined; applied: Applied } {
  if (update.history) {
    if (held && held.revision >= update.revision) return { history: held, applied: 'stale' };
    return { history: { ...update.history, revision: update.revision }, applied: 'replaced' };
  }
  if (!update.turn || !held) return { history: held, applied: 'missed' };
  if (update.revision <= held.revision) return { history: held, applied: 'stale' };
  if (update.revision !== held.revision + 1) return { history: held, applied: 'missed' };
  return { history: withTurn(held, update.turn, update.revision), applied: 'appended' };
}

function withTurn(held: HistoryResult, turn: HistoryTurn, revision: number): HistoryResult {
  return { ...held, turns: [...held.turns, turn], revision };
}

/** A request's answer against what updates brought meanwhile: the newer of the two. */
export function newer(held: HistoryResult | undefined, answer: HistoryResult): HistoryResult {
  return held && held.revision > answer.revision ? held : answer;
}

/** $0.28, $12.40; a fraction of a cent still shows. */
export function formatCost(usd: number): string {
  if (!Number.isFinite(usd) || usd <= 0) return '$0';
  if (usd < 0.01) return `$${usd.toFixed(3)}`;
  return `$${usd.toFixed(2)}`;
}

/** 0.8s, 12s, 4m 12s, 1h 3m. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds <= 0) return '0s';
  if (seconds < 10) return `${trimZero(seconds.toFixed(1))}s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

function trimZero(text: string): string {
  return text.endsWith('.0') ? text.slice(0, -2) : text;
}

/** A verdict's state as people say it. */
export function verdictWord(state: string): string {
  if (state === 'achieved') return l10n.t('achieved');
  if (state === 'not_yet') return l10n.t('not yet');
  if (state === 'unreachable') return l10n.t('unreachable');
  return l10n.t('no conclusion');
}

/** How a question settled, as people say it. */
export function questionWord(state: string): string {
  switch (state) {
    case 'asked':
      return l10n.t('waiting for an answer');
    case 'answered':
      return l10n.t('answered');
    case 'timeout':
      return l10n.t('nobody answered');
    case 'declined':
      return l10n.t('skipped');
    case 'over_budget':
      return l10n.t('over the question budget');
    default:
      return l10n.t('empty question');
  }
}

export function firstLine(text: string | null | undefined, limit = 120): string {
  const line =
    (text ?? '')
      .split('\n')
      .find((l) => l.trim())
      ?.trim() ?? '';
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/** Local time of an epoch-seconds stamp: `2026-12-01 11:10:27`. */
export function formatTime(epoch: number): string {
  if (!epoch) return '';
  const d = new Date(epoch * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}
