"""The `text` corpus profile: sessions that are mostly conversation, not tool output.

    python bench/gen_corpus.py --profile text --out /tmp/deja-text --mb 200 --seed 1

The shape of a year of real Claude Code history (issue 11): at 200 MB about 92k lines in
~530 files, two thirds of them user and assistant turns of 2–14 KB that mix prose, code
blocks and pasted logs, a p90 line of ~7.4 KB, and few Codex `event_msg` duplicates.

What it stresses is the index's vocabulary and postings, so the words are many and
distinct the way real talk is: a Zipf-weighted lexicon of common English plus a long tail
of derived words, identifiers built from them, numbers, versions, hashes and paths, and
some Russian, German, Chinese and Japanese prose. Sessions, projects, tool steps and the
Claude/Codex rendering are gen_corpus's own; only the turn plan and the Codex duplicates
differ.
"""

from __future__ import annotations

import random

from bench.gen_corpus import (ADJS, CHUNKS, NOUNS, ORGS, PEOPLE, VERBS, CodexWriter, Gen, Planner, Shape, Step, Turn,
                              WRITERS, camel, generate as generate_shape, go_panic, lower_camel, out_compose_logs,
                              out_git_diff, out_tests, py_traceback)

# --------------------------------------------------------------------------- vocabulary

ENGLISH = """the of and to a in is it that for on was with as be this are not but you at have by or from
we can if an they will which there all so what one would about when has more up out do their no
time just also into only some could them other than then now like over these its how two our may
first way after because any should where even most make must still both through before while being
here same such those well back very many much own need work think want know take see look use find
give tell ask seem feel try leave call keep let begin show hear play run move live believe hold bring
happen write provide sit stand lose pay meet include continue set learn change lead understand watch
follow stop create speak read allow add spend grow open walk win offer remember consider appear buy
wait serve die send expect build stay fall cut reach remain suggest raise pass sell require report
decide pull explain hope develop carry break receive agree support hit produce eat cover catch draw
choose cause point problem question issue answer reason result example case part place fact group
number area system program way thing world life hand week company state family student night water
right point government day home money story month lot study book eye job word business side kind
head house service friend father power hour game line end member law car city community name team
minute idea kid body information back parent face others level office door health person art war
history party result change morning research girl guy moment air teacher force education foot boy
age policy process music market sense nation plan college interest death experience effect class
control care field development role effort rate heart drug show leader light voice wife police mind
price report decision son view relationship town road arm difference value building action model
season society tax director position player record paper space ground form event official matter
center couple site project activity star table need court oil situation cost industry figure street
image phone data picture practice piece land product doctor wall patient worker news test movie
north love support technology step baby computer type attention film tree source organization hair
window evidence population truth song energy list period sort unit theory range chance pressure
instead however maybe actually probably really already again never always often sometimes usually
quite rather almost enough perhaps exactly simply clearly likely certainly suddenly finally recently
earlier later soon today tomorrow yesterday tonight above below between among against without within
along across behind beyond during despite toward upon around although unless whether either neither
small large big little long short high low old new young good bad great important different possible
available free full hard easy clear strong weak simple complex real true false whole main major
minor recent similar specific certain sure ready wrong correct broken slow fast quiet loud early
late""".split()

# Pieces real words are built from; the tail of the lexicon is made of these.
PREFIXES = ["", "", "", "re", "un", "pre", "de", "over", "under", "inter", "sub", "multi", "non", "auto",
            "co", "anti", "micro", "hyper", "post", "mis", "out", "semi", "trans", "counter"]
ROOTS = """act bind bound build cast chain check class code count cover cred crypt curs data deal debt
dock draft drive end fact fetch file flow fold form frame grad graph guard hash head heap host hook
index join jour kern key knot lab lay leg limit link list load lock log loop man map mark match mem
merge mesh mod mount nest net node norm note pack page pair parse part pass path patch pipe place
plan plot point poll port post press print probe proc prompt proof quer queue quot range rank rate
read realm rec ref reg render rent repl rest rout rule run sched scope scor script seal search sect
seed send sens serv set shap shard share shift sign sing sketch slot sort span spec spell split
stack stag stamp stand stat step stor stream struct style sync tab tag task temp term text thread
tick tier time token top trac trad train trans tree trig trust turn type unit user valid valu vect
vers view vis volt walk ward watch wave weight wind work wrap writ yield zone""".split()
SUFFIXES = ["", "", "er", "ers", "ing", "ed", "ion", "ions", "ation", "able", "ability", "ize", "ized",
            "izer", "ment", "ments", "ness", "ful", "less", "ive", "ively", "ory", "al", "ally", "ist",
            "ity", "ure", "ance", "ency", "ular", "ish", "ware", "let", "ling", "ography", "ometry"]
