# The issue's example end to end (GET and POST, X-API-Key and Authorization: Bearer), empty
# results, paging (X-Page, X-Page-Size, X-Has-More), invalid_paging, querygate.max_page_size,
# param_required and unknown parameters.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'basics');
$qg->sql(q{
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	INSERT INTO accounts SELECT g, (g - 1) / 10 + 1, 0 FROM generate_series(1, 250) AS g;
	SELECT querygate.save_query('account', 'SELECT aid, bid, abalance FROM accounts WHERE aid = :aid');
	SELECT querygate.save_query('range', 'SELECT aid FROM accounts WHERE aid BETWEEN :lo AND :hi ORDER BY aid');
	SELECT querygate.save_query('range_desc', 'SELECT aid FROM accounts WHERE aid BETWEEN :lo AND :hi ORDER BY aid DESC');
	SELECT querygate.save_query('noparams', 'SELECT count(*)::int AS n FROM accounts');
});
my $secret = $qg->access(policy => 'reader', run_as => $qg->role('api_reader', select => ['accounts']),
	queries => [qw(account range range_desc noparams)]);
like($secret, qr/^qg_[A-Za-z0-9_-]{43}$/, 'create_key returned a secret');

my $expected = '[{"aid":7,"bid":1,"abalance":0}]';

