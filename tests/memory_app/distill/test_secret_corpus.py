"""The secret corpus (secret_corpus.py): every form loses its secret whole, the look-alikes stay
as they are (at most 1 % may change), the check digits decide, and no secret of the corpus is
stored by any path that writes what conversations or files say — consolidation, dreaming,
auto-memory and import — superseded versions included."""

import json
import re
from collections import Counter
from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from memory_app.automemory.worker import round_run
from memory_app.distill import identifiers as ids
from memory_app.distill.redaction import redact, redact_strings
from memory_app.home.export import home_export
from memory_app.home.services import home_import
from memory_app.memories.models import Memory, Status
from memory_app.scoped.consolidation import dream_session, system_actor
from tests.factories import ConversationFactory, MessageFactory
from tests.memory_app.automemory.helpers import enable, finished_run
from tests.memory_app.distill import secret_corpus as corpus

ALL_SECRETS = corpus.SECRETS + corpus.HELD_OUT


def _id(entry: corpus.Entry) -> str:
    return f"{entry.lang}:{entry.text[:40]}"


# --- the corpus itself ------------------------------------------------------------------------------
def test_the_corpus_is_as_large_and_as_varied_as_promised():
    assert len(ALL_SECRETS) >= 200
    assert len(corpus.LOOKALIKES) >= 100
    assert len({e.lang for e in ALL_SECRETS}) >= 15
    assert len({e.lang for e in corpus.LOOKALIKES}) >= 15
    assert len(corpus.HELD_OUT) >= 50
    assert not {e.text for e in corpus.HELD_OUT} & {e.text for e in corpus.SECRETS}
    for entry in ALL_SECRETS:
        assert entry.secret and entry.secret in entry.text, entry
    assert len(corpus.generated(seed=1)) == len(corpus.generated(seed=2))  # generated, not listed


@pytest.mark.parametrize("entry", corpus.SECRETS, ids=_id)
def test_each_secret_form_loses_its_secret(entry):
    result = redact(entry.text)
    assert entry.secret not in result.text
    assert "[REDACTED:" in result.text


@pytest.mark.parametrize("entry", corpus.HELD_OUT, ids=_id)
def test_each_held_out_form_loses_its_secret(entry):
    assert entry.secret not in redact(entry.text).text


def test_at_most_one_percent_of_the_lookalikes_change():
    changed = [e.text for e in corpus.LOOKALIKES if redact(e.text, contact_info=False).counts]
    assert len(changed) <= len(corpus.LOOKALIKES) // 100, changed


@pytest.mark.parametrize("entry", corpus.LOOKALIKES_WRITTEN, ids=_id)
def test_written_lookalikes_come_back_unchanged(entry):
    result = redact(entry.text, contact_info=False)
    assert (result.text, result.counts) == (entry.text, {})


# --- check digits ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("check", "good", "bad"),
    [
        (ids.iban_ok, "DE89370400440532013000", "DE88370400440532013000"),
        (ids.iban_ok, "GB82WEST12345698765432", "GB82WEST12345698765433"),
        (ids.luhn_ok, "4111111111111111", "4111111111111112"),
        (ids.verhoeff_ok, "234567890124", "234567890125"),
        (ids.cpf_ok, "52998224725", "52998224726"),
        (ids.cn_resident_id_ok, "11010519491231002X", "110105194912310021"),
    ],
)
def test_check_digits_accept_the_number_and_refuse_a_changed_one(check, good, bad):
    assert check(good) and not check(bad)


def test_dni_letters_and_never_issued_numbers():
    assert ids.dni_ok("12345678", "Z") and not ids.dni_ok("12345678", "A")
    assert ids.dni_ok("X1234567", "L") and not ids.dni_ok("X1234567", "M")
    assert not ids.cpf_ok("11111111111")  # passes the arithmetic, never issued
    assert not ids.cn_resident_id_ok("110105194902300021")  # 30 February
    for never in ("000-12-3456", "666-12-3456", "912-12-3456", "123-00-4567", "123-45-0000"):
        assert redact(f"SSN {never} on file", contact_info=False).text.endswith(f"{never} on file")
    for never in ("QQ 12 34 56 A", "GB 12 34 56 A", "DA 12 34 56 A", "AO 12 34 56 A"):
        assert redact(f"NINO {never}", contact_info=False).counts == {}


