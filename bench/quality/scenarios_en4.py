"""English scenarios, part 4: data pipelines (ingest-pipeline, feature-store) and infrastructure."""

from qdsl import D, S, T, edit, grep, read, run, write

SCENARIOS = []
add = SCENARIOS.append

# --------------------------------------------------------------------------- ingest-pipeline

add(S("kafka-rebalance", "ingest-pipeline", when=(95, 110), turns=[
    T("consumer group ingest-events is rebalancing every few minutes and lag keeps growing",
      run("kubectl -n data logs deploy/ingest-consumer --since=30m | grep -m2 -A2 LeaveGroup", '''WARN [Consumer clientId=consumer-ingest-3, groupId=ingest-events] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time processing messages. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records.
INFO [Consumer clientId=consumer-ingest-3, groupId=ingest-events] Member consumer-ingest-3-5b1e sending LeaveGroup request to coordinator kafka-2:9092 (id: 2147483645 rack: null) due to consumer poll timeout has expired.'''),
      read("pipelines/consumer.py"),
      run("python -m pipelines.tools.batch_timing --last 200", "batch size 500: p50 212s p95 371s (enrichment HTTP calls ~0.7s each)"),
      edit("pipelines/consumer.py", '    "max.poll.records": 500,', '    "max.poll.records": 100,\n    "max.poll.interval.ms": 900_000,'),
      answer="The consumers were being kicked out of the group: a 500-record batch takes up to ~6 minutes (each "
             "record does an enrichment HTTP call), longer than the default `max.poll.interval.ms` of 5 minutes. "
             "Kafka then assumes the member is dead, rebalances, the batch is redelivered, and around it goes. "
             "Batches are 100 records now and the poll interval is 15 minutes, leaving lots of headroom. Longer term "
             "the enrichment calls should be batched.",
      title="Stop consumer group rebalance loop"),
], qs=[
    ("natural", "why did the consumers keep getting kicked out of the group?"),
    ("paraphrase", "why were the subscribers repeatedly ejected from their cohort?"),
    ("keyword", "kafka rebalance loop"),
    ("identifier", "max.poll.interval.ms"),
    ("error", "consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than "
              "the configured max.poll.interval.ms"),
    ("temporal-ish", "this summer the ingest consumers were stuck rebalancing, what did we tune?"),
], decoys=[
    D(T("lag on the clicks topic keeps growing even with 12 consumer pods",
        read("pipelines/consumer.py", '''CONSUMER_CONFIG = {
    "bootstrap.servers": settings.KAFKA_BROKERS,
    "group.id": "clicks-sink",
    "enable.auto.commit": False,
    "max.poll.records": 100,
    "max.poll.interval.ms": 900_000,
}
'''),
        run("kafka-topics --bootstrap-server kafka-1:9092 --describe --topic clicks | head -2", "Topic: clicks\tPartitionCount: 3\tReplicationFactor: 3"),
        run("kafka-topics --bootstrap-server kafka-1:9092 --alter --topic clicks --partitions 24", ""),
        answer="The topic has 3 partitions, so only 3 of the 12 consumers get any work — the rest sit idle. Raised it to "
               "24 partitions. Ordering is per user id (the message key), which survives the change for new messages.",
        title="Add partitions to clicks topic"),
      qs=[("natural", "why did adding more consumer pods not reduce the lag?"),
          ("paraphrase", "why did quadrupling the subscribers not shrink the backlog at all?")]),
]))

