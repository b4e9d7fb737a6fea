"""Make the cross-language and "nothing matches" set (deterministic; bench/crosslang_eval.py asks it).

    .venv/bin/python bench/crosslang_gen.py      # writes bench/data/crosslang/set.json

Nine bilingual users, each with 44 memories (about half English, half Chinese) and a notes file of
six lines. Of the memories, 21 come from templates ("I'm allergic to {peanuts}" / "我对{花生}过敏",
one slot of each family per user) and two are written by hand; every one of those 23 is asked
four ways: its keyword and a question, each in the memory's language and in the other one
("peanuts" → 我对花生过敏; 我早上喝什么 → "I drink coffee every morning"). The other 21 memories
are distractors on the same topics, written in the language the cross-language questions are asked
in (an English memory about antihistamines beside the Chinese peanut allergy asked in English).

Users 0–5 are the development set, 6–8 the held-out third (asked only for final figures).

Then 500 nonsense queries (random letters, keyboard mash, pseudo-words, mixed scripts; seeded) and
200 real questions (100 English, 100 Chinese) about nothing any user has said, each given to one
user in turn: the searches should answer them with nothing.
"""

import json
import random
import string
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "data" / "crosslang" / "set.json"
USERS = 9
DEV_USERS = 6
SEED = 39

