"""Secrets never reach the store or the log: each kind, end to end through the worker."""

import logging
from collections import Counter

import pytest
from django.db import connection

from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.automemory.worker import round_run
from memory_app.distill.redaction import redact
from tests.memory_app.automemory.helpers import all_stored_text, auto_memories, enable, finished_run, manual_round
from tests.memory_app.distill.redaction_lookalikes import LOOKALIKES

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


# --- Token formats and bare secrets, end to end through a chat run ---------------------------
# Fake values in the real shapes.
TELEGRAM = "5012345678:AAEhQk4bXz1V9mN2rT6yP0wL3cJ8sD5fG7a"
PYPI = (
    "pypi-AgEIcHlwaS5vcmcCJGI4YmNhMDA5LTg0ZTgtNDdkMC1iNjIyLTdiOTJjZDUyMjc1YQACJXsicGVybWlzc2lvbnMiOiAidXNl"
    "ciIsICJ2ZXJzaW9uIjogMX0AAAYgNh0aD5rqzqsZGIcDtkvh3ssuaJFL9ToELJiAoCPd1mI"
)
TEST_PYPI = "pypi-AgENdGVzdC5weXBpLm9yZwIkNmQ3ZTRmYjItYjE2Zi00ZGQ2LWE5YjYtN2JhZTE0NjAwZmI4AAIqWzMsIjQ1"
DISCORD = "MTA4NjYxMjM0NTY3ODkwMTIzNA.GkXq3Z.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789ab"
DISCORD_WEBHOOK = (
    "https://discord.com/api/webhooks/1086612345678901234/Zk3Qx9LmP2vR7tY1wB5nC8dF0gH4jK6sA_ZmVfQ-1xN9oPq2"
)
TWILIO_SID = "AC" + "fedcba9876543210" * 2
TWILIO_KEY = "SK" + "0123456789abcdef" * 2
TWILIO_KEY_SECRET = "Qm3xZ9pL2vR7tY1wB5nC8dF0gH4jK6sA"
TWILIO_AUTH = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
GOOGLE_ACCESS = "ya29.a0AfH6SMBx7Ql9kXcYzR2Vb3pN4mT5uW6eH7jK8lQ9rS0tU1vW2xY3zA4bC5dE6fG7hI8jK9lM0nO"
GOOGLE_REFRESH = "1//0gLxJ7kQ2mN9pR4tV6wY8zA1bC3dE5fG7hI9jK0lM2nO4pQ6rS8tU"
AWS_EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_SECRET = "Xq9+2fLk7Rz/Pw4Nc8Vb1Hd6Ts3Ym0Ga5Ej+Uo7K"
HEX64 = "5f2b7c9e1a4d8b3f6e0c2a9d7b1e4f8a3c6d9e2b5a8f1c4e7d0a3b6c9f2e5d8a"
RANDOM_BARE = "7Fh3kQ9zLm2Xp8Rv4Tn6Wb1Yc5Jd0Gs"

