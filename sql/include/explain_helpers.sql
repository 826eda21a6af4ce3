-- Shared by the suites that explain saved queries, included after CREATE EXTENSION:
-- pg_temp.ex(sql, policy) saves sql as the query "q" and explains it for a policy ('p' unless
-- told); pg_temp.refusal(sql, policy) is the code explain says it is refused with, 'none' when
-- it is served.
CREATE FUNCTION pg_temp.ex(sql text, policy text DEFAULT 'p') RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM querygate.save_query('q', sql);
    RETURN querygate.explain(policy, 'q');
END $$;
CREATE FUNCTION pg_temp.refusal(sql text, policy text DEFAULT 'p') RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(pg_temp.ex(sql, policy)->'refused'->>'code', 'none')
$$;
