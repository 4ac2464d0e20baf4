// The words of flower's setup, apart from VS Code so that they can be tested alone: what an
// interpreter answered when asked for flower, what a failed pip run comes down to, and the
// "Show me how" page. Their words go through @vscode/l10n (see format.ts).
import * as l10n from '@vscode/l10n';

/**
 * Asks an interpreter for its version and flower's. It runs with -P (see SAFE_PATH in python.ts),
 * which Python learnt in 3.11, flower's minimum: an older Python refuses the flag itself.
 */
export const PROBE_CODE = [
  'import json, sys',
  // In a venv, the interpreter it was made from: a new venv is made from that, never from a venv.
  'out = {"python": "%d.%d.%d" % sys.version_info[:3], "base": getattr(sys, "_base_executable", "") or sys.executable}',
  'try:',
  '    import flower, flower_lsp',
  '    out["flower"] = flower.__version__',
  'except Exception as err:',
  '    out["error"] = f"{type(err).__name__}: {err}"',
  'print(json.dumps(out))',
].join('\n');

/** How a probe's process ended. */
export interface ProbeOutput {
  /** A spawn error code such as ENOENT when the process did not run, or 'timeout'. */
  errno?: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
}

/** What one interpreter can do for flower. */
export interface ProbeResult {
  /** The interpreter's version, when it ran: "3.11.7". */
  pythonVersion?: string;
  /** The interpreter a venv would be made from: the venv's base for a venv's Python. */
  base?: string;
  /** flower's version, when flower and flower_lsp imported. */
  flower?: string;
  /** Why it cannot run this extension's flower, as the end of a sentence; undefined when it can. */
  problem?: string;
}

/** Reads a probe's output against the flower version the extension was built with. */
export function readProbe(out: ProbeOutput, expected: string): ProbeResult {
  if (out.errno === 'ENOENT') return { problem: l10n.t('was not found') };
  if (out.errno === 'EACCES') return { problem: l10n.t('is not executable') };
  if (out.errno === 'timeout') return { problem: l10n.t('did not answer within 30 s') };
  if (out.errno) return { problem: l10n.t('could not be started ({0})', out.errno) };
  if (/Unknown option: -P/.test(out.stderr))
    return { problem: l10n.t('is older than Python 3.11, and flower needs 3.11 or newer') };
  const answer = lastJsonLine(out.stdout);
  if (!answer || typeof answer.python !== 'string') {
    const said = lastLine(out.stderr) ?? lastLine(out.stdout);
    const code = String(out.exitCode);
    return {
      problem: said
        ? l10n.t('did not answer (exit code {0}: {1})', code, said)
        : l10n.t('did not answer (exit code {0})', code),
    };
  }
  const ran = {
    pythonVersion: answer.python,
    ...(typeof answer.base === 'string' && answer.base ? { base: answer.base } : {}),
  };
  if (typeof answer.flower !== 'string')
    return { ...ran, problem: l10n.t("cannot import flower's server ({0})", String(answer.error)) };
  if (answer.flower !== expected)
    return {
      ...ran,
      flower: answer.flower,
      problem: l10n.t('has flower {0}, and this extension needs {1}', answer.flower, expected),
    };
  return { ...ran, flower: answer.flower };
}

