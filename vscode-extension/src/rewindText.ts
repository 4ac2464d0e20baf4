// The words of Rewind here and Fork here (the Flower view's round nodes), apart from VS Code so
// that they can be tested alone: the modal confirmation built from the server's preview (the
// files that will change, the person's own edits that are kept), and its button. Words through
// @vscode/l10n (see format.ts).
import * as l10n from '@vscode/l10n';
import type { ForkResult, RewindResult } from './protocol';

/** What the modal asks, the list under it, and the button that accepts. */
export interface Confirmation {
  message: string;
  detail: string;
  accept: string;
}

/** At most this many paths per list; the rest are counted. */
export const SHOWN = 10;

function listed(title: string, paths: readonly string[]): string[] {
  if (!paths.length) return [];
  const shown = paths.slice(0, SHOWN).map((p) => `  ${p}`);
  if (paths.length > SHOWN) shown.push(`  ${l10n.t('… and {0} more', paths.length - SHOWN)}`);
  return [title, ...shown, ''];
}

/** The confirmation of a rewind, from its preview (`flower.rewind` with `preview: true`). */
export function rewindConfirmation(preview: RewindResult): Confirmation {
  const n = preview.round ?? 0;
  const { changed = [], removed = [], restored_edits = [], kept = [] } = preview;
  const changes = changed.length + removed.length + restored_edits.length;
  const lines = [
    ...listed(l10n.t('Put back as they were after round {0}:', n), changed),
    ...listed(l10n.t('Removed (made after round {0}):', n), removed),
    ...listed(l10n.t('Your own edits, put back too:'), restored_edits),
    ...listed(l10n.t('Your own edits, kept as they are:'), kept),
  ];
  if (!changes) lines.push(l10n.t('No file changes: the files are as they were after round {0}.', n), '');
  lines.push(
    l10n.t(
      "The work step's conversation goes back to the end of round {0} too; Continue goes on from there.",
      n,
    ),
  );
  return {
    message: l10n.t('Rewind to the end of round {0}?', n),
    detail: lines.join('\n'),
    accept: l10n.t('Rewind'),
  };
}

/** The confirmation of a fork, from its preview (`flower.fork` with `preview: true`). */
export function forkConfirmation(preview: ForkResult): Confirmation {
  const n = preview.round ?? 0;
  const { workspace = '', run_dir = '' } = preview;
  const lines = [
    preview.worktree
      ? l10n.t('New workspace (a git worktree): {0}', workspace)
      : l10n.t('New workspace: {0}', workspace),
    l10n.t('Its run folder: {0}', run_dir),
    '',
    ...listed(l10n.t('It gets the files as they were after round {0}:', n), preview.files ?? []),
    l10n.t('This folder and its run stay as they are.'),
  ];
  return {
    message: l10n.t('Fork a new run from the end of round {0}?', n),
    detail: lines.join('\n'),
    accept: l10n.t('Fork'),
  };
}
