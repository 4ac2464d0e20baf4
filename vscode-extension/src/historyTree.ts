// The Flower view's tree, built from a folder's history: wake -> step -> round -> verdict (its
// failed checks as children), questions with their answers, handoffs, retries; costs and times
// as descriptions; the live step marked. Pure (no `vscode` import): the view maps these nodes to
// TreeItems, and plain Node tests read them. Words through @vscode/l10n (see format.ts).
import * as l10n from '@vscode/l10n';
import { formatTokens } from './format';
import { firstLine, formatCost, formatDuration, formatTime, questionWord, verdictWord } from './history';
import type {
  CheckState,
  HistoryEvidence,
  HistoryHandoff,
  HistoryQuestion,
  HistoryResult,
  HistoryRound,
  HistoryStep,
  HistoryVerdict,
  HistoryWake,
} from './protocol';
import type { TreeNode } from './treeNode';

export type NodeKind =
  | 'folder'
  | 'chart'
  | 'wake'
  | 'step'
  | 'round'
  | 'verdict'
  | 'failed'
  | 'evidence'
  | 'question'
  | 'handoff'
  | 'retries'
  | 'error'
  | 'empty';

export interface Node extends TreeNode {
  kind: NodeKind;
  /** What clicking it opens: a document, at a 0-based line. */
  open?: { path: string; line?: number };
  /** Whether the run it belongs to is in progress (the view's actions depend on it). */
  live?: boolean;
  /** A judged round: the number its checkpoint has, for Rewind here and Fork here. */
  checkpoint?: number;
  children: Node[];
}

const JUDGED_ICON: Record<string, { id: string; color: string }> = {
  achieved: { id: 'pass', color: 'testing.iconPassed' },
  not_yet: { id: 'warning', color: 'list.warningForeground' },
  unreachable: { id: 'error', color: 'list.errorForeground' },
  '': { id: 'warning', color: 'list.warningForeground' },
};
const LIVE_ICON = { id: 'sync~spin', color: 'charts.blue' };

/** The nodes of one folder: the context chart entry, then its wakes (the latest first). */
export function folderNodes(h: HistoryResult): Node[] {
  if (!h.wakes.length) return [];
  const nodes = [chartNode(h)];
  const numbers = checkpointNumbers(h);
  for (const wake of [...h.wakes].reverse()) nodes.push(wakeNode(h, wake, numbers));
  return nodes;
}

/**
 * The number of each judged round's checkpoint (what `flower rewind N` takes), by round: the
 * checkpoints count the judged rounds of the current line across wakes (the judge's own count
 * restarts with every wake), and the wakes after a rewind or fork go on from its round.
 */
export function checkpointNumbers(h: HistoryResult): Map<HistoryRound, number> {
  const numbers = new Map<HistoryRound, number>();
  let count = 0;
  for (const wake of h.wakes) {
    for (const branch of h.branches ?? []) if (branch.after_wake === wake.number - 1) count = branch.round;
    for (const step of wake.steps)
      for (const round of step.rounds) if (round.verdict) numbers.set(round, ++count);
  }
  return numbers;
}

/** Several folders: one node each, its history below (or what to do when it has none). */
export function workspaceNodes(folders: { uri: string; name: string; history?: HistoryResult }[]): Node[] {
  return folders.map(({ uri, name, history }) => {
    const children = history ? folderNodes(history) : [];
    const node: Node = {
      id: uri,
      kind: 'folder',
      folder: uri,
      label: name,
      description: history ? describeTotals(history) : undefined,
      icon: { id: 'root-folder' },
      expanded: true,
      live: history?.live,
      children,
    };
    if (!children.length)
      children.push({
        id: `${uri}|empty`,
        kind: 'empty',
        folder: uri,
        label: history ? l10n.t('No run in this folder') : l10n.t('Reading the history…'),
        description: history ? l10n.t('New Run starts one') : undefined,
        children: [],
      });
    return node;
  });
}

