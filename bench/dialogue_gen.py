"""Generate ``bench/data/dialogue/``: long two-person conversations with dated sessions and
questions that name their evidence turns (``bench/dialogue_eval.py`` asks them).

    .venv/bin/python bench/dialogue_gen.py          # writes bench/data/dialogue/*.json

Deterministic (seeded): the same files every run. What it builds, per conversation:

- two people (the user and the other side, who is stored as the assistant role), 20–26 sessions,
  each a thread with its own date, ~15–20 turns per session (over 300 turns in all);
- life events of both people drawn from ``EVENTS`` (a sister's wedding, a new dog, a knee
  injury…), each said in one of several wordings in some session, often followed by a detail in
  a later session, and surrounded by small talk, reactions and decoys (the other person talking
  about the same topic with the question's words); about a third of the small talk and
  reactions address the other person by name ("Hey Mia! …", "Mia, that's huge!"), as people
  do: a person's name is in the other side's turns, never in their own;
- per event, questions of four kinds: ``single`` (one turn holds the answer), ``multi`` (the
  statement and the later detail are both needed), ``temporal`` ("when did…", answered by the
  session date of the statement) and ``open`` (needs common knowledge on top of the turn);
  question wordings come from a separate bank written so that the answer's words are mostly
  not the question's ("my sister is getting married" / "which family celebration…");
- an observation per fact turn (third person, as an extraction step would write it) for the
  memory search, plus observations of small talk as distractors (``observations``);
- ``observations_extracted``: the same conversation as a language-model extractor writes it,
  session after session (``extracted``): most turns that say something about a person become a
  statement that names the person and then refers back to them ("Mia told Jon that she adopted
  a beagle named Biscuit; Jon was thrilled for her."), some with the session's date ("On 14
  March 2022, …"), small talk and the other person's look-alike news included (about ten
  statements a session, ~250 a conversation, most of them about the same two people). Drawn
  from a random stream of its own: the conversations, questions and ``observations`` are the
  same with or without it.

Conversations 0–5 are the development set; 6–8 (two English, one Chinese) are held out and
only evaluated for the final figures (``split`` in each file).
"""

import json
import random
from datetime import date, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "dialogue"
SEED = 2718

# (language, person A = user, person B = other side, split)
CONVERSATIONS = [
    ("en", "Mia", "Jon", "dev"),
    ("en", "Priya", "Tom", "dev"),
    ("en", "Elena", "Sam", "dev"),
    ("en", "Grace", "Omar", "dev"),
    ("zh", "小雨", "阿杰", "dev"),
    ("zh", "林芳", "王磊", "dev"),
    ("en", "Nora", "Luis", "heldout"),
    ("en", "Hana", "Ben", "heldout"),
    ("zh", "陈静", "刘洋", "heldout"),
]