_MAKERS = {
    "iban": lambda rng, valid: corpus.make_iban(rng, rng.choice(corpus.IBAN_COUNTRIES), valid=valid),
    "card": lambda rng, valid: corpus.make_card(rng, valid=valid),
    "cpf": lambda rng, valid: corpus.make_cpf(rng, valid=valid),
    "dni": lambda rng, valid: corpus.make_dni(rng, valid=valid),
    "nie": lambda rng, valid: corpus.make_dni(rng, nie=True, valid=valid),
    "aadhaar": lambda rng, valid: corpus.make_aadhaar(rng, valid=valid),
    "cn_id": lambda rng, valid: corpus.make_cn_id(rng, valid=valid),
}
_KINDS = {"iban": "iban", "card": "card"}


@given(rng=st.randoms(use_true_random=False), kind=st.sampled_from(sorted(_MAKERS)))
def test_any_valid_identifier_is_removed_and_one_with_a_wrong_check_is_kept(rng, kind):
    valid = _MAKERS[kind](rng, True)
    result = redact(f"Ref. {valid} — noted.", contact_info=False)
    assert valid not in result.text
    assert result.counts == {_KINDS.get(kind, "national_id"): 1}
    wrong = _MAKERS[kind](rng, False)
    assert redact(f"Ref. {wrong} — noted.", contact_info=False).counts == {}


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=300))
def test_redaction_never_fails_and_keeps_text_without_findings(text):
    result = redact(text)
    if not result.counts:
        assert result.text == text


def test_json_strings_are_redacted_at_every_depth():
    value = {"a": ["password: Hunter2Secret!", {"IBAN DE89 3704 0044 0532 0130 00": 3}], "n": 1, "t": True}
    cleaned = redact_strings(value)
    assert "Hunter2Secret" not in str(cleaned) and "0532" not in str(cleaned)
    assert cleaned["n"] == 1 and cleaned["t"] is True


# --- end to end: nothing of any corpus secret is stored, on any path ---------------------------------
def _clean(part: str) -> str:
    """Sentence ends around the secret become commas, so each statement stays one sentence for
    the extractor (the secret itself is never touched)."""
    part = re.sub(r"[.!?;](?=\s|$)", ",", part.replace("\n", " "))
    return re.sub("[。！？；]", "，", part)


def _statement(index: int, entry: corpus.Entry, *, pass_no: int = 1) -> str:
    before, after = entry.text.split(entry.secret, 1)
    after = _clean(after)
    if entry.secret[-1] in ".!?;" and after[:1].isspace():
        after = "," + after
    words = "We use" if pass_no == 1 else "We use today"
    return f"{words} {_clean(before)}{entry.secret}{after}, for item-{index:03d}"


def _batches(size: int, pass_no: int = 1) -> list[list[tuple[int, corpus.Entry]]]:
    """Pass 1: every entry. Pass 2: every fourth item again (in the same batch, so the same
    session), in newer words holding another entry's secret, so that the pass-1 row is
    superseded (an old version's content stays stored)."""
    numbered = list(enumerate(ALL_SECRETS))
    batches = [numbered[i : i + size] for i in range(0, len(numbered), size)]
    if pass_no == 2:
        batches = [[(i, _other(i)) for i, _ in batch if i % 4 == 0] for batch in batches]
    return batches


def _other(index: int) -> corpus.Entry:
    """The entry whose secret the second pass says for item ``index``: newer words, another secret."""
    return ALL_SECRETS[(index + 1) % len(ALL_SECRETS)]


# A short secret (a PIN) also occurs inside timestamps and hashes: it counts only as a whole
# number or word there; a longer one counts anywhere.
_SHORT = re.compile(
    "|".join(rf"(?<![0-9A-Za-z]){re.escape(e.secret)}(?![0-9A-Za-z])" for e in ALL_SECRETS if len(e.secret) < 8)
)
_LONG = [e.secret for e in ALL_SECRETS if len(e.secret) >= 8]


def _text_cells() -> list[tuple[str, str, str]]:
    """Every text cell (strings, JSON, bytes) of every table, as (table, column, text); numbers
    and dates hold no text (a PIN of 4711 is also a row id)."""
    cells = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            columns = [c[0] for c in cursor.description]
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if isinstance(value, memoryview | bytes):
                        cells.append((table, column, bytes(value).decode("latin-1")))
                    elif isinstance(value, str | dict | list):
                        cells.append((table, column, value if isinstance(value, str) else json.dumps(value)))
    return cells


def _stored_secrets() -> Counter:
    return Counter(
        cell for cell in _text_cells() if _SHORT.search(cell[2]) or any(secret in cell[2] for secret in _LONG)
    )


def _assert_nothing_stored(before: Counter | None = None) -> None:
    new = _stored_secrets() - (before or Counter())
    assert not new, new


