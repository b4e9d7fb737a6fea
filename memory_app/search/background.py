"""The queries a filtered search is calibrated against (docs/search.md, "Nothing matches"): questions
about nothing a person keeps in memory, in English and Chinese, and strings of no language,
embedded once per process and model (``background_queries``); the questions a question must stand
out from (``background_questions``); and which language a query is asked in (``is_chinese``)."""

import random
import string
import threading

import numpy as np

from memory_app.search.embeddings import CHINESE_CHARS, DTYPE, EmbeddingProvider, background_similarity

# Queries about nothing a person keeps in memory, in both languages, and strings of no language:
# what an unrelated query scores for a scope's items (``engine``'s floors, docs/search.md,
# "Nothing matches"). Not the evaluation's queries (bench/crosslang_gen.py): those are asked, these
# calibrate.
BACKGROUND_QUERIES = (
    "What is the distance between Mars and Venus?",
    "Which element has the symbol Fe?",
    "How are glaciers formed?",
    "Who composed the Brandenburg Concertos?",
    "What is the derivative of sine?",
    "When did the Roman Republic end?",
    "How does an electric motor work?",
    "What is the speed of light in a vacuum?",
    "How do I change the oil filter of a lawnmower?",
    "What is the largest desert on Earth?",
    "Who discovered penicillin-resistant bacteria first?",
    "How many sides does a dodecagon have?",
    "What is the GDP of Portugal?",
    "Explain the theory of plate tectonics.",
    "What does a quantum computer do?",
    "How do I install a printer driver?",
    "The committee approved the budget for the new bridge.",
    "Stock markets closed lower on Tuesday.",
    "火星和金星之间的距离是多少？",
    "铁的化学符号是什么？",
    "冰川是怎么形成的？",
    "勃兰登堡协奏曲是谁创作的？",
    "正弦函数的导数是什么？",
    "罗马共和国是什么时候结束的？",
    "电动机是怎么工作的？",
    "真空中的光速是多少？",
    "割草机的机油滤芯怎么换？",
    "地球上最大的沙漠是哪个？",
    "十二边形有几条边？",
    "葡萄牙的国内生产总值是多少？",
    "请解释板块构造理论。",
    "量子计算机能做什么？",
    "打印机驱动怎么安装？",
    "委员会批准了新桥的预算。",
    "周二股市收盘下跌。",
    "qzvrt blemf",
    "xokdap wuhrin",
    "lkjhgf poiuy",
    "mnbvcx",
    "tarovelin sukapo",
    "grendish folup",
    "vw9k2 zrq",
    "фывапр",
    "κλμνξ ορ",
    "ggggg hhhh",
    "prst kvnt",
    "zxq 嗝煢",
    "ploo vamberick",
)
BACKGROUND_GIBBERISH = 48
# More questions nobody's memory answers, for the stand-out gate only (``dense.STAND_OUT_QUANTILE``;
# the floors keep ``BACKGROUND_QUERIES``): the forms people ask in (how to do something, what a
# thing is, who did what and when, why, where, how many, a request to explain, recommend or
# translate), in both languages, so that a question of any such form has others of its form to
# stand out from. Written apart from the evaluation's unrelated questions (bench/data/crosslang/):
# none of them is one of those, or a paraphrase of one.
MORE_QUESTIONS = (
    "How do I season a wok?",
    "How do I back up my phone to a computer?",
    "How do I wax a snowboard?",
    "How do I repot an orchid?",
    "How do I fold a fitted sheet?",
    "How do I adjust the derailleur on a road bike?",
    "How do I make a pivot table in a spreadsheet?",
    "How do I train for a half marathon?",
    "How do I write a cover letter?",
    "How do I tune a guitar by ear?",
    "How do I remove rust from a knife?",
    "How do I set up two-factor authentication?",
    "What is the best way to learn touch typing?",
    "What is the difference between baking soda and baking powder?",
    "What is osmosis?",
    "What is the Riemann hypothesis?",
    "What is the capital of Kazakhstan?",
    "What is a mortgage?",
    "What does an anaesthetist do?",
    "What are the symptoms of scurvy?",
    "What is the plot of Hamlet?",
    "How many teeth does an adult have?",
    "Who discovered the electron?",
    "Who built the Great Wall of China?",
    "Who was Nikola Tesla?",
    "Where did Charles Darwin study?",
    "What did Ada Lovelace work on?",
    "When was the Treaty of Westphalia signed?",
    "When did the Berlin airlift take place?",
    "Why do onions make you cry?",
    "Why is Venus hotter than Mercury?",
    "Why do airplanes leave contrails?",
    "How do antibiotics kill bacteria?",
    "How does a pressure cooker cook food faster?",
    "How does a stock exchange work?",
    "How do birds migrate?",
    "Where does the Amazon river begin?",
    "How many bridges cross the Seine in Paris?",
    "How many players are on a water polo team?",
    "How many calories are in a banana?",
    "Can you explain how a blockchain works?",
    "Is it safe to eat raw cookie dough?",
    "What are good stretches for lower back pain?",
    "Recommend a classic science fiction novel.",
    "Summarise the plot of Moby-Dick.",
    "Translate good morning into Italian.",
    "炒锅怎么开锅？",
    "手机怎么备份到电脑上？",
    "兰花怎么换盆？",
    "床笠怎么叠？",
    "公路车的变速器怎么调？",
    "电子表格里的数据透视表怎么做？",
    "半程马拉松怎么训练？",
    "求职信怎么写？",
    "吉他怎么靠耳朵调音？",
    "刀上的锈怎么去掉？",
    "双重验证怎么设置？",
    "学盲打最好的方法是什么？",
    "黄油和人造黄油有什么区别？",
    "渗透作用是什么？",
    "黎曼猜想是什么？",
    "哈萨克斯坦的首都是哪里？",
    "按揭贷款是什么？",
    "麻醉师是做什么的？",
    "坏血病有哪些症状？",
    "《哈姆雷特》讲的是什么故事？",
    "成年人有多少颗牙齿？",
    "电子是谁发现的？",
    "长城是谁修建的？",
    "尼古拉·特斯拉是谁？",
    "达尔文在哪里上的大学？",
    "阿达·洛芙莱斯研究过什么？",
    "威斯特伐利亚和约是哪一年签订的？",
    "柏林空运发生在什么时候？",
    "切洋葱为什么会流泪？",
    "金星为什么比水星热？",
    "飞机为什么会留下尾迹云？",
    "高压锅为什么煮东西快？",
    "候鸟是怎么迁徙的？",
    "亚马孙河发源于哪里？",
    "巴黎的塞纳河上有多少座桥？",
    "水球比赛每队有几名队员？",
    "一根香蕉有多少卡路里？",
    "你能解释一下区块链是怎么运作的吗？",
    "生的饼干面团能吃吗？",
    "缓解腰痛有哪些好的拉伸动作？",
    "推荐一本经典的科幻小说。",
    "总结一下《白鲸》的情节。",
    "“早上好”用意大利语怎么说？",
    "唐朝是哪一年建立的？",
    "围棋的规则是什么？",
    "高铁为什么能跑这么快？",
)
# What a question must stand out from: those of ``BACKGROUND_QUERIES`` that are questions (asked,
# or "Explain …"), in order, then ``MORE_QUESTIONS``.
BACKGROUND_QUESTIONS = (
    tuple(text for text in BACKGROUND_QUERIES if text.endswith(("?", "？")) or text.startswith(("Explain", "请解释")))
    + MORE_QUESTIONS
)