# Each event: slot values (en, zh pairs), what the person says (``say``), a later detail
# (``more``), the observation an extractor would write (``obs``, ``obs_more``), questions
# (``ask`` single-hop, ``when`` temporal, ``multi`` needing both turns, ``open`` needing common
# knowledge) and a decoy the other person may say with the question's words. ``{P}`` is the
# person the event belongs to.
EVENTS = [
    {
        "key": "sibling_wedding",
        "slots": {
            "sib": [("sister", "姐姐"), ("brother", "哥哥"), ("little sister", "妹妹"), ("younger brother", "弟弟")],
            "city": [("Porto", "青岛"), ("Lisbon", "大理"), ("Edinburgh", "厦门"), ("Kyoto", "桂林")],
        },
        "say": {
            "en": [
                "Big news, my {sib} is finally getting married, so I'm flying to {city} next month!",
                "I just booked flights to {city}. My {sib} is tying the knot there in June.",
                "Guess who's going to be standing at the altar in {city}? My {sib}! I'm so emotional.",
            ],
            "zh": [
                "好消息，我{sib}终于要结婚了，下个月我要飞去{city}！",
                "我刚订了去{city}的机票，我{sib}要在那里办婚礼。",
            ],
        },
        "more": {
            "en": ["The ceremony was by the sea and I gave a toast, I was shaking the whole time."],
            "zh": ["婚礼在海边办的，我上台致辞，紧张得手一直在抖。"],
        },
        "obs": {
            "en": "{P}'s {sib} got married in {city} and {P} flew there.",
            "zh": "{P}的{sib}在{city}结婚，{P}飞过去参加。",
        },
        "obs_more": {"en": "{P} gave a speech at the seaside ceremony.", "zh": "{P}在海边的仪式上发言。"},
        "ask": {
            "en": ["Which family celebration did {P} travel for?", "What relative's big day did {P} attend?"],
            "zh": ["{P}为了哪个家庭喜事出远门？", "{P}参加了哪位亲人的大日子？"],
        },
        "when": {
            "en": ["When did {P} announce the trip for a relative's ceremony?"],
            "zh": ["{P}什么时候说要去参加亲人的仪式？"],
        },
        "multi": {
            "en": ["What did {P} do at the relative's ceremony, and where was it held?"],
            "zh": ["{P}在亲人的仪式上做了什么，仪式在哪座城市？"],
        },
        "open": {
            "en": ["Would {P} have needed formal clothes for a family occasion abroad?"],
            "zh": ["{P}出远门参加家里的活动需要准备正装吗？"],
        },
        "decoy": {
            "en": ["I never travel for family celebrations, too much drama."],
            "zh": ["我从来不为了家里的喜事出远门，太折腾了。"],
        },
    },
    {
        "key": "new_dog",
        "slots": {
            "breed": [
                ("beagle", "柯基"),
                ("golden retriever", "金毛"),
                ("border collie", "边牧"),
                ("dachshund", "柴犬"),
            ],
            "name": [("Biscuit", "豆豆"), ("Pepper", "可乐"), ("Mango", "旺财"), ("Olive", "球球")],
        },
        "say": {
            "en": [
                "We adopted a {breed} puppy from the shelter! His name is {name}.",
                "Meet {name}, our new {breed}. He chewed my shoes on day one.",
                "So I caved and brought home a little {breed}. We called him {name}.",
            ],
            "zh": [
                "我们从救助站领养了一只{breed}小狗，叫{name}！",
                "介绍一下{name}，我们家新来的{breed}，第一天就咬坏了我的鞋。",
            ],
        },
        "more": {
            "en": ["{name} graduated from obedience class today, he finally sits on command."],
            "zh": ["{name}今天从训练班毕业了，终于会听口令坐下了。"],
        },
        "obs": {"en": "{P} adopted a {breed} named {name}.", "zh": "{P}领养了一只叫{name}的{breed}。"},
        "obs_more": {"en": "{P}'s dog finished obedience training.", "zh": "{P}的狗完成了服从训练。"},
        "ask": {
            "en": ["What kind of pet did {P} get?", "Which animal joined {P}'s household?"],
            "zh": ["{P}养了什么宠物？", "{P}家里新添了什么动物？"],
        },
        "when": {"en": ["When did {P} bring the animal home?"], "zh": ["{P}是什么时候把那只动物带回家的？"]},
        "multi": {
            "en": ["What training milestone did {P}'s shelter animal reach?"],
            "zh": ["{P}领养的动物后来学会了什么？"],
        },
        "open": {"en": ["Does {P} need to take someone for walks every day?"], "zh": ["{P}每天需要出门遛谁吗？"]},
        "decoy": {
            "en": ["My neighbour's pet keeps barking at night, what a kind of nightmare."],
            "zh": ["邻居家的宠物晚上一直叫，真受不了。"],
        },
    },
    {
        "key": "knee_injury",
        "slots": {
            "sport": [("football", "篮球"), ("skiing", "滑雪"), ("a trail run", "越野跑"), ("tennis", "网球")],
            "part": [("knee", "膝盖"), ("ankle", "脚踝")],
        },
        "say": {
            "en": [
                "I twisted my {part} badly during {sport}, the doctor says no running for six weeks.",
                "Ugh, I'm on crutches. Hurt my {part} at {sport} on Sunday.",
                "Went down hard at {sport} and now my {part} is the size of a melon.",
            ],
            "zh": ["打{sport}的时候把{part}扭伤了，医生说六周不能跑步。", "唉，我拄拐了，周日{sport}时伤了{part}。"],
        },
        "more": {
            "en": ["Physio is going well, I can climb stairs without wincing now."],
            "zh": ["康复理疗挺顺利，现在上楼梯已经不疼了。"],
        },
        "obs": {"en": "{P} injured their {part} playing {sport}.", "zh": "{P}在{sport}时伤了{part}。"},
        "obs_more": {"en": "{P}'s rehabilitation is progressing.", "zh": "{P}的康复进展顺利。"},
        "ask": {
            "en": ["What health setback did {P} have?", "Why was {P} limping around?"],
            "zh": ["{P}身体出了什么状况？", "{P}为什么走路一瘸一拐？"],
        },
        "when": {"en": ["When did {P} get hurt?"], "zh": ["{P}是什么时候受伤的？"]},
        "multi": {
            "en": ["How was {P} recovering from the accident, and what activity caused it?"],
            "zh": ["{P}的伤是怎么来的，后来恢复得怎样？"],
        },
        "open": {
            "en": ["Would {P} be able to enter a marathon soon after the accident?"],
            "zh": ["{P}受伤后不久能参加马拉松吗？"],
        },
        "decoy": {
            "en": ["I had a health scare last year too but it was nothing."],
            "zh": ["我去年身体也出过状况，后来没事。"],
        },
    },
    {
        "key": "new_job",
        "slots": {
            "company": [
                ("a robotics startup", "一家机器人创业公司"),
                ("the city library", "市图书馆"),
                ("a bakery chain", "一家连锁面包店"),
                ("a design studio", "一家设计工作室"),
            ],
            "role": [("team lead", "组长"), ("analyst", "分析师"), ("product manager", "产品经理")],
        },
        "say": {
            "en": [
                "I signed the offer! Starting as {role} at {company} on Monday.",
                "Handed in my notice today, I'm joining {company} as {role}.",
                "They called back and I got it, {role} at {company}. Pinch me.",
            ],
            "zh": ["我签了offer！下周一去{company}当{role}。", "今天递了辞呈，我要去{company}做{role}了。"],
        },
        "more": {
            "en": ["First week done, my manager already put me in charge of the quarterly plan."],
            "zh": ["第一周结束了，领导已经让我负责季度计划了。"],
        },
        "obs": {"en": "{P} started a new position as {role} at {company}.", "zh": "{P}在{company}开始担任{role}。"},
        "obs_more": {"en": "{P} leads the quarterly plan at the new workplace.", "zh": "{P}在新单位负责季度计划。"},
        "ask": {
            "en": ["Where does {P} work now?", "Which employer did {P} switch to?"],
            "zh": ["{P}现在在哪里上班？", "{P}跳槽去了哪家单位？"],
        },
        "when": {"en": ["When did {P} change employers?"], "zh": ["{P}什么时候换的工作单位？"]},
        "multi": {
            "en": ["What responsibility did {P} get at the employer they switched to?"],
            "zh": ["{P}换了单位以后被安排负责什么？"],
        },
        "open": {"en": ["Did {P} have to go through interviews recently?"], "zh": ["{P}最近是不是参加过面试？"]},
        "decoy": {
            "en": ["Work has been the same old grind, no changes on my side."],
            "zh": ["我这边上班还是老样子，没什么变化。"],
        },
    },
    {
        "key": "moving_house",
        "slots": {
            "place": [
                ("a flat near the river", "河边的一套公寓"),
                ("a cottage outside town", "郊区的一栋小平房"),
                ("a loft downtown", "市中心的一间复式"),
            ],
        },
        "say": {
            "en": [
                "The keys are mine! We're moving into {place} at the end of the month.",
                "Boxes everywhere. We finally found {place} and the lease starts soon.",
            ],
            "zh": ["钥匙拿到了！月底我们搬进{place}。", "到处都是纸箱，我们终于找到了{place}，很快就能入住。"],
        },
        "more": {
            "en": ["Painted the bedroom sage green this weekend, the place finally feels like ours."],
            "zh": ["这周末把卧室刷成了浅绿色，终于有家的感觉了。"],
        },
        "obs": {"en": "{P} moved into {place}.", "zh": "{P}搬进了{place}。"},
        "obs_more": {"en": "{P} painted the bedroom green.", "zh": "{P}把卧室刷成了绿色。"},
        "ask": {
            "en": ["Where does {P} live these days?", "What new home did {P} settle into?"],
            "zh": ["{P}现在住在哪儿？", "{P}搬到了什么样的新住处？"],
        },
        "when": {"en": ["When did {P} relocate?"], "zh": ["{P}什么时候搬的家？"]},
        "multi": {
            "en": ["What colour did {P} choose for a room in the new home?"],
            "zh": ["{P}新住处的房间刷成了什么颜色？"],
        },
        "open": {"en": ["Did {P} need a removal van recently?"], "zh": ["{P}最近需要找搬家公司吗？"]},
        "decoy": {
            "en": ["I'd love a new home someday but prices are crazy."],
            "zh": ["我也想换个新住处，可房价太离谱了。"],
        },
    },
    {
        "key": "marathon",
        "slots": {
            "race": [
                ("the Berlin marathon", "北京马拉松"),
                ("a half marathon in the hills", "山里的半程马拉松"),
                ("the city 10k", "城市十公里跑"),
            ],
            "time": [("under four hours", "四小时以内"), ("a personal best", "个人最好成绩")],
        },
        "say": {
            "en": [
                "I crossed the finish line of {race} with {time}! My legs are jelly.",
                "Did it, finished {race} in {time}, crying at the end like a baby.",
            ],
            "zh": ["我跑完了{race}，成绩{time}！腿都软了。", "完赛{race}了，{time}，到终点的时候哭得像个孩子。"],
        },
        "more": {
            "en": ["Already signed up for the next one, my coach thinks I can shave off ten minutes."],
            "zh": ["我已经报名下一场了，教练说我还能再快十分钟。"],
        },
        "obs": {"en": "{P} completed {race} with {time}.", "zh": "{P}完成了{race}，成绩{time}。"},
        "obs_more": {"en": "{P} registered for another race.", "zh": "{P}报名了下一场比赛。"},
        "ask": {
            "en": ["What endurance event did {P} complete?", "Which race did {P} finish?"],
            "zh": ["{P}完成了什么耐力比赛？", "{P}跑完了哪场赛事？"],
        },
        "when": {"en": ["When did {P} complete the endurance event?"], "zh": ["{P}什么时候完成那场耐力比赛的？"]},
        "multi": {
            "en": ["After finishing the endurance event, what did {P} plan next?"],
            "zh": ["{P}完赛之后又打算做什么？"],
        },
        "open": {"en": ["Does {P} train for long-distance running?"], "zh": ["{P}平时练长跑吗？"]},
        "decoy": {
            "en": ["I watched an endurance race on TV, could never do that."],
            "zh": ["我在电视上看过耐力比赛，我可做不到。"],
        },
    },
    {
        "key": "pottery",
        "slots": {
            "item": [
                ("a lopsided mug", "一个歪歪扭扭的杯子"),
                ("a blue bowl", "一个蓝色的碗"),
                ("a small vase", "一个小花瓶"),
            ]
        },
        "say": {
            "en": [
                "I've started a ceramics class on Thursdays, made {item} on the wheel!",
                "Clay under my nails all week, my first piece from the wheel is {item}.",
            ],
            "zh": ["我每周四去上陶艺课，在拉坯机上做了{item}！", "这周指甲缝里全是泥，我第一件作品是{item}。"],
        },
        "more": {
            "en": ["The kiln firing came out great, the glaze turned a deep turquoise."],
            "zh": ["窑烧出来效果很好，釉色变成了深绿松石色。"],
        },
        "obs": {"en": "{P} takes a weekly ceramics class and made {item}.", "zh": "{P}每周上陶艺课，做了{item}。"},
        "obs_more": {"en": "{P}'s glazed piece came out turquoise.", "zh": "{P}的作品上釉后是绿松石色。"},
        "ask": {
            "en": ["What hobby did {P} pick up?", "What creative pastime is {P} learning?"],
            "zh": ["{P}新培养了什么爱好？", "{P}在学什么手工？"],
        },
        "when": {"en": ["When did {P} begin the new hobby?"], "zh": ["{P}是什么时候开始这个新爱好的？"]},
        "multi": {
            "en": ["What colour did {P}'s handmade piece turn out, and what was it?"],
            "zh": ["{P}亲手做的东西是什么，最后是什么颜色？"],
        },
        "open": {"en": ["Has {P} used a kiln or a potter's wheel?"], "zh": ["{P}用过拉坯机吗？"]},
        "decoy": {
            "en": ["I keep meaning to pick up a hobby, maybe next year."],
            "zh": ["我一直想培养个爱好，也许明年吧。"],
        },
    },
    {
        "key": "vegetarian",
        "slots": {
            "reason": [("after watching a documentary", "看了一部纪录片之后"), ("for my cholesterol", "为了降胆固醇")]
        },
        "say": {
            "en": [
                "I've stopped eating meat, {reason}. Three weeks so far!",
                "No more steak for me, I went plant-based {reason}.",
            ],
            "zh": ["我{reason}不吃肉了，已经三周了！", "我{reason}开始吃素了。"],
        },
        "more": {
            "en": ["Made a lentil curry for my parents and they didn't even notice there was no chicken."],
            "zh": ["给爸妈做了扁豆咖喱，他们都没发现里面没有鸡肉。"],
        },
        "obs": {"en": "{P} became vegetarian {reason}.", "zh": "{P}{reason}成了素食者。"},
        "obs_more": {"en": "{P} cooked a lentil curry for the parents.", "zh": "{P}给父母做了扁豆咖喱。"},
        "ask": {
            "en": ["What change did {P} make to their diet?", "What does {P} avoid at dinner now?"],
            "zh": ["{P}的饮食有什么改变？", "{P}现在吃饭忌口什么？"],
        },
        "when": {"en": ["When did {P} change their diet?"], "zh": ["{P}是什么时候改变饮食习惯的？"]},
        "multi": {
            "en": ["What dish did {P} serve family that fit the diet change?"],
            "zh": ["{P}改变饮食后给家人做了什么菜？"],
        },
        "open": {"en": ["Would {P} order a burger at a barbecue?"], "zh": ["{P}去烧烤会点牛肉串吗？"]},
        "decoy": {
            "en": ["My diet is a disaster, pizza three times a week."],
            "zh": ["我的饮食一团糟，一周吃三次披萨。"],
        },
    },
    {
        "key": "car",
        "slots": {
            "car": [
                ("a used electric hatchback", "一辆二手电动车"),
                ("a red convertible", "一辆红色敞篷车"),
                ("an old camper van", "一辆旧房车"),
            ]
        },
        "say": {
            "en": [
                "I bought {car}! No more waiting for the bus in the rain.",
                "Picked up {car} from the dealer today, still smells new-ish.",
            ],
            "zh": ["我买了{car}！再也不用在雨里等公交了。", "今天去店里提了{car}。"],
        },
        "more": {
            "en": ["Got my first parking ticket, thirty euros for a meter that ran out."],
            "zh": ["收到了第一张停车罚单，罚了两百块。"],
        },
        "obs": {"en": "{P} bought {car}.", "zh": "{P}买了{car}。"},
        "obs_more": {"en": "{P} got a parking fine.", "zh": "{P}收到了停车罚单。"},
        "ask": {
            "en": ["What vehicle did {P} purchase?", "How does {P} get around now instead of public transport?"],
            "zh": ["{P}买了什么交通工具？", "{P}现在出行不靠公共交通靠什么？"],
        },
        "when": {"en": ["When did {P} get the vehicle?"], "zh": ["{P}是什么时候入手那台交通工具的？"]},
        "multi": {
            "en": ["What trouble did {P} run into with the new vehicle?"],
            "zh": ["{P}的新交通工具带来了什么麻烦？"],
        },
        "open": {"en": ["Does {P} need a driving licence?"], "zh": ["{P}需要驾照吗？"]},
        "decoy": {
            "en": ["Public transport is fine for me, I'd never buy a vehicle."],
            "zh": ["我坐公共交通挺好的，不会买交通工具。"],
        },
    },
    {
        "key": "grandmother",
        "slots": {
            "who": [("grandma", "奶奶"), ("grandpa", "外公")],
            "place": [("the hospital", "医院"), ("a care home", "养老院")],
        },
        "say": {
            "en": [
                "Spent the whole weekend at {place} with my {who}, she had a fall but she's stable.",
                "My {who} is in {place} after a stroke, I've been visiting every evening.",
            ],
            "zh": [
                "整个周末都在{place}陪{who}，摔了一跤，现在情况稳定。",
                "{who}中风住进了{place}，我每天晚上都去看。",
            ],
        },
        "more": {
            "en": ["Good news, my {who} is back home and already bossing everyone around."],
            "zh": ["好消息，{who}出院回家了，又开始指挥全家了。"],
        },
        "obs": {"en": "{P}'s {who} was in {place}.", "zh": "{P}的{who}住进了{place}。"},
        "obs_more": {"en": "{P}'s {who} returned home.", "zh": "{P}的{who}回家了。"},
        "ask": {
            "en": ["Which elderly relative was {P} worried about?", "Whom did {P} keep visiting in the evenings?"],
            "zh": ["{P}在担心哪位长辈？", "{P}晚上经常去看望谁？"],
        },
        "when": {"en": ["When was {P}'s elderly relative admitted?"], "zh": ["{P}的长辈是什么时候住进去的？"]},
        "multi": {
            "en": ["How did things end for the elderly relative {P} was worried about?"],
            "zh": ["{P}担心的那位长辈后来怎么样了？"],
        },
        "open": {"en": ["Did {P} spend time in a medical facility recently?"], "zh": ["{P}最近常去医疗机构吗？"]},
        "decoy": {
            "en": ["Elderly relatives are tough, mine live far away so I rarely visit."],
            "zh": ["长辈的事情很难，我的长辈住得远，我很少去看望。"],
        },
    },
    {
        "key": "language",
        "slots": {"lang": [("Japanese", "西班牙语"), ("Spanish", "日语"), ("Korean", "法语")]},
        "say": {
            "en": [
                "I'm doing {lang} lessons online every morning, my pronunciation is tragic.",
                "Downloaded a {lang} app and I'm on a 40-day streak.",
            ],
            "zh": ["我每天早上在网上学{lang}，发音简直惨不忍睹。", "下了个学{lang}的软件，已经连续打卡四十天了。"],
        },
        "more": {
            "en": ["Passed the beginner exam! Eighty-two percent on the listening part."],
            "zh": ["初级考试过了！听力考了八十二分。"],
        },
        "obs": {"en": "{P} is learning {lang}.", "zh": "{P}在学{lang}。"},
        "obs_more": {"en": "{P} passed a beginner test.", "zh": "{P}通过了初级考试。"},
        "ask": {
            "en": ["Which foreign tongue is {P} studying?", "What is {P} practising to speak?"],
            "zh": ["{P}在学哪门外语？", "{P}在练习说什么话？"],
        },
        "when": {"en": ["When did {P} mention studying a foreign tongue?"], "zh": ["{P}什么时候提到在学外语？"]},
        "multi": {
            "en": ["What score did {P} get in the foreign tongue they study?"],
            "zh": ["{P}学的外语考试考了多少分？"],
        },
        "open": {
            "en": ["Could {P} order food on a trip abroad in that country's tongue?"],
            "zh": ["{P}出国旅行能用当地话点菜吗？"],
        },
        "decoy": {"en": ["Foreign tongues were never my thing at school."], "zh": ["上学时我外语就一直不好。"]},
    },
    {
        "key": "band",
        "slots": {
            "instr": [("bass", "吉他"), ("drums", "架子鼓"), ("keyboard", "贝斯")],
            "venue": [("the Blue Note bar", "蓝调酒吧"), ("a street festival", "街头音乐节")],
        },
        "say": {
            "en": [
                "I joined a band! I play {instr}, our first gig is at {venue}.",
                "Some coworkers roped me into their band, I'm on {instr}. We're playing {venue}.",
            ],
            "zh": [
                "我加入了一个乐队！我弹{instr}，第一次演出在{venue}。",
                "同事拉我进了他们的乐队，我负责{instr}，要去{venue}演出。",
            ],
        },
        "more": {
            "en": ["The gig went great, someone filmed it and it got two thousand views."],
            "zh": ["演出很成功，有人拍了视频，播放量两千多。"],
        },
        "obs": {
            "en": "{P} plays {instr} in a band and played at {venue}.",
            "zh": "{P}在乐队里负责{instr}，在{venue}演出。",
        },
        "obs_more": {"en": "A video of {P}'s gig was popular.", "zh": "{P}演出的视频很受欢迎。"},
        "ask": {
            "en": ["What musical group is {P} part of?", "Which instrument does {P} perform on?"],
            "zh": ["{P}参加了什么音乐团体？", "{P}表演时用什么乐器？"],
        },
        "when": {"en": ["When did {P} join the musical group?"], "zh": ["{P}是什么时候加入音乐团体的？"]},
        "multi": {
            "en": ["How was the audience reaction to {P}'s musical group performance?"],
            "zh": ["{P}那次表演反响怎么样？"],
        },
        "open": {"en": ["Does {P} need to rehearse with other musicians?"], "zh": ["{P}需要和其他乐手排练吗？"]},
        "decoy": {
            "en": ["I went to a musical performance last night, the singer was off-key."],
            "zh": ["我昨晚看了一场音乐表演，歌手跑调了。"],
        },
    },
    {
        "key": "garden",
        "slots": {"veg": [("tomatoes", "番茄"), ("courgettes", "黄瓜"), ("strawberries", "草莓")]},
        "say": {
            "en": [
                "We rented an allotment and I planted {veg} and herbs.",
                "My balcony is a jungle now, I'm growing {veg} in buckets.",
            ],
            "zh": ["我们租了一块菜地，我种了{veg}和香草。", "我家阳台快成丛林了，在桶里种{veg}。"],
        },
        "more": {
            "en": ["First harvest! Way too much, I gave bags of it to the neighbours."],
            "zh": ["第一次收获！太多了，分了好几袋给邻居。"],
        },
        "obs": {"en": "{P} is growing {veg}.", "zh": "{P}在种{veg}。"},
        "obs_more": {"en": "{P} shared the harvest with neighbours.", "zh": "{P}把收成分给了邻居。"},
        "ask": {
            "en": ["What produce is {P} cultivating?", "What did {P} plant?"],
            "zh": ["{P}在栽培什么作物？", "{P}种下了什么？"],
        },
        "when": {"en": ["When did {P} start cultivating produce?"], "zh": ["{P}什么时候开始栽培作物的？"]},
        "multi": {"en": ["What did {P} do with the surplus from the plot?"], "zh": ["{P}多出来的收成怎么处理了？"]},
        "open": {"en": ["Would {P} need to water plants in a heatwave?"], "zh": ["天气炎热时{P}需要浇水吗？"]},
        "decoy": {"en": ["I kill every plant I own, even cactuses."], "zh": ["我养什么植物都会死，连仙人掌都不例外。"]},
    },
    {
        "key": "baby",
        "slots": {
            "rel": [("cousin", "表姐"), ("best friend", "闺蜜"), ("sister-in-law", "嫂子")],
            "name": [("Leo", "小宝"), ("Ava", "朵朵")],
        },
        "say": {
            "en": [
                "My {rel} had her baby last night, a tiny girl called {name}!",
                "I'm an auntie-ish now, my {rel} gave birth to {name} this morning.",
            ],
            "zh": ["我{rel}昨晚生了，是个小女孩，叫{name}！", "我{rel}今天早上生了{name}，我要当干妈了。"],
        },
        "more": {
            "en": ["I knitted {name} a yellow blanket, it took me three weekends."],
            "zh": ["我给{name}织了一条黄色的小毯子，花了三个周末。"],
        },
        "obs": {"en": "{P}'s {rel} had a baby named {name}.", "zh": "{P}的{rel}生了宝宝，叫{name}。"},
        "obs_more": {"en": "{P} knitted a blanket for the newborn.", "zh": "{P}给新生儿织了毯子。"},
        "ask": {
            "en": ["Who in {P}'s circle became a mother?", "Whose newborn did {P} talk about?"],
            "zh": ["{P}身边谁当妈妈了？", "{P}说起了谁家的新生儿？"],
        },
        "when": {"en": ["When was the newborn in {P}'s circle born?"], "zh": ["{P}身边的那个新生儿是什么时候出生的？"]},
        "multi": {"en": ["What handmade gift did {P} make for the newborn?"], "zh": ["{P}给新生儿亲手做了什么礼物？"]},
        "open": {"en": ["Did {P} recently visit a maternity ward?"], "zh": ["{P}最近去过产科病房吗？"]},
        "decoy": {
            "en": ["Everyone in my circle is becoming a mother, it's wild."],
            "zh": ["我身边好多人都当妈妈了，真神奇。"],
        },
    },
    {
        "key": "trip",
        "slots": {
            "place": [("Iceland", "云南"), ("Morocco", "新疆"), ("Norway", "西藏"), ("Vietnam", "海南")],
            "thing": [("the northern lights", "雪山"), ("a camel ride", "星空"), ("a glacier hike", "日出")],
        },
        "say": {
            "en": [
                "Back from {place}! Saw {thing}, totally worth the overnight flight.",
                "Ten days in {place}, the highlight was {thing}.",
            ],
            "zh": ["从{place}回来了！看到了{thing}，坐夜车去完全值得。", "在{place}待了十天，最难忘的是{thing}。"],
        },
        "more": {
            "en": ["Printed the photos from the holiday and framed the best one above the sofa."],
            "zh": ["把旅行的照片洗出来了，最好的一张裱起来挂在沙发上面。"],
        },
        "obs": {"en": "{P} vacationed in {place} and saw {thing}.", "zh": "{P}去{place}度假，看到了{thing}。"},
        "obs_more": {"en": "{P} framed a holiday photo.", "zh": "{P}把度假照片裱了起来。"},
        "ask": {
            "en": ["Which country did {P} visit on vacation?", "Where did {P} go on holiday?"],
            "zh": ["{P}休假去了哪里？", "{P}的假期是在哪儿过的？"],
        },
        "when": {"en": ["When did {P} return from vacation?"], "zh": ["{P}是什么时候休假回来的？"]},
        "multi": {"en": ["What did {P} do with pictures from the vacation?"], "zh": ["{P}怎么处理休假时拍的照片？"]},
        "open": {"en": ["Did {P} need warm clothes for the vacation?"], "zh": ["{P}休假需要带厚衣服吗？"]},
        "decoy": {"en": ["I haven't had a real vacation in two years."], "zh": ["我两年没正经休过假了。"]},
    },
    {
        "key": "breakup",
        "slots": {"time": [("three years", "三年"), ("eight months", "八个月")]},
        "say": {
            "en": [
                "Alex and I split up. After {time} it just wasn't working.",
                "I ended things with Alex last night, {time} down the drain.",
            ],
            "zh": ["我和阿成分手了，在一起{time}，还是不合适。", "昨晚我和阿成说清楚了，{time}的感情就这样结束了。"],
        },
        "more": {
            "en": ["Deleted all the photos of Alex, felt weirdly freeing."],
            "zh": ["把阿成的照片都删了，反而觉得轻松了。"],
        },
        "obs": {"en": "{P} broke up with Alex after {time}.", "zh": "{P}和阿成在{time}后分手。"},
        "obs_more": {"en": "{P} removed old photos of the ex.", "zh": "{P}删掉了前任的照片。"},
        "ask": {
            "en": ["Is {P} still in a relationship?", "What happened with {P}'s partner?"],
            "zh": ["{P}现在还有恋人吗？", "{P}的感情出了什么事？"],
        },
        "when": {"en": ["When did {P}'s relationship end?"], "zh": ["{P}的感情是什么时候结束的？"]},
        "multi": {"en": ["How did {P} cope after the relationship ended?"], "zh": ["{P}感情结束后是怎么调整的？"]},
        "open": {"en": ["Would {P} be single at the moment?"], "zh": ["{P}现在是单身吗？"]},
        "decoy": {"en": ["Relationships are hard, mine is fine though."], "zh": ["感情的事都不容易，不过我这边还好。"]},
    },
    {
        "key": "novel",
        "slots": {
            "genre": [("a mystery novel", "一部悬疑小说"), ("a fantasy book", "一部奇幻小说")],
            "words": [("fifty thousand words", "五万字"), ("twelve chapters", "十二章")],
        },
        "say": {
            "en": ["I'm writing {genre}! I'm at {words} already.", "Secret project: {genre}. Hit {words} last night."],
            "zh": ["我在写{genre}，已经写了{words}！", "秘密计划：写{genre}，昨晚写到了{words}。"],
        },
        "more": {
            "en": ["A literary agent asked to see the full manuscript!"],
            "zh": ["有个文学经纪人想看完整的稿子！"],
        },
        "obs": {"en": "{P} is writing {genre}.", "zh": "{P}在写{genre}。"},
        "obs_more": {"en": "An agent requested {P}'s manuscript.", "zh": "有经纪人想看{P}的书稿。"},
        "ask": {
            "en": ["What creative writing project is {P} working on?", "What kind of book is {P} authoring?"],
            "zh": ["{P}在进行什么创作？", "{P}在写什么样的作品？"],
        },
        "when": {"en": ["When did {P} reveal the authoring project?"], "zh": ["{P}是什么时候透露自己在创作的？"]},
        "multi": {"en": ["Who showed interest in the book {P} is authoring?"], "zh": ["谁对{P}的作品感兴趣？"]},
        "open": {"en": ["Might {P} get published one day?"], "zh": ["{P}有可能出版作品吗？"]},
        "decoy": {
            "en": ["I read a book about creative writing but never tried it."],
            "zh": ["我读过一本讲创作的书，但从来没动笔。"],
        },
    },
    {
        "key": "volunteer",
        "slots": {
            "place": [
                ("a food bank", "社区食物银行"),
                ("an animal shelter", "流浪动物救助站"),
                ("a literacy program", "儿童阅读项目"),
            ]
        },
        "say": {
            "en": [
                "I've been helping out at {place} on Saturdays, it's so rewarding.",
                "Signed up to volunteer at {place}, first shift was exhausting but lovely.",
            ],
            "zh": ["我每周六去{place}帮忙，很有意义。", "报名去{place}当志愿者了，第一次值班很累但很开心。"],
        },
        "more": {
            "en": ["They asked me to coordinate the other helpers from next month."],
            "zh": ["他们让我下个月开始协调其他志愿者。"],
        },
        "obs": {"en": "{P} volunteers at {place}.", "zh": "{P}在{place}做志愿者。"},
        "obs_more": {"en": "{P} will coordinate the helpers.", "zh": "{P}将负责协调志愿者。"},
        "ask": {
            "en": ["Where does {P} give time for free?", "What charity work does {P} do?"],
            "zh": ["{P}在哪里做公益？", "{P}参加了什么慈善活动？"],
        },
        "when": {"en": ["When did {P} start the charity work?"], "zh": ["{P}什么时候开始做公益的？"]},
        "multi": {
            "en": ["What bigger role was {P} offered in the charity work?"],
            "zh": ["{P}做公益后被委以什么任务？"],
        },
        "open": {"en": ["Is {P} busy on weekend mornings?"], "zh": ["{P}周末上午有空吗？"]},
        "decoy": {
            "en": ["I donate to charity sometimes but never have the time to do more."],
            "zh": ["我偶尔捐钱做公益，但没时间做更多。"],
        },
    },
    {
        "key": "exam",
        "slots": {
            "exam": [
                ("the bar exam", "注册会计师考试"),
                ("my driving test", "驾照考试"),
                ("the nursing board exam", "教师资格考试"),
            ]
        },
        "say": {
            "en": [
                "I PASSED {exam}!!! Months of flashcards paid off.",
                "Results came in: I passed {exam} on the first try.",
            ],
            "zh": ["我通过{exam}了！！！几个月的复习没白费。", "成绩出来了：{exam}一次就过了。"],
        },
        "more": {
            "en": ["Celebrated with a massive dinner, I ordered everything on the menu."],
            "zh": ["为了庆祝吃了一顿大餐，菜单上的菜差不多点了个遍。"],
        },
        "obs": {"en": "{P} passed {exam}.", "zh": "{P}通过了{exam}。"},
        "obs_more": {"en": "{P} celebrated with a big dinner.", "zh": "{P}用一顿大餐庆祝。"},
        "ask": {
            "en": ["What qualification did {P} earn?", "Which test did {P} succeed in?"],
            "zh": ["{P}拿到了什么资格？", "{P}考过了哪个考试？"],
        },
        "when": {"en": ["When did {P} learn the test result?"], "zh": ["{P}什么时候知道考试结果的？"]},
        "multi": {"en": ["How did {P} mark the success in the test?"], "zh": ["{P}考过以后是怎么庆祝的？"]},
        "open": {"en": ["Did {P} spend months revising for something?"], "zh": ["{P}是不是复习了好几个月？"]},
        "decoy": {"en": ["I failed a test once and never retook it."], "zh": ["我有次考试没过，后来再也没考。"]},
    },
    {
        "key": "allergy",
        "slots": {"food": [("peanuts", "芒果"), ("shellfish", "海鲜"), ("sesame", "花生")]},
        "say": {
            "en": [
                "Turns out I'm allergic to {food}, my throat swelled up at the restaurant.",
                "The clinic confirmed it, {food} is off the menu for me forever.",
            ],
            "zh": ["原来我对{food}过敏，在餐厅喉咙都肿了。", "医院确诊了，我这辈子都不能吃{food}了。"],
        },
        "more": {
            "en": ["I carry an epipen everywhere now, my bag is getting heavy."],
            "zh": ["我现在随身带着肾上腺素笔，包越来越重了。"],
        },
        "obs": {"en": "{P} is allergic to {food}.", "zh": "{P}对{food}过敏。"},
        "obs_more": {"en": "{P} carries an emergency injector.", "zh": "{P}随身带着急救笔。"},
        "ask": {
            "en": ["What can't {P} eat for medical reasons?", "What did the doctors find {P} reacts badly to?"],
            "zh": ["{P}因为身体原因不能吃什么？", "医生发现{P}对什么有不良反应？"],
        },
        "when": {
            "en": ["When did {P} find out about the bad reaction?"],
            "zh": ["{P}是什么时候发现自己有不良反应的？"],
        },
        "multi": {
            "en": ["What precaution does {P} take because of the bad reaction?"],
            "zh": ["{P}因为不良反应随身带什么？"],
        },
        "open": {
            "en": ["Should friends check ingredients before cooking for {P}?"],
            "zh": ["朋友给{P}做饭前需要检查配料吗？"],
        },
        "decoy": {
            "en": ["I can eat anything, no medical reasons to worry about."],
            "zh": ["我什么都能吃，身体没什么忌口。"],
        },
    },
]

