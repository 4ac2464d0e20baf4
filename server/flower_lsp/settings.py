"""The server's options: `initializationOptions` at start, then `workspace/didChangeConfiguration`
(`settings.flower`, a whole InitOptions object) while it runs. Every option applies from the next
run of its folder, so a change never needs a restart; a run in progress keeps the options it
started with. The server says what changed, where, and when it takes effect."""

from __future__ import annotations

import dataclasses

from lsprotocol import types

from flower.base.i18n import _
from flower.stores.urls import redact_url

from . import protocol as p
from . import wire
from .common import Folder
from .host import Feature, FlowerServer
from .runs import Runs


def read_options(value: object, where: str) -> p.InitOptions:
    """InitOptions from a client's JSON; raises ProtocolError with what is wrong and where."""
    options = wire.from_json(p.InitOptions, value, where)
    for uri, own in options.folders.items():
        if own.folders:
            raise wire.ProtocolError(f"{where}.folders.{uri}: a folder's options cannot name folders")
    return options


def changes(old: p.InitOptions, new: p.InitOptions) -> list[str]:
    """`name: old -> new` for every option (but `folders`) that differs."""
    out = []
    for f in dataclasses.fields(p.InitOptions):
        if f.name == "folders":
            continue
        before, after = getattr(old, f.name), getattr(new, f.name)
        if before != after:
            if f.name == "store":  # a URL's password never reaches a message
                before, after = (redact_url(v) if isinstance(v, str) else v for v in (before, after))
            out.append(f"{f.name}: {_shown(before)} -> {_shown(after)}")
    return out


def _shown(value: object) -> str:
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


class Settings(Feature):
    def register(self) -> None:
        @self.server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
        def did_change_configuration(ls: FlowerServer, params: types.DidChangeConfigurationParams) -> None:
            self.changed(params.settings)

    def changed(self, settings: object) -> None:
        if not isinstance(settings, dict) or p.SETTINGS_SECTION not in settings:
            return  # another tool's section, or a client that pushes nothing of ours
        where = f"settings.{p.SETTINGS_SECTION}"
        try:
            new = read_options(settings[p.SETTINGS_SECTION], where)
        except wire.ProtocolError as exc:
            self.server.client.show(
                _("flower:新的设置不生效,沿用旧的({error})").format(error=exc),
                types.MessageType.Warning,
            )
            return
        before = {f.uri: self.server.options_for(f.uri) for f in self.server.folders()}
        self.server.options = new
        for folder in self.server.folders():
            old = before.get(folder.uri)
            diff = changes(old, self.server.options_for(folder.uri)) if old is not None else []
            if diff:
                self.server.client.log(self.applied(folder, diff), types.MessageType.Info)

    def applied(self, folder: Folder, diff: list[str]) -> str:
        line = _("flower:{folder} 的设置改了({changes}):即时生效,从下一个运行起").format(
            folder=folder.name, changes="; ".join(diff)
        )
        if self.server.get(Runs).active.get(folder.uri) is not None:
            line += "; the run in progress keeps the settings it started with"
        return line