# family: (English template, Chinese template, English question, Chinese question,
#          slots: (English keyword, Chinese keyword[, Chinese wording in the memory]),
#          distractor on the same topic: (English, Chinese))
FAMILIES = {
    "allergy": (
        "I'm allergic to {en}.",
        "我对{zh}过敏。",
        "what am I allergic to",
        "我对什么过敏",
        [
            ("peanuts", "花生"),
            ("shrimp", "虾"),
            ("pollen", "花粉"),
            ("penicillin", "青霉素"),
            ("mango", "芒果"),
            ("latex", "乳胶"),
        ],
        ("Keeps antihistamine tablets in the backpack.", "包里常备抗过敏药。"),
    ),
    "dislike": (
        "I can't stand {en}, please leave it out of my food.",
        "我不喜欢吃{zh}，点菜时别放。",
        "which food do I dislike",
        "我不爱吃什么",
        [
            ("coriander", "香菜"),
            ("durian", "榴莲"),
            ("celery", "芹菜"),
            ("bitter melon", "苦瓜"),
            ("garlic", "大蒜"),
            ("mushrooms", "蘑菇"),
        ],
        ("Likes spicy food, the hotter the better.", "口味偏重，喜欢吃辣。"),
    ),
    "drink": (
        "I drink {en} every morning.",
        "我每天早上喝{zh}。",
        "what do I drink in the morning",
        "我早上喝什么",
        [
            ("coffee", "咖啡"),
            ("green tea", "绿茶"),
            ("soy milk", "豆浆"),
            ("oolong tea", "乌龙茶"),
            ("orange juice", "橙汁"),
            ("hot chocolate", "热巧克力"),
        ],
        ("Tries to drink two litres of water a day.", "每天尽量喝两升水。"),
    ),
    "pet": (
        "We have a {en} called Lucky.",
        "我们家养了一只叫旺财的{zh}。",
        "what pet do we have",
        "我们家养了什么宠物",
        [
            ("dog", "狗"),
            ("rabbit", "兔子"),
            ("parrot", "鹦鹉"),
            ("hamster", "仓鼠"),
            ("turtle", "乌龟"),
            ("goldfish", "金鱼"),
        ],
        ("The vet clinic is two streets away.", "宠物医院就在隔壁街。"),
    ),
    "sport": (
        "I play {en} every weekend.",
        "我每个周末都去{zh}。",
        "what sport do I do at weekends",
        "我周末做什么运动",
        [
            ("badminton", "羽毛球", "打羽毛球"),
            ("football", "足球", "踢足球"),
            ("tennis", "网球", "打网球"),
            ("basketball", "篮球", "打篮球"),
            ("table tennis", "乒乓球", "打乒乓球"),
            ("volleyball", "排球", "打排球"),
        ],
        ("Bought new running shoes last month.", "上个月买了一双新跑鞋。"),
    ),
    "instrument": (
        "I'm learning to play the {en}.",
        "我正在学{zh}。",
        "which instrument am I learning",
        "我在学什么乐器",
        [
            ("piano", "钢琴"),
            ("guitar", "吉他"),
            ("violin", "小提琴"),
            ("drums", "架子鼓"),
            ("cello", "大提琴"),
            ("flute", "长笛"),
        ],
        ("Goes to a concert about once a month.", "大概每个月去听一次音乐会。"),
    ),
    "hometown": (
        "I grew up in {en}.",
        "我是在{zh}长大的。",
        "where did I grow up",
        "我在哪里长大",
        [
            ("Chengdu", "成都"),
            ("Toronto", "多伦多"),
            ("Berlin", "柏林"),
            ("Sydney", "悉尼"),
            ("Xi'an", "西安"),
            ("Harbin", "哈尔滨"),
        ],
        ("Moved to the current flat three years ago.", "三年前搬进了现在的公寓。"),
    ),
    "trip": (
        "Planning a trip to {en} next spring.",
        "打算明年春天去{zh}旅行。",
        "where am I going on holiday",
        "我打算去哪里旅游",
        [
            ("Iceland", "冰岛"),
            ("Egypt", "埃及"),
            ("New Zealand", "新西兰"),
            ("Peru", "秘鲁"),
            ("Morocco", "摩洛哥"),
            ("Norway", "挪威"),
        ],
        ("Passport expires in two years.", "护照两年后到期。"),
    ),
    "job": (
        "I work as a {en}.",
        "我的工作是{zh}。",
        "what is my job",
        "我是做什么工作的",
        [
            ("nurse", "护士"),
            ("architect", "建筑师"),
            ("accountant", "会计"),
            ("lawyer", "律师"),
            ("pilot", "飞行员"),
            ("dentist", "牙医"),
        ],
        ("Usually works from home on Fridays.", "周五一般在家办公。"),
    ),
    "car": (
        "I drive a {en} car.",
        "我开一辆{zh}的汽车。",
        "what colour is my car",
        "我的汽车是什么颜色",
        [
            ("red", "红色"),
            ("blue", "蓝色"),
            ("white", "白色"),
            ("black", "黑色"),
            ("silver", "银色"),
            ("yellow", "黄色"),
        ],
        ("Parking near the office costs too much.", "公司附近停车太贵了。"),
    ),
    "health": (
        "I have {en}.",
        "我有{zh}。",
        "what health problem do I have",
        "我有什么病",
        [
            ("asthma", "哮喘"),
            ("diabetes", "糖尿病"),
            ("high blood pressure", "高血压"),
            ("migraines", "偏头痛"),
            ("insomnia", "失眠症"),
            ("eczema", "湿疹"),
        ],
        ("Annual check-up is booked for November.", "年度体检约在十一月。"),
    ),
    "fruit": (
        "My favourite fruit is {en}.",
        "我最喜欢的水果是{zh}。",
        "what fruit do I like best",
        "我最喜欢吃什么水果",
        [
            ("watermelon", "西瓜"),
            ("strawberries", "草莓"),
            ("lychee", "荔枝"),
            ("grapes", "葡萄"),
            ("peaches", "桃子"),
            ("cherries", "樱桃"),
        ],
        ("Buys groceries at the Saturday market.", "周六去菜市场买菜。"),
    ),
    "birthday": (
        "My {en}'s birthday is on the twelfth of the month after next.",
        "我{zh}的生日在下下个月十二号。",
        "when is my {en}'s birthday",
        "我{zh}的生日是哪天",
        [
            ("mother", "妈妈"),
            ("father", "爸爸"),
            ("wife", "妻子"),
            ("husband", "丈夫"),
            ("son", "儿子"),
            ("grandmother", "奶奶"),
        ],
        ("Family dinner every Sunday evening.", "每周日晚上全家一起吃饭。"),
    ),
    "language": (
        "I'm taking evening classes in {en}.",
        "我晚上在上{zh}课。",
        "which foreign language am I studying",
        "我在学哪门外语",
        [
            ("Spanish", "西班牙语"),
            ("French", "法语"),
            ("Japanese", "日语"),
            ("German", "德语"),
            ("Korean", "韩语"),
            ("Russian", "俄语"),
        ],
        ("Uses a flashcard app on the train.", "坐地铁时用背单词软件。"),
    ),
    "books": (
        "I mostly read {en}.",
        "我平时主要看{zh}。",
        "what kind of books do I read",
        "我喜欢看什么书",
        [
            ("science fiction", "科幻小说"),
            ("history books", "历史书"),
            ("detective novels", "侦探小说"),
            ("poetry", "诗歌"),
            ("biographies", "人物传记"),
            ("comics", "漫画"),
        ],
        ("Has a library card for the city library.", "办了市图书馆的借书证。"),
    ),
    "commute": (
        "I go to work by {en}.",
        "我每天坐{zh}上班。",
        "how do I get to work",
        "我怎么去上班",
        [
            ("subway", "地铁"),
            ("bus", "公交车"),
            ("ferry", "轮渡"),
            ("train", "火车"),
            ("tram", "有轨电车"),
            ("taxi", "出租车"),
        ],
        ("The office is on the fifteenth floor.", "公司在十五楼。"),
    ),
    "wake": (
        "I wake up at {en} every day.",
        "我每天{zh}起床。",
        "what time do I get up",
        "我几点起床",
        [
            ("five", "五点"),
            ("six", "六点"),
            ("half past six", "六点半"),
            ("seven", "七点"),
            ("half past seven", "七点半"),
            ("eight", "八点"),
        ],
        ("Likes a short nap after lunch.", "午饭后喜欢小睡一会儿。"),
    ),
    "cuisine": (
        "My favourite cuisine is {en} food.",
        "我最喜欢吃{zh}。",
        "which cuisine do I like most",
        "我最喜欢哪种菜系",
        [
            ("Sichuan", "川菜"),
            ("Thai", "泰国菜"),
            ("Mexican", "墨西哥菜"),
            ("Cantonese", "粤菜"),
            ("Indian", "印度菜"),
            ("Hunan", "湘菜"),
        ],
        ("Cooks dinner at home most weekdays.", "工作日大多在家做晚饭。"),
    ),
    "season": (
        "My favourite season is {en}.",
        "我最喜欢的季节是{zh}。",
        "which season do I like best",
        "我最喜欢哪个季节",
        [
            ("spring", "春天"),
            ("summer", "夏天"),
            ("autumn", "秋天"),
            ("winter", "冬天"),
            ("spring", "春天"),
            ("autumn", "秋天"),
        ],
        ("Checks the weather forecast every morning.", "每天早上看天气预报。"),
    ),
    "fear": (
        "I'm afraid of {en}.",
        "我害怕{zh}。",
        "what am I afraid of",
        "我怕什么",
        [
            ("heights", "高处"),
            ("spiders", "蜘蛛"),
            ("snakes", "蛇"),
            ("deep water", "深水"),
            ("thunder", "打雷"),
            ("the dark", "黑暗"),
        ],
        ("Watches horror films with friends.", "喜欢和朋友一起看恐怖片。"),
    ),
    "saving": (
        "I'm saving money for a {en}.",
        "我在攒钱买{zh}。",
        "what am I saving money for",
        "我在攒钱买什么",
        [
            ("house", "房子"),
            ("new laptop", "新笔记本电脑"),
            ("camera", "相机"),
            ("motorbike", "摩托车"),
            ("sofa", "沙发"),
            ("piano", "钢琴"),
        ],
        ("Pays the rent on the first of the month.", "每月一号交房租。"),
    ),
}
# Families whose slot is no word a person searches by: the keyword of the family instead.
KEYWORDS = {"birthday": ("birthday", "生日"), "wake": ("wake up", "起床"), "car": ("car", "汽车")}
# "saving" slot 5 (piano) collides with the instrument family's keyword: never paired with it.

