"""BoundedOutput: head and tail kept, the middle counted exactly, memory bounded."""

from __future__ import annotations

from runtime.sandbox.output import BoundedOutput


def test_output_within_the_limit_is_kept_whole() -> None:
    output = BoundedOutput(10)
    output.feed(b"hello")
    output.feed(b"world")
    assert output.render() == "helloworld"
    assert output.elided_bytes == 0


def test_the_middle_is_elided_with_an_exact_count() -> None:
    output = BoundedOutput(10)
    for byte in b"abcdefghijklmnopqrstuvwxyz":
        output.feed(bytes([byte]))
    assert output.render() == "abcde…[16 bytes elided]…vwxyz"
    assert (output.total_bytes, output.elided_bytes) == (26, 16)


def test_memory_stays_bounded_for_a_long_stream() -> None:
    output = BoundedOutput(1000)
    for _ in range(10_000):
        output.feed(b"x" * 1000)
    assert len(output._tail) <= 2 * 500
    assert output.elided_bytes == 10_000_000 - 1000


def test_a_multibyte_character_cut_at_the_edge_does_not_raise() -> None:
    output = BoundedOutput(4)
    output.feed("ééééé".encode())
    assert "bytes elided" in output.render()