# (kind, statement holding the secret, the strings that must not be stored or logged)
FORMATS = [
    ("telegram_bot_token", f"We decided the alert bot uses {TELEGRAM} for the ops channel.", [TELEGRAM[11:]]),
    (
        "telegram_in_url",
        f"We always call https://api.telegram.org/bot{TELEGRAM}/sendMessage for alerts.",
        [TELEGRAM[11:]],
    ),
    ("pypi_token", f"We use {PYPI} for publishing.", [PYPI[5:]]),
    ("test_pypi_token", f"We use {TEST_PYPI} for the dry runs.", [TEST_PYPI[5:]]),
    ("discord_bot_token", f"We decided the Discord bot runs with {DISCORD} in prod.", [DISCORD.split(".")[2]]),
    ("discord_webhook", f"We always post releases to {DISCORD_WEBHOOK} on Fridays.", ["Zk3Qx9LmP2vR7tY1wB5n"]),
    ("twilio_api_key", f"We use the Twilio key {TWILIO_KEY} for SMS.", [TWILIO_KEY]),
    (
        "twilio_key_and_secret",
        f"We always call the SMS API with -u {TWILIO_KEY}:{TWILIO_KEY_SECRET} from the worker.",
        [TWILIO_KEY, TWILIO_KEY_SECRET],
    ),
    (
        "twilio_account_and_auth_token",
        f"We use Twilio account {TWILIO_SID} with auth token {TWILIO_AUTH} for SMS.",
        [TWILIO_SID, TWILIO_AUTH],
    ),
    ("google_access_token", f"We decided to test Drive with {GOOGLE_ACCESS} today.", [GOOGLE_ACCESS[5:]]),
    ("google_refresh_token", f"We use {GOOGLE_REFRESH} for the calendar sync.", [GOOGLE_REFRESH[4:]]),
    ("aws_secret_bare", f"We use {AWS_SECRET} for uploads.", [AWS_SECRET]),
    ("aws_example_secret_bare", f"We use {AWS_EXAMPLE_SECRET} for uploads.", [AWS_EXAMPLE_SECRET]),
    ("aws_secret_after_key_name", f"We use aws_secret_access_key {AWS_SECRET} for uploads.", [AWS_SECRET]),
    ("aws_secret_in_prose", f"We use the AWS secret access key: {AWS_SECRET} for uploads.", [AWS_SECRET]),
    ("hex64_secret", f"We always sign webhooks with {HEX64} on prod.", [HEX64]),
    ("hex_private_key", f"We use 0x{HEX64} as the deployer key.", [HEX64]),
    ("random_bare_secret", f"We use {RANDOM_BARE} for the webhook.", [RANDOM_BARE]),
    (
        "mailchimp_key",
        "We use 0123456789abcdef0123456789abcdef-us14 for newsletters.",
        ["0123456789abcdef0123456789abcdef"],
    ),
    ("square_token", "We use sq0atp-Zk3Qx9LmP2vR7tY1wB5nC8 for payments.", ["Zk3Qx9LmP2vR7tY1wB5nC8"]),
    ("shopify_token", f"We use shpat_{'0123456789abcdef' * 2} for the shop.", ["0123456789abcdef" * 2]),
    (
        "azure_account_key",
        "We use DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zk3Qx9LmP2vR7tY1wB5nC8dF0g==;"
        "EndpointSuffix=core.windows.net for blobs.",
        ["Zk3Qx9LmP2vR7tY1wB5nC8dF0g"],
    ),
]


# Credentials people paste from a terminal, password phrases in other languages, card numbers.
PASTED = [
    ("curl_user", "We always call curl -u deploy:Cu7lPassw0rd https://api.example.com/health.", ["Cu7lPassw0rd"]),
    ("curl_user_long", "We always call curl --user deploy:Cu7lPassw0rd https://api.example.com.", ["Cu7lPassw0rd"]),
    ("mysql_attached", "We always run mysql -uroot -pHunter2Secret billing for the report.", ["Hunter2Secret"]),
    ("mysqldump", "We always run mysqldump -h db -u app -pDumpS3cret billing nightly.", ["DumpS3cret"]),
    ("sshpass", "We always deploy with sshpass -p Ssh9assXyz ssh deploy@example.com.", ["Ssh9assXyz"]),
    ("docker_login", "We always run docker login -u ci -p D0ckerPassXyz registry.example.com.", ["D0ckerPassXyz"]),
    (
        "docker_login_long",
        "We always run docker login --username ci --password D0ckerPassXyz registry.example.com.",
        ["D0ckerPassXyz"],
    ),
    ("psql_uri", "We always run psql postgres://app:PsqlS3cretXyz@db.example.com/billing for it.", ["PsqlS3cretXyz"]),
    ("pgpassword", "We always run PGPASSWORD=PgPassXyz42 psql -h db -U app billing.", ["PgPassXyz42"]),
    ("password_ja", "We decided this: テスト環境のパスワードはNihonG0Passです。", ["NihonG0Pass"]),
    ("password_es", "We decided this: la contraseña de staging es Espan0lClave.", ["Espan0lClave"]),
    ("password_fr", "We decided this: le mot de passe est Franc4isMdp pour la préprod.", ["Franc4isMdp"]),
    ("password_de", "We decided this: das Passwort ist Deutsch9Wort für Staging.", ["Deutsch9Wort"]),
    ("password_de_colon", "We decided this: Kennwort: Kenn7WortXyz für den Server.", ["Kenn7WortXyz"]),
    ("password_ko", "We decided this: 비밀번호는 Hangul5Pass 입니다.", ["Hangul5Pass"]),
    ("password_ru", "We decided this: пароль от сервера — Russk1yPass.", ["Russk1yPass"]),
    ("password_ru_bare", "We decided this: мой пароль Russk1yPass9 для всех.", ["Russk1yPass9"]),
    ("card_spaces", "We always pay with the card 4111 1111 1111 1111 for the cloud bill.", ["1111 1111 1111"]),
    ("card_dashes", "We always pay with the card 5555-5555-5555-4444 for the cloud bill.", ["5555-5555-5555"]),
    ("card_bare", "We always pay with the card 4012888888881881 for the cloud bill.", ["4012888888881881"]),
    ("card_amex", "We always pay with the card 3782 822463 10005 for the cloud bill.", ["822463"]),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "statement", "secrets"), PASTED, ids=[f[0] for f in PASTED])