function describeTotals(h: HistoryResult): string | undefined {
  if (!h.wakes.length) return undefined;
  return [h.live ? l10n.t('running') : undefined, formatCost(h.cost_usd), formatDuration(h.duration_s)]
    .filter(Boolean)
    .join(' · ');
}

function chartNode(h: HistoryResult): Node {
  const last = h.turns[h.turns.length - 1];
  const handoffs = h.marks.filter((m) => m.kind === 'handoff').length;
  const parts = [
    last ? l10n.t('{0} of {1}', formatTokens(last.used), formatTokens(h.window)) : l10n.t('no turns yet'),
    l10n.t('{0} turns', h.turns.length),
  ];
  if (handoffs) parts.push(handoffs === 1 ? l10n.t('1 handoff') : l10n.t('{0} handoffs', handoffs));
  return {
    id: `${h.folder}|chart`,
    kind: 'chart',
    folder: h.folder,
    label: l10n.t('Context growth'),
    description: parts.join(' · '),
    tooltip: l10n.t(
      'The context after every main-thread turn, against the {0} window and the {1} handoff threshold. Click to open the chart.',
      formatTokens(h.window),
      formatTokens(h.at),
    ),
    icon: { id: 'graph-line' },
    live: h.live,
    children: [],
  };
}

function wakeNode(h: HistoryResult, wake: HistoryWake, numbers: Map<HistoryRound, number>): Node {
  const id = `${h.folder}|w${wake.number}`;
  const elsewhere = h.elsewhere && wake.number === h.wakes.length ? h.elsewhere : '';
  const stop = !wake.live && wake.stopped ? STOP_STATE[wake.stopped] : undefined;
  const state = wake.live ? 'running' : elsewhere ? 'elsewhere' : wake.ended_at ? undefined : 'unfinished';
  const stateWord = stop ? stop() : state && WAKE_STATE[state]();
  return {
    id,
    kind: 'wake',
    folder: h.folder,
    label: l10n.t('Wake {0}', wake.number),
    description: join(stateWord, formatCost(wake.cost_usd), formatDuration(wake.duration_s)),
    tooltip: lines(
      l10n.t('Started {0}', formatTime(wake.started_at)),
      wake.ended_at ? l10n.t('Ended {0}', formatTime(wake.ended_at)) : undefined,
      state === 'unfinished' ? l10n.t('Its process ended inside a step: Continue picks it up.') : undefined,
      elsewhere ? l10n.t('Working on it now: {0}', elsewhere) : undefined,
      stop && wake.stop_line ? wake.stop_line : undefined,
      l10n.t('{0} turns · run {1}', wake.num_turns, wake.run),
    ),
    icon:
      wake.live || elsewhere
        ? LIVE_ICON
        : stop
          ? STOP_ICON
          : state
            ? { id: 'debug-pause' }
            : { id: 'history' },
    expanded: wake.live || wake.number === h.wakes.length,
    live: wake.live,
    children: wake.steps.map((step, i) => stepNode(h, wake, step, `${id}|s${i}`, numbers)),
  };
}

// how a wake stopped short of its end: the states' names, as the terminal and the banner say them
const STOP_STATE: Record<string, (() => string) | undefined> = {
  budget: () => l10n.t('stopped: budget'),
  no_progress: () => l10n.t('stopped: no progress'),
};
const STOP_ICON = { id: 'debug-stop', color: 'list.warningForeground' };

const WAKE_STATE = {
  running: () => l10n.t('running'),
  elsewhere: () => l10n.t('running elsewhere'),
  unfinished: () => l10n.t('unfinished'),
};

