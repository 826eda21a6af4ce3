-- The demo's catalog (make run, scripts/run-demo), on pgbench's tables: two saved queries, a policy
-- whose role holds exactly the privileges they need, and a key, whose secret is the last line
-- printed. The README's examples start from here (and the examples of docs/ go on from them), and
-- their doc test (test/t/docs_080_readme.pl) loads this file before it runs them.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS querygate;
-- The policy's role holds exactly the privileges its queries need.
CREATE ROLE demo_reader NOLOGIN;
GRANT SELECT ON pgbench_accounts, pgbench_branches TO demo_reader;
SELECT querygate.save_query('account',
    'SELECT aid, bid, abalance FROM pgbench_accounts WHERE aid = :aid', 'One account by id');
SELECT querygate.save_query('account_page',
    'SELECT a.aid, a.abalance, b.bid, b.bbalance FROM pgbench_accounts a JOIN pgbench_branches b ON b.bid = a.bid WHERE a.aid BETWEEN :start AND :start + 99 ORDER BY a.aid',
    'A page of 100 accounts with their branch');
SELECT querygate.create_policy('reader', 'demo_reader');
SELECT querygate.grant_query('reader', 'account');
SELECT querygate.grant_query('reader', 'account_page');
SELECT querygate.create_key('demo', 'reader');
