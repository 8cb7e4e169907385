"""Scenarios told in Russian, Chinese, Spanish and German (tool output stays English, as in real life).

Every question here is of kind `multilingual` (a person asking in their language about a session
held in that language, with different words or word forms than the session used) or `paraphrase`
(the same, sharing no content word with the session at all).
"""

from qdsl import D, S, T, edit, grep, read, run, write

SCENARIOS = []
add = SCENARIOS.append
ML = "multilingual"

# --------------------------------------------------------------------------- Russian

add(S("ru-db-pool", "billing-api", lang="ru", when=(30, 50), turns=[
    T("Фоновые задачи зависают примерно через час после деплоя, в логах вот это:\n\n"
      "sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00",
      grep("SessionLocal()", '''app/workers/sync.py:22:    session = SessionLocal()
app/workers/reminders.py:15:    with SessionLocal() as session:
app/api/deps.py:9:    db = SessionLocal()'''),
      read("app/workers/sync.py", '''def sync_invoices(batch_id: int) -> None:
    session = SessionLocal()
    invoices = session.query(Invoice).filter_by(batch_id=batch_id).all()
    for inv in invoices:
        push_to_erp(inv)
    session.commit()
'''),
      edit("app/workers/sync.py", "    session = SessionLocal()\n    invoices = session.query(Invoice).filter_by(batch_id=batch_id).all()",
           "    with SessionLocal() as session, session.begin():\n        invoices = session.query(Invoice).filter_by(batch_id=batch_id).all()"),
      run("pytest -q tests/test_sync.py", "....                                                                     [100%]\n4 passed in 0.77s"),
      answer="Причина — утечка соединений: задача `sync_invoices` открывала сессию SQLAlchemy и никогда её не "
             "закрывала. Если `push_to_erp` падал с исключением, соединение так и оставалось занятым, и через час "
             "пул из 15 соединений заканчивался. Теперь сессия открывается через контекстный менеджер "
             "(`with SessionLocal() as session`) и возвращается в пул даже при ошибке.",
      title="Утечка соединений в фоновых задачах"),
], qs=[
    (ML, "почему в фоновых задачах кончались соединения с базой?"),
    ("paraphrase", "почему обработчики со временем переставали достучаться до СУБД?"),
    (ML, "исчерпание пула соединений sqlalchemy"),
    (ML, "в прошлом месяце воркеры зависали из-за базы — что было не так?"),
], decoys=[
    D(T("Ночной пересчёт счетов иногда падает с deadlock detected",
        run("grep -m2 'deadlock detected' /var/log/billing/worker.log",
            "psycopg.errors.DeadlockDetected: deadlock detected\nDETAIL:  Process 4112 waits for ShareLock on transaction 99812; blocked by process 4187."),
        edit("app/workers/recalc.py", "    invoices = session.query(Invoice).filter(Invoice.id.in_(ids))",
             "    invoices = session.query(Invoice).filter(Invoice.id.in_(sorted(ids))).order_by(Invoice.id).with_for_update()"),
        answer="Два воркера блокировали одни и те же счета в разном порядке. Теперь строки блокируются в порядке id, "
               "взаимной блокировки больше нет.",
        title="Deadlock при пересчёте счетов"),
      qs=[(ML, "из-за чего ночной пересчёт ловил взаимную блокировку?")]),
]))

