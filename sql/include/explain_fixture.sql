-- Shared by the explain suites, included after CREATE EXTENSION: the role policies run as, the
-- two tables they explain queries over, a function that reads one of them, and
-- pg_temp.ex(sql, policy), which saves sql as the query "q" and explains it for a policy ('p'
-- unless told). Each suite grants the role its tables once it has made its own, and makes its
-- policies.
CREATE ROLE qa_reader NOLOGIN;
CREATE TABLE users (id int PRIMARY KEY, email text, name text, salary int);
CREATE TABLE orders (id int PRIMARY KEY, user_id int, amount int, note text);
CREATE FUNCTION f_user(int) RETURNS users LANGUAGE sql AS 'SELECT * FROM users WHERE id = $1';
CREATE FUNCTION pg_temp.ex(sql text, policy text DEFAULT 'p') RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    PERFORM querygate.save_query('q', sql);
    RETURN querygate.explain(policy, 'q');
END $$;
