// The Fleet view's tree, built from what the server says of each folder's fleet (flower/fleet/runs,
// flower/fleet/show): the runs grouped by state, the ones waiting for an answer first and open,
// with their question; under a run its questions and its latest events. Pure (no `vscode`
// import): fleetView.ts maps these nodes to TreeItems, and plain Node tests read them. Words
// through @vscode/l10n (see format.ts); what the server words (a state, a note, an error) comes
// in the server's language already.
import * as l10n from '@vscode/l10n';
import { firstLine, formatTime } from './history';
import type { FleetRun, FleetRunState, FleetRunsResult, FleetShowResult } from './protocol';
import type { TreeNode } from './treeNode';

export type FleetNodeKind = 'folder' | 'group' | 'run' | 'question' | 'event' | 'more' | 'message';

export interface FleetNode extends TreeNode {
  kind: FleetNodeKind;
  /** A run node's run: its id and state (the view's actions depend on the state). */
  run?: { id: string; state: FleetRunState; question: string };
  /** Children known now; a run's are asked for when it is opened (flower/fleet/show). */
  children: FleetNode[];
}

/** The order of the groups: what needs the person first, what is over last. */
export const STATE_ORDER: readonly FleetRunState[] = [
  'waiting',
  'running',
  'queued',
  'failed',
  'finished',
  'cancelled',
];
/** What a run of each state can be asked to do: answer (waiting), cancel (not over yet). */
export const ANSWERABLE: readonly FleetRunState[] = ['waiting'];
export const CANCELLABLE: readonly FleetRunState[] = ['queued', 'running', 'waiting'];
/** How many of a run's latest events it shows. */
export const LATEST_EVENTS = 20;

const STATE_ICON: Record<FleetRunState, { id: string; color?: string }> = {
  waiting: { id: 'question', color: 'list.warningForeground' },
  running: { id: 'sync~spin', color: 'charts.blue' },
  queued: { id: 'clock' },
  failed: { id: 'error', color: 'list.errorForeground' },
  finished: { id: 'pass', color: 'testing.iconPassed' },
  cancelled: { id: 'circle-slash' },
};

function groupLabel(state: FleetRunState, count: number): string {
  switch (state) {
    case 'waiting':
      return l10n.t('Waiting for an answer ({0})', count);
    case 'running':
      return l10n.t('Running ({0})', count);
    case 'queued':
      return l10n.t('Queued ({0})', count);
    case 'failed':
      return l10n.t('Failed ({0})', count);
    case 'finished':
      return l10n.t('Finished ({0})', count);
    case 'cancelled':
      return l10n.t('Cancelled ({0})', count);
  }
}

/**
 * The nodes of one folder's fleet: a line saying why there is none (no store, unreachable, no
 * runs), else a group per state that has runs, in STATE_ORDER, the newest run first in each.
 */
export function fleetNodes(folder: string, fleet: FleetRunsResult): FleetNode[] {
  if (!fleet.configured || fleet.message)
    return [
      {
        id: `${folder}#fleet-message`,
        kind: 'message',
        folder,
        label: fleet.message,
        tooltip: fleet.message,
        icon: fleet.configured ? { id: 'error', color: 'list.errorForeground' } : { id: 'info' },
        children: [],
      },
    ];
  if (!fleet.runs.length)
    return [
      {
        id: `${folder}#fleet-empty`,
        kind: 'message',
        folder,
        label: l10n.t('No runs in the fleet at {0}', fleet.where),
        icon: { id: 'info' },
        children: [],
      },
    ];
  const groups: FleetNode[] = [];
  for (const state of STATE_ORDER) {
    const runs = fleet.runs.filter((r) => r.state === state).reverse();
    if (!runs.length) continue;
    groups.push({
      id: `${folder}#fleet-${state}`,
      kind: 'group',
      folder,
      label: groupLabel(state, runs.length),
      icon: STATE_ICON[state],
      // what is not over yet is open; the rest stays folded until asked for
      expanded: CANCELLABLE.includes(state),
      children: runs.map((r) => runNode(folder, r)),
    });
  }
  return groups;
}