add(S("late-events-watermark", "ingest-pipeline", when=(40, 60), turns=[
    T("daily event counts in the warehouse are ~2% lower than what the mobile SDK dashboard reports. which one is right?",
      run("python -m pipelines.tools.compare_counts --day 2026-09-08", "source(sdk)=18,402,117  warehouse=18,039,554  missing=362,563 (1.97%)"),
      run("python -m pipelines.tools.lateness --day 2026-09-08", "arrival delay of missing events: p50 38m p90 71m p99 88m (all > allowed lateness 10m)"),
      read("pipelines/transforms/windows.py"),
      edit("pipelines/transforms/windows.py", "ALLOWED_LATENESS = timedelta(minutes=10)", "ALLOWED_LATENESS = timedelta(hours=2)"),
      edit("pipelines/transforms/windows.py", "        return  # too late", "        LATE_EVENTS.inc()  # late_events_dropped_total\n        return"),
      answer="The SDK number is right. Phones batch events and upload on wifi, so some arrive up to an hour and a half "
             "after they happened, and our windowing dropped anything more than 10 minutes behind the watermark. "
             "Allowed lateness is 2 hours now, and dropped events are counted in `late_events_dropped_total` so we "
             "can see it next time instead of silently losing them.",
      title="Fix undercounted daily events"),
], qs=[
    ("natural", "why were some events missing from the daily totals in the warehouse?"),
    ("paraphrase", "why were our tallies a couple percent shy of what the handset toolkit reckoned?"),
    ("keyword", "watermark allowed lateness"),
    ("phrase", '"arrive up to an hour and a half after"'),
    ("identifier", "late_events_dropped_total"),
    ("temporal-ish", "in September we found the daily aggregates were undercounting, what was the cause?"),
], decoys=[
    D(T("after replaying last tuesday from the archive, event counts for that day doubled",
        read("pipelines/sinks/warehouse.py"),
        edit("pipelines/sinks/warehouse.py", "    INSERT INTO events SELECT * FROM staging_events", "    MERGE INTO events t USING staging_events s ON t.event_id = s.event_id WHEN NOT MATCHED THEN INSERT *"),
        answer="The sink appended blindly, so a replay inserted every event a second time. It merges on `event_id` now, "
               "making replays idempotent; I removed the duplicates for that day.",
        title="Dedupe events on replay"),
      qs=[("natural", "why did the counts for one day double after a replay?")]),
]))

add(S("arrow-schema", "ingest-pipeline", when=(20, 30), turns=[
    T("the compaction job failed last night, traceback in airflow",
      run("airflow tasks logs compact_events compact 2026-10-07 | tail -14", '''Traceback (most recent call last):
  File "{root}/jobs/compact.py", line 64, in compact_partition
    table = pa.concat_tables(tables)
  File "pyarrow/table.pxi", line 5317, in pyarrow.lib.concat_tables
  File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status
pyarrow.lib.ArrowInvalid: Schema at index 3 was different:
event_id: string
ts: timestamp[us]
user_id: int64
vs
event_id: string
ts: timestamp[us]
user_id: int64
device_type: string'''),
      edit("jobs/compact.py", "    table = pa.concat_tables(tables)",
           "    schema = pa.unify_schemas([t.schema for t in tables], promote_options=\"default\")\n    table = pa.concat_tables([t.cast(schema) if t.schema != schema else t for t in tables], promote_options=\"default\")"),
      run("pytest -q tests/test_compact.py", ".....                                                                    [100%]\n5 passed in 1.32s"),
      answer="The SDK started sending `device_type` on 7 October, so that day's files have one more column than the "
             "earlier ones and `concat_tables` refuses to mix them. `compact_partition` unifies the schemas first "
             "(missing columns become nulls), which is what we want for additive changes. A removed or retyped column "
             "still fails loudly.",
      title="Handle new column in compaction"),
], qs=[
    ("error", "pyarrow.lib.ArrowInvalid: Schema at index 5 was different:"),
    ("natural", "the compaction job broke when a new field appeared in the events, how did we handle it?"),
    ("paraphrase", "the coalescing routine choked once a novel trait surfaced; how did we cope?"),
    ("identifier", "compact_partition"),
    ("keyword", "compaction schema mismatch"),
], decoys=[
    D(T("writing the users batch to parquet fails",
        run("python -m jobs.export_users", '''pyarrow.lib.ArrowTypeError: ("Expected bytes, got a 'int' object", 'Conversion failed for column user_id with type object')''', code=1),
        edit("jobs/export_users.py", "    df = pd.DataFrame(rows)", "    df = pd.DataFrame(rows).astype({\"user_id\": \"string\"})"),
        answer="`user_id` mixes ints (legacy accounts) and strings (new ones). Cast to string before writing.",
        title="Fix mixed-type user_id export"),
      qs=[("error", "pyarrow.lib.ArrowTypeError: Expected bytes, got a 'int' object Conversion failed for column user_id")]),
]))

# --------------------------------------------------------------------------- feature-store

