"""Send an HTTP request to the worker that owns its key, so a service can run as N workers.

The group's assignor knows, for each partition of every topic the app consumes, the
canonical URL (`web_host:web_port`) of the worker it is assigned to: the kernel's
(`services.infra.consumer.Owners`) for a service on the kernel, Faust's for one
still read by Faust's consumer (dealer-event). A view asks
`owner_of(app, topic, key)`: None when this worker owns the key's partition (answer
here), else the owner's URL, and `forward` sends the whole request there (method,
path, query, headers and body; Faust's own `route_req` drops a POST's body) and
returns the owner's answer unchanged. A forwarded request that reaches a worker which
no longer owns the key (a rebalance in between) is answered 503 with Retry-After
instead of being forwarded again, so a request never loops.
"""

from __future__ import annotations

import functools

import aiohttp
import faust
from yarl import URL

from services.infra.consumer import owners_of

FORWARDED_HEADER = "X-Croupier-Forwarded-By"
RETRY_AFTER_S = 1
# hop-by-hop headers (RFC 9110 §7.6.1) and the ones aiohttp recomputes for the new body
_NOT_FORWARDED = frozenset({"host", "connection", "keep-alive", "transfer-encoding",
                            "content-length", "upgrade", "te", "trailer",
                            "proxy-authorization", "proxy-authenticate"})


class NoOwner(Exception):
    """The key's partition has no worker right now (the group is rebalancing)."""


def _ident(url: URL) -> tuple[str, int]:
    return (url.host or "", int(url.port or 80))


@functools.lru_cache(maxsize=256)
def _ident_of(url: str) -> tuple[str, int]:
    """`_ident` of a URL given as text (the owners' table's: a few per group), parsed once
    instead of twice per request."""
    return _ident(URL(url))


def owner_of(app: faust.App, topic: faust.TopicT, key: bytes) -> URL | None:
    """The URL of the worker consuming `key`'s partition of `topic`; None if it is us."""
    owners = owners_of(app)
    if owners is not None:
        name = topic.get_topic_name()
        try:
            partition = app.producer.key_partition(name, key).partition
        except Exception:  # noqa: BLE001 - a (re)starting worker has no metadata yet
            raise NoOwner(f"no worker owns {name!r} for this key yet") from None
        held_by = owners.owner(name, partition)
        if held_by is None:
            raise NoOwner(f"no worker owns {name!r} for this key yet")
        return None if _ident_of(held_by) == _ident_of(owners.url) else URL(held_by)
    try:
        url = app.router.external_topic_key_store(topic, key)
    except (KeyError, TypeError):  # TypeError: a (re)starting worker has no topic metadata yet
        raise NoOwner(f"no worker owns {topic.get_topic_name()!r} for this key yet") from None
    return None if _ident(URL(str(url))) == _ident(URL(str(app.conf.canonical_url))) else url


def was_forwarded(request: faust.web.Request) -> bool:
    return FORWARDED_HEADER in request.headers


def unavailable(web: faust.web.Web, message: str, code: str = "rebalancing"
                ) -> faust.web.Response:
    return web.json({"error": {"code": code, "message": message}}, status=503,
                    headers={"Retry-After": str(RETRY_AFTER_S)})


async def forward(app: faust.App, owner: URL, request: faust.web.Request,
                  web: faust.web.Web, body: bytes | None = None) -> faust.web.Response:
    """The owner's answer to the same request, byte for byte (`body`: the body, when the
    caller has already read it from the stream)."""
    if was_forwarded(request):
        return unavailable(web, "the worker this request was sent to no longer owns its key; "
                                "retry (the same request id is safe)")
    body = body if body is not None else await request.read()
    headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
    headers[FORWARDED_HEADER] = str(app.conf.canonical_url)
    target = request.url.with_scheme(owner.scheme or "http").with_host(
        owner.host or "127.0.0.1").with_port(owner.port)
    try:
        async with app.http_client.request(request.method, target, headers=headers,
                                           data=body) as response:
            payload = await response.read()
            passed = {k: v for k, v in response.headers.items() if k.lower() == "retry-after"}
            return web.bytes(payload, content_type=response.content_type,
                             status=response.status, headers=passed or None)
    except (OSError, aiohttp.ClientError, TimeoutError) as exc:
        # the owner died (or dropped the connection mid-answer): its partitions move soon
        return unavailable(web, f"the worker owning this key did not answer ({exc}); retry")