def _assert_every_statement_stored_redacted(queryset) -> None:
    contents = list(queryset.values_list("content", flat=True))
    for index, entry in enumerate(ALL_SECRETS):
        mine = [c for c in contents if c.endswith(f"item-{index:03d}")]
        assert mine, f"item-{index:03d} ({entry.text!r}) was not remembered"
        assert all("[REDACTED:" in c for c in mine), mine


@pytest.mark.django_db
def test_consolidation_stores_no_corpus_secret_not_even_in_superseded_rows(api, svc):
    service = api(svc)
    for pass_no in (1, 2):
        for batch_no, batch in enumerate(_batches(20, pass_no)):
            statements = [_statement(i, e, pass_no=pass_no) for i, e in batch]
            response = service.post(
                "/api/memory/consolidate",
                {
                    "session_id": f"milky:private:{20000 + batch_no}",
                    "messages": [{"role": "user", "content": "\n".join(statements)}],
                },
                format="json",
            )
            assert response.status_code == 200, response.content
            assert not any(e.secret in response.content.decode() for _, e in batch)
    _assert_every_statement_stored_redacted(Memory.objects.all())
    assert Memory.objects.filter(status=Status.SUPERSEDED).count() >= len(ALL_SECRETS) // 8
    _assert_nothing_stored()


@pytest.mark.django_db
def test_dreaming_stores_no_corpus_secret_not_even_in_superseded_rows(alice):
    conversations = {}
    for pass_no in (1, 2):
        for batch_no, batch in enumerate(_batches(10, pass_no)):
            session = f"milky:private:{30000 + batch_no}"
            conversation = conversations.setdefault(session, ConversationFactory(owner=alice, session_key=session))
            for i, entry in batch:
                MessageFactory(conversation=conversation, content=_statement(i, entry, pass_no=pass_no))
    before = _stored_secrets()  # the conversations: the input
    assert before
    actor = system_actor()
    for session in conversations:
        dream_session(actor=actor, session_id=session)
    _assert_every_statement_stored_redacted(Memory.objects.all())
    assert Memory.objects.filter(status=Status.SUPERSEDED).exists()
    _assert_nothing_stored(before)


@pytest.mark.django_db
def test_auto_memory_stores_no_corpus_secret_not_even_in_superseded_rows(alice, project):
    """At noon: a run finishes an hour before the worker reads it, and in the hour after midnight
    what it said "today" (pass 2 says it of every item) would be yesterday's, no longer true and
    skipped (tests/memory_app/distill/test_timebound.py)."""
    enable(alice, min_length_chars=10)
    with time_machine.travel(datetime(2026, 12, 8, 12, 0, tzinfo=UTC)):
        for pass_no in (1, 2):
            for batch in _batches(20, pass_no):
                text = "\n".join(_statement(i, e, pass_no=pass_no) for i, e in batch)
                finished_run(user=alice, project=project, text=text, prompt="Remember what we use.")
            before = _stored_secrets()  # the runs' conversations
            results = round_run(worker_id="test", limit=100)
            assert {r.outcome for r in results} == {"extracted"}, results
            _assert_nothing_stored(before)
    _assert_every_statement_stored_redacted(Memory.objects.filter(origin="auto"))
    assert Memory.objects.filter(origin="auto", status=Status.SUPERSEDED).count() >= len(ALL_SECRETS) // 8


@pytest.mark.django_db
def test_import_stores_no_corpus_secret_in_user_or_global_items(alice):
    data = home_export(user=alice, now=timezone.now())
    items = [
        {"kind": "fact", "content": _statement(i, e), "metadata": {"note": e.text}, "evidence": {"said": e.text}}
        for i, e in enumerate(ALL_SECRETS)
    ]
    data["memories"]["user"] = items
    report = home_import(actor=alice, data=data)
    assert len(report.created) == len(items) and report.redacted == len(items)
    assert all(row.get("redacted") for row in report.results)
    # The operator's legacy import into the shared global scope, from the same statements.
    data["memories"]["global"] = [{**item, "kind": "procedure"} for item in items]
    data["memories"]["user"] = []
    legacy = home_import(actor=alice, data=data, legacy=True, global_writer=system_actor)
    assert len(legacy.created_global) == len(items)
    _assert_every_statement_stored_redacted(Memory.objects.filter(scope_type="user"))
    _assert_every_statement_stored_redacted(Memory.objects.filter(scope_type="global"))
    _assert_nothing_stored()
    # Importing the same file again changes nothing: the redacted texts are the duplicates.
    again = home_import(actor=alice, data={**data, "memories": {"user": items}})
    assert again.created == [] and again.duplicates == len(items)