add(S("train-serve-skew", "feature-store", when=(60, 115), turns=[
    T("the churn model had AUC 0.81 in offline eval but it's performing like 0.72 in production. what's different?",
      run("python -m features.tools.compare --feature avg_order_value_7d --sample 5000", '''feature               offline_mean  online_mean  rel_diff
avg_order_value_7d    41.82         57.10        +36.5%
orders_7d             2.11          1.43         -32.2%'''),
      grep("avg_order_value_7d", '''features/sql/customer_daily.sql:14:  AVG(order_value) OVER (PARTITION BY customer_id ORDER BY day RANGE BETWEEN INTERVAL 6 DAY PRECEDING AND CURRENT ROW) AS avg_order_value_7d
features/online/customer.py:31:    f["avg_order_value_7d"] = mean(o.value for o in last_orders[-7:])'''),
      write("features/rolling.py", '''def compute_rolling_mean(values: Sequence[tuple[date, float]], as_of: date, days: int = 7) -> float | None:
    """Mean of the values whose date is within `days` calendar days up to and including `as_of`."""
    window = [v for d, v in values if as_of - timedelta(days=days - 1) <= d <= as_of]
    return sum(window) / len(window) if window else None
'''),
      edit("features/online/customer.py", '    f["avg_order_value_7d"] = mean(o.value for o in last_orders[-7:])',
           '    f["avg_order_value_7d"] = compute_rolling_mean([(o.day, o.value) for o in last_orders], today)'),
      answer="Training/serving skew. The \"7d\" features meant seven calendar days in the SQL used for training but "
             "the last seven orders in the online service, which for frequent buyers covers a much shorter period. "
             "There is now one implementation imported by both the batch job and the online service "
             "(`compute_rolling_mean` in `features/rolling.py`), and the SQL version is generated from the same window "
             "definition. A parity test compares both paths on a sample every night.",
      title="Fix training/serving skew in 7d features"),
], qs=[
    ("natural", "why did the model score worse in production than in offline evaluation?"),
    ("paraphrase", "why did the attrition predictor underperform in the wild versus its laboratory scores?"),
    ("keyword", "training serving skew"),
    ("identifier", "compute_rolling_mean"),
    ("phrase", '"one implementation imported by both the batch job and the online service"'),
    ("temporal-ish", "last quarter we chased a gap between offline and online model quality — what was behind it?"),
], decoys=[
    D(T("churn model precision dropped sharply yesterday",
        run("python -m features.tools.drift --since 2d", "country: 41% of values unseen in training (e.g. 'de', 'fr', 'es')"),
        edit("features/online/customer.py", "    f[\"country\"] = c.country", "    f[\"country\"] = c.country.upper()"),
        answer="Upstream started sending lowercase country codes, which the model had never seen, so they all fell "
               "into the unknown bucket. Normalised to uppercase; asked the accounts team to announce schema changes.",
        title="Normalize country codes"),
      qs=[("natural", "why did the churn model suddenly get worse after an upstream change?")]),
]))

add(S("airflow-backfill", "feature-store", when=(130, 145), turns=[
    T("someone started a 180-day backfill of customer_features and the snowflake warehouse is pegged, other teams are blocked",
      run("airflow dags list-runs -d customer_features --state running | wc -l", "181"),
      run("airflow dags pause customer_features && airflow tasks clear customer_features --only-running -y", "Dag: customer_features, paused: True"),
      edit("dags/customer_features.py", "    catchup=True,", "    catchup=True,\n    max_active_runs=2,"),
      edit("dags/customer_features.py", "    build = SnowflakeOperator(task_id=\"build\", sql=\"sql/customer_daily.sql\")",
           "    build = SnowflakeOperator(task_id=\"build\", sql=\"sql/customer_daily.sql\", pool=\"warehouse_pool\")"),
      run("airflow pools set warehouse_pool 4 'shared Snowflake slots for feature DAGs'", "Pool: warehouse_pool, slots: 4"),
      answer="The DAG had no concurrency limits, so the backfill scheduled all 180 days at once and each ran a heavy "
             "query. Paused it, cleared the running tasks, then set `max_active_runs=2` on the DAG and put the "
             "Snowflake tasks in a `warehouse_pool` with 4 slots that other feature DAGs share. Backfill resumed and "
             "takes ~9 hours this way.",
      title="Throttle customer_features backfill"),
], qs=[
    ("natural", "how did we stop the historical reruns from swamping the data warehouse?"),
    ("paraphrase", "how did we tame a six-month historical rerun that starved neighbouring squads?"),
    ("keyword", "backfill concurrency airflow"),
    ("identifier", "warehouse_pool"),
    ("temporal-ish", "back in June a huge backfill hogged snowflake, how did we limit it?"),
], decoys=[
    D(T("the new DAG doesn't show up in the airflow UI",
        run("airflow dags list-import-errors", "filepath                        | error\ndags/label_refresh.py           | ModuleNotFoundError: No module named 'lightgbm'"),
        edit("requirements-airflow.txt", "scikit-learn==1.5.2", "scikit-learn==1.5.2\nlightgbm==4.5.0"),
        answer="Import error: the DAG imports lightgbm at module level and the scheduler image doesn't have it. Added it "
               "to the airflow requirements (and moved the import inside the task).",
        title="Fix DAG import error"),
      qs=[("error", "ModuleNotFoundError: No module named 'lightgbm' dags/label_refresh.py")]),
]))