add(S("ru-clickhouse", "ingest-pipeline", lang="ru", when=(25, 45), turns=[
    T("Нужно решить, где хранить аналитические события: сейчас это таблица events в Postgres, 2 млрд строк, отчёты "
      "считаются по 40 минут. Варианты — партиционирование в Postgres, TimescaleDB или ClickHouse. Что посоветуешь?",
      run("psql $ANALYTICS_RO -c \"select pg_size_pretty(pg_total_relation_size('events'))\"", " pg_size_pretty\n----------------\n 1.9 TB"),
      run("clickhouse-client --query \"SELECT count(), formatReadableSize(sum(bytes_on_disk)) FROM system.parts WHERE table = 'events_trial' AND active\"",
          "2013399120\t212.41 GiB"),
      run("clickhouse-client --time --query \"SELECT toStartOfDay(ts) d, uniq(user_id) FROM events_trial WHERE ts > now() - INTERVAL 90 DAY GROUP BY d\" > /dev/null", "1.814"),
      answer="Рекомендую ClickHouse. На пробной загрузке тех же 2 млрд строк: 212 ГБ на диске вместо 1,9 ТБ "
             "(колоночное сжатие), а типичный отчёт за 90 дней считается за 1,8 секунды вместо 40 минут. "
             "Партиционирование Postgres ускорит отсечение по дате, но агрегаты по всем строкам останутся "
             "медленными. Таблица — `MergeTree`, партиции по месяцу, ключ сортировки `(event_type, ts)`. "
             "Транзакционные данные остаются в Postgres, в ClickHouse только события, загрузка из Kafka.",
      title="Выбор хранилища для аналитики"),
], qs=[
    (ML, "почему для аналитических событий выбрали ClickHouse, а не Postgres?"),
    ("paraphrase", "какую СУБД выбрали для статистики пользовательских действий и почему?"),
    (ML, "какую базу взяли под отчёты по событиям и насколько это быстрее?"),
], decoys=[
    D(T("Отчёт по воронке в Postgres стал считаться 5 минут вместо 30 секунд",
        run("psql $ANALYTICS_RO -c 'explain analyze select * from funnel_daily where day > now() - interval 7 day' | tail -2",
            " Planning Time: 0.412 ms\n Execution Time: 301822.118 ms"),
        run("psql $ANALYTICS_RW -c 'refresh materialized view concurrently funnel_daily'", "REFRESH MATERIALIZED VIEW"),
        answer="Материализованное представление funnel_daily перестало обновляться после смены владельца таблицы, "
               "и запрос шёл по сырым данным. Вернул права и обновление по крону.",
        title="Медленный отчёт по воронке"),
      qs=[(ML, "почему отчёт по воронке вдруг стал долго считаться?")]),
]))

add(S("ru-nginx-502", "gateway", lang="ru", when=(60, 75), turns=[
    T("После входа через SSO пользователи получают 502 Bad Gateway, остальные страницы работают",
      run("kubectl -n edge logs deploy/nginx --since=1h | grep -m2 'too big header'",
          "2026/08/21 10:14:02 [error] 31#31: *88123 upstream sent too big header while reading response header from upstream, client: 10.0.1.7, server: app.hooli.dev, request: \"GET /sso/callback?code=... HTTP/1.1\", upstream: \"http://10.0.5.12:8080/sso/callback\""),
      run("curl -s -o /dev/null -D - http://10.0.5.12:8080/sso/callback?code=test | wc -c", "7412"),
      edit("deploy/nginx/app.conf", "        proxy_pass http://app;", "        proxy_pass http://app;\n        proxy_buffer_size 16k;\n        proxy_buffers 8 16k;"),
      answer="nginx отдавал 502, потому что ответ на /sso/callback содержит огромные заголовки — несколько Set-Cookie "
             "с JWT, всего около 7 КБ, а буфер для заголовков по умолчанию 4 КБ. Увеличил `proxy_buffer_size` до 16k. "
             "Заодно завёл задачу уменьшить куки: хранить в них только id сессии.",
      title="502 после входа через SSO"),
], qs=[
    (ML, "из-за чего nginx отдавал 502 после логина?"),
    ("paraphrase", "почему после аутентификации обратный прокси падал с ошибкой шлюза?"),
    (ML, "слишком большие заголовки ответа nginx буфер"),
]))