def _gibberish(n: int) -> tuple[str, ...]:
    """``n`` strings of no language, always the same (seeded): syllables that make no word, runs of
    letters, letters of other scripts and rare Han characters. The e5 model places such a string
    near some documents more than others; each document's floor (``engine``) must be above what
    they score for it, or a pseudo-word lists it."""
    rng = random.Random(20261206)
    made = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            words = ["".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))]
            made.append(
                " ".join(words * 1 + ["".join(rng.choice("bdgklmnprstv") + rng.choice("aeiou") for _ in range(3))])
            )
        elif kind == 1:
            made.append(
                " ".join(
                    "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8))) for _ in range(2)
                )
            )
        elif kind == 2:
            made.append(
                "".join(chr(rng.randint(0x0430, 0x044F)) for _ in range(5))
                + " "
                + "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(2))
            )
        else:
            made.append(
                "".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(3, 5)))
                + rng.choice(("", "n", "x", "th"))
            )
    return tuple(made)


_queries_lock = threading.Lock()
_queries: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
_questions: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}


def background_queries(
    provider: EmbeddingProvider, *, across_languages: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``BACKGROUND_QUERIES`` and ``BACKGROUND_GIBBERISH`` strings of no language embedded as
    queries (rows), each one's background similarity, and
    whether it is Chinese: once per process, model and kind of query vector."""
    key = (provider.model, across_languages)
    with _queries_lock:
        found = _queries.get(key)
    if found is None:
        texts = BACKGROUND_QUERIES + _gibberish(BACKGROUND_GIBBERISH)
        matrix = np.stack([provider.embed_query(text, across_languages=across_languages) for text in texts]).astype(
            DTYPE
        )
        chinese = np.array([is_chinese(text) for text in texts])
        found = (matrix, background_similarity(provider, matrix), chinese)
        with _queries_lock:
            _queries[key] = found
    return found


def background_questions(provider: EmbeddingProvider, *, across_languages: bool) -> tuple[np.ndarray, np.ndarray]:
    """``BACKGROUND_QUESTIONS`` embedded as queries (rows), and whether each is Chinese: once per
    process, model and kind of query vector (those of ``BACKGROUND_QUERIES`` taken from
    ``background_queries``)."""
    key = (provider.model, across_languages)
    with _queries_lock:
        found = _questions.get(key)
    if found is None:
        queries, _, chinese = background_queries(provider, across_languages=across_languages)
        asked = np.array([text in BACKGROUND_QUESTIONS for text in BACKGROUND_QUERIES] + [False] * BACKGROUND_GIBBERISH)
        more = [provider.embed_query(text, across_languages=across_languages) for text in MORE_QUESTIONS]
        found = (
            np.concatenate([queries[asked], np.stack(more).astype(DTYPE)]),
            np.concatenate([chinese[asked], [is_chinese(text) for text in MORE_QUESTIONS]]),
        )
        with _queries_lock:
            _questions[key] = found
    return found


def is_chinese(text: str) -> bool:
    """Whether a query is asked in Chinese: more Han characters than Latin letters."""
    han = len(CHINESE_CHARS.findall(text))
    return han > 0 and han >= sum(ch.isascii() and ch.isalpha() for ch in text)
