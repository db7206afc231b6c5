"""`temper chat`: talk to the agent in a terminal, or send one message with `-m`.

Threads. The main thread owns the terminal: it reads lines (readline, history, Ctrl-C) and
answers approval questions. The agent runs on one event loop in a worker thread, started once
with `asyncio.run`. Python raises KeyboardInterrupt only in the main thread, and readline only
drops a half-typed line when the interrupt reaches the thread reading it; and while a person
types, the agent's after-reply work (compaction) goes on. Everything that touches the agent or
the memory store runs on the loop thread (`AgentLoop.call`, `AgentLoop.start`).

A turn: the loop thread renders its events (connectors/cli/chat_render.py) and, for an approval,
sends the question to the main thread, which reads the answer and passes it back. Ctrl-C while
a turn runs cancels the turn's task; the agent marks the episode abandoned, and the chat goes
on. `agent.close()` (drain the after-reply work, put sandboxes away) runs on every exit.

Exit codes of `-m`: 0 a reply, 1 the turn failed (model unreachable, sandbox unavailable),
2 a configuration or API key problem, 130 cancelled with Ctrl-C.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer

from connectors.cli.context import CONFIG_ERROR_EXIT, get_config

if TYPE_CHECKING:  # the runtime costs a second to import: loaded inside the command only
    from connectors.assembly import Assembled
    from connectors.cli.chat_render import Renderer, Terminal
    from connectors.config import Config
    from runtime import ApprovalRequested, Inbound

T = TypeVar("T")
Outcome = Literal["replied", "failed", "cancelled"]
EXIT_CODES: dict[Outcome, int] = {"replied": 0, "failed": 1, "cancelled": 130}

HELP = """\
commands:
  /model [NAME]    show or switch the planner model (a litellm string, e.g. openai/gpt-4o)
  /new             start a fresh session;  /session NAME  switch to (or start) NAME
  /sessions        your recent sessions
  /good, /bad      rate the latest answer (feeds the agent's learning)
  /help, /exit     this list; quit (Ctrl-D does too)
input: end a line with \\ to continue it, or put a block between two lines of \"\"\".
Ctrl-C stops a running turn; at the prompt it clears the line."""


def chat(
    ctx: typer.Context,
    message: Annotated[
        str | None,
        typer.Option("--message", "-m", help="Send one message, print the reply and exit ('-' reads stdin)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Planner model for this run, e.g. 'openai/gpt-4o'.")
    ] = None,
    api_base: Annotated[
        str | None,
        typer.Option(
            "--api-base", help="The planner's OpenAI-compatible URL, e.g. http://127.0.0.1:8000/v1."
        ),
    ] = None,
    session: Annotated[
        str, typer.Option("--session", "-s", help="The conversation to continue (or start).")
    ] = "default",
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve every command the policy asks about.")
    ] = False,
) -> None:
    """Chat with the agent in the terminal, or send one message with -m."""
    config = get_config(ctx)
    if message == "-":
        message = sys.stdin.read()
    problem = "--session needs a name" if not session.strip() else None
    if message is not None and not message.strip():
        problem = "the message is empty"
    if problem:
        typer.echo(f"temper: {problem}", err=True)
        raise typer.Exit(CONFIG_ERROR_EXIT)
    raise typer.Exit(run_chat(config, message, model=model, api_base=api_base, session=session, yes=yes))


def run_chat(
    config: Config, message: str | None, *, model: str | None, api_base: str | None, session: str, yes: bool
) -> int:
    """The interactive chat, or one turn for `message`; the exit code. Closes the agent."""
    from connectors.cli.chat_render import Renderer, Terminal

    one_shot = message is not None
    terminal = Terminal(sys.stdin, sys.stdout)
    renderer = Renderer(
        sys.stdout,
        sys.stderr if one_shot else sys.stdout,  # -m: stdout holds the reply and nothing else
        sys.stderr,
        stream_reply=not one_shot or sys.stdout.isatty(),
    )
    loop = AgentLoop()
    try:
        assembled = _build(loop, config, model, api_base, renderer.stream_reply)
    except BaseException:
        loop.stop()
        raise
    for note in assembled.notes:
        renderer.note(note, sys.stderr)
    can_ask = not one_shot or sys.stdin.isatty()  # interactive: answers come from stdin, terminal or not
    conversation = Chat(loop, assembled, renderer, terminal, session=session, can_ask=can_ask, yes=yes)
    try:
        if message is not None:
            return EXIT_CODES[conversation.turn(message)]
        terminal.open_history(config.data_dir / "chat_history")
        converse(conversation, terminal, renderer)
        return 0
    finally:
        terminal.save_history()
        try:
            loop.call_async(assembled.agent.close())
            loop.call(assembled.store.close)
        finally:
            loop.stop()


def _build(
    loop: AgentLoop, config: Config, model: str | None, api_base: str | None, stream: bool
) -> Assembled:
    """The agent, built on the loop thread; key and model-string problems exit 2 in one line."""
    from connectors.assembly import build_agent
    from runtime import ModelError
    from runtime.executor.errors import ExecutorLoadError

    try:
        return loop.call(build_agent, config, os.environ, model=model, api_base=api_base, stream=stream)
    except ModelError as error:  # ModelAuthError (no key) or a malformed model string
        typer.echo(f"temper: {error}", err=True)
        raise typer.Exit(CONFIG_ERROR_EXIT) from None
    except ExecutorLoadError as error:  # [executor] model_dir is not a model, a device torch does not see
        typer.echo(f"temper: the executor model cannot be loaded: {error}", err=True)
        raise typer.Exit(CONFIG_ERROR_EXIT) from None


def converse(chat: Chat, terminal: Terminal, renderer: Renderer) -> None:
    """The interactive loop: read a message or a /command, answer it, until /exit or Ctrl-D."""
    if terminal.interactive:
        renderer.note(
            f"temper chat · {chat.agent.planner.model} · session {chat.session} · /help lists commands"
        )
    while True:
        try:
            text = terminal.read_message()
        except KeyboardInterrupt:
            terminal.cleared()
            continue
        if text is None:
            terminal.cleared()
            return
        if not text.strip():
            continue
        if text.startswith("/"):
            if not chat.command(text.strip()):
                return
            continue
        try:
            chat.turn(text)
        except Exception:  # a bug: show it, keep the conversation
            import traceback

            traceback.print_exc()
            renderer.failure("that was a bug in temper (traceback above); the chat goes on")


class AgentLoop:
    """One event loop in a worker thread, for everything that touches the agent or the store."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve(),), name="temper-agent", daemon=True
        )
        self._thread.start()
        self._ready.wait()

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._ready.set()
        await self._stopping.wait()

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`function(*args, **kwargs)` run on the loop thread; its result or its exception."""

        async def run() -> T:
            return function(*args, **kwargs)

        return self.call_async(run())

    def call_async(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def start(
        self, coroutine: Coroutine[Any, Any, Any], done: Callable[[asyncio.Task[Any]], None]
    ) -> Callable[[], None]:
        """Run `coroutine` as a task; `done(task)` is called when it ends, even if cancelled
        before it began. Returns a function that cancels it from any thread."""
        tasks: list[asyncio.Task[Any]] = []

        def begin() -> None:
            task = self.loop.create_task(coroutine)
            task.add_done_callback(done)
            tasks.append(task)

        self.loop.call_soon_threadsafe(begin)
        return lambda: self.loop.call_soon_threadsafe(lambda: tasks[0].cancel())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join()


@dataclass
class Question:
    """An approval question from the loop thread; `answer` sends the reply back (None: none)."""

    text: str
    answer: Callable[[str | None], None]


class Chat:
    """One person's CLI conversation: the current session, its turns and its /commands."""

    def __init__(
        self, loop: AgentLoop, assembled: Assembled, renderer: Renderer, terminal: Terminal,
        *, session: str, can_ask: bool, yes: bool,
    ) -> None:  # fmt: skip
        self.loop, self.agent, self.store = loop, assembled.agent, assembled.store
        self.renderer, self.terminal = renderer, terminal
        self.session, self.can_ask, self.yes = session, can_ask, yes
        self.user = cli_user()

    def inbound(self, text: str) -> Inbound:
        from runtime import Inbound

        return Inbound(
            platform="cli", chat_id=self.session, user_id=self.user, text=text, user_name=self.user
        )

    @property
    def session_key(self) -> str:
        return self.inbound("").session_key

    # --- a turn (main thread side) ---------------------------------------------------------------

    def turn(self, text: str) -> Outcome:
        """Run one turn; answer its approval questions here; Ctrl-C cancels it."""
        updates: queue.SimpleQueue[Question | asyncio.Task[Outcome]] = queue.SimpleQueue()
        cancel = self.loop.start(self._turn(text, updates), updates.put)
        try:
            while isinstance(update := updates.get(), Question):
                update.answer(self.terminal.ask(update.text))
        except KeyboardInterrupt:
            cancel()
            while isinstance(update := updates.get(), Question):
                update.answer(None)
        if update.cancelled():
            self.renderer.cancelled()
            return "cancelled"
        return update.result()  # a bug in the turn raises here

    # --- a turn (loop thread side) ---------------------------------------------------------------

    async def _turn(self, text: str, updates: queue.SimpleQueue[Any]) -> Outcome:
        from contextlib import aclosing

        from runtime import ApprovalRequested, Replied, SandboxError

        outcome: Outcome = "failed"
        try:
            async with aclosing(self.agent.turn(self.inbound(text))) as events:
                async for event in events:
                    if isinstance(event, ApprovalRequested):
                        await self._approve(event, updates)
                        continue
                    self.renderer.show(event)
                    if isinstance(event, Replied):
                        outcome = "replied"
        except SandboxError as error:  # e.g. no sandbox backend works here: one line, not a trace
            self.renderer.failure(f"sandbox: {error}")
            return "failed"
        return outcome

    async def _approve(self, event: ApprovalRequested, updates: queue.SimpleQueue[Any]) -> None:
        question = self.renderer.approval_question(event)
        why = ""
        if self.yes:
            answer, why = "y", "--yes"
        elif not self.can_ask:
            answer, why = "n", "no terminal to ask; --yes approves"
        else:
            loop = asyncio.get_running_loop()
            reply: asyncio.Future[str | None] = loop.create_future()

            def answer_from_main(text: str | None) -> None:
                loop.call_soon_threadsafe(lambda: reply.done() or reply.set_result(text))

            updates.put(Question(question, answer_from_main))
            answer = await reply
        approved, remember = read_approval(answer)
        self.renderer.approval_answer(approved, remember, why)
        event.decide(approved, remember=remember)

    # --- /commands -------------------------------------------------------------------------------

    def command(self, line: str) -> bool:
        """Carry out a /command; False means quit."""
        name, _, argument = line[1:].partition(" ")
        argument = argument.strip()
        say = self.renderer.note
        if name in ("exit", "quit", "q"):
            return False
        if name in ("help", "?"):
            self.renderer.line(self.renderer.out, HELP)
        elif name == "model":
            self._switch_model(argument)
        elif name == "new":
            self.session = self.loop.call(self._fresh_session_name)
            say(f"new session {self.session}")
        elif name == "session":
            self.session = argument or self.session
            say(f"session {self.session}")
        elif name == "sessions":
            self._list_sessions()
        elif name in ("good", "bad"):
            self._rate(name == "good")
        else:
            self.renderer.failure(f"unknown command /{name}; /help lists them")
        return True

    def _switch_model(self, name: str) -> None:
        from runtime import ModelError

        planner = self.agent.planner
        if not name:
            self.renderer.note(f"planner: {planner.model} (/model NAME switches)")
            return
        before = planner.model
        try:
            self.loop.call(planner.use, name)
        except ModelError as error:
            self.renderer.failure(str(error))
            return
        self.renderer.note(f"planner: {name} (was {before})")

    def _rate(self, good: bool) -> None:
        episode_id = self.loop.call(self.agent.feedback, self.session_key, good)
        if episode_id is None:
            self.renderer.failure("nothing to rate yet in this session")
            return
        task = self.loop.call(self.store.episodes.get, episode_id).task
        from connectors.cli.chat_render import shorten

        self.renderer.note(f"episode {episode_id} ({shorten(task, 60)!r}) rated {'good' if good else 'bad'}")

    def _list_sessions(self) -> None:
        rows = self.loop.call(self._sessions)
        if not rows:
            self.renderer.note("no sessions yet")
            return
        from connectors.cli.chat_render import shorten

        width = max(len(row[0]) for row in rows)
        for name, updated_at, count, first in rows:
            mark = "*" if name == self.session else " "
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(updated_at))
            about = shorten(first or "", 50)
            self.renderer.line(
                self.renderer.out, f"{mark} {name:<{width}}  {when}  {count:>4} messages  {about}"
            )

    def _sessions(self, limit: int = 20) -> list[tuple[str, float, int, str | None]]:
        """This user's CLI sessions, newest first."""
        user_id = self.store.user_for_identity("cli", self.user)
        if user_id is None:
            return []
        return [
            (info.chat_id, info.updated_at, info.messages, info.first_user_message)
            for info in self.store.sessions_for(user_id, platform="cli", limit=limit)
        ]

    def _fresh_session_name(self) -> str:
        stem = time.strftime("%Y%m%d-%H%M%S")
        name, n = stem, 1
        while self.store.session_id(f"cli:{name}:") is not None:
            n += 1
            name = f"{stem}-{n}"
        return name


def cli_user() -> str:
    """The OS user name: the CLI's platform user id (one identity per account on this machine)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container uid with no passwd entry and no $USER
        return f"uid{os.getuid()}"


def read_approval(answer: str | None) -> tuple[bool, bool]:
    """(approved, remember for the session) from y / yes / a / always; anything else declines."""
    word = (answer or "").strip().lower()
    if word in ("a", "always"):
        return True, True
    return word in ("y", "yes"), False