add(S("ru-py311", "auth-server", lang="ru", when=(250, 280), turns=[
    T("Перевожу проект на Python 3.12, половина тестов теперь падает с предупреждением про event loop",
      run("pytest -q -W error::DeprecationWarning tests/ 2>&1 | tail -5", '''E   DeprecationWarning: There is no current event loop
tests/conftest.py:14: in event_loop
    loop = asyncio.get_event_loop()
=========================== short test summary info ============================
ERROR tests/test_auth.py::test_login - DeprecationWarning: There is no current event loop
38 errors in 1.12s''', code=1),
      read("tests/conftest.py"),
      edit("tests/conftest.py", "@pytest.fixture(scope=\"session\")\ndef event_loop():\n    loop = asyncio.get_event_loop()\n    yield loop",
           ""),
      edit("pyproject.toml", "[tool.pytest.ini_options]", "[tool.pytest.ini_options]\nasyncio_mode = \"auto\"\nasyncio_default_fixture_loop_scope = \"session\""),
      run("pytest -q", "..................................................................       [100%]\n212 passed in 14.02s"),
      answer="Тесты ломала наша собственная фикстура `event_loop` в conftest.py: она вызывала "
             "`asyncio.get_event_loop()` вне работающего цикла, а в новых версиях Python это устарело и выдаёт "
             "предупреждение, которое у нас превращается в ошибку. Удалил фикстуру и включил `asyncio_mode = auto` "
             "в pytest-asyncio — он сам создаёт цикл на сессию. Все 212 тестов проходят.",
      title="Переход на Python 3.12: тесты и event loop"),
], qs=[
    (ML, "что сломалось в тестах при обновлении питона?"),
    ("paraphrase", "что сломало автопроверки после обновления интерпретатора?"),
    (ML, "предупреждение об отсутствии текущего цикла событий в тестах"),
]))

# --------------------------------------------------------------------------- Chinese

add(S("zh-dedupe", "ingest-pipeline", lang="zh", when=(65, 80), turns=[
    T("下游的积分服务收到了重复的订单事件，有的用户积分被加了两次。帮我查一下消费端的逻辑",
      read("pipelines/consumer.py"),
      run("kubectl -n data logs deploy/points-consumer --since=24h | grep -c 'retrying batch'", "37"),
      edit("pipelines/consumer.py", "    for msg in batch:\n        handle(msg)",
           "    for msg in batch:\n        if not redis.set(f\"seen:{msg.event_id}\", 1, nx=True, ex=86400):\n            continue\n        handle(msg)"),
      run("pytest -q tests/test_consumer.py", "......                                                                   [100%]\n6 passed in 0.92s"),
      answer="原因是消费者在批处理失败后会整批重试，但前面已经处理成功的消息又被处理了一遍，处理逻辑本身不是幂等的。"
             "现在每条消息先用 Redis 的 SETNX 按 event_id 去重，键保留 24 小时，重复投递的消息会被直接跳过。"
             "过去一天有 37 次整批重试，这和重复加积分的数量对得上。",
      title="订单事件重复消费"),
], qs=[
    (ML, "为什么下游服务收到了重复的消息？"),
    ("paraphrase", "会员奖励为何被发放两遍"),
    (ML, "消费者重试导致重复处理是怎么解决的"),
    (ML, "前几个月积分被加两次的问题原因是什么"),
], decoys=[
    D(T("积分服务的消费延迟越来越高，已经落后两个小时了",
        run("kafka-consumer-groups --bootstrap-server kafka-1:9092 --describe --group points | head -3",
            "GROUP   TOPIC    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG\npoints  orders   0          1829311         2011877         182566"),
        edit("pipelines/consumer.py", "    \"max.poll.records\": 50,", "    \"max.poll.records\": 500,"),
        answer="每次只拉 50 条、而且每条都单独提交 offset，吞吐太低。改成每批 500 条、批量提交之后延迟在 20 分钟内追平了。",
        title="积分消费延迟"),
      qs=[(ML, "积分服务消费落后很多是怎么处理的？")]),
]))

add(S("zh-vite", "admin-dashboard", lang="zh", when=(200, 230), turns=[
    T("后台的前端构建越来越慢，CI 上 webpack 要跑三分钟，本地启动开发服务器也要四十秒。考虑一下换 Vite？",
      run("time npx webpack --mode production 2>&1 | tail -2", "webpack 5.91.0 compiled successfully in 176402 ms\nreal\t3m1.118s"),
      write("vite.config.ts", '''import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  resolve: { alias: { "@": "/src" } },
  build: { outDir: "dist", sourcemap: true },
});
'''),
      run("time npx vite build 2>&1 | tail -2", "✓ built in 24.87s\nreal\t0m25.403s"),
      answer="已经从 webpack 迁移到 Vite：生产构建从 3 分钟降到 25 秒左右，开发服务器冷启动不到 2 秒，因为开发时不再打包，"
             "而是用浏览器原生 ES 模块按需加载。需要注意的是环境变量前缀从 `REACT_APP_` 改成了 `VITE_`，"
             "我已经把代码里的引用都改过来了。",
      title="前端构建迁移到 Vite"),
], qs=[
    (ML, "我们为什么把打包工具换成了 Vite？"),
    ("paraphrase", "管理界面编译提速换用了哪款工具"),
    (ML, "前端编译太慢 换了什么工具"),
]))

