-- Limits (set_limits, and create_key's limit arguments): stored on the policy or the active key,
-- NULL leaves a limit, 0 removes it, a quota without a period counts per day and takes its period
-- with it when removed; out-of-range values and a call naming both or neither target are refused
-- with 22023; only someone who may change the policy may change its or its keys' limits; every
-- change is in the audit log under set_limits; quota_usage is for administrators to read only.
\set ECHO none
\i sql/include/setup.sql
\i sql/include/as_role.sql

BEGIN;
CREATE EXTENSION querygate;
CREATE ROLE li_admin NOLOGIN;
CREATE ROLE li_other NOLOGIN;
CREATE ROLE li_app NOLOGIN;
GRANT querygate_admin TO li_admin, li_other;
GRANT li_app TO li_admin;
SELECT querygate.create_policy('lp', 'li_app');
SELECT length(querygate.create_key('lk', 'lp')) > 0;

-- The policy's and the key's limits as "rate burst in_flight quota period" (NULLs as -).
CREATE FUNCTION pg_temp.policy_limits(p text) RETURNS text LANGUAGE sql AS $$
    SELECT concat_ws(' ', coalesce(rate_per_second::text, '-'), coalesce(burst::text, '-'),
                     coalesce(max_in_flight::text, '-'), coalesce(quota::text, '-'),
                     coalesce(quota_period, '-'))
      FROM querygate.policies WHERE name = p
$$;
CREATE FUNCTION pg_temp.key_limits(k text) RETURNS text LANGUAGE sql AS $$
    SELECT concat_ws(' ', coalesce(rate_per_second::text, '-'), coalesce(burst::text, '-'),
                     coalesce(max_in_flight::text, '-'), coalesce(quota::text, '-'),
                     coalesce(quota_period, '-'))
      FROM querygate.keys WHERE name = k AND active
$$;

SELECT plan(24);

SELECT is(pg_temp.policy_limits('lp'), '- - - - -', 'a new policy has no limits');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', rate_per_second => 2.5, burst => 10)$$),
          'no error', 'set_limits on a policy');
SELECT is(pg_temp.policy_limits('lp'), '2.5 10 - - -', 'the rate and the burst are stored');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', max_in_flight => 2, quota => 1000)$$),
          'no error', 'more limits, the others left as they are');
SELECT is(pg_temp.policy_limits('lp'), '2.5 10 2 1000 day', 'a quota without a period counts per day');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', quota_period => 'month')$$),
          'no error', 'the period alone');
SELECT is(pg_temp.policy_limits('lp'), '2.5 10 2 1000 month', 'is changed alone');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', rate_per_second => 0, quota => 0)$$),
          'no error', '0 removes a limit');
SELECT is(pg_temp.policy_limits('lp'), '- 10 2 - -', 'the rate and the quota are gone, and the quota''s period with it');

SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(key => 'lk', quota => 5, quota_period => 'month')$$),
          'no error', 'set_limits on a key');
SELECT is(pg_temp.key_limits('lk'), '- - - 5 month', 'the key''s own limits are stored on the key');
SELECT is(pg_temp.as_role('li_admin', $$SELECT length(querygate.create_key('lk2', 'lp', rate_per_second => 1, burst => 3, max_in_flight => 1)) > 0$$),
          'no error', 'create_key takes limits');
SELECT is(pg_temp.key_limits('lk2'), '1 3 1 - -', 'and stores them');
SELECT is((SELECT quota_used FROM querygate.keys WHERE name = 'lk'), 0::bigint, 'a key not yet counted has used 0');

SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(rate_per_second => 1)$$),
          '22023: set_limits takes a policy or a key, not both or neither', 'neither a policy nor a key');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits('lp', 'lk', rate_per_second => 1)$$),
          '22023: set_limits takes a policy or a key, not both or neither', 'both');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', burst => -1)$$),
          '22023: burst must be 0 (no limit) or more', 'a negative burst');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', rate_per_second => 'NaN')$$),
          '22023: rate_per_second must be 0 (no limit) or more', 'a rate that is not a number');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', rate_per_second => 'Infinity')$$),
          '22023: rate_per_second must be at most 1000000', 'an infinite rate');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(policy => 'lp', quota_period => 'week')$$),
          '22023: quota_period must be ''day'' or ''month''', 'a period that is neither');
SELECT is(pg_temp.as_role('li_admin', $$SELECT querygate.set_limits(key => 'nope', quota => 1)$$),
          '42704: key "nope" does not exist or is revoked', 'a key that does not exist');
SELECT is(pg_temp.as_role('li_other', $$SELECT querygate.set_limits(key => 'lk', quota => 1)$$),
          '42501: permission denied to change policy "lp"', 'an administrator who may not act as the policy''s role');

SELECT is((SELECT string_agg(catalog || ' ' || object, ', ' ORDER BY at) FROM querygate.audit WHERE action = 'set_limits'),
          'policy lp, policy lp, policy lp, policy lp, api_key lk',
          'every set_limits is in the audit log, with what it changed');
SELECT is(pg_temp.as_role('li_admin', $$INSERT INTO querygate.quota_usage (policy, period_start, used) VALUES ('lp', now(), 0)$$),
          '42501: permission denied for table quota_usage', 'administrators cannot write quota counts');

SELECT * FROM finish();
ROLLBACK;
