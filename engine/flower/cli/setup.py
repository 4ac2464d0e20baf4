"""`flower setup`: ask for a key and a gateway, keep them in <workspace>/.env, check them."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..base.files import write_bytes
from ..base.i18n import N_, _
from ..base.loop import run_to_end
from ..core import probe
from .builders import workspace_of
from .credentials import CREDENTIAL_KEYS, mask
from .problems import EnvFileError, check_env_file, unwritable
from .terminal import CANCELLED, LineSource, Screen, read_typed_line

ENV_HEADER = "# flower 的凭证(由 `flower setup` 写)。别提交进版本库。"
NOT_SAVED = N_(
    "x 没能把凭证存进 {path}:{reason}\n"
    "  刚才输入的 key 没有存下来(也没有显示在任何地方)。让 flower 读到它,任选一种:\n"
    "  - 修好 {path} 的权限后重跑 flower setup;\n"
    "  - 在你跑 flower 的目录的 .env 里写一行 {key}=<你的 key>(用 -w 指过去的工作区也行);\n"
    "  - 或者只在这个终端里:export {key}=<你的 key>"
)


def read_env_file(path: Path) -> dict[str, str]:
    from dotenv import dotenv_values

    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def write_env_file(path: Path, updates: dict[str, str | None]) -> None:
    """Set (or, with None, remove) keys in a .env, keeping every other line as it was; 0600."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else [ENV_HEADER]
    done: set[str] = set()
    out: list[str] = []
    for line in lines:
        key = line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith("#") else None
        if key in updates:
            if key in done:
                continue
            done.add(key)
            value = updates[key]
            if value is not None:
                out.append(f"{key}={value}")
            continue
        out.append(line)
    for key, value in updates.items():
        if key not in done and value is not None:
            out.append(f"{key}={value}")
    # the one write path, unredacted: this file is where the credential is meant to be
    write_bytes(path, ("\n".join(out) + "\n").encode("utf-8"), mode=0o600)


def credential_updates(token: str, base_url: str, current: dict[str, str]) -> dict[str, str | None]:
    """What `setup` writes for what the person typed. Blank keeps what is there; "-" as the
    address removes it (back to the public API). An `sk-ant-` key is an API key, anything
    else a gateway token; the other of the two is removed so they can never disagree."""
    updates: dict[str, str | None] = {}
    token = token.strip()
    if token:
        if token.startswith("sk-ant-"):
            updates["ANTHROPIC_API_KEY"], updates["ANTHROPIC_AUTH_TOKEN"] = token, None
        else:
            updates["ANTHROPIC_AUTH_TOKEN"], updates["ANTHROPIC_API_KEY"] = token, None
    base_url = base_url.strip()
    if base_url == "-":
        updates["ANTHROPIC_BASE_URL"] = None
    elif base_url:
        updates["ANTHROPIC_BASE_URL"] = base_url.rstrip("/")
    return updates


def setup_command(
    args: argparse.Namespace, *, screen: Screen | None = None, source: LineSource | None = None
) -> int:
    screen = screen or Screen()
    source = source or LineSource()
    try:
        ws = workspace_of(args)
    except OSError as exc:
        screen.say(unwritable(exc, args.workspace), err=True)
        return 1
    from ..core.envfile import user_env_file

    path = user_env_file() if getattr(args, "user", False) else ws / ".env"
    try:
        for warning in check_env_file(path) if path.is_file() else []:
            screen.say(warning, err=True)
    except EnvFileError as exc:
        screen.say(str(exc), err=True)
        return 1
    current = read_env_file(path)
    if not args.check:
        cannot = _cannot_write(path)
        if cannot:  # say so before the key is typed, not after
            screen.say(cannot, err=True)
            return 1
        screen.say(_("== 配置 flower ") + "=" * 40)
        where = (
            _("凭证会存到 {path}(只你可读)。flower 在每个工作区都读它(工作区自己的 .env 优先)。")
            if getattr(args, "user", False)
            else _("凭证会存到 {path}(只你可读)。flower 在这个目录里跑时读它。")
        )
        screen.say(where.format(path=path))
        token, base_url = _ask_credentials(source, screen, current)
        if token is None:
            screen.say(_(CANCELLED), err=True)
            return 1
        updates = credential_updates(token, base_url, current)
        if updates:
            try:
                write_env_file(path, updates)
            except OSError as exc:
                key = next((k for k in CREDENTIAL_KEYS if updates.get(k)), CREDENTIAL_KEYS[0])
                screen.say(_(NOT_SAVED).format(path=path, reason=exc.strerror or exc, key=key), err=True)
                return 1
            screen.say(_("+ 存好了:{path}").format(path=path))
        else:
            screen.say(_(". 什么都没改"))
    return _check_setup(screen, ws, path)


