"""Which writing systems an embedding model reads, and which one a question
is written in.

A model trained on English text turns a Chinese or Russian question into a
vector that says nothing about it: all-MiniLM-L6-v2 (Ollama's ``all-minilm``)
puts such a question nearer to every passage in the same letters (cosine
0.6–0.8) than to any English answer, and trusted where the words found
little it ranked the quality set's multilingual questions 12 points below
the words alone (bench/README.md). So `deja embed` asks the model once, with
four sentences and their translations into each writing system below,
whether it pairs each translation with its own sentence; a system it pairs
no better than chance it does not read, and a question mostly written in
one is ranked by its words (queries/search.py). multilingual-e5 pairs every
one 8 of 8; all-MiniLM 1–4 of 8 in each.

Latin letters are not probed: every model reads them (an English-only model
reads a German question badly, not as noise).
"""

from __future__ import annotations

from collections.abc import Callable

# (first, last) code points of each system's letters; Japanese is told by its kana
RANGES = {
    "han": ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F)),
    "kana": ((0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F)),
    "hangul": ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF)),
    "cyrillic": ((0x0400, 0x052F),),
    "arabic": ((0x0600, 0x06FF), (0x0750, 0x077F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
    "hebrew": ((0x0590, 0x05FF),),
    "devanagari": ((0x0900, 0x097F),),
    "greek": ((0x0370, 0x03FF), (0x1F00, 0x1FFF)),
    "thai": ((0x0E00, 0x0E7F),),
}

ENGLISH = (
    "The database connection pool ran out of connections under heavy load.",
    "We replaced the slow image resizing library with a faster one.",
    "The login page shows a blank screen after the last update.",
    "Tests fail randomly on the build server but pass on my laptop.",
)
# the same four sentences, in each system
PROBE = {
    "han": ("数据库连接池在高负载下耗尽了连接。", "我们把很慢的图片缩放库换成了更快的库。",
            "上次更新后，登录页面显示一片空白。", "测试在构建服务器上随机失败，但在我的笔记本上能通过。"),
    "kana": ("高負荷のときにデータベースの接続プールが枯渇しました。", "遅い画像リサイズのライブラリを速いものに置き換えました。",
             "前回のアップデートのあと、ログインページが真っ白になります。",
             "テストはビルドサーバーでランダムに失敗しますが、私のノートパソコンでは通ります。"),
    "hangul": ("높은 부하에서 데이터베이스 연결 풀이 고갈되었습니다.", "느린 이미지 크기 조정 라이브러리를 더 빠른 것으로 교체했습니다.",
               "지난 업데이트 이후 로그인 페이지가 빈 화면으로 나옵니다.",
               "테스트가 빌드 서버에서는 무작위로 실패하지만 제 노트북에서는 통과합니다."),
    "cyrillic": ("Пул соединений с базой данных исчерпался под высокой нагрузкой.",
                 "Мы заменили медленную библиотеку для изменения размера изображений на более быструю.",
                 "После последнего обновления страница входа показывает пустой экран.",
                 "Тесты случайно падают на сервере сборки, но проходят на моём ноутбуке."),
    "arabic": ("نفدت اتصالات مجمع قاعدة البيانات تحت الضغط العالي.", "استبدلنا مكتبة تغيير حجم الصور البطيئة بمكتبة أسرع.",
               "تظهر صفحة تسجيل الدخول شاشة فارغة بعد التحديث الأخير.",
               "تفشل الاختبارات عشوائيا على خادم البناء لكنها تنجح على حاسوبي المحمول."),
    "hebrew": ("מאגר החיבורים למסד הנתונים התרוקן תחת עומס כבד.", "החלפנו את ספריית שינוי גודל התמונות האיטית בספרייה מהירה יותר.",
               "דף ההתחברות מציג מסך ריק אחרי העדכון האחרון.", "הבדיקות נכשלות באקראי בשרת הבנייה אבל עוברות במחשב הנייד שלי."),
    "devanagari": ("भारी लोड में डेटाबेस कनेक्शन पूल के सभी कनेक्शन खत्म हो गए।",
                   "हमने धीमी इमेज रीसाइज़ लाइब्रेरी को एक तेज़ लाइब्रेरी से बदल दिया।",
                   "पिछले अपडेट के बाद लॉगिन पेज खाली स्क्रीन दिखाता है।",
                   "टेस्ट बिल्ड सर्वर पर बेतरतीब ढंग से फेल होते हैं लेकिन मेरे लैपटॉप पर पास हो जाते हैं।"),
    "greek": ("Η δεξαμενή συνδέσεων της βάσης δεδομένων εξαντλήθηκε υπό μεγάλο φορτίο.",
              "Αντικαταστήσαμε την αργή βιβλιοθήκη αλλαγής μεγέθους εικόνων με μια πιο γρήγορη.",
              "Μετά την τελευταία ενημέρωση η σελίδα σύνδεσης δείχνει κενή οθόνη.",
              "Τα τεστ αποτυγχάνουν τυχαία στον διακομιστή κατασκευής αλλά περνούν στο λάπτοπ μου."),
    "thai": ("พูลการเชื่อมต่อฐานข้อมูลหมดเมื่อมีโหลดสูง", "เราเปลี่ยนไลบรารีปรับขนาดรูปภาพที่ช้าเป็นตัวที่เร็วกว่า",
             "หลังจากอัปเดตครั้งล่าสุด หน้าเข้าสู่ระบบแสดงหน้าจอว่างเปล่า",
             "การทดสอบล้มเหลวแบบสุ่มบนเซิร์ฟเวอร์บิลด์ แต่ผ่านบนแล็ปท็อปของฉัน"),
}
# of the 8 pairings (each sentence's nearest translation, each translation's
# nearest sentence), this many right: chance gives 2, a model that reads 8
READS_AT = 6


def system_of(ch: str) -> str | None:
    cp = ord(ch)
    if cp < 0x0370:
        return None
    for name, spans in RANGES.items():
        for lo, hi in spans:
            if lo <= cp <= hi:
                return name
    return None


def written_in(text: str) -> str | None:
    """The probed system most of the text's letters are in (kana with han:
    Japanese), or None (Latin, or no system holds half the letters)."""
    counts: dict[str | None, int] = {}
    letters = 0
    for ch in text:
        if ch.isalpha():
            letters += 1
            s = system_of(ch)
            counts[s] = counts.get(s, 0) + 1
    if not letters:
        return None
    if counts.get("kana"):
        counts["kana"] += counts.pop("han", 0)
    name, n = max(((s, n) for s, n in counts.items() if s is not None), key=lambda t: t[1], default=(None, 0))
    return name if 2 * n >= letters else None


def letters(names) -> str:
    """``names`` as a person reads them: "Cyrillic, Han letters"."""
    return ", ".join(n.title() for n in sorted(names)) + " letters"


def unread_line(who: str, names) -> str:
    """What `deja embed` and `deja doctor` say of the systems a model does not read."""
    return f"{who} does not read {letters(names)}: questions in them are ranked by their words"


def unread(embed: Callable[[list[str]], object]) -> list[str]:
    """The probed systems a model does not read. ``embed``: texts → unit
    vectors, one row each (the model's passage side)."""
    import numpy as np

    names = list(PROBE)
    texts = list(ENGLISH) + [t for name in names for t in PROBE[name]]
    vecs = np.asarray(embed(texts), np.float32)
    english, n = vecs[:len(ENGLISH)], len(ENGLISH)
    out = []
    for k, name in enumerate(names):
        pair = vecs[n * (k + 1):n * (k + 2)] @ english.T  # [translation, sentence]
        right = int((pair.argmax(axis=1) == np.arange(n)).sum() + (pair.argmax(axis=0) == np.arange(n)).sum())
        if right < READS_AT:
            out.append(name)
    return out
