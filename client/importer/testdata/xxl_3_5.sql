-- The two tables `ringjob import xxl` reads, with the columns of XXL-JOB 3.5
-- (xxl_job_group.title and xxl_job_info.job_desc renamed to name; a group
-- access token for the 3.5 executor protocol), and rows covering every column.
-- Written for Ringjob's tests; only the columns matter.
CREATE TABLE xxl_job_group (
  id           INT          NOT NULL AUTO_INCREMENT,
  app_name     VARCHAR(64)  NOT NULL,
  name         VARCHAR(64)  NOT NULL,
  address_type TINYINT      NOT NULL DEFAULT 0,   -- 0 registered, 1 entered by hand
  address_list TEXT,                              -- comma-separated executor addresses
  access_token VARCHAR(255) DEFAULT NULL,         -- the group's executor token (3.5)
  update_time  DATETIME     DEFAULT NULL,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE xxl_job_info (
  id                        INT          NOT NULL AUTO_INCREMENT,
  job_group                 INT          NOT NULL,
  name                      VARCHAR(255) NOT NULL,
  add_time                  DATETIME     DEFAULT NULL,
  update_time               DATETIME     DEFAULT NULL,
  author                    VARCHAR(64)  DEFAULT NULL,
  alarm_email               VARCHAR(255) DEFAULT NULL,
  schedule_type             VARCHAR(50)  NOT NULL DEFAULT 'NONE',   -- NONE, CRON, FIX_RATE
  schedule_conf             VARCHAR(128) DEFAULT NULL,              -- cron, or seconds
  misfire_strategy          VARCHAR(50)  NOT NULL DEFAULT 'DO_NOTHING',
  executor_route_strategy   VARCHAR(50)  DEFAULT NULL,
  executor_handler          VARCHAR(255) DEFAULT NULL,
  executor_param            TEXT         DEFAULT NULL,
  executor_block_strategy   VARCHAR(50)  DEFAULT NULL,
  executor_timeout          INT          NOT NULL DEFAULT 0,
  executor_fail_retry_count INT          NOT NULL DEFAULT 0,
  glue_type                 VARCHAR(50)  NOT NULL,                  -- BEAN, GLUE_GROOVY, GLUE_SHELL ...
  glue_source               MEDIUMTEXT,
  glue_remark               VARCHAR(128) DEFAULT NULL,
  glue_updatetime           DATETIME     DEFAULT NULL,
  child_jobid               VARCHAR(255) DEFAULT NULL,              -- comma-separated job ids
  trigger_status            TINYINT      NOT NULL DEFAULT 0,        -- 0 stopped, 1 running
  trigger_last_time         BIGINT       NOT NULL DEFAULT 0,
  trigger_next_time         BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

INSERT INTO xxl_job_group (id, app_name, name, address_type, address_list, access_token, update_time) VALUES
  (1, 'billing-executor', 'Billing', 1, 'http://127.0.0.1:9991/, http://127.0.0.1:9992/', 'billing-secret-token', '2026-01-05 10:00:00'),
  (2, 'Report_Exec', '报表执行器', 0, 'http://10.1.2.3:9999/', NULL, '2026-01-05 10:00:00');

INSERT INTO xxl_job_info (id, job_group, name, add_time, update_time, author, alarm_email, schedule_type, schedule_conf,
  misfire_strategy, executor_route_strategy, executor_handler, executor_param, executor_block_strategy, executor_timeout,
  executor_fail_retry_count, glue_type, glue_source, glue_remark, glue_updatetime, child_jobid, trigger_status,
  trigger_last_time, trigger_next_time) VALUES
  (1, 1, '月末结账', '2025-12-01 08:00:00', '2026-01-02 08:00:00', 'zhang', 'ops@example.com,finance@example.com', 'CRON', '0 30 2 L * ?',
   'FIRE_ONCE_NOW', 'FIRST', 'closeBooksHandler', '{"shards":4}', 'SERIAL_EXECUTION', 600,
   2, 'BEAN', '', 'GLUE代码初始化', '2025-12-01 08:00:00', '2,99', 1, 1767000000000, 1767200000000),
  (2, 1, 'notify finance', '2025-12-01 08:00:00', NULL, 'li', '', 'CRON', '0 0 9 ? * MON-FRI',
   'DO_NOTHING', 'ROUND', 'notifyHandler', '', 'DISCARD_LATER', 0,
   0, 'BEAN', NULL, NULL, NULL, '3', 0, 0, 0),
  (3, 2, 'weekly report', '2025-12-01 08:00:00', NULL, 'wang', NULL, 'FIX_RATE', '3600',
   'DO_NOTHING', 'BUSYOVER', 'reportHandler', 'week=last', 'COVER_EARLY', 100000,
   12, 'BEAN', NULL, NULL, NULL, NULL, 1, 0, 0),
  (4, 2, 'cleanup script', '2025-12-01 08:00:00', NULL, 'wang', NULL, 'CRON', '0 15 10 ? * 6#3',
   'DO_NOTHING', 'LEAST_FREQUENTLY_USED', '', '--dry-run', 'SERIAL_EXECUTION', 0,
   0, 'GLUE_SHELL', '#!/bin/bash\necho "cleaning"\nrm -rf /tmp/reports/*', 'first version', '2026-01-03 09:00:00', '', 1, 0, 0),
  (5, 1, 'notify finance', '2025-12-01 08:00:00', NULL, 'li', NULL, 'NONE', '',
   'DO_NOTHING', 'SHARDING_BROADCAST', 'shardHandler', '', 'SERIAL_EXECUTION', 0,
   0, 'BEAN', NULL, NULL, NULL, '5', 1, 0, 0),
  (6, 1, 'mid-month payout', '2025-12-01 08:00:00', NULL, 'zhao', NULL, 'CRON', '0 0 12 15W * ?',
   'SOMETIMES', 'WEIGHTED', 'payoutHandler', '', 'QUEUE', 0,
   0, 'BEAN', NULL, NULL, NULL, NULL, 1, 0, 0),
  (7, 42, 'orphan', '2025-12-01 08:00:00', NULL, 'zhao', NULL, 'CRON', '0 0 1 * * ?',
   'DO_NOTHING', 'FIRST', 'orphanHandler', '', 'SERIAL_EXECUTION', 0,
   0, 'BEAN', NULL, NULL, NULL, NULL, 0, 0, 0),
  (8, 2, '/daily/ sync', '2025-12-01 08:00:00', NULL, 'qian', NULL, 'CRON', '0 0 0 * * ? *',
   'DO_NOTHING', 'CONSISTENT_HASH', 'syncHandler', '', 'SERIAL_EXECUTION', 30,
   1, 'BEAN', NULL, NULL, NULL, '1', 0, 0, 0),
  (9, 2, 'lru job', '2025-12-01 08:00:00', NULL, 'qian', NULL, 'FIX_DELAY', '60',
   'DO_NOTHING', 'LEAST_RECENTLY_USED', 'lruHandler', '', 'SERIAL_EXECUTION', 0,
   0, 'BEAN', NULL, NULL, NULL, NULL, 0, 0, 0),
  (10, 1, 'random job', '2025-12-01 08:00:00', NULL, 'sun', NULL, 'CRON', '0 0 3 * * ?',
   'DO_NOTHING', 'RANDOM', 'randomHandler', '', 'SERIAL_EXECUTION', 0,
   0, 'BEAN', NULL, NULL, NULL, NULL, 0, 0, 0),
  (11, 1, 'last job', '2025-12-01 08:00:00', NULL, 'sun', NULL, 'CRON', '0 0 4 * * ?',
   'DO_NOTHING', 'LAST', 'lastHandler', '', 'SERIAL_EXECUTION', 0,
   0, 'BEAN', NULL, NULL, NULL, NULL, 0, 0, 0),
  (12, 1, 'failover job', '2025-12-01 08:00:00', NULL, 'sun', NULL, 'CRON', '0 0 5 * * ?',
   'DO_NOTHING', 'FAILOVER', 'failoverHandler', '', 'SERIAL_EXECUTION', 0,
   0, 'GLUE_GROOVY', 'public class X {}', NULL, NULL, NULL, 0, 0, 0);