add(S("settingwithcopy", "feature-store", turns=[
    T("the churn label column is 0 for every row in the new training set. it used to be ~6% positives",
      run("python -m features.build_labels --month 2026-05 2>&1 | tail -4", '''{root}/features/labels.py:47: SettingWithCopyWarning:
A value is trying to be set on a copy of a slice from a DataFrame.
Try using .loc[row_indexer,col_indexer] = value instead
positives: 0 / 412,877'''),
      read("features/labels.py", '''def assign_churn_labels(df: pd.DataFrame) -> pd.DataFrame:
    active = df[df["status"] == "active"]
    active["label"] = 0
    active[active["days_since_last_order"] > 60]["label"] = 1
    return active
'''),
      edit("features/labels.py", '    active[active["days_since_last_order"] > 60]["label"] = 1',
           '    active.loc[active["days_since_last_order"] > 60, "label"] = 1'),
      edit("features/labels.py", '    active = df[df["status"] == "active"]', '    active = df[df["status"] == "active"].copy()'),
      run("python -m features.build_labels --month 2026-05 2>&1 | tail -1", "positives: 24,981 / 412,877"),
      answer="Chained indexing in `assign_churn_labels`: `active[mask][\"label\"] = 1` assigns into a temporary copy, "
             "so the labels were never written — pandas only warned about it. Uses `.loc[mask, \"label\"]` now (and "
             "an explicit `.copy()` of the filtered frame). Positives are back to 6.05%. I also turned "
             "SettingWithCopyWarning into an error in the test config.",
      title="Fix all-zero churn labels"),
], qs=[
    ("natural", "why did the churn label column stay all zeros?"),
    ("paraphrase", "why was the attrition outcome uniformly negative in the newly assembled corpus?"),
    ("phrase", '"A value is trying to be set on a copy of a slice"'),
    ("identifier", "assign_churn_labels"),
    ("keyword", "pandas chained assignment labels"),
]))

# --------------------------------------------------------------------------- infra-live

