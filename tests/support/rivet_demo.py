"""rivet's own demo, reproduced (no tests here): the tables of `demo/setup_demo_tables.sql` /
`demo/setup_demo_tables_mysql.sql` and of the dev seed the demo pipelines also read (`users`,
`events`, `page_views`, `orders_sparse`, `orders_coalesce`), and the exports of
`demo/demo_pipeline.yaml` (PostgreSQL, 12 exports) and `demo/demo_pipeline_mysql.yaml` (MySQL,
8 exports) in panchenkoai/rivet.

Written here, not copied: the same table names, columns the demo's queries read, column types,
keys, indexes and row counts (which decide rivet's classes: 800,000-row `audit_log` chunked by
200,000, 400,000-row `metric_samples`, 300,000-row `transactions` with an indexed `updated_at`,
`logs_archive` with a nullable cursor and an indexed fallback, a small `product_catalog`, ...).
The exports are the demo's, as `rivet init` writes them: `query:` exports, with the demo's
`source_group`s, `reconcile_required`, `parallel` and `chunk_*` settings.
"""

from __future__ import annotations

from typing import Any

from support import parity_seed

PG_DEMO = f"""
SET default_statistics_target = 1000;
CREATE TABLE users (id int PRIMARY KEY, name varchar(100) NOT NULL, email varchar(200) NOT NULL,
  age int, balance numeric(12,2), is_active boolean DEFAULT true,
  created_at timestamp NOT NULL, updated_at timestamp NOT NULL);
INSERT INTO users SELECT i, 'user ' || i, 'u' || i || '@example.com', 20 + i % 50, i % 1000,
  i % 5 <> 0, timestamp '2024-01-01' + i * interval '1 hour',
  timestamp '2024-02-01' + i * interval '1 hour' FROM generate_series(1, 2000) i;
CREATE TABLE events (id bigint PRIMARY KEY, user_id int NOT NULL, event_type varchar(50) NOT NULL,
  payload jsonb, ip_address varchar(45), created_at timestamp NOT NULL);
INSERT INTO events SELECT i, 1 + i % 2000, 'click', jsonb_build_object('n', i), '10.0.0.1',
  timestamp '2024-03-01' + i * interval '5 seconds' FROM generate_series(1, 150000) i;
CREATE INDEX idx_events_created_at ON events (created_at);
CREATE INDEX idx_events_user_id ON events (user_id);
CREATE TABLE page_views (id bigint PRIMARY KEY, session_id varchar(36) NOT NULL, user_id int,
  url text NOT NULL, country_code char(2), device_type varchar(20), browser varchar(50),
  created_at timestamp NOT NULL);
INSERT INTO page_views SELECT i, md5(i::text), 1 + i % 2000, '/p/' || i % 500, 'US', 'mobile',
  'firefox', timestamp '2024-04-01' + i * interval '2 seconds' FROM generate_series(1, 250000) i;
CREATE TABLE orders_sparse (id bigint PRIMARY KEY, payload text NOT NULL);
INSERT INTO orders_sparse SELECT i * 1000003, 'p' || i FROM generate_series(1, 1000) i;
CREATE TABLE orders_coalesce (id bigint PRIMARY KEY, product varchar(200) NOT NULL,
  quantity int NOT NULL, price numeric(10,2) NOT NULL, updated_at timestamp,
  created_at timestamp NOT NULL);
INSERT INTO orders_coalesce SELECT i, 'product ' || i, 1 + i % 9, i % 100,
  CASE WHEN i % 4 = 0 THEN NULL ELSE timestamp '2024-05-01' + i * interval '1 minute' END,
  timestamp '2024-04-01' + i * interval '1 minute' FROM generate_series(1, 5000) i;
CREATE INDEX idx_orders_coalesce_updated_at ON orders_coalesce (updated_at);
CREATE INDEX idx_orders_coalesce_created_at ON orders_coalesce (created_at);
CREATE TABLE transactions AS SELECT i AS id, (i % 2000) + 1 AS user_id,
  ((i * 173) % 100000)::numeric / 100.0 AS amount,
  CASE i % 4 WHEN 0 THEN 'pending' WHEN 1 THEN 'completed' WHEN 2 THEN 'refunded'
    ELSE 'disputed' END AS status,
  timestamp '2024-01-01' + i * interval '47 seconds' AS created_at,
  timestamp '2024-01-01' + i * interval '53 seconds' AS updated_at
  FROM generate_series(1, 300000) i;
ALTER TABLE transactions ADD PRIMARY KEY (id);
CREATE INDEX idx_transactions_updated_at ON transactions (updated_at);
CREATE TABLE audit_log AS SELECT i AS id, (i % 5000) + 1 AS actor_id, md5(i::text) AS action_hash,
  'view'::text AS action, timestamp '2024-06-01' + i * interval '3 seconds' AS logged_at
  FROM generate_series(1, 800000) i;
ALTER TABLE audit_log ADD PRIMARY KEY (id);
CREATE TABLE sessions AS SELECT i AS id, md5(i || 'sess')::uuid AS session_uuid,
  (i % 2000) + 1 AS user_id, timestamp '2025-01-01' + i * interval '1 minute' AS session_start,
  timestamp '2025-01-01' + i * interval '1 minute' + (i % 3600) * interval '1 second'
    AS session_end FROM generate_series(1, 50000) i;
ALTER TABLE sessions ADD PRIMARY KEY (id);
CREATE INDEX idx_sessions_start ON sessions (session_start);
CREATE TABLE product_catalog (sku varchar(24) PRIMARY KEY, name varchar(200) NOT NULL,
  category varchar(60) NOT NULL, price numeric(10,2) NOT NULL, active boolean DEFAULT true,
  updated_at timestamp NOT NULL);
INSERT INTO product_catalog SELECT 'SKU-' || lpad(i::text, 6, '0'), 'Product ' || i, 'books',
  ((i * 37) % 50000)::numeric / 100.0, i % 7 <> 0, timestamp '2024-01-01' + i * interval '1 hour'
  FROM generate_series(1, 3000) i;
CREATE TABLE logs_archive AS SELECT i AS id, md5(i::text) AS payload,
  timestamp '2024-01-01' + i * interval '1 minute' AS created_at,
  CASE WHEN i % 3 = 0 THEN NULL ELSE timestamp '2024-06-01' + i * interval '45 seconds' END
    AS updated_at FROM generate_series(1, 100000) i;
ALTER TABLE logs_archive ADD PRIMARY KEY (id);
ALTER TABLE logs_archive ALTER COLUMN created_at SET NOT NULL;
CREATE INDEX idx_logs_archive_created ON logs_archive (created_at);
CREATE TABLE email_queue (id bigserial PRIMARY KEY, to_email varchar(200) NOT NULL,
  subject varchar(300) NOT NULL, body text, status varchar(20) NOT NULL DEFAULT 'pending',
  scheduled_at timestamp NOT NULL);
INSERT INTO email_queue (to_email, subject, body, status, scheduled_at)
  SELECT 'user' || i || '@example.com', 'Notification #' || i, repeat('lorem ', i % 30 + 1),
  'pending', timestamp '2025-01-01' + i * interval '3 minutes' FROM generate_series(1, 20000) i;
CREATE TABLE metric_samples (id bigserial PRIMARY KEY, host varchar(80) NOT NULL,
  metric_name varchar(80) NOT NULL, value double precision NOT NULL,
  captured_at timestamp NOT NULL);
INSERT INTO metric_samples (host, metric_name, value, captured_at)
  SELECT 'host-' || lpad((i % 50 + 1)::text, 3, '0'), 'cpu_user', (i * 97 % 100000) / 100.0,
  timestamp '2025-01-01' + i * interval '2 seconds' FROM generate_series(1, 400000) i;
{parity_seed.PG_NO_AUTOVACUUM}
ANALYZE;
"""

