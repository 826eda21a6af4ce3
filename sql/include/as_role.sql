-- Shared by the pgTAP suites (\i sql/include/as_role.sql). Runs stmt as role r (SET ROLE, as a login
-- of r would) in a subtransaction; returns 'no error' (its effects kept) or 'SQLSTATE: message'
-- (its effects rolled back).
CREATE FUNCTION pg_temp.as_role(r text, stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE format('SET ROLE %I', r);
        EXECUTE stmt;
        RESET ROLE;
        RETURN 'no error';
    EXCEPTION WHEN OTHERS THEN
        RETURN SQLSTATE || ': ' || SQLERRM;
    END;
END $$;