def test_pasted_credential_reaches_no_table_and_no_log(
    api, svc, run_api, alice, project, caplog, kind, statement, secrets
):
    enable(alice, min_length_chars=10, min_idle_minutes=0, min_duration_seconds=0)
    owner = api(alice)
    with caplog.at_level(logging.DEBUG):
        run_id = _chat_run(api(svc), run_api, project=project, text=statement)
        before = _cells_holding(secrets)  # the conversation itself: the input, kept as written
        _extract_now(owner, run_id)
    assert before, "the secret was not in the conversation"
    assert not _cells_holding(secrets) - before
    [memory] = auto_memories(project)
    assert "[REDACTED:" in memory.content
    for secret in secrets:
        assert secret not in memory.content
        assert secret not in caplog.text
        assert secret not in str(owner.get("/api/users/me/auto-memory-log").json())


@pytest.mark.django_db
def test_a_pasted_mysql_password_never_reaches_a_chat_memory_through_consolidation(api, svc, caplog):
    secret = "Hunter2Secret"
    with caplog.at_level(logging.DEBUG):
        response = api(svc).post(
            "/api/memory/consolidate",
            {
                "session_id": "milky:private:10001",
                "messages": [
                    {"role": "user", "content": f"I prefer to connect with mysql -uroot -p{secret} to the billing db."}
                ],
            },
            format="json",
        )
    assert response.status_code == 200, response.content
    assert response.json()["counts"].get("created") == 1
    assert secret not in response.content.decode()
    assert not _cells_holding([secret])
    assert secret not in caplog.text


def _text_cells() -> list[tuple[str, str, str]]:
    """Every cell of every table in the database, as (table, column, text)."""
    cells = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            columns = [c[0] for c in cursor.description]
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if isinstance(value, memoryview | bytes):
                        cells.append((table, column, bytes(value).decode("latin-1")))
                    elif value is not None:
                        cells.append((table, column, str(value)))
    return cells


def _cells_holding(secrets: list[str]) -> Counter:
    return Counter(cell for cell in _text_cells() if any(secret in cell[2] for secret in secrets))


def _chat_run(service, run_api, *, project, text: str) -> str:
    """A chat run of alice's in ``project`` whose conversation holds ``text``, finished through
    the API as an agent runtime does it."""
    conversation = service.post(
        "/api/conversations", {"user": "alice", "title": "Ops", "project_id": project.pk}, format="json"
    )
    assert conversation.status_code == 201, conversation.content
    conversation_id = conversation.json()["id"]
    run = service.post(
        "/api/runs",
        {
            "user": "alice",
            "conversation_id": conversation_id,
            "request_id": "req-1",
            "kind": "chat",
            "worker_id": "w1",
            "lease_seconds": 60,
            "prompt": text,
            "project_id": project.pk,
        },
        format="json",
    )
    assert run.status_code == 201, run.content
    run = run.json()
    for role, content in (("user", text), ("assistant", "Noted, I will keep that in mind.")):
        message = service.post(
            f"/api/conversations/{conversation_id}/messages",
            {"role": role, "content": content, "run_id": run["id"]},
            format="json",
        )
        assert message.status_code == 201, message.content
    done = run_api(run["run_token"]).post(
        f"/api/runs/{run['id']}/finish", {"status": "completed", "usage": {"duration_s": 60}}, format="json"
    )
    assert done.status_code == 200, done.content
    return run["id"]