# Written by hand, two per user: (English memory, Chinese memory, English keyword, Chinese keyword,
# English question, Chinese question).
HANDWRITTEN = [
    (
        "My blood type is O negative.",
        "我的血型是O型阴性。",
        "blood type",
        "血型",
        "what is my blood type",
        "我是什么血型",
    ),
    (
        "The spare house key is under the flowerpot.",
        "备用钥匙放在花盆下面。",
        "key",
        "钥匙",
        "where is the spare key",
        "备用钥匙在哪",
    ),
    (
        "I wear contact lenses, not glasses.",
        "我戴隐形眼镜，不戴框架眼镜。",
        "contact lenses",
        "隐形眼镜",
        "do I wear glasses",
        "我戴眼镜吗",
    ),
    ("I'm left-handed.", "我是左撇子。", "left-handed", "左撇子", "which hand do I write with", "我用哪只手写字"),
    ("My shoe size is 42.", "我穿42码的鞋。", "shoe size", "鞋码", "what size shoes do I wear", "我穿多大的鞋"),
    (
        "I snore, so I book a single room on trips.",
        "我打呼噜，出差都订单人间。",
        "snore",
        "打呼噜",
        "why do I book single rooms",
        "为什么我出差订单人间",
    ),
    ("I get seasick on boats.", "我坐船会晕船。", "seasick", "晕船", "do I get sick on boats", "我坐船会不舒服吗"),
    (
        "I donate blood every six months.",
        "我每半年献一次血。",
        "donate blood",
        "献血",
        "how often do I give blood",
        "我多久献一次血",
    ),
    ("I quit smoking two years ago.", "我两年前戒烟了。", "smoking", "戒烟", "do I still smoke", "我还抽烟吗"),
    (
        "I'm colour-blind to red and green.",
        "我是红绿色盲。",
        "colour-blind",
        "色盲",
        "can I tell red from green",
        "我能分清红色和绿色吗",
    ),
    (
        "My wedding anniversary is in October.",
        "我的结婚纪念日在十月。",
        "anniversary",
        "结婚纪念日",
        "when is my wedding anniversary",
        "我的结婚纪念日是什么时候",
    ),
    (
        "I have a tattoo of a whale on my arm.",
        "我胳膊上有一个鲸鱼纹身。",
        "tattoo",
        "纹身",
        "what tattoo do I have",
        "我有什么纹身",
    ),
    (
        "I'm a volunteer at the animal shelter.",
        "我在流浪动物收容所做志愿者。",
        "volunteer",
        "志愿者",
        "where do I volunteer",
        "我在哪里做志愿者",
    ),
    ("I sleep with earplugs.", "我睡觉要戴耳塞。", "earplugs", "耳塞", "what do I need to sleep", "我睡觉需要什么"),
    ("I don't drink alcohol at all.", "我不喝酒。", "alcohol", "喝酒", "do I drink alcohol", "我喝酒吗"),
    (
        "My glasses prescription is minus three.",
        "我近视三百度。",
        "short-sighted",
        "近视",
        "how bad is my eyesight",
        "我的视力怎么样",
    ),
    (
        "I play chess online every evening.",
        "我每天晚上在网上下国际象棋。",
        "chess",
        "国际象棋",
        "what game do I play online",
        "我在网上玩什么棋",
    ),
    (
        "I keep bees in the back garden.",
        "我在后院养蜜蜂。",
        "bees",
        "蜜蜂",
        "what do I keep in the garden",
        "我在后院养了什么",
    ),
]