MY_DEMO = [
    "CREATE TABLE transactions (id BIGINT PRIMARY KEY, user_id INT NOT NULL, "
    "amount DECIMAL(12,2) NOT NULL, status VARCHAR(16) NOT NULL, created_at DATETIME NOT NULL, "
    "updated_at DATETIME NOT NULL, KEY idx_transactions_updated_at (updated_at))",
    "INSERT INTO transactions SELECT seq, seq % 2000 + 1, (seq * 173 % 100000) / 100.0, "
    "ELT(seq % 4 + 1, 'pending', 'completed', 'refunded', 'disputed'), "
    "TIMESTAMPADD(SECOND, seq * 47, '2024-01-01'), TIMESTAMPADD(SECOND, seq * 53, '2024-01-01') "
    "FROM seq_1_to_300000",
    "CREATE TABLE audit_log (id BIGINT PRIMARY KEY, actor_id INT NOT NULL, "
    "action_hash CHAR(32) NOT NULL, action VARCHAR(16) NOT NULL, logged_at DATETIME NOT NULL)",
    "INSERT INTO audit_log SELECT seq, seq % 5000 + 1, MD5(seq), 'view', "
    "TIMESTAMPADD(SECOND, seq * 3, '2024-06-01') FROM seq_1_to_800000",
    "CREATE TABLE sessions (id BIGINT PRIMARY KEY, session_uuid CHAR(36) NOT NULL, "
    "user_id INT NOT NULL, session_start DATETIME NOT NULL, session_end DATETIME NOT NULL, "
    "KEY idx_sessions_start (session_start))",
    "INSERT INTO sessions SELECT seq, MD5(seq), seq % 2000 + 1, "
    "TIMESTAMPADD(MINUTE, seq, '2025-01-01'), "
    "TIMESTAMPADD(SECOND, seq * 60 + seq % 3600, '2025-01-01') FROM seq_1_to_50000",
    "CREATE TABLE product_catalog (sku VARCHAR(24) PRIMARY KEY, name VARCHAR(200) NOT NULL, "
    "category VARCHAR(60) NOT NULL, price DECIMAL(10,2) NOT NULL, "
    "active TINYINT(1) NOT NULL DEFAULT 1, updated_at DATETIME NOT NULL)",
    "INSERT INTO product_catalog SELECT CONCAT('SKU-', LPAD(seq, 6, '0')), "
    "CONCAT('Product ', seq), 'books', (seq * 37 % 50000) / 100.0, seq % 7 <> 0, "
    "TIMESTAMPADD(HOUR, seq, '2024-01-01') FROM seq_1_to_3000",
    "CREATE TABLE logs_archive (id BIGINT PRIMARY KEY, payload TEXT, "
    "created_at DATETIME NOT NULL, updated_at DATETIME NULL, "
    "KEY idx_logs_archive_created (created_at))",
    "INSERT INTO logs_archive SELECT seq, MD5(seq), TIMESTAMPADD(MINUTE, seq, '2024-01-01'), "
    "IF(seq % 3 = 0, NULL, TIMESTAMPADD(SECOND, seq * 45, '2024-06-01')) FROM seq_1_to_100000",
    "CREATE TABLE email_queue (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
    "to_email VARCHAR(200) NOT NULL, subject VARCHAR(300) NOT NULL, body TEXT, "
    "status VARCHAR(20) NOT NULL DEFAULT 'pending', scheduled_at DATETIME NOT NULL)",
    "INSERT INTO email_queue (to_email, subject, body, status, scheduled_at) "
    "SELECT CONCAT('user', seq, '@example.com'), CONCAT('Notification #', seq), "
    "REPEAT('lorem ', seq % 30 + 1), 'pending', TIMESTAMPADD(MINUTE, seq * 3, '2025-01-01') "
    "FROM seq_1_to_20000",
    "CREATE TABLE orders_coalesce (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
    "product VARCHAR(200) NOT NULL, quantity INT NOT NULL, price DECIMAL(10,2) NOT NULL, "
    "updated_at DATETIME NULL, created_at DATETIME NOT NULL, "
    "KEY idx_orders_coalesce_updated_at (updated_at), "
    "KEY idx_orders_coalesce_created_at (created_at))",
    "INSERT INTO orders_coalesce (product, quantity, price, updated_at, created_at) "
    "SELECT CONCAT('product ', seq), seq % 9 + 1, seq % 100, "
    "IF(seq % 4 = 0, NULL, TIMESTAMPADD(MINUTE, seq, '2024-05-01')), "
    "TIMESTAMPADD(MINUTE, seq, '2024-04-01') FROM seq_1_to_5000",
    "CREATE TABLE metric_samples (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
    "host VARCHAR(80) NOT NULL, metric_name VARCHAR(80) NOT NULL, value DOUBLE NOT NULL, "
    "captured_at DATETIME NOT NULL)",
    "INSERT INTO metric_samples (host, metric_name, value, captured_at) "
    "SELECT CONCAT('host-', LPAD(seq % 50 + 1, 3, '0')), 'cpu_user', (seq * 97 % 100000) / 100.0, "
    "TIMESTAMPADD(SECOND, seq * 2, '2025-01-01') FROM seq_1_to_400000",
    "ANALYZE TABLE transactions, audit_log, sessions, product_catalog, logs_archive, "
    "email_queue, orders_coalesce, metric_samples",
]

