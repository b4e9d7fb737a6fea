"""Secrets never reach the store or the log: each kind, end to end through the worker."""

import logging

import pytest

from memory_app.automemory.redaction import redact
from memory_app.automemory.worker import round_run
from memory_app.models import AutoMemoryLogEntry
from tests.memory_app.automemory_helpers import all_stored_text, auto_memories, enable, finished_run

# (kind, statement holding the secret, the secret string itself)
SECRETS = [
    ("openai_key", "We use the key sk-proj-A1b2C3d4E5f6G7h8I9j0KLMN for billing.", "A1b2C3d4E5f6G7h8I9j0KLMN"),
    ("aws_key", "We use AKIAIOSFODNN7EXAMPLE for uploads.", "AKIAIOSFODNN7EXAMPLE"),
    ("github_token", "We use ghp_1234567890abcdefghijklmnopqrstuvwxyzAB for deploys.", "1234567890abcdefghijklmnopqrstuvwxyzAB"),
    ("slack_token", "We use xoxb-123456789012-abcdefGHIJKL for alerts.", "123456789012-abcdefGHIJKL"),
    ("stripe_key", "We use sk_live_51HxYzAbCdEfGhIjKlMn for payments.", "51HxYzAbCdEfGhIjKlMn"),
    ("jwt", "We use eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz for the gateway.", "c2lnbmF0dXJlMTIz"),
    ("password_kv", "We always log in with password=Hunter2Secret! on staging.", "Hunter2Secret"),
    ("password_colon", "We decided the admin_password: 'Pa55phraseXyz' stays for now.", "Pa55phraseXyz"),
    ("password_is", "We use the lab login and the password is Tr0ub4dorXyz for it.", "Tr0ub4dorXyz"),
    ("password_zh", "我们决定测试账号的密码是Zh0ngWenMiMa123，大家都用。", "Zh0ngWenMiMa123"),
    ("password_url", "We use https://admin:S3cretPassw0rd@internal.example.com for the dashboard.", "S3cretPassw0rd"),
    ("bearer_header", "We always send Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2 to the gateway.", "Zm9vYmFyYmF6cXV4MTIzNDU2"),
    ("token_header", "We always send the header Authorization: Token 9f8e7d6c5b4a3f2e1d0c to the API.", "9f8e7d6c5b4a3f2e1d0c"),
    ("bare_bearer", "We always pass bearer QmVhcmVyVG9rZW5WYWx1ZQ== to the proxy.", "QmVhcmVyVG9rZW5WYWx1ZQ"),
    (
        "private_key",
        "We decided to use this deploy key -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n"
        "-----END OPENSSH PRIVATE KEY----- for servers.",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    ("connection_string", "We use postgres://billing:pgS3cretXyz@db.internal:5432/billing for billing.", "pgS3cretXyz"),
    ("redis_url", "We use redis://:r3disPassXyz@cache.internal:6379/0 for caching.", "r3disPassXyz"),
    ("ado_string", "We use Server=db1;Database=app;User Id=sa;Password=AdoS3cretXyz; for reports.", "AdoS3cretXyz"),
    ("email", "We use ops-team@example.com for alerts.", "ops-team@example.com"),
    ("phone", "We use +1 415 555 0100 for on-call escalation.", "415 555 0100"),
    ("phone_cn", "我们决定值班电话用13812345678联系。", "13812345678"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "statement", "secret"), SECRETS, ids=[s[0] for s in SECRETS])
def test_secret_never_reaches_store_or_log(alice, project, caplog, kind, statement, secret):
    enable(alice, min_length_chars=10)
    run = finished_run(user=alice, project=project, text=statement, prompt=f"Context: {statement}")
    with caplog.at_level(logging.DEBUG):
        [result] = round_run(worker_id="test")
    assert result.outcome == "extracted", result
    stored = all_stored_text()
    assert "[REDACTED:" in stored  # the statement was kept, its secret replaced
    assert secret not in stored
    assert secret not in caplog.text
    assert AutoMemoryLogEntry.objects.filter(run_ref=run.pk).exists()


@pytest.mark.django_db
def test_contact_info_is_kept_when_the_setting_is_off(alice, project):
    enable(alice, min_length_chars=10, redact_contact_info=False)
    finished_run(user=alice, project=project, text="We use ops-team@example.com for alerts. password=Hunter2Secret!")
    round_run(worker_id="test")
    stored = all_stored_text()
    assert "ops-team@example.com" in stored  # by setting
    assert "Hunter2Secret" not in stored  # secrets always


def test_ordinary_text_is_untouched():
    text = "We use PostgreSQL 16 since 2024-01-15 with 3 replicas on port 5432; see https://example.com/docs."
    assert redact(text).text == text
    assert redact(text).counts == {}


def test_redaction_counts_each_kind():
    result = redact("a sk-abcdefghijklmnopqrstu b password=abcdef c bob@example.com", contact_info=True)
    assert result.counts == {"api_key": 1, "password": 1, "email": 1}
    assert "sk-abcdefghijklmnopqrstu" not in result.text and "abcdef " not in result.text


def test_unterminated_private_key_is_cut_to_the_end():
    result = redact("key: -----BEGIN RSA PRIVATE KEY-----\nMIIEsecretbody\nmore")
    assert "MIIEsecretbody" not in result.text and "more" not in result.text


def test_auto_memories_exist_for_redacted_statements(alice, project, db):
    enable(alice, min_length_chars=10)
    finished_run(user=alice, project=project, text="We use AKIAIOSFODNN7EXAMPLE for uploads.")
    round_run(worker_id="test")
    assert list(auto_memories().values_list("content", flat=True)) == ["We use [REDACTED:api_key] for uploads."]