def _cannot_write(path: Path) -> str:
    """Why `path` (a .env) cannot be written, or ""."""
    if path.exists() and not path.is_file():
        return unwritable(IsADirectoryError(21, _("它不是文件"), str(path)), path)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:  # --user: made on the first write
        folder = folder.parent
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return unwritable(PermissionError(13, _("没有写权限"), str(path)), path)
    return ""


def _ask_credentials(source: LineSource, screen: Screen, current: dict[str, str]) -> tuple[str | None, str]:
    have = next((current[k] for k in CREDENTIAL_KEYS if current.get(k)), "")
    keep = (
        _("直接回车 = 保留现有的 {have}").format(have=mask(have))
        if have
        else _("Anthropic 官方的 sk-ant-… 或网关签发的 token")
    )
    url = current.get("ANTHROPIC_BASE_URL", "")
    keep_url = (
        _("直接回车 = 保留 {url};- = 清掉,用 Anthropic 官方").format(url=url)
        if url
        else _("直接回车 = Anthropic 官方")
    )
    screen.say(_("\n1. 你的 API key 或网关 token ({keep};输入不回显)").format(keep=keep))
    if source.tty:
        import getpass

        try:
            token = getpass.getpass("   > ")
            screen.say(_("\n2. 网关地址 ({keep_url})").format(keep_url=keep_url))
        except (KeyboardInterrupt, EOFError):
            return None, ""
        typed = read_typed_line(source, screen, "   > ")
        if typed is None:
            return None, ""
        base_url = typed
    else:
        token = source.read_line() or ""
        screen.say(_("\n2. 网关地址 ({keep_url})").format(keep_url=keep_url))
        base_url = source.read_line() or ""
    if not token.strip() and not have:
        screen.say(_("没给 token,取消。"), err=True)
        return None, ""
    return token, base_url


PROBE_SAYS = {
    probe.WORKING: N_("+ 凭证能用:{url} 用模型 {model} 答了"),
    probe.BAD_KEY: N_(
        "x 401 key 不对:{url} 不认这个凭证。重跑 flower setup 输入正确的 key(网关要它签发的 token)"
    ),
    probe.FORBIDDEN: N_(
        "x 403 没有权限:{detail}。这个 key 有效,但它的账户或网关不许它用这个接口,去那边开权限"
    ),
    probe.WRONG_URL: N_(
        "x 404 地址不对:{url} 不是 Messages API。ANTHROPIC_BASE_URL 填网关的根地址(不带 /v1)"
    ),
    probe.WRONG_MODEL: N_(
        "x 模型不存在:{url} 没有 {model}({detail})。把 ANTHROPIC_MODEL 设成网关提供的模型名"
    ),
    probe.LIMITED: N_(
        "! 429 被限流:key 被接受了,但现在用不了({detail})。等限额恢复再跑,或者查账户的用量上限"
    ),
    probe.SERVER: N_("! {status} 服务端出错:{detail}。不是你的配置的问题,过一会儿再跑 flower setup --check"),
    probe.UNREACHABLE: N_("x 连不上 {url}:{detail}。检查网关地址、网络和代理"),
    probe.OTHER: N_("x {status}:{url} 的回答出乎意料({detail})。检查网关地址和模型名"),
}


def _check_setup(screen: Screen, workspace: Path, path: Path) -> int:
    """Say where the credential comes from (masked) and whether the endpoint accepts it."""
    from ..core.envfile import read_workspace_env

    screen.say("")
    found = read_workspace_env(workspace)
    own = dict(found.values) if found is not None else {}
    origins = found.origins if found is not None else {}
    # the process environment wins over every file, exactly as the Runtime will see it
    config = {**own, **{k: v for k, v in os.environ.items() if k.startswith("ANTHROPIC_") and v}}
    token_key = next((k for k in CREDENTIAL_KEYS if config.get(k)), None)
    if token_key is None:
        screen.say(
            _("x 没有凭证:{path} 里没有 ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN,环境变量里也没有").format(
                path=path
            ),
            err=True,
        )
        return 1
    where = _("环境变量") if os.environ.get(token_key) else str(origins.get(token_key, path))
    screen.say(
        _("{token_key} = {value}(来自 {where})").format(
            token_key=token_key, value=mask(config[token_key]), where=where
        )
    )
    base = config.get("ANTHROPIC_BASE_URL", "")
    screen.say("ANTHROPIC_BASE_URL = {base}".format(base=base or _("(未设,Anthropic 官方)")))
    screen.say(_("- 验一下凭证:向 {url} 发一个最小的请求…").format(url=probe.messages_url(base)))
    result = run_to_end(probe.probe(config))
    line = _(PROBE_SAYS[result.kind]).format(
        url=result.url, model=result.model, status=result.status, detail=result.detail or "-"
    )
    if result.kind == probe.WORKING:
        screen.say(line)
        return 0
    screen.say(line, err=True)
    return 1