SMALL_TALK = {
    "en": [
        "Morning! How's your week going?",
        "It's been raining nonstop here.",
        "I finally finished that series everyone talks about.",
        "Work was a bit hectic today.",
        "Did you see the match last night?",
        "I made pancakes this morning, total mess.",
        "My phone screen cracked again.",
        "The traffic was unbelievable this afternoon.",
        "Any plans for the weekend?",
        "I'm so tired, went to bed way too late.",
        "Tried a new coffee place, pretty decent.",
        "My laptop keeps freezing, so annoying.",
        "I think spring is finally here.",
        "Just got back from the supermarket.",
        "Have you read anything good lately?",
        "The neighbours are renovating, drilling all day.",
        "I need a holiday honestly.",
        "I started a podcast about history, it's fun.",
        "Feeling a bit under the weather today.",
        "We had pizza for dinner again.",
        "The train was delayed forty minutes.",
        "I've been trying to drink more water.",
        "My favourite show got cancelled!",
        "Still cold here, I'm wearing two jumpers.",
        "Reorganised my wardrobe, found a jacket I forgot about.",
        "The gym was packed tonight.",
        "I'm thinking about learning to bake bread.",
        "We watched a film about a family road trip, so cheesy.",
        "I got lost trying to find the new post office.",
        "The cat next door visited again.",
        "I have a dentist appointment tomorrow, dreading it.",
        "My family group chat is chaos today.",
        "I keep forgetting my umbrella.",
        "Celebrated a colleague's birthday at the office with cake.",
        "My parents are redecorating the kitchen.",
        "Long week, glad it's Friday.",
    ],
    "zh": [
        "早上好！这周过得怎么样？",
        "这边一直在下雨。",
        "我终于把那部大家都在聊的剧看完了。",
        "今天上班有点忙。",
        "你看昨晚的比赛了吗？",
        "今天早上做了煎饼，厨房一团糟。",
        "我手机屏幕又摔裂了。",
        "下午堵车堵得离谱。",
        "周末有什么安排吗？",
        "好困，昨晚睡太晚了。",
        "试了一家新咖啡店，还不错。",
        "电脑老是卡，烦死了。",
        "感觉春天终于来了。",
        "刚从超市回来。",
        "最近有看什么好书吗？",
        "邻居在装修，电钻响了一整天。",
        "说真的我需要休个假。",
        "我开始听一个讲历史的播客，挺有意思。",
        "今天有点不舒服。",
        "晚饭又是披萨。",
        "火车晚点了四十分钟。",
        "我最近在努力多喝水。",
        "我最喜欢的节目停播了！",
        "这边还是很冷，我穿了两件毛衣。",
        "整理了衣柜，翻出一件忘了的外套。",
        "今晚健身房人好多。",
        "我在考虑学烤面包。",
        "我们看了一部讲全家自驾游的电影，有点俗套。",
        "找新开的邮局找迷路了。",
        "隔壁的猫又来串门了。",
        "明天要去看牙医，好怕。",
        "家里的群今天吵翻天了。",
        "我老是忘带伞。",
        "在办公室给同事过了生日，吃了蛋糕。",
        "我爸妈在重新装修厨房。",
        "这周好长，幸好周五了。",
    ],
}
REACTIONS = {
    "en": [
        "Oh wow, that's huge!",
        "No way, congratulations!",
        "That sounds amazing.",
        "Oh no, I'm sorry to hear that.",
        "Haha, classic.",
        "Tell me more!",
        "How exciting!",
        "That's a lot to take in.",
        "I'm so happy for you.",
        "Wait, really?",
        "Good for you!",
        "Ha, I can imagine.",
        "That must have been stressful.",
        "Love that for you.",
        "Same here, honestly.",
        "Fair enough.",
    ],
    "zh": [
        "哇，这可是大事！",
        "不会吧，恭喜恭喜！",
        "听起来太棒了。",
        "哎呀，真遗憾。",
        "哈哈，太经典了。",
        "快说说！",
        "好激动！",
        "信息量好大。",
        "真为你高兴。",
        "真的假的？",
        "好样的！",
        "哈，我能想象。",
        "那一定压力很大。",
        "太好了。",
        "我也是，说真的。",
        "有道理。",
    ],
}
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