sub check_success
{
	my ($res, $body, $name, %h) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($res->{status} . ' ' . $res->{content}, "200 $body", "$name: 200 $body");
	my %want = (
		'content-type' => 'application/json',
		'x-page' => $h{page} // 1,
		'x-page-size' => $h{page_size} // 100,
		'x-has-more' => $h{has_more} // 'false');
	my %got = map { $_ => $res->{headers}{$_} // '(missing)' } keys %want;
	$got{'content-type'} =~ s/;.*//;
	is_deeply(\%got, \%want, "$name: headers");
}

# --- the example
my $res = $qg->get('/q/account?aid=7', key => $secret);
check_success($res, $expected, 'GET with X-API-Key');
ok(defined $res->{headers}{'x-request-id'}, 'GET: X-Request-Id present');
$res = $qg->get('/q/account?aid=7', bearer => $secret);
check_success($res, $expected, 'GET with Authorization: Bearer');
$res = $qg->post('/q/account', { params => { aid => 7 } }, key => $secret);
check_success($res, $expected, 'POST {"params":{"aid":7}} with X-API-Key');
$res = $qg->post('/q/account', { params => { aid => 7 } }, bearer => $secret);
check_success($res, $expected, 'POST with Authorization: Bearer');
$res = $qg->post('/q/account', { params => { aid => '7' } }, key => $secret);
check_success($res, $expected, 'POST with the value as a JSON string');
$res = $qg->post('/q/account', { params => { aid => 7 } }, key => $secret,
	headers => { 'Content-Type' => 'application/json; charset=utf-8' });
check_success($res, $expected, 'POST with Content-Type: application/json; charset=utf-8');
$res = $qg->get('/q/account?aid=8', key => $secret);
check_success($res, '[{"aid":8,"bid":1,"abalance":0}]', 'GET aid=8 (another plan execution)');
$res = $qg->get('/q/account?aid=250', key => $secret);
check_success($res, '[{"aid":250,"bid":25,"abalance":0}]', 'GET aid=250');
$res = $qg->get('/q/noparams', key => $secret);
check_success($res, '[{"n":250}]', 'a query without parameters');

# --- empty result
$res = $qg->get('/q/account?aid=100000', key => $secret);
check_success($res, '[]', 'GET with no matching row');
$res = $qg->post('/q/account', { params => { aid => -1 } }, key => $secret);
check_success($res, '[]', 'POST with no matching row');

# --- paging
sub aids { return '[' . join(',', map { qq({"aid":$_}) } @_) . ']'; }
$res = $qg->get('/q/range?lo=1&hi=25&page_size=10', key => $secret);
check_success($res, aids(1 .. 10), 'page 1 of 25 rows by 10', page_size => 10, has_more => 'true');
$res = $qg->get('/q/range?lo=1&hi=25&page=2&page_size=10', key => $secret);
check_success($res, aids(11 .. 20), 'page 2 of 25 rows by 10', page => 2, page_size => 10, has_more => 'true');
$res = $qg->get('/q/range?lo=1&hi=25&page=3&page_size=10', key => $secret);
check_success($res, aids(21 .. 25), 'page 3 of 25 rows by 10 (last, short)', page => 3, page_size => 10);
$res = $qg->get('/q/range?lo=1&hi=25&page=4&page_size=10', key => $secret);
check_success($res, '[]', 'page 4 of 25 rows by 10 (past the end)', page => 4, page_size => 10);
$res = $qg->get('/q/range?lo=1&hi=20&page=2&page_size=10', key => $secret);
check_success($res, aids(11 .. 20), 'page 2 of exactly 20 rows by 10: X-Has-More false', page => 2, page_size => 10);
$res = $qg->get('/q/range?lo=1&hi=250', key => $secret);
check_success($res, aids(1 .. 100), 'default page size is 100', has_more => 'true');
$res = $qg->get('/q/range?lo=1&hi=250&page=3', key => $secret);
check_success($res, aids(201 .. 250), 'default page size, page 3', page => 3);
$res = $qg->get('/q/range?lo=1&hi=250&page_size=1000', key => $secret);
check_success($res, aids(1 .. 250), 'page_size 1000 (the default maximum)', page_size => 1000);
$res = $qg->get('/q/range?page_size=1&lo=5&hi=9&page=5', key => $secret);
check_success($res, aids(9), 'page_size 1, last page; paging arguments in any order', page => 5, page_size => 1);
$res = $qg->get('/q/range_desc?lo=1&hi=25&page=2&page_size=10', key => $secret);
check_success($res, aids(reverse 6 .. 15), 'pages follow the statement\'s own ORDER BY', page => 2, page_size => 10,
	has_more => 'true');
$res = $qg->post('/q/range', { params => { lo => 1, hi => 25 }, page => 2, page_size => 10 }, key => $secret);
check_success($res, aids(11 .. 20), 'POST with page and page_size in the body', page => 2, page_size => 10,
	has_more => 'true');
$res = $qg->post('/q/range?page=3&page_size=10', { params => { lo => 1, hi => 25 } }, key => $secret);
check_success($res, aids(21 .. 25), 'POST with page and page_size in the query string', page => 3, page_size => 10);

# --- invalid_paging
for my $q ('page=0', 'page=-1', 'page=abc', 'page=1.5', 'page=', 'page=1e2', 'page=99999999999999999999',
	'page_size=0', 'page_size=-5', 'page_size=1001', 'page_size=x', 'page_size=', 'page_size=10.0')
{
	$res = $qg->get("/q/range?lo=1&hi=25&$q", key => $secret);
	$qg->expect_error($res, 400, 'invalid_paging', "GET $q");
}
for my $body ({ page => 0 }, { page_size => 1001 }, { page => 'abc' }, { page => 1.5 }, { page_size => -1 },
	{ page => [] }, { page_size => {} })
{
	my $desc = json_encode($body);
	$res = $qg->post('/q/range', { params => { lo => 1, hi => 25 }, %$body }, key => $secret);
	$qg->expect_error($res, 400, 'invalid_paging', "POST $desc");
}

# --- querygate.max_page_size takes effect on reload
$qg->set_and_reload('querygate.max_page_size', '20');
my $streak = 0;
ok( poll_until(
		sub {
			my $r = $qg->get('/q/range?lo=1&hi=25&page_size=21', key => $secret);
			$streak = $r->{status} == 400 ? $streak + 1 : 0;
			return $streak >= 6;
		}),
	'after max_page_size = 20 and a reload, page_size 21 is refused (6 times in a row)');
$res = $qg->get('/q/range?lo=1&hi=25&page_size=21', key => $secret);
$qg->expect_error($res, 400, 'invalid_paging', 'page_size above the new querygate.max_page_size');
$res = $qg->get('/q/range?lo=1&hi=25&page_size=20', key => $secret);
check_success($res, aids(1 .. 20), 'page_size equal to the new max_page_size', page_size => 20, has_more => 'true');
$qg->sql('ALTER SYSTEM RESET querygate.max_page_size');
$qg->sql('SELECT pg_reload_conf()');
$streak = 0;
ok( poll_until(
		sub {
			my $r = $qg->get('/q/range?lo=1&hi=25&page_size=21', key => $secret);
			$streak = $r->{status} == 200 ? $streak + 1 : 0;
			return $streak >= 6;
		}),
	'after RESET and a reload, page_size 21 is accepted again');

# --- missing and unknown parameters
$res = $qg->get('/q/account', key => $secret);
$qg->expect_error($res, 400, 'param_required', 'GET without aid', param => 'aid');
$res = $qg->post('/q/account', { params => {} }, key => $secret);
$qg->expect_error($res, 400, 'param_required', 'POST without aid', param => 'aid');
$res = $qg->get('/q/range?lo=1', key => $secret);
$qg->expect_error($res, 400, 'param_required', 'GET without hi', param => 'hi');
$res = $qg->get('/q/account?aid=7&extra=1', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'GET with an unknown parameter', param => 'extra');
$res = $qg->post('/q/account', { params => { aid => 7, extra => 1 } }, key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'POST with an unknown parameter', param => 'extra');
$res = $qg->get('/q/account?aid=seven', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'GET with aid=seven', param => 'aid');
$res = $qg->get('/q/noparams?x=1', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'a parameter for a query that takes none', param => 'x');

# The data was never changed by any of this.
is($qg->sql('SELECT count(*), sum(abalance) FROM accounts'), '250|0', 'accounts unchanged');

done_testing();