add(S("tf-state-lock", "infra-live", when=(7, 13), turns=[
    T("prod apply is stuck on the state lock since someone cancelled the pipeline yesterday",
      run("terraform -chdir=envs/prod plan -lock-timeout=10s", '''╷
│ Error: Error acquiring the state lock
│
│ Error message: ConditionalCheckFailedException: The conditional request failed
│ Lock Info:
│   ID:        7c1e4a5b-93d2-6f0e-2b8a-0d4c11e9a7f3
│   Path:      acme-tfstate/envs/prod/terraform.tfstate
│   Operation: OperationTypeApply
│   Who:       runner@gh-actions-4f2k1
│   Version:   1.7.5
│   Created:   2026-10-21 16:02:11.482 +0000 UTC
│
│ Terraform acquires a state lock to protect the state from being written
│ by multiple users at the same time.
╵''', code=1),
      run("gh run list --workflow terraform-prod.yml --limit 3", "cancelled  terraform-prod  main  workflow_dispatch  4f2k1  41m\ncompleted  terraform-prod  main  push  3x8v2  2d"),
      run("terraform -chdir=envs/prod force-unlock -force 7c1e4a5b-93d2-6f0e-2b8a-0d4c11e9a7f3", "Terraform state has been successfully unlocked!"),
      run("terraform -chdir=envs/prod plan -detailed-exitcode | tail -1", "No changes. Your infrastructure matches the configuration."),
      answer="The lock belonged to the cancelled GitHub Actions run (4f2k1), which was killed mid-apply and never "
             "released the DynamoDB lock. I checked that no run is still active, then `force-unlock`ed it. The plan "
             "shows no changes, so the interrupted apply had finished its writes. I also set "
             "`cancel-in-progress: false` on the workflow's concurrency group so CI can't kill an apply halfway again.",
      title="Release stuck prod state lock"),
], qs=[
    ("error", "Error: Error acquiring the state lock\nError message: ConditionalCheckFailedException: The conditional request failed\n"
              "  ID:        0a9f3e12-55c1-4b7d-9e08-c2f1d3a4b5c6"),
    ("natural", "how did we get terraform unstuck after the cancelled pipeline?"),
    ("paraphrase", "how did we unjam provisioning after an aborted automation didn't relinquish its padlock?"),
    ("keyword", "terraform force unlock"),
    ("temporal-ish", "the other week prod terraform was locked — what did we do about it?"),
], decoys=[
    D(T("apply fails with 'Saved plan is stale'",
        run("terraform -chdir=envs/prod apply tfplan", "╷\n│ Error: Saved plan is stale\n│\n│ The given plan file can no longer be applied because the state was changed by another operation after the plan was created.\n╵", code=1),
        answer="Someone applied in between your plan and apply. Re-plan and apply again; the workflow now plans and "
               "applies in the same job so the window is seconds, not hours.",
        title="Stale saved plan"),
      qs=[("error", "Error: Saved plan is stale. The given plan file can no longer be applied because the state was changed")]),
]))

add(S("rds-autoscaling", "infra-live", when=(100, 115), turns=[
    T("orders DB is read-only?? app logs say could not extend file: No space left on device",
      run("aws cloudwatch get-metric-statistics --namespace AWS/RDS --metric-name FreeStorageSpace --dimensions Name=DBInstanceIdentifier,Value=orders-prod --statistics Minimum --period 3600 --start-time 2026-07-15T00:00:00Z --end-time 2026-07-19T00:00:00Z --query 'Datapoints[].Minimum' --output text",
          "21474836480 10737418240 4294967296 0"),
      run("aws rds modify-db-instance --db-instance-identifier orders-prod --allocated-storage 400 --max-allocated-storage 1000 --apply-immediately --query 'DBInstance.PendingModifiedValues'",
          "{\n    \"AllocatedStorage\": 400\n}"),
      edit("modules/rds/main.tf", "  allocated_storage     = 200", "  allocated_storage     = 400\n  max_allocated_storage = 1000"),
      run("terraform -chdir=envs/prod plan -target=module.orders_db | tail -1", "Plan: 0 to add, 0 to change, 0 to destroy."),
      answer="The instance had a fixed 200 GB and hit zero free space, so Postgres refused writes. I grew it to 400 GB "
             "immediately and turned on storage autoscaling (`max_allocated_storage = 1000`) in the Terraform module "
             "so it grows by itself from now on. Caveat: storage autoscaling only kicks in when free space drops "
             "below 10% and then waits 6 hours between increases, so the FreeStorageSpace alarm (now at 20%) stays.",
      title="RDS out of storage"),
], qs=[
    ("natural", "the database ran out of disk, what did we change so it grows on its own?"),
    ("paraphrase", "the hosted purchases box ran out of room; how does it enlarge unattended now?"),
    ("keyword", "rds storage full"),
    ("identifier", "max_allocated_storage"),
    ("phrase", '"storage autoscaling only kicks in when free space drops below 10%"'),
    ("temporal-ish", "in July the orders database went read-only, what happened?"),
], decoys=[
    D(T("orders-prod CPU at 95% since this morning",
        run("psql \"$ORDERS_RO\" -c 'select query, calls, mean_exec_time from pg_stat_statements order by total_exec_time desc limit 1'",
            " SELECT * FROM orders WHERE status = $1 AND updated_at > $2 | 88412 | 412.7"),
        run("psql \"$ORDERS_RW\" -c 'create index concurrently orders_status_updated_idx on orders (status, updated_at)'", "CREATE INDEX"),
        answer="A new status-sync job polls orders by (status, updated_at) every few seconds without an index. Added "
               "one concurrently; CPU is back to 20%.",
        title="Index for status sync job"),
      qs=[("natural", "why was the orders database CPU pegged all morning?")]),
]))

