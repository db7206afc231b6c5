"""temper's runtime: the agent loop, models, tools, the command policy and the sandboxes.

Public surface: other packages import from here, not from submodules.
"""

from runtime.agent import Agent, AgentSettings
from runtime.compaction import CompactionSettings
from runtime.context import ContextSettings, fixed_overhead_messages
from runtime.events import (
    ApprovalRequested,
    Evaluated,
    Event,
    ModelCalled,
    Replied,
    ReplyDelta,
    ToolCalled,
    ToolReturned,
    TurnFailed,
    TurnStarted,
)
from runtime.inbound import Inbound
from runtime.models import (
    ChatModel,
    ModelAuthError,
    ModelError,
    ModelReply,
    ModelSettings,
    ModelUnreachable,
    RetryPolicy,
    TextDelta,
    ToolCall,
    count_tokens,
    model_from_slot,
)
from runtime.policy import Verdict, assess
from runtime.sandbox import (
    BackendName,
    BackendStatus,
    CommandResult,
    Limits,
    Sandbox,
    SandboxError,
    SandboxOptions,
    SandboxUnavailable,
    Snapshot,
    available_backends,
    open_sandbox,
)
from runtime.skill_catalog import SkillCatalog, SkillSettings, SyncReport
from runtime.skill_review import Learned, TurnRecord, learn_skills
from runtime.tools import ApprovalRequest, Toolbox, ToolContext, ToolResult, builtin_toolbox
from runtime.user_model import UserModelSettings
from runtime.workspaces import Workspaces

__all__ = [
    "Agent",
    "AgentSettings",
    "ApprovalRequest",
    "ApprovalRequested",
    "BackendName",
    "BackendStatus",
    "ChatModel",
    "CommandResult",
    "CompactionSettings",
    "ContextSettings",
    "Evaluated",
    "Event",
    "Inbound",
    "Learned",
    "Limits",
    "ModelAuthError",
    "ModelCalled",
    "ModelError",
    "ModelReply",
    "ModelSettings",
    "ModelUnreachable",
    "Replied",
    "ReplyDelta",
    "RetryPolicy",
    "Sandbox",
    "SandboxError",
    "SandboxOptions",
    "SandboxUnavailable",
    "SkillCatalog",
    "SkillSettings",
    "Snapshot",
    "SyncReport",
    "TextDelta",
    "ToolCall",
    "ToolCalled",
    "ToolContext",
    "ToolResult",
    "ToolReturned",
    "Toolbox",
    "TurnFailed",
    "TurnRecord",
    "TurnStarted",
    "UserModelSettings",
    "Verdict",
    "Workspaces",
    "assess",
    "available_backends",
    "builtin_toolbox",
    "count_tokens",
    "fixed_overhead_messages",
    "learn_skills",
    "model_from_slot",
    "open_sandbox",
]
