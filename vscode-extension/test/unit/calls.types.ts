// tsc's half of the typed calls (src/calls.ts): each `@ts-expect-error` below is a call the
// protocol does not allow, and tsc fails the build (`make lint`) if one of them ever compiles.
// Type-checked only: nothing here runs (the unit runner takes *.test.js files).
import type { LanguageClient } from 'vscode-languageclient/node';
import type { onNotification, onRequest, request, RunCommand } from '../../src/calls';
import {
  ASK,
  ASIDE,
  BANNER,
  CONTEXT,
  FORK,
  HISTORY,
  OPEN_DOCUMENT,
  REWIND,
  SAY,
  START,
  STATE,
  STOP,
} from '../../src/protocol';

declare const run: RunCommand;
declare const client: LanguageClient;
declare const ask: typeof request;
declare const on: typeof onNotification;
declare const answer: typeof onRequest;

export async function allowed(): Promise<void> {
  const started = await run(START, { ask: '写一个 hello.py', new: true });
  const said: string | undefined = started?.message;
  const aside = await run(ASIDE, { question: '到哪一步了?' });
  const answerText: string | undefined = aside?.answer;
  await run(STOP, {});
  const kept: string[] | undefined = (await run(REWIND, { round: 1, preview: true }))?.kept;
  const forkedTo: string | undefined = (await run(FORK, { round: 1, into: '/p/try2' }))?.workspace;
  const state = await ask(client, STATE, {});
  const steps: Record<string, string> = state.steps;
  const history = await ask(client, HISTORY, { folder: 'file:///ws' });
  on(client, CONTEXT, (p) => p.used + p.window);
  answer(client, ASK, (p) => ({ answer: p.options[0] ?? null }));
  void [said, answerText, steps, history, kept, forkedTo];
}

export async function refused(): Promise<void> {
  // @ts-expect-error: not a command of the protocol
  await run('flower.stat', {});
  // @ts-expect-error: flower.start needs its request
  await run(START, { new: true });
  // @ts-expect-error: flower.say takes `text`, not `words`
  await run(SAY, { words: 'hi' });
  // @ts-expect-error: `which` is brief, goal or handoff
  await run(OPEN_DOCUMENT, { which: 'readme' });
  // @ts-expect-error: a command takes its one argument object, not a string
  await run(STOP, 'file:///ws');
  const started = await run(START, { ask: 'x' });
  // @ts-expect-error: a CommandResult has no `answer` (that is flower.aside's AsideResult)
  void started?.answer;
  // @ts-expect-error: flower.fork needs the round to fork from
  await run(FORK, { preview: true });
  const forked = await run(FORK, { round: 2 });
  // @ts-expect-error: a ForkResult has no `kept` (that is flower.rewind's RewindResult)
  void forked?.kept;
  // @ts-expect-error: flower/state is a request, not a command
  await run(STATE, {});
  // @ts-expect-error: flower/history takes a folder URI, not a number
  await ask(client, HISTORY, { folder: 1 });
  // @ts-expect-error: flower/banner is a notification from the server, not a request to it
  await ask(client, BANNER, { folder: '', text: '' });
  // @ts-expect-error: a banner has no `used`
  on(client, BANNER, (p) => p.used);
  // @ts-expect-error: flower/ask is answered with an AskResult
  answer(client, ASK, () => ({ choice: 'yes' }));
}