NOTES = [
    "- Answer in the language I write in.",
    "- 代码示例请用 Python。",
    "- Keep answers short unless I ask for detail.",
    "- 会议纪要要列出待办事项。",
    "- Use the metric system.",
    "- 日期写成 年-月-日 的格式。",
]

UNRELATED_EN = [
    "How far is Neptune from the Sun?",
    "What is the boiling point of mercury?",
    "Who wrote the Principia Mathematica?",
    "How do I compute the determinant of a matrix?",
    "When did the Byzantine Empire fall?",
    "What causes the aurora borealis?",
    "How many bones are in the human skull?",
    "What is the half-life of carbon-14?",
    "How do volcanoes form?",
    "What is a prime number?",
    "Who invented the printing press?",
    "How does a transistor work?",
    "What is the speed of sound in steel?",
    "How do I reset a router to factory settings?",
    "What is the difference between TCP and UDP?",
    "How tall is Mount Kilimanjaro?",
    "What is photosynthesis?",
    "Who painted the ceiling of the Sistine Chapel?",
    "How do I file a patent?",
    "What is the Pythagorean theorem?",
    "How does compound interest work?",
    "What is the chemical formula of sulfuric acid?",
    "When was the Magna Carta signed?",
    "How do tides work?",
    "What is a black hole?",
    "How do I unclog a drain?",
    "What is the population of Mongolia?",
    "How are diamonds formed?",
    "What does a civil engineer calculate for a bridge?",
    "Why is the sky blue?",
    "How many moons does Jupiter have?",
    "What is the longest river in Africa?",
    "How do I convert Celsius to Kelvin?",
    "What is the function of mitochondria?",
    "Who discovered radium?",
    "How does a jet engine produce thrust?",
    "What is the tallest building in Dubai?",
    "How do I write a recursive function?",
    "What is an integral in calculus?",
    "When was the Eiffel Tower built?",
]
EN_TEMPLATES = [
    (
        "How do I {}?",
        [
            "replace a bicycle chain",
            "sharpen a chisel",
            "solder a circuit board",
            "patch drywall",
            "calibrate a multimeter",
            "install a ceiling fan",
            "fix a leaking radiator valve",
            "wire a three-way switch",
            "defragment a hard disk",
            "repair a cracked windscreen",
        ],
    ),
    (
        "What is the atomic number of {}?",
        ["tungsten", "argon", "cobalt", "iodine", "uranium", "neon", "zinc", "bismuth", "helium", "krypton"],
    ),
    (
        "Who was the first emperor of {}?",
        ["the Qin dynasty", "the Roman Empire", "the Holy Roman Empire", "the Mughal Empire", "the Ottoman state"],
    ),
    (
        "What is the formula for the {}?",
        ["area of a trapezoid", "volume of a cone", "surface of a sphere", "kinetic energy", "ideal gas law"],
    ),
    (
        "In which year did {} happen?",
        [
            "the French Revolution",
            "the first Moon landing",
            "the fall of the Berlin Wall",
            "the Battle of Hastings",
            "the Chernobyl accident",
        ],
    ),
    (
        "How does a {} work?",
        [
            "heat pump",
            "nuclear reactor",
            "lithium battery",
            "hydraulic press",
            "seismograph",
            "gyroscope",
            "catalytic converter",
            "radio telescope",
            "barometer",
            "centrifuge",
        ],
    ),
    (
        "Who proved {}?",
        [
            "Fermat's Last Theorem",
            "the four colour theorem",
            "the Poincaré conjecture",
            "the incompleteness theorems",
            "the prime number theorem",
        ],
    ),
    ("What is the melting point of {}?", ["tungsten carbide", "quartz", "lead", "titanium", "aluminium oxide"]),
    (
        "What is the wavelength of {}?",
        ["X-rays", "microwaves", "ultraviolet light", "gamma rays", "infrared radiation"],
    ),
]
UNRELATED_ZH = [
    "海王星离太阳有多远？",
    "水银的沸点是多少？",
    "拜占庭帝国是哪一年灭亡的？",
    "北极光是怎么形成的？",
    "人的头骨有多少块骨头？",
    "碳十四的半衰期是多少？",
    "火山是怎么形成的？",
    "什么是质数？",
    "活字印刷术是谁发明的？",
    "晶体管的工作原理是什么？",
    "钢里的声速是多少？",
    "路由器怎么恢复出厂设置？",
    "TCP和UDP有什么区别？",
    "乞力马扎罗山有多高？",
    "光合作用是什么？",
    "怎么申请专利？",
    "勾股定理是什么？",
    "复利是怎么计算的？",
    "硫酸的化学式是什么？",
    "潮汐是怎么产生的？",
    "黑洞是什么？",
    "下水道堵了怎么疏通？",
    "蒙古国有多少人口？",
    "钻石是怎么形成的？",
    "为什么天空是蓝色的？",
    "木星有几颗卫星？",
    "非洲最长的河流是哪条？",
    "摄氏度怎么换算成开尔文？",
    "线粒体有什么功能？",
    "镭是谁发现的？",
    "喷气发动机是怎么产生推力的？",
    "迪拜最高的建筑是哪座？",
    "递归函数怎么写？",
    "微积分里的积分是什么意思？",
    "埃菲尔铁塔是哪一年建成的？",
    "秦始皇是哪一年统一六国的？",
    "地震的震级是怎么测量的？",
    "赤道的周长是多少？",
    "什么是量子纠缠？",
    "怎么计算圆锥的体积？",
]
ZH_TEMPLATES = [
    (
        "怎么{}？",
        [
            "更换自行车链条",
            "磨凿子",
            "焊接电路板",
            "修补石膏板",
            "校准万用表",
            "安装吊扇",
            "修理漏水的暖气阀门",
            "接双控开关",
            "整理硬盘碎片",
            "修补挡风玻璃的裂缝",
        ],
    ),
    ("{}的原子序数是多少？", ["钨", "氩", "钴", "碘", "铀", "氖", "锌", "铋", "氦", "氪"]),
    ("{}的第一位皇帝是谁？", ["汉朝", "罗马帝国", "神圣罗马帝国", "莫卧儿帝国", "奥斯曼帝国"]),
    ("{}的公式是什么？", ["梯形面积", "球的表面积", "动能", "理想气体定律", "欧姆定律"]),
    ("{}发生在哪一年？", ["法国大革命", "第一次登月", "柏林墙倒塌", "黑斯廷斯战役", "切尔诺贝利事故"]),
    (
        "{}是怎么工作的？",
        ["热泵", "核反应堆", "锂电池", "液压机", "地震仪", "陀螺仪", "三元催化器", "射电望远镜", "气压计", "离心机"],
    ),
    ("{}是谁证明的？", ["费马大定理", "四色定理", "庞加莱猜想", "哥德尔不完备定理", "素数定理"]),
    ("{}的熔点是多少？", ["碳化钨", "石英", "铅", "钛", "氧化铝"]),
    ("{}的波长是多少？", ["X射线", "微波", "紫外线", "伽马射线", "红外线"]),
]

