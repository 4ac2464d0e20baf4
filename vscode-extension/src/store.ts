// The editor's `flower.store`: a shared session store's URL. The language server gets the URL
// in its initializationOptions without the password (LSP traces log those options in full);
// the password travels in the server process's environment as PGPASSWORD, where libpq finds it.

export interface StoreSetting {
  /** the URL with no password in it: what initializationOptions carries */
  url: string;
  /** the password the URL held, for PGPASSWORD; undefined when it held none */
  password?: string;
}

const SCHEME = /^postgres(?:ql)?:\/\//i;

/** The setting split into what may be sent and shown, and the secret; undefined when unset. */
export function splitStore(raw: string | undefined): StoreSetting | undefined {
  const text = (raw ?? '').trim();
  if (!text) return undefined;
  const scheme = SCHEME.exec(text)?.[0];
  if (scheme === undefined) return { url: text }; // the server says what is wrong with it
  const afterScheme = text.slice(scheme.length);
  const end = afterScheme.search(/[/?#]/);
  const authority = end < 0 ? afterScheme : afterScheme.slice(0, end);
  const rest = end < 0 ? '' : afterScheme.slice(end);
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at < 0 || colon < 0 || colon > at) return { url: text };
  const user = authority.slice(0, colon);
  const password = safeDecode(authority.slice(colon + 1, at));
  return { url: `${scheme}${user}@${authority.slice(at + 1)}${rest}`, password };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
