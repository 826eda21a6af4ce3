# A GET never writes (RFC 9110, 9.2.1: a safe method, which prefetchers, crawlers and retrying
# proxies repeat): a GET of a query that writes is 405 method_not_allowed with Allow: POST and
# changes nothing, before its worker has run the write and after (when it hands a known write
# straight to a helper); the same call POSTed, with its parameters in the query string or the
# body, writes. /openapi.json offers only POST for it, and /catalog says each query's methods.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'safe_methods', workers => 1, conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE TABLE sm_t (id int PRIMARY KEY, n int NOT NULL DEFAULT 0);
	INSERT INTO sm_t VALUES (1), (2);
	SELECT querygate.save_query('sm_read', 'SELECT id, n FROM sm_t WHERE id = :id');
	SELECT querygate.save_query('sm_bump', 'UPDATE sm_t SET n = n + 1 WHERE id = :id');
	SELECT querygate.save_query('sm_add', 'INSERT INTO sm_t (id) VALUES (:id) RETURNING id, n');
});
$qg->role('sm_role', select => ['sm_t'], grant => [ 'UPDATE ON sm_t', 'INSERT ON sm_t' ]);
my $key = $qg->access(policy => 'sm_pol', run_as => 'sm_role', queries => [qw(sm_read sm_bump sm_add)],
	setup => q{SELECT querygate.grant_writes('sm_pol', '{update,insert}');});

sub n_of { return $qg->sql("SELECT n FROM sm_t WHERE id = $_[0]"); }

sub refused_get
{
	my ($path, $name) = @_;
	my $res = $qg->get($path, key => $key);
	$qg->expect_error($res, 405, 'method_not_allowed', $name);
	is($res->{headers}{allow}, 'POST', "$name: Allow: POST");
	like($res->{json}{error} // '', qr/writes: call it with POST/, "$name: says why");
}

# --- before this worker ever ran the write
refused_get('/q/sm_bump?id=1', 'GET of an UPDATE');
is(n_of(1), 0, 'and nothing was written');
refused_get('/q/sm_add?id=3', 'GET of an INSERT ... RETURNING');
is($qg->sql('SELECT count(*) FROM sm_t WHERE id = 3'), '0', 'nothing was inserted');
$qg->expect_error($qg->get('/q/sm_bump?id=1&stream=true', key => $key), 405, 'method_not_allowed',
	'GET of a write as an export: the method first');

# --- POST writes, with its parameters in the query string or the body
$qg->expect_rows($qg->post('/q/sm_bump?id=1', undef, key => $key), { rows_affected => 1 },
	'POST with the parameters in the query string writes');
$qg->expect_rows($qg->post('/q/sm_bump', { params => { id => 1 } }, key => $key), { rows_affected => 1 },
	'POST with a JSON body writes');
is(n_of(1), 2, 'both writes are made');

# --- after: the worker knows the query writes and would hand it to a helper at once
for my $i (1 .. 3)
{
	refused_get('/q/sm_bump?id=1', "GET of the UPDATE once it ran ($i)");
}
is(n_of(1), 2, 'and still nothing more was written');

# --- a read answers both
is($qg->get('/q/sm_read?id=1', key => $key)->{status}, 200, 'GET of a read: 200');
is($qg->post('/q/sm_read?id=1', undef, key => $key)->{status}, 200, 'POST of a read: 200');

# --- what the documents say
my $paths = $qg->get('/openapi.json', key => $key)->{json}{paths} // {};
is(join(',', sort keys %{ $paths->{'/q/sm_bump'} // {} }), 'post', 'OpenAPI: a write is offered as POST only');
is(join(',', sort keys %{ $paths->{'/q/sm_add'} // {} }), 'post', 'OpenAPI: so is an INSERT ... RETURNING');
is(join(',', sort keys %{ $paths->{'/q/sm_read'} // {} }), 'get,post', 'OpenAPI: a read as GET and POST');
my %methods = map { $_->{name} => join(',', @{ $_->{methods} // [] }) }
  @{ $qg->get('/catalog', key => $key)->{json}{queries} // [] };
is_deeply(\%methods, { sm_read => 'GET,POST', sm_bump => 'POST', sm_add => 'POST' }, '/catalog: methods');

done_testing();
