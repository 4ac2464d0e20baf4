"""`flower run <target>`: load the Workflow a person points at."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from ..base.i18n import _
from ..base.loop import run_to_end

if TYPE_CHECKING:
    from ..core.events import Event
    from ..core.runtime import Runtime, StepResult
    from ..workflow.base import Step

_T = TypeVar("_T")


class TargetError(Exception):
    """`flower run <target>` cannot be loaded; the message says why."""


@runtime_checkable
class Flow(Protocol):
    """What `flower run` drives: a Workflow, or any object with its `steps` and `run`."""

    @property
    def steps(self) -> Sequence[object]: ...

    async def run(
        self,
        runtime: Runtime,
        *,
        on_event: Callable[[Event], None] | None = None,
        on_step: Callable[[Step, StepResult], None] | None = None,
    ) -> dict[str, object]: ...


def load_target(target: str, *, cwd: Path | None = None) -> Flow:
    """`module:attr` or `path/to/file.py:attr` -> a Workflow (a callable is called once)."""
    import importlib
    import importlib.util
    import inspect

    if ":" not in target:
        raise TargetError(_("需要 模块:属性 形式,例如 flows:main"))
    module_name, attr = target.rsplit(":", 1)
    cwd = cwd or Path.cwd()
    looks_like_file = module_name.endswith(".py") or "/" in module_name or os.sep in module_name
    if looks_like_file:
        path = (cwd / module_name).resolve()
        if not path.is_file():
            raise TargetError(
                _(
                    "找不到 {module_name}(当前目录 {cwd})。给的是文件路径就要能对上;要按模块名导入就别带 .py"
                ).format(module_name=module_name, cwd=cwd)
            )
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise TargetError(
                _("导入 '{module_name}' 失败:不是能导入的 Python 文件").format(module_name=module_name)
            )
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise TargetError(
                _("导入 '{module_name}' 失败:{exc}").format(module_name=module_name, exc=exc)
            ) from exc
    else:
        if str(cwd) not in sys.path:
            sys.path.insert(0, str(cwd))
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise TargetError(
                _("导入 '{module_name}' 失败:{exc}").format(module_name=module_name, exc=exc)
            ) from exc
    if not hasattr(module, attr):
        raise TargetError(_("'{module_name}' 里没有 '{attr}'").format(module_name=module_name, attr=attr))
    found = getattr(module, attr)
    if callable(found) and not (hasattr(found, "steps") and hasattr(found, "run")):
        found = found()
        if inspect.isawaitable(found):
            found = run_to_end(_await(found))
    if not (isinstance(found, Flow) and callable(found.run)):
        raise TargetError(
            _("'{target}' 不是 Workflow,也不是返回 Workflow 的函数(拿到的是 {name})").format(
                target=target, name=type(found).__name__
            )
        )
    return found


async def _await(awaitable: Awaitable[_T]) -> _T:
    return await awaitable
