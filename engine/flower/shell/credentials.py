"""Which file names hold credentials.

A glance never prints the content of such a file. Names are compared case-insensitively
(macOS and Windows file systems are), as whole path components:

- environment files: ``.env``, ``.env.*``, ``*.env``, ``.envrc``;
- credential stores and their folders: ``.ssh``, ``.aws``, ``.gnupg``, ``.kube``, ``.docker``,
  ``.azure``, ``gcloud``, ``.netrc``, ``.git-credentials``, ``.npmrc``, ``.pypirc``, ``.pgpass``,
  ``credentials`` and ``secrets`` (bare, or as data files: ``credentials.json``, ``secrets.yaml``,
  ...; ``credentials.py`` is code), ...;
- private keys and keystores: ``id_rsa*``, ``id_ed25519*``, ... and ``*.pem``, ``*.key``,
  ``*.p12``, ``*.pfx``, ``*.jks``, ``*.jceks``, ``*.bks``, ``*.keystore``, ``*.keychain``,
  ``*.ppk``, ``*.kdbx``, ``*.gpg``; cloud service accounts and OAuth clients
  (``service-account*``, ``client_secret*``);
- data files named for what they hold: ``token.json``, ``api_keys.yaml``, ``passwords.txt``,
  ``auth.json``, ``sftp-config.json``, ...;
- infrastructure state: ``*.tfvars``, ``*.tfstate``;
- git's own configuration inside a ``.git`` folder (``config``, ``config.worktree``): it holds
  remote URLs with tokens and ``http.extraHeader`` authorisations.
"""

from __future__ import annotations

from collections.abc import Sequence

_NAMES = frozenset(
    {
        ".env",
        ".envrc",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pypirc",
        ".pgpass",
        ".my.cnf",
        ".htpasswd",
        ".vault-token",
        ".boto",
        ".s3cfg",
        ".dockercfg",
        ".terraformrc",
        "terraform.rc",
        ".ssh",
        ".aws",
        ".gnupg",
        ".kube",
        ".docker",
        ".azure",
        "gcloud",
        ".password-store",
        ".credentials",
        "credentials",
        ".secrets",
        "secrets",
        "kubeconfig",
        "application_default_credentials.json",
        "auth.json",
        "sftp-config.json",
        ".ftpconfig",
        ".git-credential-cache",
    }
)
_PREFIXES = (
    ".env.",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "client_secret",
    "service-account",
    "service_account",
)
# `credentials.json` or `secrets.yaml` hold secrets; `credentials.py` is code about them.
_STEMS = (
    "credentials",
    ".credentials",
    "secrets",
    ".secrets",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api_keys",
    "password",
    "passwords",
)
_DATA = (".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".txt", ".xml", ".properties", ".csv")
_SUFFIXES = (
    ".env",
    ".pem",
    ".key",
    ".p12",
    ".pfx",
    ".jks",
    ".keystore",
    ".ppk",
    ".kdbx",
    ".gpg",
    ".tfvars",
    ".tfstate",
    ".tfstate.backup",
    ".jceks",
    ".bks",
    ".keychain",
    ".keychain-db",
)


def credential_name(name: str) -> bool:
    """Whether one path component names a credential file or folder."""
    n = name.casefold()
    if n in _NAMES or n.startswith(_PREFIXES) or n.endswith(_SUFFIXES):
        return True
    stem, dot, rest = n.rpartition(".")
    return bool(dot) and stem in _STEMS and "." + rest in _DATA


def credential_path(parts: Sequence[str]) -> bool:
    """Whether a path, given as its components, names a credential file or lies in such a folder."""
    folded = [p.casefold() for p in parts]
    for k, part in enumerate(folded):
        if credential_name(part):
            return True
        if part == ".git" and any(later.startswith("config") for later in folded[k + 1 :]):
            return True
    return False