KEYBOARD_ROWS = ["qwertyuiop", "asdfghjkl", "zxcvbnm", "1234567890"]
CONSONANTS = "bcdfghjklmnprstvwz"
VOWELS = "aeiou"


def _random_letters(rng: random.Random) -> str:
    return " ".join(
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9))) for _ in range(rng.randint(1, 3))
    )


def _keyboard_mash(rng: random.Random) -> str:
    words = []
    for _ in range(rng.randint(1, 2)):
        row = rng.choice(KEYBOARD_ROWS[:3])
        start = rng.randrange(len(row) - 2)
        run = row[start : start + rng.randint(3, len(row) - start)]
        word = "".join(c * rng.choice((1, 1, 1, 2)) for c in run)
        words.append(word if rng.random() < 0.6 else word[::-1])
    return " ".join(words)


def _pseudo_word(rng: random.Random) -> str:
    return " ".join(
        "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(rng.randint(2, 4)))
        + rng.choice(("", "n", "k", "x", "th"))
        for _ in range(rng.randint(1, 3))
    )


def _mixed_scripts(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(2, 4)):
        kind = rng.randrange(5)
        if kind == 0:
            parts.append("".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(1, 3))))
        elif kind == 1:
            parts.append("".join(chr(rng.randint(0x0430, 0x044F)) for _ in range(rng.randint(3, 6))))
        elif kind == 2:
            parts.append("".join(chr(rng.randint(0x03B1, 0x03C9)) for _ in range(rng.randint(3, 6))))
        elif kind == 3:
            parts.append("".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(3, 7))))
        else:
            parts.append("".join(rng.choice("#%&*+=~^") for _ in range(rng.randint(1, 3))))
    return " ".join(parts)