ADDRESSED = 0.35  # share of small talk and reactions that name the other person

# Person A of every conversation is a woman and person B a man (the names above): the pronouns
# an extractor writes when it refers back to them.
PRONOUNS = {
    "en": ({"he": "she", "him": "her", "his": "her"}, {"he": "he", "him": "him", "his": "his"}),
    "zh": ({"he": "她", "him": "她", "his": "她的"}, {"he": "他", "him": "他", "his": "他的"}),
}
# What an extractor adds after a person's news, from the other side's reaction.
REACTED = {
    "en": ["{O} asked {him} for more details.", "{O} wanted to hear more about it.", "{O} listened closely."],
    "zh": ["{O}问了{him}更多细节。", "{O}想多听听这件事。", "{O}听得很认真。"],
}
FELT = {
    "en": ["{He} was excited to share it with {O}.", "{He} said it meant a lot to {him}.", "{He} sounded proud."],
    "zh": ["{he}很兴奋地和{O}分享了这件事。", "{he}说这对{him}意义重大。", "{he}听起来很自豪。"],
}
EN_VERBS = ("think", "need", "keep")  # "I think" -> "{he} thinks"
EN_NO_SUBJECT = ("Tried ", "Just ", "Reorganised ", "Celebrated ")  # "Tried a new…" -> "{he} tried a new…"
EN_FIRST_PERSON = [
    ("I have ", "{he} has "),
    ("I'm ", "{he} is "),
    ("I've ", "{he} has "),
    ("I'll ", "{he} will "),
    ("I ", "{he} "),
    (" me ", " {him} "),
    (" me.", " {him}."),
    (" me,", " {him},"),
    ("My ", "{His} "),
    (" my ", " {his} "),
    ("We ", "{His} family "),
    (" we ", " they "),
    (" our ", " their "),
    ("Our ", "{His} family's "),
    (" us ", " them "),
]