add(S("zh-index", "orders-service", lang="zh", when=(35, 50), turns=[
    T("商户后台的订单列表特别慢，大商户打开要两秒多，帮我看看 SQL",
      run("psql $ORDERS_RO -c \"explain analyze select * from orders where merchant_id = 4411 order by created_at desc limit 50\"",
          " Limit  (cost=0.00..98211.17 rows=50 width=412) (actual time=2301.114..2301.220 rows=50 loops=1)\n   ->  Seq Scan on orders  (cost=0.00..1811920.00 rows=922 width=412)\n         Filter: (merchant_id = 4411)\n Execution Time: 2301.412 ms"),
      run("psql $ORDERS_RW -c \"create index concurrently orders_merchant_created_idx on orders (merchant_id, created_at desc)\"", "CREATE INDEX"),
      run("psql $ORDERS_RO -c \"explain analyze select * from orders where merchant_id = 4411 order by created_at desc limit 50\" | tail -2",
          "   ->  Index Scan using orders_merchant_created_idx on orders  (actual time=0.031..3.902 rows=50 loops=1)\n Execution Time: 4.118 ms"),
      answer="这条查询在做全表扫描（Seq Scan），因为 orders 表上没有以 merchant_id 开头的索引。"
             "我在线上用 CONCURRENTLY 建了一个联合索引 (merchant_id, created_at DESC)，既能按商户过滤又能直接按时间倒序取前 50 条，"
             "执行时间从 2.3 秒降到 4 毫秒，建索引期间不锁表。",
      title="商户订单查询加联合索引"),
], qs=[
    (ML, "商户订单查询为什么很慢，最后加了什么索引？"),
    ("paraphrase", "卖家的交易记录页面迟缓最终如何提速"),
    (ML, "上个月商户后台慢查询 全表扫描"),
]))

add(S("zh-docker", "scheduler", lang="zh", when=(25, 40), turns=[
    T("scheduler 的镜像有 1.2GB，每次部署拉镜像都很慢，能不能瘦身？",
      run("docker history scheduler:latest --format '{{.Size}}\t{{.CreatedBy}}' | head -4",
          "812MB\tRUN /bin/sh -c apt-get install -y build-essential git\n301MB\tCOPY . /src\n74MB\tRUN go build -o /bin/scheduler ./cmd/server"),
      write("Dockerfile", '''FROM golang:1.23 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/scheduler ./cmd/server

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/scheduler /scheduler
ENTRYPOINT ["/scheduler"]
'''),
      run("docker build -q -t scheduler:slim . && docker images scheduler:slim --format '{{.Size}}'", "18.4MB"),
      answer="原来的镜像把编译工具链、源码和构建缓存都带进了最终镜像。改成多阶段构建：第一阶段用 golang 镜像编译静态二进制，"
             "第二阶段只把二进制拷到 distroless/static 里。镜像从 1.2GB 降到 18MB，拉取时间从一分多钟变成两秒。",
      title="精简 scheduler 镜像"),
], qs=[
    (ML, "镜像体积是怎么减小的？"),
    ("paraphrase", "容器发布物太臃肿，后来如何缩小"),
    (ML, "上个月 Docker 镜像太大的问题怎么处理的"),
]))

# --------------------------------------------------------------------------- Spanish

