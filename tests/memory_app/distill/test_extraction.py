"""The deterministic extractor: explicit statements in English and Chinese, nothing else."""

from memory_app.distill.extraction import DeterministicExtractor, normalize_key


def extract(text):
    return [(c.kind, c.content) for c in DeterministicExtractor().extract(text)]


def test_explicit_english_statements():
    text = (
        "We decided to use PostgreSQL 16 for billing. We always run migrations before deploy. "
        "Never commit secrets to git. I prefer short answers. We use pytest for tests."
    )
    assert [k for k, _ in extract(text)] == ["decision", "convention", "convention", "preference", "fact"]


def test_explicit_chinese_statements():
    assert extract("我们决定使用 Redis 做缓存。我们总是先写测试。今天天气不错。") == [
        ("decision", "我们决定使用 Redis 做缓存。"),
        ("convention", "我们总是先写测试。"),
    ]


def test_questions_and_small_talk_are_not_statements():
    text = "Should we use MongoDB for billing? Do we use Redis? 我们要用 Kafka 吗？The weather is nice today."
    assert extract(text) == []


def test_same_target_gets_the_same_subject_key():
    a, b = DeterministicExtractor().extract("We use PostgreSQL for billing. We decided to use MySQL for billing.")
    assert a.subject_key == b.subject_key == "target:billing"
    x, y = DeterministicExtractor().extract("我们使用 Redis 做缓存。我们决定用 Memcached 做缓存。")
    assert x.subject_key == y.subject_key


def test_different_targets_get_different_keys():
    a, b = DeterministicExtractor().extract("We use PostgreSQL for billing. We use Kafka for events.")
    assert a.subject_key != b.subject_key


def test_dotted_names_do_not_split_sentences():
    [(_, content)] = extract("We use api.example.com for staging.")
    assert content == "We use api.example.com for staging."


def test_max_items_is_respected():
    text = " ".join(f"We use tool{i} for job{i}." for i in range(30))
    assert len(DeterministicExtractor().extract(text, max_items=5)) == 5


def test_normalize_key():
    assert normalize_key("  Ｂilling—DB!! ") == "billing db"
