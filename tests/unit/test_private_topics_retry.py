"""A worker creating its private topics right after `croupier topics apply` wrote its ACLs
may be refused for a moment (the authorizer has not seen them yet): it tries again for a
while instead of exiting (a CI run's wallet exited with TopicAuthorizationFailedError)."""

from __future__ import annotations

import pytest
from kafka.errors import TopicAlreadyExistsError, TopicAuthorizationFailedError

from services.infra.private_topics import create_until_authorized


def test_a_refusal_for_want_of_an_acl_is_tried_again():
    answers = [TopicAuthorizationFailedError(), TopicAuthorizationFailedError(), None]
    slept = []

    def create():
        answer = answers.pop(0)
        if answer is not None:
            raise answer

    create_until_authorized(create, sleep=slept.append)
    assert answers == [] and slept == [0.5, 0.5]


def test_existing_topics_are_fine_and_a_lasting_refusal_is_raised():
    def exists():
        raise TopicAlreadyExistsError()

    create_until_authorized(exists, sleep=lambda s: None)

    def refused():
        raise TopicAuthorizationFailedError()

    with pytest.raises(TopicAuthorizationFailedError):
        create_until_authorized(refused, within_s=0.0, sleep=lambda s: None)
