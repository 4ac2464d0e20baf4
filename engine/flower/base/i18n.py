"""The language flower speaks to a person: gettext, with the seeds' Chinese texts as message ids.

Chinese is the identity (gettext.NullTranslations), so Chinese output is the seeds' wording by
construction; English comes from the compiled catalogue in flower/locale. Only what a person
reads goes through here: file names, section headings, step names and everything fed to the
model never do (docs/i18n.md has the rule).

Module-level texts are marked with `N_` (extracted, not translated at import time) and
translated where they are shown with `_`, so a language chosen after import still applies.
"""

from __future__ import annotations

import gettext
import os
from collections.abc import Mapping
from pathlib import Path

DOMAIN = "flower"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
CHINESE = "zh"
ENGLISH = "en"
LANGUAGES = (CHINESE, ENGLISH)
DEFAULT = CHINESE  # the seeds' language: unset, C, POSIX and unknown locales all land here
LANGUAGE_VAR = "FLOWER_LANG"
# the POSIX order: the first of these that is set decides the process locale's language
LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")

_translations: gettext.NullTranslations = gettext.NullTranslations()
_language = DEFAULT


def normalize(tag: str | None) -> str | None:
    """The language of a locale or language tag: `en`, `en_US.UTF-8`, `en-GB` -> "en";
    `zh`, `zh_CN`, `zh-cn`, `zh-Hans` -> "zh"; None for anything else (C, POSIX, fr_FR, "")."""
    if not tag:
        return None
    head = tag.strip().split(".", 1)[0].split("@", 1)[0].replace("-", "_").split("_", 1)[0].lower()
    return head if head in LANGUAGES else None


def language_from_environment(env: Mapping[str, str] | None = None) -> str:
    """The terminal's language: FLOWER_LANG if it names one, else the process locale
    (LC_ALL > LC_MESSAGES > LANG, the first one set decides), else Chinese."""
    env = os.environ if env is None else env
    chosen = normalize(env.get(LANGUAGE_VAR))
    if chosen:
        return chosen
    for var in LOCALE_VARS:
        if env.get(var):
            return normalize(env[var]) or DEFAULT
    return DEFAULT


def language_for_client(locale: str | None, env: Mapping[str, str] | None = None) -> str:
    """The language server's language: FLOWER_LANG, else the editor's display language (the
    client's InitializeParams.locale), else the process locale, else Chinese."""
    env = os.environ if env is None else env
    return normalize(env.get(LANGUAGE_VAR)) or normalize(locale) or language_from_environment(env)


def set_language(language: str) -> None:
    """Speak `language` ("zh" or "en") from now on, in this whole process."""
    global _translations, _language
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}: flower speaks {', '.join(LANGUAGES)}")
    if language == CHINESE:
        _translations = gettext.NullTranslations()
    else:
        # no fallback: a wheel without its catalogue is a packaging bug, not a reason to switch language
        _translations = gettext.translation(DOMAIN, LOCALE_DIR, languages=[language])
    _language = language


def language() -> str:
    """The language flower speaks now."""
    return _language


def _(message: str) -> str:
    """`message` (the Chinese text) in the active language."""
    return _translations.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of a counted message for `n` in the active language (Chinese has one form)."""
    return _translations.ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a text for the catalogue without translating it: translate it with `_` where shown."""
    return message