add(S("nat-gateway-cost", "infra-live", when=(150, 165), turns=[
    T("AWS bill jumped $3k this month, cost explorer says EC2-Other. what is it?",
      run("aws ce get-cost-and-usage --time-period Start=2026-05-01,End=2026-06-01 --granularity MONTHLY --metrics UnblendedCost --group-by Type=DIMENSION,Key=USAGE_TYPE --query 'ResultsByTime[0].Groups[?Metrics.UnblendedCost.Amount>`500`]' --output text",
          "EUC1-NatGateway-Bytes    3112.40\nEUC1-DataTransfer-Regional-Bytes    611.03"),
      run("aws ec2 describe-flow-logs-summary --top 3 2>/dev/null || athena-query 'select dstaddr_service, sum(bytes) from vpc_flow group by 1 order by 2 desc limit 3'",
          "S3      61.2 TB\nECR      4.8 TB\nother    1.1 TB"),
      write("modules/vpc/endpoints.tf", '''resource "aws_vpc_endpoint" "s3" {
  vpc_id            = aws_vpc.this.id
  service_name      = "com.amazonaws.${var.region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = aws_route_table.private[*].id
}
'''),
      answer="It's NAT Gateway data processing: the ETL jobs in private subnets pull ~61 TB a month from S3 and all of "
             "it went through the NAT at $0.045/GB. I added a gateway VPC endpoint for S3 — gateway endpoints for S3 "
             "are free and traffic stays on the AWS network — plus an interface endpoint for ECR pulls. That should "
             "remove ~$2.9k/month.",
      title="Cut NAT gateway costs"),
], qs=[
    ("natural", "why was our AWS bill so high for network traffic?"),
    ("paraphrase", "why did the Amazon tab balloon, and how did blob downloads get cheaper?"),
    ("keyword", "nat gateway s3 endpoint"),
    ("phrase", '"gateway endpoints for S3 are free"'),
    ("temporal-ish", "in May there was a surprise on the cloud bill — what was driving it?"),
], decoys=[
    D(T("eu-central-1a had an outage and everything in the private subnets lost internet",
        read("modules/vpc/main.tf"),
        edit("modules/vpc/main.tf", "  count         = 1", "  count         = length(var.azs)"),
        answer="We ran one NAT gateway in 1a for all subnets; when 1a went down, the other AZs lost egress too. One NAT "
               "per AZ now, each private route table uses its own.",
        title="NAT gateway per AZ"),
      qs=[("natural", "why did losing one availability zone break outbound traffic everywhere?")]),
]))

# --------------------------------------------------------------------------- k8s-manifests

