"""The executor backends' exceptions.

```
ExecutorError                 an executor model call or setup that failed
 +-- ExecutorLoadError        a model, tokenizer or adapter directory that cannot be loaded
 +-- ExecutorRequestError     a request this model cannot take: no messages, a prompt longer than
 |                            the context, a token id outside the vocabulary, an unknown adapter
 +-- ExecutorCallError        a call that produced no completion: the server is unreachable,
                              answered an error status (`status`), or answered something
                              unreadable; or the planner standing in failed (`transient`)
```

Messages are one line and say what to do. The HTTP server answers `ExecutorRequestError` with
its `status`: 400, 404 for an unknown model, 403 for an adapter path outside the server's adapter
directory; and `ExecutorLoadError` with 400 on adapter loading. `model_dir_problem` is the one
check of a model directory before loading (LocalModel.load raises it as `ExecutorLoadError`;
`temper learn` refuses the night with it).
"""

from __future__ import annotations

from pathlib import Path


class ExecutorError(Exception):
    """Base of every error raised by runtime.executor."""


class ExecutorLoadError(ExecutorError):
    """A model, tokenizer or adapter directory that cannot be loaded."""


class ExecutorRequestError(ExecutorError):
    """A request this model cannot take; `status` is the HTTP status the server answers with."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ExecutorCallError(ExecutorError):
    """A call that produced no completion. `status` is the server's HTTP status when it answered;
    `transient` says whether the same call may succeed if repeated."""

    def __init__(self, message: str, *, status: int | None = None, transient: bool = False) -> None:
        super().__init__(" ".join(message.split()))
        self.status = status
        self.transient = transient


def model_dir_problem(directory: str | Path) -> str | None:
    """Why `directory` is not a Hugging Face model directory (one line), or None when it looks
    like one: it exists and holds a config.json. Checked before anything loads, so a wrong path
    is named plainly instead of by the tokenizer's or transformers' own error."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        return f"{path} is not a directory: give a model directory"
    if not (path / "config.json").is_file():
        return f"{path} holds no config.json, so it is not a Hugging Face model directory"
    return None