def nonsense(n: int = 500) -> list[dict]:
    rng = random.Random(SEED)
    makers = [
        ("letters", _random_letters),
        ("mash", _keyboard_mash),
        ("pseudo", _pseudo_word),
        ("mixed", _mixed_scripts),
    ]
    made, seen = [], set()
    fixed = ["xyzzy plugh", "qwpzx vbnmk", "zzzz", "asdfgh jkl"]
    for q in fixed:
        made.append({"q": q, "kind": "named"})
        seen.add(q)
    while len(made) < n:
        kind, maker = makers[len(made) % len(makers)]
        q = maker(rng)
        if q not in seen:
            seen.add(q)
            made.append({"q": q, "kind": kind})
    return made


# Nonsense of other makers than the set's (``crosslang_eval.py --nonsense-kinds wide``), written
# after every gate was chosen: what a search box also receives (a name-like word in title case,
# letters and digits, a hash, numbers, one long run, spaced letters, one letter repeated, random
# CJK characters, emoji, lorem ipsum, gibberish in a question's frame) and real words that say
# nothing together (``en_salad``, ``zh_salad``: a salad that holds "thunder" may rightly find "I'm
# afraid of thunder", so these two are reported apart from the rest). Not a set to tune on: a check
# that the "nothing matches" figures are not the set's own makers'.
SALAD_EN = (
    "apple river quantum purple seven window basket thunder velvet orbit candle mirror glacier pencil "
    "violin harbor lantern marble saddle whisper copper falcon meadow tunnel"
).split()
SALAD_ZH = "苹果 河流 量子 紫色 窗户 篮子 雷声 轨道 蜡烛 镜子 冰川 铅笔 港口 灯笼 大理石 马鞍 铜 猎鹰 草地 隧道".split()
LOREM = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et "
    "dolore magna aliqua"
).split()