function stepNode(
  h: HistoryResult,
  wake: HistoryWake,
  step: HistoryStep,
  id: string,
  numbers: Map<HistoryRound, number>,
): Node {
  const last = step.rounds[step.rounds.length - 1];
  const judged = step.rounds.some((r) => r.verdict);
  const flat = step.rounds.length === 1 && !judged;
  const children = flat
    ? roundChildren(h, last, `${id}|r0`)
    : step.rounds.map((r, i) => roundNode(h, r, `${id}|r${i}`, numbers.get(r)));
  return {
    id,
    kind: 'step',
    folder: h.folder,
    label: step.name,
    description: join(
      step.live ? l10n.t('running') : undefined,
      judged ? l10n.t('{0} judged', step.rounds.filter((r) => r.verdict).length) : undefined,
      formatCost(step.cost_usd),
      formatDuration(step.duration_s),
    ),
    tooltip: lines(
      l10n.t('{0} turns', step.num_turns),
      step.sessions.length
        ? step.sessions.length > 1
          ? l10n.t('Sessions: {0}', step.sessions.join(', '))
          : l10n.t('Session: {0}', step.sessions[0])
        : undefined,
    ),
    icon: step.live ? LIVE_ICON : stepIcon(last),
    expanded: step.live || (wake.live && step === wake.steps[wake.steps.length - 1]),
    live: wake.live,
    children,
  };
}

function stepIcon(last: HistoryRound | undefined): { id: string; color?: string } {
  if (!last) return { id: 'circle-outline' };
  if (last.verdict) return JUDGED_ICON[last.verdict.state] ?? JUDGED_ICON[''];
  if (last.status === 'done') return { id: 'pass', color: 'testing.iconPassed' };
  if (last.status === 'failed') return { id: 'error', color: 'list.errorForeground' };
  if (last.status === 'unfinished') return { id: 'debug-pause' };
  return LIVE_ICON;
}

function roundNode(h: HistoryResult, round: HistoryRound, id: string, checkpoint?: number): Node {
  const running = round.status === 'running';
  return {
    id,
    kind: 'round',
    folder: h.folder,
    label: l10n.t('Round {0}', round.number),
    description: join(
      running ? l10n.t('running') : round.verdict ? verdictWord(round.verdict.state) : statusWord(round),
      formatCost(round.cost_usd + (round.verdict?.cost_usd ?? 0)),
      formatDuration(round.duration_s + (round.verdict?.duration_s ?? 0)),
    ),
    tooltip: roundTooltip(round),
    icon: running ? LIVE_ICON : round.verdict ? JUDGED_ICON[round.verdict.state] : stepIcon(round),
    expanded: running,
    live: running,
    checkpoint,
    children: roundChildren(h, round, id),
  };
}

function statusWord(round: HistoryRound): string | undefined {
  if (round.status === 'failed') return l10n.t('failed');
  if (round.status === 'unfinished') return l10n.t('unfinished');
  return round.judge_error ? l10n.t('judge failed') : undefined;
}

function roundTooltip(round: HistoryRound): string {
  return lines(
    `${round.step} · ${l10n.t('{0} turns', round.num_turns)} · ${formatCost(round.cost_usd)} · ${formatDuration(round.duration_s)}`,
    round.session_id
      ? round.resumed
        ? l10n.t('Session {0} (continued)', round.session_id)
        : l10n.t('Session {0}', round.session_id)
      : undefined,
    round.retired.length ? l10n.t('Handed over from {0}', round.retired.join(', ')) : undefined,
    round.verdict
      ? l10n.t(
          'Judged {0} by {1}: {2} · {3}',
          verdictWord(round.verdict.state),
          round.verdict.step,
          formatCost(round.verdict.cost_usd),
          formatDuration(round.verdict.duration_s),
        )
      : undefined,
    l10n.t('Started {0}', formatTime(round.started_at)),
  );
}

