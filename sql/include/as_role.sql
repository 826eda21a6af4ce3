-- Shared by the pgTAP suites (\i sql/include/as_role.sql). Runs stmt as role r (SET ROLE, as a login
-- of r would) in a subtransaction; returns 'no error' (its effects kept) or 'SQLSTATE: message'
-- (its effects rolled back), and with detail => true the error's DETAIL after the message
-- ("SQLSTATE: message / detail").
CREATE FUNCTION pg_temp.as_role(r text, stmt text, detail boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    d text;
BEGIN
    BEGIN
        EXECUTE format('SET ROLE %I', r);
        EXECUTE stmt;
        RESET ROLE;
        RETURN 'no error';
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
        RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN detail THEN ' / ' || d ELSE '' END;
    END;
END $$;