def _letters(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(low, high)))


def _cjk(rng: random.Random, low: int, high: int) -> str:
    return "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(rng.randint(low, high)))


WIDE_MAKERS = {
    "capitalised": lambda rng: " ".join(_letters(rng, 4, 8).capitalize() for _ in range(rng.randint(1, 3))),
    "alnum": lambda rng: " ".join(
        "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(rng.randint(5, 10)))
        for _ in range(rng.randint(1, 2))
    ),
    "hex": lambda rng: "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice((8, 12, 32)))),
    "digits": lambda rng: " ".join(str(rng.randint(10, 999999)) for _ in range(rng.randint(1, 3))),
    "long": lambda rng: _letters(rng, 14, 30),
    "spaced": lambda rng: " ".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 6))),
    "repeat": lambda rng: rng.choice(string.ascii_lowercase) * rng.randint(3, 10),
    "cjk": lambda rng: _cjk(rng, 2, 8),
    "emoji": lambda rng: "".join(chr(rng.randint(0x1F300, 0x1F5FF)) for _ in range(rng.randint(1, 5))),
    "lorem": lambda rng: " ".join(rng.sample(LOREM, rng.randint(2, 6))),
    "framed": lambda rng: f"What is the {_letters(rng, 5, 9)} of {_letters(rng, 4, 8)}?",
    "framed_zh": lambda rng: f"{_cjk(rng, 3, 3)}是什么？",
    "en_salad": lambda rng: " ".join(rng.sample(SALAD_EN, rng.randint(3, 5))),
    "zh_salad": lambda rng: "".join(rng.sample(SALAD_ZH, rng.randint(3, 4))),
}
SALADS = ("en_salad", "zh_salad")


def nonsense_wide(n: int = 560, seed: int = SEED) -> list[dict]:
    """``n`` queries of ``WIDE_MAKERS`` in turn, distinct, seeded."""
    rng = random.Random(seed)
    makers = list(WIDE_MAKERS.items())
    made: list[dict] = []
    seen: set[str] = set()
    while len(made) < n:
        kind, maker = makers[len(made) % len(makers)]
        q = maker(rng)
        if q not in seen:
            seen.add(q)
            made.append({"q": q, "kind": kind})
    return made


