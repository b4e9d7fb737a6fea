"""The web pages in English and Simplified Chinese, and times in the profile's time zone; the
API stays English and UTC whoever asks."""

import gettext
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from identity_app.models import Profile
from identity_app.services import profile_update
from tests.factories import UserFactory, UserMemoryFactory

pytestmark = pytest.mark.django_db
CATALOG = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES"


def _signed_in(user, **headers) -> Client:
    client = Client(**headers)
    client.force_login(user)
    return client


def test_the_browsers_chinese_gives_chinese_pages(alice):
    page = _signed_in(alice, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.5").get(reverse("web:projects"))
    html = page.content.decode()
    assert '<html lang="zh-Hans">' in html
    assert "对话" in html and "退出登录" in html and "新建项目" in html
    assert page["Content-Language"] == "zh-hans"
    english = _signed_in(alice, HTTP_ACCEPT_LANGUAGE="en-US").get(reverse("web:projects")).content.decode()
    assert "Conversations" in english and "New project" in english and "对话" not in english


def test_the_login_page_follows_the_browser_too():
    html = Client(HTTP_ACCEPT_LANGUAGE="zh-Hans").get(reverse("login")).content.decode()
    assert "登录" in html and "密码" in html


def test_the_switch_sets_the_language_for_this_browser_and_the_profile(alice):
    client = _signed_in(alice, HTTP_ACCEPT_LANGUAGE="en")
    response = client.post(reverse("web:set_language"), {"language": "zh-hans", "next": reverse("web:workspace")})
    assert response.status_code == 302 and response["Location"] == reverse("web:workspace")
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert Profile.objects.get(user=alice).language == "zh-hans"
    assert "新建项目" in client.get(reverse("web:projects")).content.decode()
    # On another device (no cookie, an English browser) the profile's choice still holds.
    elsewhere = _signed_in(alice, HTTP_ACCEPT_LANGUAGE="en")
    assert "新建项目" in elsewhere.get(reverse("web:projects")).content.decode()


def test_the_switch_refuses_foreign_redirects_and_unknown_languages(alice):
    client = _signed_in(alice)
    response = client.post(reverse("web:set_language"), {"language": "zh-hans", "next": "https://evil.example/"})
    assert response["Location"] == "/"
    client.post(reverse("web:set_language"), {"language": "klingon", "next": "/"})
    assert Profile.objects.get(user=alice).language == "zh-hans"
    assert Client().get(reverse("web:set_language")).status_code == 405


def test_anonymous_switch_only_sets_the_cookie():
    response = Client().post(reverse("web:set_language"), {"language": "zh-hans", "next": reverse("login")})
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "zh-hans"
    assert not Profile.objects.exists()


def test_the_api_answers_in_english_and_utc(api, alice):
    profile_update(user=alice, language="zh-hans", timezone="Asia/Shanghai")
    memory = UserMemoryFactory(owner=alice, content="tea")
    client = api(alice)
    response = client.get("/api/users/me/memories", HTTP_ACCEPT_LANGUAGE="zh-CN")
    created = response.json()["results"][0]["created_at"]
    assert created.endswith("Z") or created.endswith("+00:00"), created
    assert "Content-Language" not in response
    missing = client.get("/api/users/me/memories/mem_nothing", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert missing.json()["error"]["message"].isascii()
    assert memory.pk


def test_profile_language_is_validated_on_the_api(api, alice):
    client = api(alice)
    assert client.put("/api/users/me/profile", {"language": "fr"}, format="json").status_code == 400
    ok = client.put("/api/users/me/profile", {"language": "zh-hans"}, format="json")
    assert ok.status_code == 200 and ok.json()["language"] == "zh-hans"
    assert client.put("/api/users/me/profile", {"language": ""}, format="json").json()["language"] == ""


def test_times_are_shown_in_the_profiles_zone_with_the_zone_named(alice):
    memory = UserMemoryFactory(owner=alice, content="tea")
    type(memory).objects.filter(pk=memory.pk).update(created_at=datetime(2025, 6, 1, 6, 30, tzinfo=UTC))
    url = reverse("web:memory_home_item", args=[memory.pk])
    utc_page = _signed_in(alice).get(url).content.decode()
    assert "2025-06-01 06:30" in utc_page and "UTC" in utc_page
    profile_update(user=alice, timezone="Asia/Shanghai")
    page = _signed_in(alice).get(url).content.decode()
    assert re.search(
        r'<time datetime="2025-06-01T06:30:00\+00:00" title="Asia/Shanghai">2025-06-01 14:30 CST</time>', page
    )
    # The zone is the requester's: the next request, of a user without one, is in UTC again.
    zed = UserFactory(username="zed")
    theirs = UserMemoryFactory(owner=zed, content="coffee")
    type(theirs).objects.filter(pk=theirs.pk).update(created_at=datetime(2025, 6, 1, 6, 30, tzinfo=UTC))
    assert (
        "2025-06-01 06:30 UTC"
        in _signed_in(zed).get(reverse("web:memory_home_item", args=[theirs.pk])).content.decode()
    )


def test_every_message_is_translated_and_the_compiled_catalog_matches():
    po = (CATALOG / "django.po").read_text("utf-8")
    assert "#, fuzzy" not in po
    entries = re.findall(
        r'\n(?:msgctxt ((?:".*"\n)+))?msgid ((?:".*"\n)+)(?:msgid_plural (?:".*"\n)+)?msgstr(?:\[0\])? ((?:".*"\n?)+)',
        po,
    )
    assert len(entries) > 200
    with (CATALOG / "django.mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)

    def text(raw: str) -> str:
        return "".join(re.findall(r'"(.*)"', raw)).encode().decode("unicode_escape").encode("latin-1").decode()

    for raw_context, raw_id, raw_str in entries:
        context, msgid, msgstr = text(raw_context), text(raw_id), text(raw_str)
        if not msgid:
            continue  # the header
        assert msgstr, f"untranslated: {msgid!r}"
        found = (
            (compiled.pgettext(context, msgid), compiled.npgettext(context, msgid, msgid, 1))
            if context
            else (compiled.gettext(msgid), compiled.ngettext(msgid, msgid, 1))
        )
        assert msgstr in found, f"the .mo is older than the .po for {msgid!r}: run msgfmt (see README)"