/** Every folder's fleet under a node of its own (a workspace of several folders). */
export function workspaceFleetNodes(
  folders: { uri: string; name: string; fleet: FleetRunsResult | undefined }[],
): FleetNode[] {
  return folders.map((f) => ({
    id: `${f.uri}#fleet-folder`,
    kind: 'folder',
    folder: f.uri,
    label: f.name,
    description: f.fleet?.where ?? '',
    icon: { id: 'server' },
    expanded: true,
    children: f.fleet ? fleetNodes(f.uri, f.fleet) : [],
  }));
}

/** One run: what it was asked to do; its question (waiting) or its latest note beside it. */
export function runNode(folder: string, run: FleetRun): FleetNode {
  // waiting, its question answered: the run goes on once its worker reads the answer
  const beside = run.question
    ? `? ${firstLine(run.question, 80)}`
    : run.state === 'waiting'
      ? l10n.t('answered; its worker reads it next')
      : firstLine(run.note, 80);
  return {
    id: `${folder}#fleet-run-${run.id}`,
    kind: 'run',
    folder,
    label: firstLine(run.request, 60) || run.id,
    // the question (or note) first: a narrow sidebar cuts the end of a description
    description: beside ? `${beside} · ${run.id}` : run.id,
    tooltip: runTooltip(run),
    icon: STATE_ICON[run.state],
    run: { id: run.id, state: run.state, question: run.question },
    children: [],
  };
}

export function runTooltip(run: FleetRun): string {
  const lines = [
    `${run.id} · ${run.state_text}`,
    `${run.repository}@${run.ref} → ${run.branch}`,
    run.request,
  ];
  if (run.worker) lines.push(l10n.t('Worker: {0}', run.worker));
  lines.push(l10n.t('Submitted {0}, changed {1}', formatTime(run.created_at), formatTime(run.updated_at)));
  if (run.question) lines.push(l10n.t('Waits for an answer: {0}', run.question));
  else if (run.note) lines.push(run.note);
  const out = run.outcome;
  if (out?.pushed) lines.push(l10n.t('Result: branch {0} ({1})', out.branch, out.commit.slice(0, 10)));
  else if (out?.patch) lines.push(l10n.t('Result: patch {0}:{1}', out.host, out.patch));
  return lines.join('\n');
}

/**
 * What is under an opened run: its questions (with their answers), then its latest events, the
 * newest first, with a line counting the earlier ones; or why it could not be read.
 */
export function runDetailNodes(folder: string, runId: string, detail: FleetShowResult): FleetNode[] {
  const id = (suffix: string) => `${folder}#fleet-run-${runId}-${suffix}`;
  if (!detail.run)
    return [
      {
        id: id('message'),
        kind: 'message',
        folder,
        label: detail.message,
        tooltip: detail.message,
        icon: { id: 'error', color: 'list.errorForeground' },
        children: [],
      },
    ];
  const nodes: FleetNode[] = detail.questions.map((q) => ({
    id: id(`question-${q.id}`),
    kind: 'question',
    folder,
    label: firstLine(q.question, 100),
    description: q.answer ? `→ ${firstLine(q.answer, 60)}` : questionState(q.state),
    tooltip: [q.question, ...q.options.map((o) => `- ${o}`), q.answer ? `→ ${q.answer}` : '']
      .filter(Boolean)
      .join('\n'),
    icon:
      q.state === 'waiting'
        ? { id: 'question', color: 'list.warningForeground' }
        : { id: 'comment-discussion' },
    children: [],
  }));
  const latest = detail.events.slice(-LATEST_EVENTS).reverse();
  for (const [i, e] of latest.entries())
    nodes.push({
      id: id(`event-${detail.events.length - i}`),
      kind: 'event',
      folder,
      label: firstLine(e.text, 120),
      description: [formatTime(e.at), e.worker].filter(Boolean).join(' · '),
      tooltip: e.text,
      children: [],
    });
  const earlier = detail.events.length - latest.length;
  if (earlier > 0)
    nodes.push({
      id: id('more'),
      kind: 'more',
      folder,
      label: l10n.t('{0} earlier events (flower fleet show {1})', earlier, runId),
      children: [],
    });
  return nodes;
}

function questionState(state: string): string {
  switch (state) {
    case 'waiting':
      return l10n.t('waiting for your answer');
    case 'answered':
      return l10n.t('answered, not read yet');
    case 'gone':
      return l10n.t('its worker went away; an answer waits for the next one');
    case 'settled':
      return l10n.t('went on without an answer');
    default:
      return state;
  }
}