function roundChildren(h: HistoryResult, round: HistoryRound, id: string): Node[] {
  const out: Node[] = [];
  if (round.verdict) out.push(verdictNode(h, round.verdict, `${id}|v`));
  if (round.judge_error)
    out.push(
      errorNode(h, `${id}|je`, l10n.t('Judge failed: {0}', firstLine(round.judge_error)), round.judge_error),
    );
  round.questions.forEach((q, i) => {
    out.push(questionNode(h, q, `${id}|q${i}`));
  });
  round.handoffs.forEach((handoff, i) => {
    out.push(handoffNode(h, handoff, `${id}|h${i}`));
  });
  if (round.attempts > 1) {
    const retries = round.attempts - 1;
    out.push({
      id: `${id}|retries`,
      kind: 'retries',
      folder: h.folder,
      label: retries === 1 ? l10n.t('1 retry') : l10n.t('{0} retries', retries),
      description: round.errors.length ? firstLine(round.errors[round.errors.length - 1], 80) : undefined,
      icon: { id: 'debug-restart' },
      children: round.errors.map((e, i) => errorNode(h, `${id}|e${i}`, firstLine(e), e)),
    });
  }
  if (round.error && round.status !== 'running')
    out.push(errorNode(h, `${id}|err`, firstLine(round.error), round.error));
  return out;
}

function verdictNode(h: HistoryResult, verdict: HistoryVerdict, id: string): Node {
  return {
    id,
    kind: 'verdict',
    folder: h.folder,
    label: l10n.t('Judged: {0}', verdictWord(verdict.state)),
    description: firstLine(verdict.reason, 100),
    tooltip: lines(
      verdict.reason,
      verdict.failed.length
        ? `${l10n.t('Not passed:')}\n${verdict.failed.map((f) => `- ${f.text}`).join('\n')}`
        : undefined,
    ),
    icon: JUDGED_ICON[verdict.state] ?? JUDGED_ICON[''],
    expanded: verdict.failed.length > 0,
    children: verdict.failed
      .map(
        (failed, i): Node => ({
          id: `${id}|f${i}`,
          kind: 'failed',
          folder: h.folder,
          label: failed.text,
          description: failed.line != null ? `目标.md:${failed.line + 1}` : undefined,
          tooltip: `${l10n.t('Not passed: {0}', failed.text)}\n${
            failed.line != null
              ? l10n.t('Click to open {0} at line {1}.', '目标.md', failed.line + 1)
              : l10n.t('Click to open {0}.', '目标.md')
          }`,
          icon: { id: 'close', color: 'list.errorForeground' },
          open: { path: h.goal, line: failed.line ?? undefined },
          children: [],
        }),
      )
      .concat(verdict.evidence.map((e, i) => evidenceNode(h, e, `${id}|c${i}`))),
  };
}

// a check's state in a word and an icon; the state itself is the server's (one rule for every
// front end: flower.core.goal.check_states)
const CHECK_STATE: Record<CheckState, { word: () => string; icon: { id: string; color?: string } }> = {
  passed: { word: () => l10n.t('passed'), icon: { id: 'pass', color: 'testing.iconPassed' } },
  failed: { word: () => l10n.t('not passed'), icon: { id: 'close', color: 'list.errorForeground' } },
  no_evidence: {
    word: () => l10n.t('no evidence'),
    icon: { id: 'question', color: 'list.warningForeground' },
  },
  unverifiable: { word: () => l10n.t('cannot be verified here'), icon: { id: 'circle-slash' } },
};

/** What backs a check: the command and its exit code, the file and lines read, or the search. */
export function evidenceBasis(e: HistoryEvidence): string | undefined {
  if (e.kind === 'command' && e.command)
    return l10n.t('ran {0}, exit code {1}', e.command, e.exit_code == null ? '?' : e.exit_code);
  if (e.kind === 'read' && e.path)
    return e.line != null
      ? e.end_line != null && e.end_line !== e.line
        ? l10n.t('read {0}:{1}-{2}', e.path, e.line, e.end_line)
        : l10n.t('read {0}:{1}', e.path, e.line)
      : l10n.t('read {0}', e.path);
  if (e.kind === 'search' && (e.pattern || e.path))
    return e.hits != null
      ? l10n.t('searched {0} in {1}: {2} hits', e.pattern, e.path || '.', e.hits)
      : l10n.t('searched {0} in {1}', e.pattern, e.path || '.');
  return undefined;
}

/** A read file's absolute path: evidence paths are relative to the workspace folder when inside it. */
function evidencePath(h: HistoryResult, p: string): string {
  if (p.startsWith('/')) return p;
  const root = decodeURIComponent(new URL(h.folder).pathname).replace(/\/+$/, '');
  return `${root}/${p.replace(/^\.\//, '')}`;
}