add(S("es-retry-429", "billing-api", lang="es", when=(80, 95), turns=[
    T("El proveedor de pagos nos devuelve muchos 429 Too Many Requests a fin de mes cuando generamos todas las facturas. "
      "¿Cómo lo manejamos sin perder cobros?",
      run("grep -c ' 429 ' /var/log/billing/payments.log", "3817"),
      read("app/services/payments.py"),
      edit("app/services/payments.py", "    resp = client.post(\"/charges\", json=payload)",
           "    resp = post_with_retry(client, \"/charges\", json=payload, idempotency_key=charge.id)"),
      write("app/services/retry.py", '''def post_with_retry(client, path, *, json, idempotency_key, attempts=6):
    for n in range(attempts):
        resp = client.post(path, json=json, headers={"Idempotency-Key": idempotency_key})
        if resp.status_code != 429:
            return resp
        wait = float(resp.headers.get("Retry-After", 0)) or min(60, 2 ** n) * random.uniform(0.5, 1.5)
        time.sleep(wait)
    return resp
'''),
      answer="Añadí reintentos con backoff exponencial y jitter para las respuestas 429: si el proveedor manda la "
             "cabecera `Retry-After` la respetamos, y si no esperamos 1, 2, 4… hasta 60 segundos con un factor "
             "aleatorio para que los workers no reintenten todos a la vez. Cada cobro lleva una clave de idempotencia, "
             "así que un reintento nunca cobra dos veces. Además limité el job de fin de mes a 20 cobros por segundo.",
      title="Reintentos ante 429 del proveedor de pagos"),
], qs=[
    (ML, "¿cómo manejamos los errores 429 del proveedor de pagos?"),
    ("paraphrase", "¿qué hicimos cuando la pasarela financiera nos frenaba por exceso de solicitudes?"),
    (ML, "reintentar cobros con espera exponencial"),
    (ML, "el mes pasado hubo problemas de límite de peticiones con los pagos, ¿qué se hizo?"),
], decoys=[
    D(T("El proveedor de pagos devuelve 500 de vez en cuando y el cliente ve 'pago fallido' aunque luego aparece cobrado",
        read("app/services/payments.py"),
        edit("app/services/payments.py", "    if resp.status_code >= 500:\n        raise PaymentFailed()",
             "    if resp.status_code >= 500:\n        return reconcile_later(charge)"),
        answer="Un 500 del proveedor no significa que el cobro falló: a veces sí se procesa. Ahora marcamos el cobro "
               "como pendiente y un job lo concilia consultando su estado a los 5 minutos.",
        title="Conciliar cobros tras error 500"),
      qs=[(ML, "¿por qué los clientes veían pago fallido aunque el cobro sí se hacía?")]),
]))

add(S("es-mysql8", "orders-service", lang="es", when=(170, 200), turns=[
    T("Después de actualizar la base de datos de reportes a MySQL 8.0 el informe de ventas falla con:\n\n"
      "(1267, \"Illegal mix of collations (utf8mb4_0900_ai_ci,IMPLICIT) and (utf8mb4_general_ci,IMPLICIT) for operation '='\")",
      run("mysql -e \"select table_name, table_collation from information_schema.tables where table_schema='reports' and table_name in ('sales','customers')\"",
          "table_name\ttable_collation\nsales\tutf8mb4_0900_ai_ci\ncustomers\tutf8mb4_general_ci"),
      run("mysql reports -e 'ALTER TABLE customers CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_0900_ai_ci'", ""),
      run("python -m app.reports.sales --month 2026-04 | tail -1", "ventas 2026-04: 18.211 pedidos, 1.204.877,40 EUR"),
      answer="En MySQL 8 la intercalación por defecto pasó a ser `utf8mb4_0900_ai_ci`. Las tablas creadas después de "
             "la actualización la usan, pero `customers` se creó con la versión 5.7 y sigue con "
             "`utf8mb4_general_ci`, así que el JOIN por email compara columnas con collations distintas. Convertí "
             "`customers` a `utf8mb4_0900_ai_ci` y fijé la collation en la configuración del servidor.",
      title="Error de collation tras migrar a MySQL 8"),
], qs=[
    (ML, "¿qué falló al actualizar MySQL a la versión 8?"),
    ("paraphrase", "¿por qué se rompió el resumen comercial al modernizar el motor relacional?"),
    (ML, "error de mezcla de intercalaciones en el informe de ventas"),
]))

