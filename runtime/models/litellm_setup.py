"""litellm, imported once, late, and quiet.

`import litellm` takes 3-4 s, so nothing imports it at module level: the first model call or token
count does, through `import_litellm()`. Before the import the cost map is pinned to the bundled
copy (no network fetch); after it, litellm is made offline and silent:

- no Hugging Face tokenizer downloads (token counting falls back to its bundled tiktoken files:
  without this, counting for a `llama3` model name stalls ~20 s offline, retrying the Hub);
- no debug banners, and its loggers only speak when `LITELLM_LOG` asks them to: failures reach
  the caller as `ModelError`s, which say everything needed;
- no warnings about litellm's own use of pydantic (they are for litellm's authors, not ours).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import warnings
from types import ModuleType

LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

_lock = threading.Lock()
_module: ModuleType | None = None


def import_litellm() -> ModuleType:
    """The configured litellm module (the first call imports it: seconds, not milliseconds)."""
    global _module
    with _lock:
        if _module is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            litellm.disable_hf_tokenizer_download = True
            litellm.telemetry = False
            if "LITELLM_LOG" not in os.environ:
                for name in LITELLM_LOGGERS:
                    logging.getLogger(name).setLevel(logging.CRITICAL + 1)
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"litellm\.")
            warnings.filterwarnings(
                "ignore", message=r"Item '\w+' on TypedDict class '\w+' is using the `ReadOnly`"
            )
            _module = litellm
        return _module


async def load_litellm() -> ModuleType:
    """`import_litellm` for async code: the first import runs in a worker thread, so the event
    loop keeps serving while it takes its seconds."""
    if _module is not None:
        return _module
    return await asyncio.to_thread(import_litellm)