_DEST = {"format": "parquet", "destination": {"type": "local", "path": "./out"}}


def _export(name: str, query: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **({"source_group": fields.pop("group")} if "group" in fields else {}),
            "query": query, **fields, **_DEST}


def _coalesce(name: str, query: str, **fields: Any) -> dict[str, Any]:
    return _export(name, query, mode="incremental", cursor_column="updated_at",
                   cursor_fallback_column="created_at", incremental_cursor_mode="coalesce",
                   **fields)


def _common(session_uuid: str) -> list[dict[str, Any]]:
    """The exports both demo pipelines have, in their order."""
    return [
        _export("transactions", "SELECT id, user_id, amount, status, created_at, updated_at FROM "
                "transactions", group="replica_primary", mode="incremental",
                cursor_column="updated_at"),
        _export("audit_log", "SELECT id, actor_id, action_hash, action, logged_at FROM audit_log",
                group="replica_primary", mode="chunked", chunk_column="id", chunk_size=200_000,
                chunk_checkpoint=True, chunk_max_attempts=3, parallel=2,
                reconcile_required=True),
        _export("sessions", f"SELECT id, {session_uuid}, user_id, session_start, session_end "
                "FROM sessions", group="replica_primary", mode="incremental",
                cursor_column="session_start"),
        _export("metric_samples", "SELECT id, host, metric_name, value, captured_at FROM "
                "metric_samples", group="replica_analytics", mode="chunked", chunk_column="id",
                chunk_size=100_000, chunk_checkpoint=True),
        _coalesce("logs_archive", "SELECT id, payload, created_at, updated_at FROM logs_archive",
                  group="replica_analytics"),
    ]


