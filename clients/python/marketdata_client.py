"""Helpers over the marketdata service's Python stubs (made from the
contract by `buf generate --template clients/python/buf.gen.yaml`, see
docs/clients.md): every record of a list, page after page, a live feed
that resumes itself after a lost connection, and a collection's bulk export
(GET /v1/export/KIND, chunk after chunk). Standard library and grpcio
only; put this file next to the stubs (or on PYTHONPATH).

    from marketdata_client import export, pages, watch
    for sale in pages(assets.ListSales, asset.ListSalesRequest(contract_address=C), metadata=KEY):
        print(sale.hash)
    for record, resume_token, removed in watch(assets.WatchSales, asset.WatchSalesRequest(contract_address=C), metadata=KEY):
        print(record.hash, resume_token)
    for lines, position, done in export("http://127.0.0.1:8080", "sales", C, key=KEY):
        print(len(lines), "lines; next from", position)
"""
import email.utils
import random
import time
import urllib.error
import urllib.parse
import urllib.request

import grpc
from google.protobuf.descriptor import FieldDescriptor

__all__ = ["export", "pages", "watch"]

# What a feed's message carries its record in (WatchSales: sale, WatchListings: listing, WatchOffers: offer,
# WatchCollectionActivity: event), in that order; a record a reorganisation took back comes in `removed`.
_RECORD_FIELDS = ("sale", "listing", "offer", "event")

# A lost connection, or a server restarting or shedding a slow stream: the feed is opened again where it stood.
# Anything else (a bad filter, an unknown collection, a revoked key) is the caller's to see.
_LOST = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}


def pages(call, request, metadata=None):
    """Every record of a list RPC, page after page, to the end.

    `call` is a stub's method (`stub.ListSales`, `stub.ListWebhooks`, ...),
    `request` its request message: it is copied, and the copy's `cursor` set
    from each page's `cursor` or `next_page`. Yields the records: a page's
    `data`; each holder of ListCollectionHolders; each webhook of ListWebhooks.
    """
    request = _copy(request)
    while True:
        page = call(request, metadata=metadata)
        yield from _records(page)
        fields = page.DESCRIPTOR.fields_by_name
        cursor = page.next_page if "next_page" in fields else page.cursor
        if not cursor:
            return
        request.cursor = cursor


def watch(call, request, metadata=None, backoff=0.2, max_backoff=10.0, on_retry=None):
    """Each record of a live feed (WatchSales, WatchListings, WatchOffers,
    WatchCollectionActivity) as it is committed, from `request.cursor` (a
    resume token saved before) or from now.

    Yields (record, resume_token, removed): `removed` is the Removal when a
    reorganisation took the record back (a sale only), else None. After a lost
    connection it opens the feed again from the last token seen, with
    exponential backoff and full jitter (from `backoff` seconds, at most
    `max_backoff`): every record once, in commit order. `on_retry(error,
    attempt, delay)` hears of each reopening. Stop by leaving the loop (the
    stream is cancelled); what no retry can get past is raised.

    A channel resolves its target's name again at most every 30 s by
    default, and connects anew only after that: for a feed that finds a
    restarted server at once, make the channel with
    `options=[("grpc.dns_min_time_between_resolutions_ms", 1000)]`.
    """
    request = _copy(request)
    attempt = 0
    while True:
        stream = call(request, metadata=metadata)
        try:
            for message in stream:
                attempt = 0
                request.cursor = message.resume_token
                record = next((getattr(message, f) for f in _RECORD_FIELDS if f in message.DESCRIPTOR.fields_by_name and message.HasField(f)), None)
                if record is not None:
                    yield record, message.resume_token, None
                elif "removed" in message.DESCRIPTOR.fields_by_name and message.HasField("removed"):
                    yield message.removed.sale, message.resume_token, message.removed
            # The server ended the stream without an error: open it again where it stopped.
        except grpc.RpcError as err:
            # A stream the server ended on purpose (too slow) says where to resume.
            told = dict(err.trailing_metadata() or ()).get("resume-token")
            if told:
                request.cursor = told
            code = err.code()
            if code not in _LOST and not (code == grpc.StatusCode.RESOURCE_EXHAUSTED and told):
                raise
            attempt += 1
            delay = random.uniform(0, min(max_backoff, backoff * 2 ** (min(attempt, 8) - 1)))
            if on_retry is not None:
                on_retry(err, attempt, delay)
            time.sleep(delay)
        finally:
            stream.cancel()


def export(base_url, kind, contract_address, key, position="", chain="", limit=None, attempts=4, backoff=0.2, max_backoff=10.0):
    """A collection's records of one kind ("sales", "tokens", ...: the
    server's docs/export.md) as the lines `marketdata import KIND` reads,
    through GET /v1/export/KIND, chunk after chunk to the end, from
    `position` (a chunk's) or the first record.

    Yields (lines, position, done) per chunk: its import lines (text, without
    newlines), where the next chunk starts (keep the last to fetch later only
    what was written since), and whether it reached the end. A chunk refused
    for the key's rate (429) or the server's state (503), or lost with its
    connection, is asked again from the same position, honouring
    Retry-After, up to `attempts` times; any other refusal is raised as an
    urllib.error.HTTPError whose body is the server's {code, message}.
    """
    attempt = 1
    while True:
        query = {"contractAddress": contract_address}
        if chain:
            query["chain"] = chain
        if limit is not None:
            query["limit"] = str(limit)
        if position:
            query["position"] = position
        url = f"{base_url.rstrip('/')}/v1/export/{urllib.parse.quote(kind)}?{urllib.parse.urlencode(query)}"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers={"x-api-key": key})) as res:
                body = res.read().decode("utf-8")
                position = res.headers.get("x-export-position", "")
                done = res.headers.get("x-export-done") == "true"
            attempt = 1
            yield (body[:-1].split("\n") if body else []), position, done
            if done:
                return
            continue
        except urllib.error.HTTPError as err:
            if err.code not in (429, 503) or attempt >= attempts:
                raise
            delay = _retry_after(err.headers.get("retry-after"))
        except urllib.error.URLError:
            if attempt >= attempts:
                raise
            delay = None
        if delay is None:
            delay = random.uniform(0, min(max_backoff, backoff * 2 ** (attempt - 1)))
        attempt += 1
        time.sleep(delay)


def _retry_after(value):
    """Retry-After's seconds (or HTTP date) as seconds; None without one."""
    if not value:
        return None
    if value.isdigit():
        return float(value)
    when = email.utils.parsedate_to_datetime(value)
    return max(0.0, when.timestamp() - time.time())


def _copy(message):
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def _records(page):
    fields = page.DESCRIPTOR.fields_by_name
    if "webhooks" in fields:
        return page.webhooks
    if fields["data"].label == FieldDescriptor.LABEL_REPEATED:
        return page.data
    return page.data.holders
