"""The fleet's texts for a person: message ids (the Chinese text), translated where shown.

A run's note and its events keep the message id and its fields, not the words, so each reader
gets them in their own language (``model.Note``).
"""

from __future__ import annotations

from ..base.i18n import N_

# the database
DB_UNREACHABLE = N_("x 连不上队列库 {where}:{error}")
DB_LOST = N_("! 队列库 {where} 断了:{error};{delay:.0f} 秒后重连,手上的 run 到时交给接手的 worker")
DB_BACK = N_(". 队列库 {where} 又连上了")
SCHEMA_NEWER = N_("队列库 {where} 的格式(第 {version} 版)比这个 flower 新:升级 flower")

# a run's life, as its events and notes say it
QUEUED = N_("排队等 worker 来取")
TAKEN = N_("{worker} 接手(第 {attempt} 次执行)")
CHECKED_OUT = N_("检出 {repository} 的 {ref}({commit}),在分支 {branch} 上干活")
CONTINUED = N_("从分支 {branch} 上次推送的文件接着干({commit})")
PUSHED = N_("推送了 {branch}({commit},{why})")
PUSH_REFUSED = N_("! 推送 {branch} 被拒:{reason};补丁写在 {host}:{patch}")
FINISHED = N_("跑完了:结果在分支 {branch}")
FINISHED_PATCH = N_("跑完了,但分支推不上去:补丁在 {host}:{patch}")
FLOW_FAILED = N_("流程没走完:{why}")
HANDED_BACK = N_(
    "{worker} 收到停止信号:这一轮没跑完的文件推到了 {branch},run 交回队列,马上由别的 worker 接着"
)
LOST = N_("{workers} 没了心跳,run 交回队列,由别的 worker 接着(同一批会话,从 {branch} 接着)")
FENCED = N_("{worker} 连不上队列库太久,自己停下了这个 run(别的 worker 会接手)")
BUSY = N_("这份工作还被别处握着({holder}),{delay:.0f} 秒后再来")
CANCELLED = N_("已取消{by}")
CANCELLED_PUSHED = N_("已取消:到取消时为止的文件推到了 {branch}")
ASKED = N_('在问人:{question}(用 flower fleet answer {run} "…" 回答)')
ANSWERED = N_("收到回答:{answer}")
CARRIED = N_("这个问题在换 worker 前已经答过了:{answer}")

# what stops a run before its flow starts
UNREACHABLE = N_("仓库 {repository} 连不上:{reason}")
NO_REF = N_("仓库 {repository} 里没有 {ref}(分支、标签或提交都不是)")
CHECKOUT_FAILED = N_("检出失败:{reason}")
CANNOT_START = N_("流程起不来:{reason}")

# why a commit was made on the run's branch
WHY_STEP = N_("步骤「{step}」结束")
WHY_ROUND = N_("第 {round} 轮判定")
WHY_HANDBACK = N_("交回时没跑完的这一轮")
WHY_CANCEL = N_("取消时的文件")
WHY_END = N_("结束")
