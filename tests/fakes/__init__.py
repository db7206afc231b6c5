"""Small fake servers that stand in for remote services in tests and benchmarks: real HTTP on
127.0.0.1 with the real clients on top. Benchmarks put the repository root on sys.path to import
them (`from tests.fakes import FakeOpenAI`)."""

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_wire import ScriptedReply

__all__ = ["FakeOpenAI", "ScriptedReply"]