def _extract_now(client, run_id: str) -> None:
    result = manual_round(client)
    assert [(p["run_id"], p["outcome"]) for p in result["processed"]] == [(run_id, "extracted")]


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "statement", "secrets"), FORMATS, ids=[f[0] for f in FORMATS])
def test_token_format_reaches_no_table_and_no_log(api, svc, run_api, alice, project, caplog, kind, statement, secrets):
    enable(alice, min_length_chars=10, min_idle_minutes=0, min_duration_seconds=0)
    owner = api(alice)
    with caplog.at_level(logging.DEBUG):
        run_id = _chat_run(api(svc), run_api, project=project, text=statement)
        before = _cells_holding(secrets)  # the conversation itself: the input, kept as written
        _extract_now(owner, run_id)
    assert before, "the secret was not in the conversation"
    assert not _cells_holding(secrets) - before  # nothing the extraction wrote holds it
    [memory] = auto_memories(project)
    assert "[REDACTED:" in memory.content
    for secret in secrets:
        assert secret not in memory.content
        assert secret not in caplog.text
        assert secret not in str(owner.get("/api/users/me/auto-memory-log").json())


ORDINARY = [
    "We use commit 9fceb02d0ae598e95dc970b74767f19372d61af8 as the base of v2.3.1 since 2024-01-15.",
    "We use run 3f2b8c1e-4d5a-4b6c-9e7f-0a1b2c3d4e5f (request 3f2b8c1e4d5a4b6c9e7f0a1b2c3d4e5f) as the example.",
    "We always quote the GUID 3F2B8C1E-4D5A-4B6C-9E7F-0A1B2C3D4E5F and the short id 9fceb02 in tickets.",
    "We use https://docs.djangoproject.com/en/5.2/ref/settings/#std-setting-DATABASES for the options.",
    "We decided /usr/lib/python3.11/site-packages/django/contrib/auth/password_validation.py stays untouched.",
    "We always edit memory_app/automemory/redaction.py together with tests/memory_app/automemory/test_redaction.py.",
    "We use /home/User1/Documents/ProjectFiles/abcde for the fixtures.",
    "The file rest_framework/authtoken/migrations/0003_tokenproxy.py was changed.",
    "We decided Jinja2DivFormRenderer replaces DjangoDivFormRenderer and OGR_F_GetFieldAsInteger64 stays.",
    "We use ThisIsAVeryLongCamelCaseIdentifierName2 and test_secret_never_reaches_store_or_log as names.",
    "We use build 2024.11.30-rc1+g1a2b3c4 (deployed 2026-11-30T15:39:40Z) on node ip-10-0-3-17.",
    "我们决定把计费服务迁移到 PostgreSQL 16，并在 2024-01-15 之前完成。",
    "我们使用 Redis 7 做缓存，提交 9fceb02d0ae598e95dc970b74767f19372d61af8 已经合并。",
    "We always rotate the tokens every month and keep secrets in the vault.",
]


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_of_flags_cards_and_phrases_are_unchanged(text):
    result = redact(text, contact_info=False)  # phone numbers and emails go by their own setting
    assert result.text == text and result.counts == {}


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_with_ids_urls_and_paths_is_unchanged(text):
    result = redact(text)
    assert result.text == text and result.counts == {}


@pytest.mark.django_db
def test_ordinary_conversation_is_remembered_word_for_word(api, svc, run_api, alice, project, caplog):
    enable(alice, min_length_chars=10, min_idle_minutes=0, min_duration_seconds=0)
    text = "\n".join(ORDINARY)
    with caplog.at_level(logging.DEBUG):
        run_id = _chat_run(api(svc), run_api, project=project, text=text)
        _extract_now(api(alice), run_id)
    contents = set(auto_memories(project).values_list("content", flat=True))
    statements = {line for line in ORDINARY if line.startswith(("We ", "我们"))}
    assert statements <= contents
    assert "[REDACTED:" not in all_stored_text()


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        (f"bot {TELEGRAM}", {"token": 1}),
        (PYPI, {"api_key": 1}),
        (DISCORD, {"token": 1}),
        (f"{TWILIO_SID} {TWILIO_KEY}", {"api_key": 2}),
        (GOOGLE_ACCESS, {"token": 1}),
        (f"key {AWS_SECRET} and {HEX64}", {"secret": 2}),
        (f"sha256:{HEX64}", {"secret": 1}),  # a digest cannot be told from a key: it goes too
        ("the auth token 9f8e7d6c5b4a39281706f5e4d3c2b1a0.", {"password": 1}),
    ],
)
def test_each_format_is_counted_under_its_kind(text, counts):
    assert redact(text).counts == counts
