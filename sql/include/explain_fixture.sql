-- Shared by the explain suites, included after CREATE EXTENSION: the role policies run as, the
-- two tables they explain queries over, a function that reads one of them, and the helpers of
-- explain_helpers.sql. Each suite grants the role its tables once it has made its own, and makes
-- its policies.
CREATE ROLE qa_reader NOLOGIN;
CREATE TABLE users (id int PRIMARY KEY, email text, name text, salary int);
CREATE TABLE orders (id int PRIMARY KEY, user_id int, amount int, note text);
CREATE FUNCTION f_user(int) RETURNS users LANGUAGE sql AS 'SELECT * FROM users WHERE id = $1';
\i sql/include/explain_helpers.sql