function evidenceNode(h: HistoryResult, e: HistoryEvidence, id: string): Node {
  const state = CHECK_STATE[e.state];
  const basis = evidenceBasis(e);
  const opens = e.kind === 'read' && e.backed && e.path;
  return {
    id,
    kind: 'evidence',
    folder: h.folder,
    label: e.check,
    description: join(state.word(), basis),
    tooltip: lines(
      `${state.word()}: ${e.check}`,
      basis,
      e.basis ? l10n.t("The judge's basis: {0}", e.basis.trim()) : undefined,
      e.excerpt.trim() ? e.excerpt.trim() : undefined,
      opens ? l10n.t('Click to open {0}', e.path) : undefined,
    ),
    icon: state.icon,
    open: opens
      ? { path: evidencePath(h, e.path), line: e.line != null ? e.line - 1 : undefined }
      : e.check_line != null
        ? { path: h.goal, line: e.check_line }
        : undefined,
    children: [],
  };
}

function questionNode(h: HistoryResult, q: HistoryQuestion, id: string): Node {
  const waiting = q.state === 'asked';
  return {
    id,
    kind: 'question',
    folder: h.folder,
    label: firstLine(q.question, 100) || l10n.t('(empty question)'),
    description: q.state === 'answered' ? `→ ${firstLine(q.answer, 80)}` : questionWord(q.state),
    tooltip: lines(
      q.question,
      q.options.length ? l10n.t('Options: {0}', q.options.join(' / ')) : undefined,
      q.state === 'answered'
        ? l10n.t('Answer: {0}', q.answer)
        : `${questionWord(q.state)}${q.answer ? `: ${q.answer}` : ''}`,
      q.waited_s != null
        ? l10n.t('Asked {0}, waited {1}', formatTime(q.asked_at), formatDuration(q.waited_s))
        : l10n.t('Asked {0}', formatTime(q.asked_at)),
    ),
    icon: waiting ? { id: 'question', color: 'list.warningForeground' } : { id: 'comment-discussion' },
    live: waiting,
    children: [],
  };
}

function handoffNode(h: HistoryResult, handoff: HistoryHandoff, id: string): Node {
  const name = handoff.path ? handoff.path.split('/').pop() : undefined;
  return {
    id,
    kind: 'handoff',
    folder: h.folder,
    label: l10n.t('Handoff → generation {0}', handoff.generation || '?'),
    description: join(
      l10n.t('at {0}', formatTokens(handoff.used)),
      handoff.degraded ? l10n.t('degraded') : undefined,
      name,
    ),
    tooltip: lines(
      handoff.successor
        ? l10n.t(
            '{0} handed over to {1} at {2} tokens ({3})',
            handoff.retired,
            handoff.successor,
            formatTokens(handoff.used),
            formatTime(handoff.at),
          )
        : l10n.t(
            '{0} handed over at {1} tokens ({2})',
            handoff.retired,
            formatTokens(handoff.used),
            formatTime(handoff.at),
          ),
      handoff.degraded
        ? l10n.t('The session could not write it: flower assembled it (degraded).')
        : undefined,
      handoff.path ? l10n.t('Click to open {0}', handoff.path) : l10n.t('Its document is no longer on disk.'),
    ),
    icon: { id: 'arrow-swap', color: handoff.degraded ? 'list.warningForeground' : undefined },
    open: handoff.path ? { path: handoff.path } : undefined,
    children: [],
  };
}

function errorNode(h: HistoryResult, id: string, label: string, tooltip: string): Node {
  return {
    id,
    kind: 'error',
    folder: h.folder,
    label,
    tooltip,
    icon: { id: 'error', color: 'list.errorForeground' },
    children: [],
  };
}

function join(...parts: (string | undefined)[]): string {
  return parts.filter((p) => p).join(' · ');
}

function lines(...parts: (string | undefined)[]): string {
  return parts.filter((p) => p).join('\n');
}
