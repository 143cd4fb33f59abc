"""The reply registry the HTTP views of dealer-event and the wallet wait on
(services/infra/replies.py): a waiter is answered once, by key, and forgotten."""

from __future__ import annotations

import asyncio

from services.infra.replies import Replies


def run(coro):
    return asyncio.run(coro)


def test_every_future_waiting_under_a_key_gets_its_answer_and_is_forgotten():
    async def go():
        replies: Replies[str, None] = Replies()
        first, second = replies.expect("k"), replies.expect("k")
        other = replies.expect("other")
        replies.resolve("k", "yes")
        return replies, first, second, other

    replies, first, second, other = run(go())
    assert first.result() == second.result() == "yes"
    assert not other.done()
    assert len(replies) == 1


def test_an_answer_for_no_key_or_an_unknown_key_answers_nobody():
    async def go():
        replies: Replies[str, None] = Replies()
        waiting = replies.expect("k")
        replies.resolve(None, "no")
        replies.resolve("", "no")
        replies.resolve("unknown", "no")
        return replies, waiting

    replies, waiting = run(go())
    assert not waiting.done() and len(replies) == 1


def test_forget_drops_one_future_or_every_future_of_a_key():
    async def go():
        replies: Replies[str, None] = Replies()
        first, second = replies.expect("k"), replies.expect("k")
        replies.forget("k", first)
        assert len(replies) == 1
        replies.resolve("k", "late")
        assert not first.done() and second.result() == "late"
        replies.expect("j"), replies.expect("j")
        replies.forget("j")
        return replies

    assert len(run(go())) == 0


def test_a_future_already_done_is_left_as_it_is():
    async def go():
        replies: Replies[str, None] = Replies()
        waiting = replies.expect("k")
        waiting.cancel()  # its waiter timed out
        replies.resolve("k", "late")
        return waiting

    assert run(go()).cancelled()


def test_answer_each_answers_the_waiters_whose_tag_no_longer_holds_and_keeps_them():
    async def go():
        replies: Replies[str, int] = Replies()
        kept, moved, untagged = replies.expect("a", 0), replies.expect("b", 1), replies.expect("c")
        replies.answer_each(lambda key, tag: f"moved {key}" if tag == 1 else None)
        return replies, kept, moved, untagged

    replies, kept, moved, untagged = run(go())
    assert moved.result() == "moved b"
    assert not kept.done() and not untagged.done()
    assert len(replies) == 3  # their waiters forget them