def third_person(text: str, lang: str, person: str, pronouns: dict) -> str:
    """A first-person sentence as an extractor reports it: "{person} said …" with the pronouns
    of ``person`` (a statement's meaning, not its exact wording)."""
    if lang == "zh":
        body = text.replace("我们", f"{person}一家").replace("我", pronouns["he"])
        return f"{person}说{body}"
    body = text
    for verb in EN_VERBS:
        body = body.replace(f"I {verb} ", f"I {verb}s ")
    if body.startswith(EN_NO_SUBJECT):
        body = f"I {body[0].lower()}{body[1:]}"
    elif body.startswith("Feeling "):
        body = f"I'm f{body[1:]}"
    for first, third in EN_FIRST_PERSON:
        body = body.replace(first, third)
    body = body.format(he=pronouns["he"], him=pronouns["him"], his=pronouns["his"], His=pronouns["his"].capitalize())
    if body.startswith(pronouns["he"] + " "):
        body = body[len(pronouns["he"]) + 1 :]
        return f"{person} {body[0].lower()}{body[1:]}" if body[:1].isupper() else f"{person} {body}"
    return f"{person} said that {body[0].lower()}{body[1:]}"


def spoken_date(day: str, lang: str) -> str:
    when = date.fromisoformat(day)
    return (
        f"{when.day} {MONTHS[when.month - 1]} {when.year}"
        if lang == "en"
        else f"{when.year}年{when.month}月{when.day}日"
    )