add(S("es-413", "shop-web", lang="es", when=(40, 55), turns=[
    T("Los vendedores no pueden subir fotos de producto de más de 1 MB, el navegador muestra 413 Request Entity Too Large",
      run("kubectl -n prod logs deploy/ingress-nginx --since=2h | grep -m1 'client intended to send too large body'",
          "2026/09/15 09:41:22 [error] 41#41: *2231 client intended to send too large body: 4812331 bytes, client: 10.0.1.9, server: shop.northwind.dev, request: \"POST /api/uploads HTTP/2.0\""),
      edit("src/api/uploads.ts", "  const res = await fetch(\"/api/uploads\", { method: \"POST\", body: form });",
           "  const { url, fields } = await presign(file.name, file.type);\n  const res = await fetch(url, { method: \"POST\", body: toForm(fields, file) });"),
      run("npx vitest run src/api/uploads.test.ts", " ✓ src/api/uploads.test.ts (3 tests) 22ms"),
      answer="El nginx del ingress tiene `client_max_body_size` de 1m por defecto, por eso cualquier foto más grande "
             "recibía 413. En lugar de solo subir el límite, las fotos ahora se suben directamente a S3 con una URL "
             "prefirmada: el navegador pide la URL a la API y envía el archivo a S3, sin pasar por nuestros "
             "servidores. Para el resto de la API subí el límite a 5m.",
      title="Subida de fotos grandes falla con 413"),
], qs=[
    (ML, "¿por qué fallaban las subidas de imágenes grandes?"),
    ("paraphrase", "¿por qué los comerciantes no lograban cargar imágenes pesadas de sus artículos?"),
    (ML, "límite de tamaño de archivos subidos nginx"),
]))

add(S("es-testcontainers", "feature-store", lang="es", when=(100, 130), turns=[
    T("Las pruebas de integración tardan 14 minutos en CI, cada test levanta su propio Postgres. ¿Se puede acelerar?",
      run("pytest tests/integration --durations=3 -q | tail -5", '''slowest 3 durations
41.22s setup    tests/integration/test_backfill.py::test_backfill_month
39.87s setup    tests/integration/test_export.py::test_export_parquet
38.90s setup    tests/integration/test_labels.py::test_labels_roundtrip
58 passed in 842.11s (0:14:02)'''),
      read("tests/integration/conftest.py"),
      edit("tests/integration/conftest.py", "@pytest.fixture\ndef pg():\n    with PostgresContainer(\"postgres:16\") as c:",
           "@pytest.fixture(scope=\"session\")\ndef pg():\n    with PostgresContainer(\"postgres:16\").with_reuse() as c:"),
      edit("tests/integration/conftest.py", "    yield c", "    yield c\n\n\n@pytest.fixture(autouse=True)\ndef clean_db(pg):\n    yield\n    truncate_all(pg)"),
      run("pytest tests/integration -q | tail -1", "58 passed in 183.40s (0:03:03)"),
      answer="Casi todo el tiempo se iba en arrancar contenedores: cada test creaba un Postgres nuevo (~40 s). Ahora "
             "hay un solo contenedor por sesión, reutilizable entre ejecuciones locales (`with_reuse`), y entre tests "
             "se vacían las tablas con TRUNCATE en vez de recrear la base. De 14 minutos a 3.",
      title="Acelerar pruebas de integración"),
], qs=[
    (ML, "¿cómo aceleramos los tests de integración?"),
    ("paraphrase", "¿cómo bajamos tanto la duración de la batería de verificaciones automáticas?"),
    (ML, "reutilizar el contenedor de postgres en las pruebas"),
]))

# --------------------------------------------------------------------------- German