def postgres_demo(url_env: str) -> dict[str, Any]:
    """`demo/demo_pipeline.yaml`: 12 exports on PostgreSQL."""
    exports = [
        *_common("session_uuid::text"),
        _export("events", "SELECT id, user_id, event_type, payload::text AS payload, ip_address, "
                "created_at FROM events", mode="incremental", cursor_column="created_at"),
        _coalesce("orders_coalesce", "SELECT id, product, quantity, price, updated_at, "
                  "created_at FROM orders_coalesce"),
        _export("page_views", "SELECT id, session_id, user_id, url, country_code, device_type, "
                "browser, created_at FROM page_views", mode="chunked", chunk_column="id",
                chunk_size=100_000, chunk_checkpoint=True),
        _export("product_catalog", "SELECT sku, name, category, price, active, updated_at FROM "
                "product_catalog", mode="full"),
        _export("users", "SELECT id, name, email, age, balance, is_active, created_at, "
                "updated_at FROM users", mode="full"),
        _export("email_queue", "SELECT id, to_email, subject, status, scheduled_at FROM "
                "email_queue", mode="full"),
        _export("orders_sparse", "SELECT id, payload FROM orders_sparse", mode="full"),
    ]
    return {"source": {"type": "postgres", "url_env": url_env,
                       "tuning": {"profile": "balanced"}}, "exports": exports}


def mysql_demo(url_env: str) -> dict[str, Any]:
    """`demo/demo_pipeline_mysql.yaml`: 8 exports on MySQL (MariaDB here)."""
    exports = [
        *_common("session_uuid"),
        _coalesce("orders_coalesce", "SELECT id, product, quantity, price, updated_at, "
                  "created_at FROM orders_coalesce"),
        _export("product_catalog", "SELECT sku, name, category, price, active, updated_at FROM "
                "product_catalog", mode="full"),
        _export("email_queue", "SELECT id, to_email, subject, status, scheduled_at FROM "
                "email_queue", mode="full"),
    ]
    return {"source": {"type": "mysql", "url_env": url_env, "tuning": {"profile": "balanced"}},
            "exports": exports}


def seed_postgres(url: str) -> None:
    parity_seed.seed_postgres(url, PG_DEMO)


def seed_mariadb(url: str) -> None:
    parity_seed.seed_mariadb(url, MY_DEMO)