def extracted_fact(base: str, lang: str, names: tuple[str, str], p: int, day: str, rng: random.Random) -> str:
    """A fact observation of person ``p`` (``base`` starts with their name) as an extractor
    writes it: with the date, told to the other person and referred back to, or followed by how
    the teller felt."""
    person, other, pronouns = names[p], names[1 - p], PRONOUNS[lang][p]
    style = rng.randrange(4)
    if style == 0:
        return f"On {spoken_date(day, lang)}, {base}" if lang == "en" else f"{spoken_date(day, lang)}，{base}"
    if style == 1:  # told, then referred back to by pronoun, and the other side's reaction
        rest = base[len(person) :]
        reaction = rng.choice(REACTED[lang]).format(O=other, him=pronouns["him"])
        if lang == "en":
            rest = f"{pronouns['his']} {rest[3:]}" if rest.startswith("'s ") else f"{pronouns['he']}{rest}"
            return f"{person} told {other} that {rest} {reaction}"
        rest = f"{pronouns['his']}{rest[1:]}" if rest.startswith("的") else f"{pronouns['he']}{rest}"
        return f"{person}告诉{other}，{rest}{reaction}"
    if style == 2:
        felt = rng.choice(FELT[lang]).format(
            O=other, he=pronouns["he"], He=pronouns["he"].capitalize(), him=pronouns["him"]
        )
        return f"{base} {felt}" if lang == "en" else f"{base}{felt}"
    return f"{base[:-1]} ({spoken_date(day, lang)})." if lang == "en" else f"{base[:-1]}（{spoken_date(day, lang)}）。"


