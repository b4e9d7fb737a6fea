"""Secrets never reach the store or the log: each kind, end to end through the worker."""

import logging

import pytest

from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.automemory.redaction import redact
from memory_app.automemory.worker import round_run
from tests.memory_app.automemory.helpers import all_stored_text, auto_memories, enable, finished_run

# (kind, statement holding the secret, the secret string itself)
SECRETS = [
    ("openai_key", "We use the key sk-proj-A1b2C3d4E5f6G7h8I9j0KLMN for billing.", "A1b2C3d4E5f6G7h8I9j0KLMN"),
    ("aws_key", "We use AKIAIOSFODNN7EXAMPLE for uploads.", "AKIAIOSFODNN7EXAMPLE"),
    (
        "github_token",
        "We use ghp_1234567890abcdefghijklmnopqrstuvwxyzAB for deploys.",
        "1234567890abcdefghijklmnopqrstuvwxyzAB",
    ),
    ("slack_token", "We use xoxb-123456789012-abcdefGHIJKL for alerts.", "123456789012-abcdefGHIJKL"),
    ("stripe_key", "We use sk_live_51HxYzAbCdEfGhIjKlMn for payments.", "51HxYzAbCdEfGhIjKlMn"),
    ("jwt", "We use eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz for the gateway.", "c2lnbmF0dXJlMTIz"),
    ("password_kv", "We always log in with password=Hunter2Secret! on staging.", "Hunter2Secret"),
    ("password_colon", "We decided the admin_password: 'Pa55phraseXyz' stays for now.", "Pa55phraseXyz"),
    ("password_is", "We use the lab login and the password is Tr0ub4dorXyz for it.", "Tr0ub4dorXyz"),
    ("password_zh", "我们决定测试账号的密码是Zh0ngWenMiMa123，大家都用。", "Zh0ngWenMiMa123"),
    ("password_url", "We use https://admin:S3cretPassw0rd@internal.example.com for the dashboard.", "S3cretPassw0rd"),
    (
        "bearer_header",
        "We always send Authorization: Bearer Zm9vYmFyYmF6cXV4MTIzNDU2 to the gateway.",
        "Zm9vYmFyYmF6cXV4MTIzNDU2",
    ),
    (
        "token_header",
        "We always send the header Authorization: Token 9f8e7d6c5b4a3f2e1d0c to the API.",
        "9f8e7d6c5b4a3f2e1d0c",
    ),
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
    # Quoted values with spaces or commas, and the looser prose forms.
    (
        "password_quoted_spaces",
        'We decided the staging password: "horse battery staple" stays for now.',
        "horse battery staple",
    ),
    ("password_quoted_comma", "We decided the password is 'red, green, blue' for the lab.", "red, green, blue"),
    ("password_is_colon", "We decided the staging password is: hunter2 for now.", "hunter2"),
    ("password_for_is", "We decided the password for the admin account is Adm1nXyz99 for now.", "Adm1nXyz99"),
    ("passwd", "We always log in with passwd=Sup3rS3cretXyz on the router.", "Sup3rS3cretXyz"),
    ("pwd", "We always log in with pwd: Pwd0nlyXyz7 on the router.", "Pwd0nlyXyz7"),
    ("api_key_space", "We use the api key: 1234abcd5678efgh for billing.", "1234abcd5678efgh"),
    ("api_key_header", "We always send X-API-Key: 0f1e2d3c4b5a69788796 to the gateway.", "0f1e2d3c4b5a69788796"),
    ("secret_quoted", "We decided secret = 'a b c' on staging.", "a b c"),
    ("token_quoted", 'We decided the token: "x y" is shared.', '"x y"'),
    ("json_password", 'We always send {"password": "j50n pass, word"} to the login API.', "j50n pass, word"),
    ("password_zh_colon", "我们决定测试账号的密码：hunter2zh，大家都用。", "hunter2zh"),
    ("password_zh_quoted", "我们决定测试账号的密码为“马 电池 订书钉”，大家都用。", "马 电池 订书钉"),
    ("password_zh_is_colon", "我们决定测试账号的密码是：Zh0ngWen2，大家都用。", "Zh0ngWen2"),
    (
        "basic_auth",
        "We always send Authorization: Basic dXNlcjpwYXNzd29yZA== to the proxy.",
        "dXNlcjpwYXNzd29yZA",
    ),
    ("cookie", "We always send Cookie: sessionid=c00kieSecretXyz; csrftoken=abc to the admin.", "c00kieSecretXyz"),
    (
        "aws_secret_line",
        "We use aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY for uploads.",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    (
        "anthropic_key",
        "We use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv for summaries.",
        "AbCdEfGhIjKlMnOpQrStUv",
    ),
    ("github_fine_grained", "We use github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP for CI.", "11ABCDEFG0123456789"),
    (
        "npm_token",
        "We use npm_abcdefghijklmnopqrstuvwxyz0123456789 for publishing.",
        "abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    ("hf_token", "We use hf_abcdefghijklmnopqrstuvwxyzABCDEFGH for models.", "abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    (
        "slack_webhook",
        "We use https://hooks.slack.com/services/T0000/B0000/XXXXsecretXXXX for alerts.",
        "XXXXsecretXXXX",
    ),
    (
        "query_token",
        "We use https://api.example.com/v1/feed?user=bob&token=q1w2e3r4t5y6 for the feed.",
        "q1w2e3r4t5y6",
    ),
    ("query_sig", "We use https://files.example.com/a.zip?sig=Zm9vYmFyYmF6cXV4 for downloads.", "Zm9vYmFyYmF6cXV4"),
    (
        "pem_rsa",
        "We decided to use this key -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAsecretbody\n"
        "-----END RSA PRIVATE KEY----- for signing.",
        "MIIEpAIBAAKCAQEAsecretbody",
    ),
    (
        "long_key_name",
        "We use MY_SERVICE_PRODUCTION_DATABASE_PRIMARY_PASSWORD=L0ngKeyXyz9 on prod.",
        "L0ngKeyXyz9",
    ),
    ("dotted_key_name", "We always set spring.datasource.password=D0ttedXyz7 in prod.", "D0ttedXyz7"),
    ("mysql_url", "We use mysql://root:p4ss@word@db.internal:3306/app for reports.", "p4ss"),
    (
        "password_for_colon",
        "We decided the db password for prod: 'correct horse battery' stays.",
        "correct horse battery",
    ),
    ("fullwidth_key", "We decided the Ｐａｓｓｗｏｒｄ: hunter2fullwidth stays.", "hunter2fullwidth"),
    ("zero_width_key", "We decided the pass\u200bword: zw5ecretXyz stays.", "zw5ecretXyz"),
    (
        "own_api_token",
        "We use mk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 for the memory API.",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    (
        "own_run_token",
        "We use run_01m8km1k0g9kt2rgeferc6btep.3.RunS3cretAbCdEfGhIjKlMnOpQrStUv for the tool call.",
        "RunS3cretAbCdEfGhIjKlMnOpQrStUv",
    ),
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


# Configuration pasted into a conversation: the secret sits on its own line, unquoted words too.
CONFIG_SECRETS = [
    ("yaml_password", "db:\n  host: db1\n  password: yaml horse staple\n  port: 5432", "yaml horse staple"),
    ("env_export", "export DB_PASSWORD='env s3cret qwerty'\nexport DB_HOST=db1", "env s3cret qwerty"),
    ("dotenv", "DEBUG=0\nSTRIPE_SECRET=plain words xyzzy\n", "plain words xyzzy"),
    (
        "aws_credentials_file",
        "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRf",
        "wJalrXUtnFEMI/K7MDENG/bPxRf",
    ),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "config", "secret"), CONFIG_SECRETS, ids=[s[0] for s in CONFIG_SECRETS])
def test_config_lines_never_reach_store_or_log(alice, project, caplog, kind, config, secret):
    words = secret.split()  # a multi-word value must not leak even in part
    assert not [w for w in words if w in redact(config).text]
    enable(alice, min_length_chars=10)
    statement = "We decided to use PostgreSQL 16 for billing."
    finished_run(user=alice, project=project, text=f"{statement}\n{config}\n{statement}", prompt=config)
    with caplog.at_level(logging.DEBUG):
        [result] = round_run(worker_id="test")
    assert result.outcome == "extracted", result
    stored = all_stored_text()
    assert "PostgreSQL 16" in stored
    assert not [w for w in words if w in stored or w in caplog.text]


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


@pytest.mark.parametrize(
    "text",
    [
        "We always rotate the password every month and store tokens in the vault.",
        "We decided to pass the API key check in CI before merging.",
        "密码策略：每月更换一次。",
        "We use basic authentication only behind the VPN; the token endpoint is documented.",
    ],
)
def test_prose_about_secrets_without_a_value_is_kept(text):
    result = redact(text)
    assert result.text == text and result.counts == {}


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