SYLLABLES = ["ka", "lo", "ven", "ar", "mi", "tos", "ber", "qui", "dal", "ren", "sa", "tor", "ul", "fen",
             "gra", "pel", "vin", "zo", "ix", "mar", "nel", "orb", "pra", "sil", "tek", "urn", "vex", "wel",
             "yor", "zan", "bri", "cor", "dex", "eth", "fal", "gin", "hol", "ist", "jun", "kel"]

RUSSIAN_STEMS = """работ систем данн запрос ответ ошибк сервер файл строк функци модул провер настро
пользовател процесс проект задач решени измен поиск индекс памят времен результат значени
сообщени журнал сборк тест код очеред сервис клиент баз таблиц поток документ вопрос причин
вызов обработк загрузк выгрузк запис чтени копи верси ветк коммит слия развёртывани""".split()
RUSSIAN_ENDINGS = ["а", "ы", "е", "у", "ой", "ом", "ами", "ах", "и", "ов", "ей", "ую", "ого", "ому", "ых", "ение"]
RUSSIAN_GLUE = """и в не на что с как это по но из к у за от так же уже все только ещё если или при
для после перед когда потому чтобы нужно можно надо сейчас здесь там очень просто""".split()

GERMAN_PARTS = """daten bank verbindung fehler meldung speicher index suche anfrage antwort server datei
zeile funktion modul prüfung einstellung benutzer prozess projekt aufgabe lösung änderung zeit
ergebnis wert nachricht protokoll bau test code warte schlange dienst kunde tabelle strom dokument
frage grund aufruf verarbeitung lade schreib lese kopie version zweig zusammen führung bereit
stellung sicherheit zugriff rechte schlüssel""".split()
GERMAN_GLUE = """der die das und ist nicht mit ein eine zu von auf für im den dem des sich auch wird
werden kann muss noch schon nur wenn aber oder weil dass dann hier jetzt sehr bitte danke""".split()

CHINESE = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多"
           "定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由"
           "其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意"
           "建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统"
           "接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理索引内存错误文件服务器数据库查询")
JAPANESE_WORDS = """検索 索引 メモリ 不足 エラー ファイル サーバー データベース 設定 確認 修正 変更 実行 結果
処理 速度 改善 問題 原因 対応 テスト ビルド ログ 出力 入力 関数 変数 型 値 引数 戻り値 例外 接続 時間 容量
性能 計測 比較 調査 報告 作業 完了 予定 環境 本番 開発 手順 説明 資料 会議 依頼""".split()
JAPANESE_GLUE = ["は", "が", "を", "に", "で", "と", "の", "も", "から", "まで", "ですが", "します", "しました",
                 "でした", "ません", "ください", "について", "ため", "ように", "ので"]
KATAKANA = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワン"

LEXICON_SIZE = 150_000


class Lexicon:
    """Common English first, then a long tail of derived words, ranked for Zipf sampling.

    Built once from a fixed seed, so every corpus of every seed shares one vocabulary, as
    one language would; what a corpus's seed decides is which of its words each line uses."""

    def __init__(self, size: int = LEXICON_SIZE):
        r = random.Random(0x7E47)
        words = list(dict.fromkeys(ENGLISH + NOUNS + VERBS + ADJS))
        seen = set(words)
        while len(words) < size:
            if r.random() < 0.7:
                w = r.choice(PREFIXES) + r.choice(ROOTS) + r.choice(SUFFIXES)
                if r.random() < 0.35:
                    w += r.choice(ROOTS) + r.choice(SUFFIXES)
            else:
                w = "".join(r.choices(SYLLABLES, k=r.randrange(2, 5))) + r.choice(SUFFIXES)
            if w not in seen:
                seen.add(w)
                words.append(w)
        self.words = words
        total, self.cum = 0.0, []
        for rank in range(1, len(words) + 1):
            total += rank ** -1.02
            self.cum.append(total)

    def sample(self, g: Gen, k: int) -> list[str]:
        return g.choices(self.words, cum_weights=self.cum, k=k)


_LEXICON: Lexicon | None = None


def lexicon() -> Lexicon:
    global _LEXICON
    if _LEXICON is None:
        _LEXICON = Lexicon()
    return _LEXICON