add(S("de-lru-leak", "orders-service", lang="de", when=(45, 60), turns=[
    T("Der Preis-Worker wächst über den Tag auf 4 GB Speicher und wird dann vom OOM-Killer beendet. Kannst du das untersuchen?",
      run("python -m tracemalloc_report --pid $(pgrep -f price-worker) --top 3",
          "app/services/prices.py:31: size=2871 MiB, count=9120442\napp/core/cache.py:12: size=88 MiB, count=120811\n<frozen importlib._bootstrap>:241: size=11 MiB"),
      read("app/services/prices.py", '''@functools.lru_cache(maxsize=None)
def get_price_for_customer(customer: Customer, sku: str) -> Decimal:
    rule = pricing_rules.match(customer.segment, sku)
    return rule.apply(catalog.base_price(sku))
'''),
      edit("app/services/prices.py", "@functools.lru_cache(maxsize=None)\ndef get_price_for_customer(customer: Customer, sku: str) -> Decimal:",
           "@cached(TTLCache(maxsize=50_000, ttl=600), key=lambda customer, sku: (customer.segment, sku))\ndef get_price_for_customer(customer: Customer, sku: str) -> Decimal:"),
      run("pytest -q tests/test_prices.py", ".......                                                                  [100%]\n7 passed in 0.58s"),
      answer="Das Speicherleck kam vom unbegrenzten `functools.lru_cache(maxsize=None)` auf `get_price_for_customer`. "
             "Als Schlüssel diente das ganze Kundenobjekt, und weil jede Anfrage ein neues Objekt lädt, gab es nie "
             "einen Treffer — der Cache wuchs einfach immer weiter. Jetzt ist es ein `TTLCache` mit höchstens 50.000 "
             "Einträgen und 10 Minuten Lebensdauer, und der Schlüssel ist (Kundensegment, SKU), was auch die "
             "Trefferquote stark erhöht.",
      title="Speicherleck im Preis-Worker"),
], qs=[
    (ML, "Warum ist der Speicherverbrauch des Preis-Workers ständig gestiegen?"),
    ("paraphrase", "Wieso lief der Dienst für Tarife voll, bis ihn der Kernel abschoss?"),
    (ML, "unbegrenzter Cache Speicher wächst"),
    (ML, "im September wurde der Preis-Worker wegen Speicher beendet – was war die Ursache?"),
], decoys=[
    D(T("Im Admin-Frontend wird der Tab nach ein paar Stunden sehr langsam, der Speicher im Browser steigt",
        run("npx vitest run src/hooks/useLivePrices.test.ts", " ✓ src/hooks/useLivePrices.test.ts (2 tests) 8ms"),
        edit("src/hooks/useLivePrices.ts", "  useEffect(() => {\n    const ws = new WebSocket(url);",
             "  useEffect(() => {\n    const ws = new WebSocket(url);\n    return () => ws.close();"),
        answer="Bei jedem Seitenwechsel wurde eine neue WebSocket-Verbindung geöffnet und die alte nie geschlossen. "
               "Der Effekt räumt jetzt auf.",
        title="WebSocket-Leck im Frontend"),
      project="admin-dashboard",
      qs=[(ML, "warum wurde der Browser-Tab des Admin-Frontends nach Stunden träge?")]),
]))

add(S("de-grpc", "ledger", lang="de", when=(260, 290), turns=[
    T("Sollen ledger und gateway weiter über REST/JSON reden oder steigen wir auf gRPC um? Das Gateway ruft pro "
      "Anfrage bis zu 6 Mal das Ledger auf.",
      run("ghz --insecure --proto api/ledger.proto --call ledger.v1.Ledger/GetBalance -n 20000 -c 50 localhost:9090 | grep -E 'Average|95 %'",
          "  Average:\t1.91 ms\n  95 % in 3.12 ms"),
      run("hey -n 20000 -c 50 http://localhost:8080/v1/balances/acc_1 | grep -E 'Average|95%'", "  Average:\t6.84 secs\n  95% in 11.20 ms"),
      answer="Empfehlung: gRPC für die interne Kommunikation zwischen Gateway und Ledger. Gründe: (1) im Benchmark "
             "liegt das 95. Perzentil bei 3 ms statt 11 ms, vor allem weil JSON-Serialisierung und neue "
             "HTTP/1.1-Verbindungen wegfallen; (2) das Protobuf-Schema in `api/ledger.proto` ist ein echter Vertrag, "
             "aus dem wir Go-Clients generieren, statt handgeschriebener Structs; (3) Server-Streaming für die "
             "Buchungsliste. Die öffentliche API bleibt REST/JSON, das Gateway übersetzt.",
      title="REST oder gRPC zwischen Diensten"),
], qs=[
    (ML, "Warum haben wir uns für gRPC zwischen den internen Diensten entschieden?"),
    ("paraphrase", "Weshalb unterhalten sich unsere Komponenten künftig binär und nicht mehr textbasiert?"),
    (ML, "Protokoll interne Dienste Entscheidung Latenz"),
]))

