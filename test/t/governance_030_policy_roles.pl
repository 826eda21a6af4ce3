# The workers hold every call to the rules an administrator is held to when granting (see
# sql/policy_actors.sql for those): a policy whose role has become a superuser or BYPASSRLS since
# it was made is refused (403 privileged_role) until a member of the role allows it; and a query
# whose code stops being trusted for the policy's role (a function given to another owner, CREATE
# on a schema of its search_path granted to a role that cannot act as the policy's role) is refused
# (403 untrusted_code) from the next call on, without a re-save: the worker re-analyzes when
# functions, schemas or roles change. And a save that races a grant waits for it.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'policy_roles');
$qg->sql(q{
	CREATE ROLE pr_app NOLOGIN;
	CREATE ROLE pr_stranger NOLOGIN;
	CREATE TABLE pr_items (id int PRIMARY KEY);
	INSERT INTO pr_items VALUES (1);
	GRANT SELECT ON pr_items TO pr_app;
	CREATE FUNCTION pr_who() RETURNS text LANGUAGE sql STABLE AS $$ SELECT current_user::text $$;
	ALTER FUNCTION pr_who() OWNER TO pr_app;
	SELECT querygate.save_query('who', 'SELECT current_user::text AS u, count(*)::int AS n FROM pr_items');
	SELECT querygate.save_query('fn', 'SELECT pr_who() AS u');
});
my $key = $qg->access(policy => 'app', run_as => 'pr_app', queries => [qw(who fn)]);
my $who = [ { u => 'pr_app', n => 1 } ];
sub call { return $qg->get("/q/$_[0]", key => $key); }

$qg->expect_rows(call('who'), $who, 'the policy runs as pr_app');
$qg->expect_rows(call('fn'), [ { u => 'pr_app' } ], 'a function owned by the policy\'s role is trusted');

# --- a role that became privileged after the policy was made
for my $attr (qw(SUPERUSER BYPASSRLS))
{
	$qg->sql("ALTER ROLE pr_app $attr");
	$qg->expect_error(call('who'), 403, 'privileged_role', "pr_app made $attr: the next call");
	my $no = $attr eq 'SUPERUSER' ? 'NOSUPERUSER' : 'NOBYPASSRLS';
	$qg->sql("ALTER ROLE pr_app $no");
	$qg->expect_rows(call('who'), $who, "pr_app $no again: served");
}
$qg->sql('ALTER ROLE pr_app SUPERUSER');
$qg->sql(q{SELECT querygate.set_policy('app', allow_superuser => true)});
$qg->expect_rows(call('who'), $who, 'allow_superuser => true: a superuser role is served');
$qg->sql('ALTER ROLE pr_app NOSUPERUSER');
$qg->sql(q{SELECT querygate.set_policy('app', allow_superuser => false)});

# --- code that stops being trusted
$qg->sql('ALTER FUNCTION pr_who() OWNER TO pr_stranger');
my $res = call('fn');
$qg->expect_error($res, 403, 'untrusted_code', 'the function given to a role that cannot act as pr_app');
unlike($res->{content}, qr/pr_stranger/, 'the refusal does not name roles to the caller');
like($qg->sql(q{SELECT querygate.explain('app', 'fn')->>'untrusted'}), qr/function pr_who\(\) is owned by role "pr_stranger", which cannot act as "pr_app"/,
	'explain says why');
$qg->expect_rows(call('who'), $who, 'a query that does not call it is still served');
$qg->sql('GRANT pr_app TO pr_stranger');
$qg->expect_rows(call('fn'), [ { u => 'pr_app' } ], 'once its owner may act as pr_app, it is trusted again');
$qg->sql('REVOKE pr_app FROM pr_stranger');
$qg->expect_error(call('fn'), 403, 'untrusted_code', 'and refused again when that membership goes');
$qg->sql('ALTER FUNCTION pr_who() OWNER TO pr_app');

$qg->sql('GRANT CREATE ON SCHEMA public TO pr_stranger');
$qg->expect_error(call('who'), 403, 'untrusted_code', 'CREATE on a schema of the search_path granted to pr_stranger');
$qg->sql('REVOKE CREATE ON SCHEMA public FROM pr_stranger');
$qg->expect_rows(call('who'), $who, 'revoked: served again');
$qg->sql('GRANT CREATE ON SCHEMA public TO PUBLIC');
$qg->expect_error(call('who'), 403, 'untrusted_code', 'CREATE on public granted to PUBLIC');
$qg->sql('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
$qg->expect_rows(call('who'), $who, 'revoked from PUBLIC: served again');

# --- a save racing a grant: an administrator who is not a member of pr_app re-saves a query while
# a superuser's grant of it to the policy is still open. The grant's transaction locks the query's
# row, so the save waits, then sees the grant and is refused; without the lock it would commit its
# own text under a grant made for the old one.
$qg->sql(q{
	CREATE ROLE pr_admin NOLOGIN IN ROLE querygate_admin;
	GRANT SELECT ON pr_items TO pr_admin;
	SELECT querygate.save_query('racy', 'SELECT count(*)::int AS n FROM pr_items');
});
my $granter = $qg->node->background_psql('postgres');
my $saver = $qg->node->background_psql('postgres', on_error_stop => 0);
$granter->query_safe('BEGIN');
$granter->query_safe(q{SELECT querygate.grant_query('app', 'racy')});
$saver->query_until(qr/sent/, qq{\\echo sent\nSET ROLE pr_admin;\nSELECT querygate.save_query('racy', 'SELECT current_user::text AS n');\n\\echo done\n});
ok(poll_until(sub { $qg->sql(q{SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'}) eq '1' }),
	'the save waits for the open grant');
$granter->query_safe('COMMIT');
$saver->query_until(qr/done/, '');
like($saver->{stderr}, qr/permission denied to change policy "app"/, 'then it is refused: the query is granted to a policy of a role pr_admin cannot act as');
$granter->quit;
$saver->quit;
is($qg->sql(q{SELECT sql || ' / ' || saved_by FROM querygate.saved_query WHERE name = 'racy'}),
	'SELECT count(*)::int AS n FROM pr_items / ' . $qg->sql('SELECT current_user'), 'the query is the one that was granted');
$qg->expect_rows(call('racy'), [ { n => 1 } ], 'and it is what the policy runs');

done_testing();