# --------------------------------------------------------------------------- text

class Writer:
    """Conversation text for one project: prose with identifiers, numbers and paths in it,
    foreign-language paragraphs, code blocks and pasted logs."""

    def __init__(self, g: Gen, planner: Planner):
        self.g, self.planner, self.p, self.lex = g, planner, planner.p, lexicon()

    # -- tokens that keep the vocabulary growing
    def ident(self) -> str:
        g, ws = self.g, self.lex.sample(self.g, self.g.randrange(2, 4))
        r = g.random()
        if r < 0.35:
            return "_".join(ws)
        if r < 0.65:
            return lower_camel("_".join(ws))
        if r < 0.8:
            return camel("_".join(ws)) + g.choice(["", "Error", "Service", "Config", "Handler", "Spec"])
        if r < 0.9:
            return f"{ws[0]}_{g.randrange(2, 999)}"
        return "_".join(ws).upper()

    def number(self) -> str:
        g = self.g
        r = g.randrange(8)
        if r == 0:
            return str(g.randrange(10**3, 10**7))
        if r == 1:
            return f"{g.uniform(0, 1000):.{g.randrange(1, 4)}f}"
        if r == 2:
            return f"{g.randrange(1, 999)}{g.choice(['ms', 's', 'MB', 'KB', 'GB', '%', 'k', 'rps'])}"
        if r == 3:
            return f"v{g.randrange(0, 9)}.{g.randrange(0, 40)}.{g.randrange(0, 20)}"
        if r == 4:
            return g.hexs(g.choice([7, 8, 12, 40]))
        if r == 5:
            return f"#{g.randrange(100, 99999)}"
        if r == 6:
            return g.uuid4()
        return f"{g.randrange(2019, 2027)}-{g.randrange(1, 13):02d}-{g.randrange(1, 29):02d}"

    def path(self) -> str:
        g, p = self.g, self.p
        if g.random() < 0.5:
            return g.choice(p.src_files + p.test_files)
        parts = self.lex.sample(g, g.randrange(1, 4))
        return f"{p.root}/{'/'.join(parts)}{g.choice(['.py', '.go', '.ts', '.md', '.yaml', '.json', '.sql', '.log', ''])}"

    def sentence(self) -> str:
        g = self.g
        ws = self.lex.sample(g, g.randrange(5, 24))
        for i in range(len(ws)):
            r = g.random()
            if r < 0.045:
                ws[i] = f"`{self.ident()}`"
            elif r < 0.075:
                ws[i] = self.number()
            elif r < 0.085:
                ws[i] = f"`{self.path()}`"
            elif r < 0.1:
                ws[i] = g.choice(ORGS + PEOPLE + self.p.dnouns).capitalize()
        if g.random() < 0.15:
            ws.insert(g.randrange(len(ws)), ",")
        s = " ".join(ws).replace(" ,", ",")
        return s[0].upper() + s[1:] + g.choice(".....?!:")

    def foreign(self) -> str:
        g = self.g
        lang = g.randrange(4)
        out = []
        for _ in range(g.randrange(2, 7)):
            n = g.randrange(5, 16)
            if lang == 0:
                ws = [g.choice(RUSSIAN_STEMS) + g.choice(RUSSIAN_ENDINGS) if g.random() < 0.6 else g.choice(RUSSIAN_GLUE)
                      for _ in range(n)]
                if g.random() < 0.3:
                    ws.insert(g.randrange(n), f"`{self.ident()}`")
                s = " ".join(ws)
                out.append(s[0].upper() + s[1:] + ".")
            elif lang == 1:
                ws = ["".join(g.choices(GERMAN_PARTS, k=g.randrange(1, 4))).capitalize() if g.random() < 0.5
                      else g.choice(GERMAN_GLUE) for _ in range(n)]
                out.append(" ".join(ws) + ".")
            elif lang == 2:
                out.append("".join(g.choices(CHINESE, k=n * 2)) + g.choice("。，；？"))
            else:
                ws = []
                for _ in range(n // 2):
                    ws.append(g.choice(JAPANESE_WORDS) if g.random() < 0.7
                              else "".join(g.choices(KATAKANA, k=g.randrange(2, 6))))
                    ws.append(g.choice(JAPANESE_GLUE))
                out.append("".join(ws) + "。")
        return "".join(out) if lang >= 2 else " ".join(out)

    def paragraph(self) -> str:
        g = self.g
        if g.random() < 0.07:
            return self.foreign()
        if g.random() < 0.15:
            return "\n".join(f"{g.choice(['-', '*', '1.', '2.', '3.'])} {self.sentence()}" for _ in range(g.randrange(2, 7)))
        return " ".join(self.sentence() for _ in range(g.randrange(2, 8)))

    def code_block(self) -> str:
        g, p = self.g, self.p
        lang = {"python": "python", "go": "go", "ts": "ts", "rust": "rust", "hcl": "hcl"}[p.lang]
        body = CHUNKS[p.lang](g, p)
        if g.random() < 0.5:  # code from elsewhere names things the project does not
            body = body.replace(p.noun(g), self.ident(), 2)
        return f"```{lang}\n{body.rstrip()}\n```"

    def log_block(self) -> str:
        g, p = self.g, self.p
        r = g.randrange(5)
        if r == 0:
            text = out_compose_logs(g, p, g.randrange(4, 40))
        elif r == 1:
            text = py_traceback(g, p)[0]
        elif r == 2:
            text = go_panic(g, p)
        elif r == 3:
            text = "\n".join(out_tests(g, p, g.random() < 0.6, False)[0].split("\n")[:g.randrange(8, 60)])
        else:
            text = "\n".join(out_git_diff(g, p, g.sample(p.src_files, k=1)).split("\n")[:g.randrange(10, 50)])
        return f"```\n{text}\n```"

    def message(self, target: int, lead: str = "") -> str:
        """About `target` bytes mixing prose, code and logs, opening with `lead`."""
        g = self.g
        parts = [lead] if lead else []
        n = len(lead)
        while n < target:
            r = g.random()
            part = self.paragraph() if r < 0.62 else self.code_block() if r < 0.84 else self.log_block()
            parts.append(part)
            n += len(part.encode()) + 2
        return "\n\n".join(parts)


# --------------------------------------------------------------------------- turn plans

class TextPlanner(Planner):
    """A turn is a long question and a long answer around a few small tool calls."""

    def __init__(self, g: Gen, p, branch: str):
        super().__init__(g, p, branch)
        self.text = Writer(g, self)

    def long_size(self) -> int:
        return self.g.size(6200, 0.5, 2000, 14_000)

    def small_step(self) -> Step:
        g = self.g
        r = g.random()
        if r < 0.5:
            return self.quick_step()
        if r < 0.65:
            st = self.grep_step()
            st.output = "\n".join(st.output.split("\n")[:12])
            return st
        if r < 0.8:
            return self.edit_step()
        if r < 0.92:
            st = self.read_step()
            lines = st.content.split("\n")
            st.content = "\n".join(lines[:g.randrange(20, 80)])
            return st
        st = self.test_step(fail=g.random() < 0.3)
        st.output = "\n".join(st.output.split("\n")[-40:])
        return st

    def turn(self, first: bool, max_steps: int = 40) -> Turn:
        g = self.g
        steps = [self.small_step() for _ in range(g.choice([1, 2, 2, 3, 3, 4, 5, 7]))][:max_steps]
        for st in steps:
            if g.random() < 0.4:
                st.remark = self.text.message(g.size(3500, 0.6, 1000, 12_000), st.remark)
            if g.random() < 0.3:
                st.thinking = self.text.message(g.size(900, 0.7, 200, 5000))
        if not first and g.random() < 0.3:
            prompt = g.choice(["ok, go ahead", "yes", "looks good, commit it", "why?", "continue"]) + " " + self.text.sentence()
        else:
            prompt = self.text.message(self.long_size(), self.text.sentence())
        answer = self.text.message(self.long_size(), self.text.sentence())
        title = " ".join(self.text.lex.sample(g, g.randrange(3, 7))).capitalize()
        return Turn(prompt, steps, answer, title)


class TextCodexWriter(CodexWriter):
    """Codex lines with most `event_msg` copies of the messages left out, as the issue's corpus has."""

    DUPLICATES = {"user_message", "agent_message", "agent_reasoning"}

    def turn(self, t: Turn) -> list[dict]:
        g = self.g
        return [d for d in super().turn(t)
                if not (d["type"] == "event_msg" and d["payload"].get("type") in self.DUPLICATES and g.random() < 0.85)]


SHAPE = Shape(planner=TextPlanner, writers={**WRITERS, "codex": TextCodexWriter}, sessions_per_mb=2.65)


def generate(out: str, mb: float, seed: int = 1, sessions: int | None = None, progress: bool = True) -> dict:
    return generate_shape(out, mb, seed, sessions, progress, shape=SHAPE)
