"""The one client of OpenAI-compatible servers (config/openai_http.py) and its one error mapping,
against a local TCP server that answers as a broken endpoint would: an error status with a
page, bytes that are not HTTP, a cut body, no answer in time, something that is not JSON, too
much. No network: everything is on 127.0.0.1. Whatever fails, the message is a fixed phrase
(never the underlying exception's text, nor what the server sent), and the class is logged."""

import json
import logging
import socket
import threading

import pytest

from config.errors import ServiceUnavailable
from config.openai_http import UpstreamError, http_base_url, post_json
from memory_app.distill.extraction import ExtractorError, HttpExtractor
from memory_app.search.embeddings import OpenAICompatibleEmbedding

SECRET = "sk-leaked-by-the-proxy"  # what a broken endpoint's answer may hold: never shown
PHRASES = {
    "answered HTTP 500",
    "unreachable",
    "unreachable (timed out)",
    "unreachable (broken answer)",
    "answer too large",
    "answer is not JSON",
}


def _http(status: str, body: bytes, *, length: int | None = None) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


ANSWERS = {
    "ok": _http("200 OK", json.dumps({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}).encode()),
    "status_500": _http("500 Internal Server Error", f"<html>upstream broke, key {SECRET}</html>".encode()),
    "garbage": f"NOT HTTP {SECRET}\r\n\r\n".encode(),
    "cut_body": _http("200 OK", b'{"data": [', length=5000),
    "not_json": _http("200 OK", f"<html>{SECRET}</html>".encode()),
    "too_large": _http("200 OK", b'"' + b"x" * 2000 + b'"'),
    "deeply_nested": _http("200 OK", b"[" * 100_000),
    "closed": b"",
}


class BrokenEndpoint:
    """Reads one request per connection and answers with ``ANSWERS[mode]`` ("slow": nothing
    until released)."""

    def __init__(self):
        self.mode = "ok"
        self.release = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    request += chunk
                # The whole body too: closing with unread bytes makes the kernel reset the
                # connection, and the client would see a reset instead of this answer.
                head, _, body = request.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(body) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                if self.mode == "slow":
                    self.release.wait(10)
                    continue
                conn.sendall(ANSWERS[self.mode])
                conn.shutdown(socket.SHUT_WR)

    def close(self):
        self.release.set()
        self.sock.close()


@pytest.fixture
def endpoint():
    server = BrokenEndpoint()
    yield server
    server.close()


def _post(url: str, *, timeout: float = 5, max_bytes: int = 1000):
    return post_json(
        f"{url}/embeddings", {"input": ["a"]}, api_key="k", timeout=timeout, max_bytes=max_bytes, service="test"
    )


def test_a_good_answer_is_decoded(endpoint):
    assert _post(endpoint.url) == {"data": [{"index": 0, "embedding": [1.0, 0.0]}]}


@pytest.mark.parametrize(
    ("mode", "phrase", "error_class"),
    [
        ("status_500", "answered HTTP 500", "HTTPError"),
        ("garbage", "unreachable (broken answer)", "BadStatusLine"),
        ("closed", "unreachable (broken answer)", "RemoteDisconnected"),
        ("cut_body", "answer is not JSON", "JSONDecodeError"),  # what came before the connection closed
        ("not_json", "answer is not JSON", "JSONDecodeError"),
        ("deeply_nested", "answer is not JSON", "RecursionError"),
        ("too_large", "answer too large", ""),
    ],
)
def test_every_failure_is_one_fixed_phrase_and_the_class_is_logged(endpoint, caplog, mode, phrase, error_class):
    endpoint.mode = mode
    with caplog.at_level(logging.WARNING, logger="config.openai_http"), pytest.raises(UpstreamError) as failed:
        _post(endpoint.url, max_bytes=100_000 if mode == "deeply_nested" else 1000)
    assert str(failed.value) == phrase
    assert failed.value.__cause__ is None  # nothing of the underlying exception is attached
    [record] = caplog.records
    assert (record.service, record.error_class) == ("test", error_class)
    assert SECRET not in record.getMessage()


def test_no_answer_in_time_is_a_timeout(endpoint):
    endpoint.mode = "slow"
    with pytest.raises(UpstreamError) as failed:
        _post(endpoint.url, timeout=0.3)
    assert str(failed.value) == "unreachable (timed out)"


def test_a_closed_port_is_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nobody listens
    with pytest.raises(UpstreamError) as failed:
        _post(f"http://127.0.0.1:{port}/v1", timeout=2)
    assert str(failed.value) == "unreachable"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.org/v1", "127.0.0.1:8000/v1", ""])
def test_only_http_base_urls_are_endpoints(url):
    with pytest.raises(ValueError):
        http_base_url(url)
    with pytest.raises(ValueError):
        HttpExtractor(base_url=url, model="m")
    with pytest.raises(ValueError):
        OpenAICompatibleEmbedding(base_url=url, model="m", dim=2)


@pytest.mark.parametrize("mode", ["status_500", "garbage", "closed", "cut_body", "not_json"])
def test_the_embedding_service_message_users_see_is_generic(endpoint, mode):
    endpoint.mode = mode
    with pytest.raises(ServiceUnavailable) as failed:
        OpenAICompatibleEmbedding(base_url=endpoint.url, model="m", dim=2, timeout=2).embed(["a"])
    message = failed.value.message
    assert failed.value.code == "embedding_unavailable"
    assert message.removeprefix("Embedding service ").removesuffix(".") in PHRASES
    assert SECRET not in message


def test_an_unreachable_embedding_service_does_not_quote_the_socket_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ServiceUnavailable) as failed:
        OpenAICompatibleEmbedding(base_url=f"http://127.0.0.1:{port}", model="m", dim=2, timeout=2).embed(["a"])
    assert failed.value.message == "Embedding service unreachable."  # not "<urlopen error [Errno 111] …>"


@pytest.mark.parametrize("mode", ["status_500", "garbage", "closed", "cut_body", "not_json"])
def test_the_extractor_maps_the_same_failures(endpoint, mode):
    endpoint.mode = mode
    with pytest.raises(ExtractorError) as failed:
        HttpExtractor(base_url=endpoint.url, model="m", timeout=2).extract("We decided to use tea.")
    assert str(failed.value).removeprefix("extractor endpoint ") in PHRASES
    assert SECRET not in str(failed.value)