add(S("oomkilled", "k8s-manifests", when=(52, 62), turns=[
    T("reports-worker pods keep restarting, exit code 137",
      run("kubectl -n prod get pods -l app=reports-worker", '''NAME                             READY   STATUS      RESTARTS       AGE
reports-worker-7d9f8c6b5-p8zrt    0/1     OOMKilled   7 (3m ago)     52m
reports-worker-7d9f8c6b5-tq4lm    1/1     Running     6 (11m ago)    52m'''),
      run("kubectl -n prod describe pod reports-worker-7d9f8c6b5-p8zrt | grep -A4 'Last State'", '''    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Started:      Tue, 01 Sep 2026 09:12:40 +0000
      Finished:     Tue, 01 Sep 2026 09:15:02 +0000'''),
      read("apps/reports-worker/deployment.yaml"),
      edit("apps/reports-worker/deployment.yaml", "            limits:\n              memory: 512Mi",
           "            requests:\n              memory: 1Gi\n            limits:\n              memory: 1536Mi"),
      answer="They're OOMKilled, not crashing: the monthly settlement report loads a whole month of orders into a "
             "DataFrame and peaks at ~1.2 GB, against a 512Mi limit. Raised the limit to 1536Mi and set a 1Gi "
             "request so the scheduler places them on nodes that actually have the memory. I opened a ticket to make "
             "the report stream per day instead.",
      title="Fix reports-worker OOM restarts"),
], qs=[
    ("error", "reports-worker-7d9f8c6b5-x2k4q   0/1     OOMKilled   5 (2m ago)   31m"),
    ("natural", "why did the reporting workers keep restarting with exit 137?"),
    ("paraphrase", "why did the recap cruncher die repeatedly from exceeding its RAM allowance?"),
    ("keyword", "worker oomkilled memory limit"),
    ("temporal-ish", "at the start of September the report worker pods were crash looping, what was it?"),
], decoys=[
    D(T("payments-api is in CrashLoopBackOff after the base image update",
        run("kubectl -n prod describe pod payments-api-6b7c8d9f4-jw2pn | grep -m2 Unhealthy",
            "  Warning  Unhealthy  3m (x12 over 8m)  kubelet  Liveness probe failed: HTTP probe failed with statuscode: 404"),
        edit("apps/payments-api/deployment.yaml", "              path: /healthz", "              path: /health"),
        answer="The new framework version serves the health check at `/health`; the probe still hit `/healthz` and got "
               "404, so kubelet kept killing healthy containers.",
        title="Fix payments-api liveness path"),
      qs=[("error", "Liveness probe failed: HTTP probe failed with statuscode: 404"),
          ("natural", "why did kubelet keep restarting a perfectly healthy payments service?")]),
]))

add(S("startup-probe", "k8s-manifests", when=(170, 190), turns=[
    T("search-api pods never become ready after deploy, they get restarted after ~40s. locally the service needs about 90s to load its index",
      run("kubectl -n prod get events --field-selector involvedObject.name=search-api-5c9d7b8f6-m2xkq | tail -3",
          "Warning  Unhealthy  pod/search-api-5c9d7b8f6-m2xkq  Liveness probe failed: Get \"http://10.0.6.21:8080/live\": dial tcp 10.0.6.21:8080: connect: connection refused\nNormal   Killing    pod/search-api-5c9d7b8f6-m2xkq  Container search-api failed liveness probe, will be restarted"),
      read("apps/search-api/deployment.yaml"),
      edit("apps/search-api/deployment.yaml", "          livenessProbe:",
           "          startupProbe:\n            httpGet: {path: /live, port: 8080}\n            periodSeconds: 5\n            failureThreshold: 30\n          livenessProbe:"),
      run("kubectl -n prod rollout status deploy/search-api --timeout=5m", "deployment \"search-api\" successfully rolled out"),
      answer="The liveness probe started after 10 s and killed the container after 3 failures, long before the index "
             "finished loading. I added a `startupProbe` (every 5 s, up to 30 failures = 150 s). Liveness checks only "
             "start once the startup probe has succeeded, so slow boots are tolerated without making the liveness "
             "probe lax for the rest of the pod's life.",
      title="Add startup probe to search-api"),
], qs=[
    ("natural", "pods were killed before they finished booting, what did we add to the deployment?"),
    ("paraphrase", "newborn workloads got shot while still warming up — which extra gate did we introduce?"),
    ("identifier", "startupProbe"),
    ("phrase", '"Liveness checks only start once the startup probe has succeeded"'),
    ("keyword", "liveness probe slow start"),
    ("temporal-ish", "in the spring search pods were restarted before warming up, how did we fix it?"),
], decoys=[
    D(T("under load search-api pods flap between ready and not ready and traffic shifts around",
        read("apps/search-api/deployment.yaml", '''          startupProbe:
            httpGet: {path: /live, port: 8080}
            periodSeconds: 5
            failureThreshold: 30
          livenessProbe:
            httpGet: {path: /live, port: 8080}
          readinessProbe:
            httpGet: {path: /ready, port: 8080}
            periodSeconds: 5
'''),
        edit("apps/search-api/deployment.yaml", "              path: /ready", "              path: /live"),
        answer="The readiness endpoint pinged the database; when the DB was slow, every pod went unready at once. "
               "Readiness only checks the process now; DB trouble shows up as errors, not as an empty endpoint list.",
        title="Stop readiness flapping"),
      qs=[("natural", "why did all search pods drop out of the load balancer together when the database was slow?"),
          ("paraphrase", "why did the entire finder fleet go dark at once whenever the DB turned sluggish?")]),
]))