function lastJsonLine(text: string): Record<string, unknown> | undefined {
  const line = lastLine(text);
  if (!line) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function lastLine(text: string): string | undefined {
  return (
    text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .pop() ?? undefined
  );
}

// urllib3's words when a connection could not be made at all.
const UNREACHABLE =
  /Failed to establish a new connection: (\[Errno -?\d+\] [^'")]+)|(Name or service not known|Temporary failure in name resolution|Network is unreachable|Connection refused|timed out)/;

/** One sentence that says why pip failed, from its output lines (the log keeps all of them). */
export function pipFailure(lines: readonly string[], exitCode: number | null): string {
  const errors = lines.filter((l) => l.startsWith('ERROR:')).map((l) => l.slice('ERROR:'.length).trim());
  const last = errors.at(-1) ?? lastLine(lines.join('\n')) ?? l10n.t('no output');
  let text = l10n.t('pip exited with code {0}: {1}.', String(exitCode), last.replace(/\.$/, ''));
  for (const line of lines) {
    const m = UNREACHABLE.exec(line);
    if (m) {
      const why = (m[1] ?? m[2]).trim();
      text += ` ${l10n.t('pip could not reach the package index ({0}): is this machine offline, or does it need a proxy?', why)}`;
      break;
    }
  }
  return text;
}

/** A pip output line worth showing in the progress notification, shortened; undefined otherwise. */
export function pipProgress(line: string): string | undefined {
  const m =
    /^(Processing|Collecting|Downloading|Installing collected packages:|Successfully installed)\s+(.*)$/.exec(
      line.trim(),
    );
  if (!m) return undefined;
  const rest = m[2].length > 80 ? `${m[2].slice(0, 77)}...` : m[2];
  return `${m[1]} ${rest}`;
}

/** What the "Show me how" page needs to know. */
export interface GuideFacts {
  expected: string;
  /** The wheel inside the extension, when it has one. */
  wheel?: string;
  /** The managed environment's folder. */
  managedDir: string;
  /** One line per interpreter tried: "`python3` (the default): cannot import ...". */
  tried: string[];
}

/** The "Show me how" page: what flower needs, and three ways to give it. */
export function setupGuide(f: GuideFacts): string {
  const source = f.wheel ?? `flower-agents==${f.expected}`;
  const tried = f.tried.length
    ? f.tried.map((t) => `- ${t}`).join('\n')
    : `- ${l10n.t('(no interpreter was tried)')}`;
  const installed = f.wheel
    ? l10n.t('the wheel that ships inside the extension')
    : l10n.t('the package from the package index');
  // One translatable string per paragraph; commands, paths and setting names are placeholders.
  return `# ${l10n.t('Setting up flower {0} for the Flower extension', f.expected)}

${l10n.t(
  "The extension runs flower's language server with a Python interpreter (3.11 or newer) that has flower {0} installed, the version this extension was built with. None of the interpreters it looked at has it:",
  f.expected,
)}

${tried}

${l10n.t(
  "It looks, in this order, at the {0} setting, the environment it manages, the Python extension's interpreter (when that extension is installed), and {1} on the PATH.",
  '`flower.python`',
  '`python3`',
)}

## ${l10n.t('1. Let the extension manage it')}

${l10n.t(
  'Run {0} from the command palette (or pick "{1}" in the notification). The extension creates a virtual environment in its own storage:',
  `**Flower: ${l10n.t('Install flower into the Managed Environment')}**`,
  l10n.t('Install flower into an environment managed by the extension'),
)}

    ${f.managedDir}

${l10n.t(
  'and installs into it, with pip, {0} ({1}). pip fetches flower\'s dependencies from your usual package index; its output goes to the "Flower" output channel. Nothing is installed in an untrusted workspace.',
  installed,
  `\`${source}\``,
)}

## ${l10n.t('2. Install the {0} command with pipx, and point the extension at it', '`flower`')}

    pipx install ${source}

${l10n.t(
  "then set {0} to the interpreter of pipx's environment for flower, which {1} locates: {2}.",
  '`flower.python`',
  '`pipx environment --value PIPX_LOCAL_VENVS`',
  '`<that folder>/flower-agents/bin/python`',
)}

## ${l10n.t('3. Use a virtual environment of your own')}

    python3 -m venv ~/.venvs/flower
    ~/.venvs/flower/bin/python -m pip install ${source}

${l10n.t(
  'then set {0} to {1} (or pick "{2}" in the notification).',
  '`flower.python`',
  '`~/.venvs/flower/bin/python`',
  l10n.t('Choose an interpreter'),
)}

${l10n.t(
  'After any of these, the extension starts the server by itself; {0} asks again.',
  `**Flower: ${l10n.t('Restart Server')}**`,
)}
`;
}