add(S("de-dst-export", "billing-api", lang="de", when=(215, 225), turns=[
    T("Im Monatsbericht für März fehlt eine Stunde Umsatz, und im Oktober-Bericht ist eine Stunde doppelt. Das hängt "
      "doch bestimmt mit der Zeitumstellung zusammen?",
      read("app/reports/hourly.py", '''def hourly_buckets(day: date) -> list[datetime]:
    start = datetime.combine(day, time(0), tzinfo=BERLIN)
    return [start + timedelta(hours=h) for h in range(24)]
'''),
      edit("app/reports/hourly.py", "    start = datetime.combine(day, time(0), tzinfo=BERLIN)\n    return [start + timedelta(hours=h) for h in range(24)]",
           "    start = datetime.combine(day, time(0), tzinfo=BERLIN).astimezone(UTC)\n    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=BERLIN).astimezone(UTC)\n    return [(start + timedelta(hours=h)).astimezone(BERLIN) for h in range(int((end - start) / timedelta(hours=1)))]"),
      run("pytest -q tests/test_reports.py -k dst", "..                                                                       [100%]\n2 passed in 0.12s"),
      answer="Ja, Sommerzeit. Der Export hat jeden Tag als 24 Stunden lokaler Zeit gerechnet. Am Tag der Umstellung im "
             "März hat der Tag in Berlin aber nur 23 Stunden, im Oktober 25 — deshalb fehlte einmal eine Stunde und "
             "einmal war eine doppelt. Die Stunden werden jetzt in UTC gezählt und erst für die Anzeige nach "
             "Europe/Berlin umgerechnet; Tests für beide Umstellungstage sind dabei.",
      title="Zeitumstellung im Monatsbericht"),
], qs=[
    (ML, "Warum fehlte im Monatsbericht eine Stunde?"),
    ("paraphrase", "Warum verschwand im Frühjahr ein Zeitfenster im Monatsauszug, während es im Herbst zweimal auftauchte?"),
    (ML, "Sommerzeit Export Stunde doppelt"),
]))

add(S("de-helm-env", "k8s-manifests", lang="de", when=(10, 20), turns=[
    T("Nach dem Update des Helm-Charts startet billing-api nicht mehr, CrashLoopBackOff. Log:\n\nKeyError: 'DATABASE_URL'",
      run("helm -n prod get values billing-api | grep -A3 env", "envFrom:\n  - secretRef:\n      name: billing-api-secrets"),
      run("kubectl -n prod get secrets | grep billing", "billing-api-env      Opaque   6      211d"),
      edit("charts/billing-api/values-prod.yaml", "      name: billing-api-secrets", "      name: billing-api-env"),
      run("helm -n prod upgrade billing-api charts/billing-api -f charts/billing-api/values-prod.yaml && kubectl -n prod rollout status deploy/billing-api",
          "Release \"billing-api\" has been upgraded. Happy Helming!\ndeployment \"billing-api\" successfully rolled out"),
      answer="Im neuen Chart heißt das Secret standardmäßig `billing-api-secrets`, unser vorhandenes Secret heißt aber "
             "`billing-api-env`. Weil `envFrom` ein fehlendes Secret stillschweigend ignoriert (optional), startete der "
             "Pod ohne Umgebungsvariablen und die App brach beim Lesen von DATABASE_URL ab. Der Name ist jetzt in den "
             "prod-Values gesetzt, und ich habe `optional: false` ergänzt, damit der Pod künftig gar nicht erst startet.",
      title="CrashLoopBackOff nach Chart-Update"),
], qs=[
    (ML, "Warum ist das Deployment nach dem Chart-Update abgestürzt?"),
    ("paraphrase", "Weshalb fehlten dem Dienst nach der Paketaktualisierung sämtliche Konfigurationswerte?"),
    (ML, "fehlende Umgebungsvariable nach Helm Upgrade"),
]))