def unrelated() -> list[dict]:
    en = list(UNRELATED_EN) + [t.format(x) for t, xs in EN_TEMPLATES for x in xs]
    zh = list(UNRELATED_ZH) + [t.format(x) for t, xs in ZH_TEMPLATES for x in xs]
    assert len(en) >= 100 and len(zh) >= 100, (len(en), len(zh))
    return [{"q": q, "lang": "en"} for q in en[:100]] + [{"q": q, "lang": "zh"} for q in zh[:100]]


def build() -> dict:
    rng = random.Random(SEED)
    names = list(FAMILIES)
    users = []
    for u in range(USERS):
        memories, questions = [], []
        langs = ["en", "zh"] * 12
        rng.shuffle(langs)
        taken = {}
        for f, family in enumerate(names):
            en_t, zh_t, en_q, zh_q, slots, distractor = FAMILIES[family]
            slot = (u + 3 * f + rng.randrange(2)) % len(slots)
            if family == "saving" and slots[slot][0] == "piano" and taken.get("instrument") == "piano":
                slot = (slot + 1) % len(slots)
            en_word, zh_word = slots[slot][:2]
            zh_fill = slots[slot][2] if len(slots[slot]) > 2 else zh_word
            taken[family] = en_word
            target = {
                "en": en_t.format(en=en_word),
                "zh": zh_t.format(zh=zh_fill),
                "en_word": en_word,
                "zh_word": zh_word,
                "en_q": en_q.format(en=en_word, zh=zh_word),
                "zh_q": zh_q.format(en=en_word, zh=zh_word),
            }
            if family in KEYWORDS:  # the slot is no word to search by (a time, a relation, a colour)
                target["en_word"], target["zh_word"] = KEYWORDS[family]
            memories.append(_target(f"{family}", target, langs[f], "template", questions))
            other = "zh" if langs[f] == "en" else "en"
            memories.append({"key": f"{family}-x", "content": distractor[0 if other == "en" else 1], "lang": other})
        for h in range(2):
            en, zh, en_w, zh_w, en_q, zh_q = HANDWRITTEN[(2 * u + h) % len(HANDWRITTEN)]
            item = {"en": en, "zh": zh, "en_word": en_w, "zh_word": zh_w, "en_q": en_q, "zh_q": zh_q}
            memories.append(_target(f"hand{h}", item, langs[len(names) + h], "handwritten", questions))
        rng.shuffle(memories)
        users.append(
            {
                "user": f"xl{u}",
                "split": "dev" if u < DEV_USERS else "heldout",
                "memories": memories,
                "notes": NOTES,
                "questions": questions,
            }
        )
    return {"users": users, "nonsense": nonsense(), "unrelated": unrelated()}


def _target(key: str, item: dict, lang: str, origin: str, questions: list) -> dict:
    other = "zh" if lang == "en" else "en"
    for asked in (lang, other):
        for kind, field in (("word", f"{asked}_word"), ("question", f"{asked}_q")):
            questions.append(
                {
                    "q": item[field],
                    "answer": key,
                    "kind": kind,
                    "from": asked,
                    "to": lang,
                    "cross": asked != lang,
                    "origin": origin,
                }
            )
    return {"key": key, "content": item[lang], "lang": lang}


def main() -> None:
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    pairs = sum(q["cross"] for u in data["users"] for q in u["questions"])
    held = sum(q["cross"] for u in data["users"] if u["split"] == "heldout" for q in u["questions"])
    print(
        f"{len(data['users'])} users, {sum(len(u['memories']) for u in data['users'])} memories, "
        f"{sum(len(u['questions']) for u in data['users'])} questions ({pairs} across languages, "
        f"{held} of them held out), {len(data['nonsense'])} nonsense, {len(data['unrelated'])} unrelated"
    )


if __name__ == "__main__":
    main()