def addressed(text: str, name: str, lang: str, *, first: bool) -> str:
    """``text`` said to ``name`` by name, as people do in a chat ("Hey Mia! …", "Mia, …"): the
    person a question asks about is named in the other side's turns, never in their own."""
    if lang == "zh":
        return f"{name}！{text}" if first else f"{name}，{text}"
    if first:
        return f"Hey {name}! {text}"
    return f"{name}, {text[0].lower()}{text[1:]}" if not text.startswith("I ") else f"{name}, {text}"


def fill(template: str, values: dict, lang: str, person: str) -> str:
    out = template.replace("{P}", person)
    for slot, pair in values.items():
        out = out.replace("{" + slot + "}", pair[0] if lang == "en" else pair[1])
    return out


def conversation(index: int, lang: str, a: str, b: str, split: str, rng: random.Random) -> dict:  # noqa: C901 - a generator's script of cases
    people = (a, b)
    n_sessions = rng.randint(20, 26)
    day = date(2022, 1, 1) + timedelta(days=rng.randint(0, 300))
    sessions = []
    for _ in range(n_sessions):
        sessions.append({"date": day.isoformat(), "turns": []})
        day += timedelta(days=rng.randint(3, 21))
    # Each person gets 11–13 events; both may share an event type (different values), which
    # is where naming the person matters.
    plans = []  # (person index, event, values, session of statement, session of detail or None)
    for p in range(2):
        for event in rng.sample(EVENTS, rng.randint(11, 13)):
            values = {slot: rng.choice(options) for slot, options in event["slots"].items()}
            s1 = rng.randrange(0, n_sessions - 3)
            s2 = rng.randrange(s1 + 1, n_sessions) if rng.random() < 0.7 else None
            plans.append((p, event, values, s1, s2))
    facts_by_session: dict[int, list] = {}
    for plan_index, (_, _, _, s1, s2) in enumerate(plans):
        facts_by_session.setdefault(s1, []).append((plan_index, "say"))
        if s2 is not None:
            facts_by_session.setdefault(s2, []).append((plan_index, "more"))
        if rng.random() < 0.5:  # the other person uses the question's words about something else
            facts_by_session.setdefault(rng.randrange(n_sessions), []).append((plan_index, "decoy"))
    evidence: dict[tuple[int, str], str] = {}
    observations = []
    turn_no = 0
    # Who is addressed by name: a generator of its own, so the rest of the conversation (and
    # every question) is the same with or without it.
    address = random.Random(f"{SEED}-address-{index}")
    extract = random.Random(f"{SEED}-extract-{index}")  # observations_extracted: a stream of its own
    extracted: list[dict] = []

    def extracted_add(turn_id: str, text: str) -> None:
        extracted.append({"id": f"x{len(extracted)}", "turn": turn_id, "text": text})

    for s, session in enumerate(sessions):
        length = rng.randint(16, 21)
        slots = list(facts_by_session.get(s, []))
        rng.shuffle(slots)
        # Positions of facts inside the session: spread, never the very first turn.
        positions = sorted(rng.sample(range(1, length - 1), min(len(slots), length - 2)))
        placed = dict(zip(positions, slots, strict=False))
        speaker = rng.randrange(2)
        pending_reaction = False
        for t in range(length):
            fact = placed.get(t)
            if fact is not None:
                plan_index, part = fact
                p, event, values, _, _ = plans[plan_index]
                who = 1 - p if part == "decoy" else p
                bank = event[part][lang]
                text = fill(rng.choice(bank), values, lang, people[p])
                speaker = who
            elif pending_reaction:
                text = rng.choice(REACTIONS[lang])
                if rng.random() < 0.5:
                    text += " " + rng.choice(SMALL_TALK[lang])
            else:
                text = rng.choice(SMALL_TALK[lang])
                if rng.random() < 0.3:
                    text = rng.choice(REACTIONS[lang]) + " " + text
            said = text  # before the other person is addressed by name
            if fact is None and address.random() < ADDRESSED:
                text = addressed(text, people[1 - speaker], lang, first=t == 0)
            turn_id = f"c{index}s{s}t{t}"
            if fact is not None and part in ("say", "more"):
                obs_key = "obs" if part == "say" else "obs_more"
                base = fill(event[obs_key][lang], values, lang, people[p])
                extracted_add(turn_id, extracted_fact(base, lang, people, p, session["date"], extract))
            else:
                chat = next((line for line in SMALL_TALK[lang] if line in said), None)
                statement = said if fact is not None else chat  # a decoy: the other person's look-alike news
                if statement and not statement.endswith(("?", "？")) and extract.random() < 0.85:
                    reported = third_person(statement, lang, people[speaker], PRONOUNS[lang][speaker])
                    if extract.random() < 0.25:
                        day = spoken_date(session["date"], lang)
                        reported = f"On {day}, {reported}" if lang == "en" else f"{day}，{reported}"
                    extracted_add(turn_id, reported)
            session["turns"].append({"id": turn_id, "speaker": people[speaker], "text": text})
            if fact is not None and part in ("say", "more"):
                evidence[(plan_index, part)] = turn_id
                obs_key = "obs" if part == "say" else "obs_more"
                observations.append(
                    {
                        "id": f"o{len(observations)}",
                        "turn": turn_id,
                        "text": fill(event[obs_key][lang], values, lang, people[p]),
                    }
                )
            elif rng.random() < 0.12:  # small talk becomes an observation too: distractors
                observations.append(
                    {"id": f"o{len(observations)}", "turn": turn_id, "text": f"{people[speaker]}: {text}"}
                )
            pending_reaction = fact is not None and part != "decoy"
            speaker = 1 - speaker
            turn_no += 1
    questions = []
    for plan_index, (p, event, values, s1, _) in enumerate(plans):
        person = people[p]
        say = evidence.get((plan_index, "say"))
        more = evidence.get((plan_index, "more"))
        if say is None:
            continue

        def add(kind, template, turns, answer="", values=values, person=person):
            questions.append(
                {
                    "id": f"c{index}q{len(questions)}",
                    "kind": kind,
                    "query": fill(template, values, lang, person),
                    "evidence": turns,
                    "answer": answer,
                }
            )

        asks = rng.sample(event["ask"][lang], len(event["ask"][lang]))
        add("single", asks[0], [say], fill(event["obs"][lang], values, lang, person))
        if len(asks) > 1 and rng.random() < 0.6:
            add("single", asks[1], [say], fill(event["obs"][lang], values, lang, person))
        when = date.fromisoformat(sessions[s1]["date"])
        add(
            "temporal",
            rng.choice(event["when"][lang]),
            [say],
            f"{MONTHS[when.month - 1]} {when.year}" if lang == "en" else f"{when.year}年{when.month}月",
        )
        if more is not None:
            add(
                "multi",
                rng.choice(event["multi"][lang]),
                [say, more],
                fill(event["obs_more"][lang], values, lang, person),
            )
        if rng.random() < 0.6:
            add("open", rng.choice(event["open"][lang]), [say])
    return {
        "id": f"c{index}",
        "lang": lang,
        "split": split,
        "user": a,
        "other": b,
        "sessions": sessions,
        "observations": observations,
        "observations_extracted": extracted,
        "questions": questions,
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    for old in OUT.glob("conv_*.json"):
        old.unlink()
    for index, (lang, a, b, split) in enumerate(CONVERSATIONS):
        data = conversation(index, lang, a, b, split, rng)
        path = OUT / f"conv_{index}_{lang}.json"
        path.write_text(json.dumps(data, ensure_ascii=False, indent=0), encoding="utf-8")
        turns = sum(len(s["turns"]) for s in data["sessions"])
        print(
            f"{path.name}: {split}, {len(data['sessions'])} sessions, {turns} turns, {len(data['questions'])} questions, {len(data['observations'])} observations, {len(data['observations_extracted'])} extracted"
        )


if __name__ == "__main__":
    main()
