"""The agent's environment: the 10 tools (tools.py), the scripted user (user.py) and the Python sandbox
(sandbox.py). The episode loop builds one `ToolBox` per episode."""
from ecab.env.sandbox import Sandbox, SandboxLimits, SandboxResult, run_code, run_code_async
from ecab.env.tools import TOOL_ORDER, ToolBox, ToolResult, tool_schemas
from ecab.env.user import ScriptedUser, profile_response

__all__ = ["TOOL_ORDER", "Sandbox", "SandboxLimits", "SandboxResult", "ScriptedUser", "ToolBox", "ToolResult",
           "profile_response", "run_code", "run_code_async", "tool_schemas"]
