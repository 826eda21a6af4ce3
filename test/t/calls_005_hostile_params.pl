# Hostile parameter values are data or a 400 param_invalid naming the parameter, never SQL:
# quotes, '; DROP TABLE ...', NUL bytes, huge numbers, invalid UTF-8, very long values.
# The table is still there, unchanged, afterwards.
use strict;
use warnings;
use utf8;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'hostile');
$qg->sql(q{
	CREATE TABLE accounts (aid int PRIMARY KEY, bid int, abalance int);
	INSERT INTO accounts SELECT g, 1, 0 FROM generate_series(1, 10) AS g;
	SELECT querygate.save_query('account', 'SELECT aid, bid, abalance FROM accounts WHERE aid = :aid');
	SELECT querygate.save_query('echo', 'SELECT :s::text AS s, octet_length(:s::text) AS bytes');
	SELECT querygate.save_query('big', 'SELECT :b::int8 AS b');
	SELECT querygate.save_query('num', 'SELECT :n::numeric AS n');
	SELECT querygate.save_query('by_name', 'SELECT count(*)::int AS n FROM accounts WHERE bid::text = :s');
});
my $secret = $qg->access(run_as => $qg->role('api_reader', select => ['accounts']), queries => [qw(account echo big num by_name)]);
my $before = $qg->sql('SELECT count(*), sum(aid), sum(abalance) FROM accounts');

sub echo_ok
{
	my ($value, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $bytes = $value;
	utf8::encode($bytes);
	my $res = $qg->get('/q/echo' . query_string(s => $value), key => $secret);
	is($res->{status}, 200, "GET $name: 200") or diag(QuerygateTest::describe($res));
	is_deeply($res->{json}, [ { s => $value, bytes => length $bytes } ], "GET $name: echoed as data");
	$res = $qg->post('/q/echo', { params => { s => $value } }, key => $secret);
	is($res->{status}, 200, "POST $name: 200") or diag(QuerygateTest::describe($res));
	is_deeply($res->{json}, [ { s => $value, bytes => length $bytes } ], "POST $name: echoed as data");
}

# --- values that are data
echo_ok(q{O'Reilly}, 'a single quote');
echo_ok(q{"double" and 'single' and `back`}, 'all kinds of quotes');
echo_ok(q{'; DROP TABLE accounts; --}, q{'; DROP TABLE accounts; --});
echo_ok(q{1); DROP TABLE accounts; --}, q{1); DROP TABLE accounts; --});
echo_ok(q{$$; DROP TABLE accounts; $$}, 'dollar quotes');
echo_ok(q{\\'; DROP TABLE accounts; --}, 'backslash then quote');
echo_ok(q{:aid $1 %s %d {0}}, 'placeholder-like text');
echo_ok(q{/* comment */ -- comment}, 'comment markers');
echo_ok("line1\nline2\r\n\ttab", 'newlines and tabs');
echo_ok("é ✓ 😀 \x{202e}rtl", 'multi-byte UTF-8 and a bidi control');
echo_ok('+ & = ? # %', 'URL metacharacters');

my $res = $qg->get('/q/by_name' . query_string(s => q{1' OR '1'='1}), key => $secret);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"n":0}]', q{"1' OR '1'='1" matches nothing});
$res = $qg->get('/q/by_name' . query_string(s => '1'), key => $secret);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"n":10}]', '"1" matches the ten rows');

# --- values the int4 input function refuses: 400 param_invalid naming aid
for my $v ('1; DROP TABLE accounts', '1 OR 1=1', q{1' OR '1'='1}, '1)', '', ' ', '0x10', '1e3', '2147483648',
	'-2147483649', '99999999999999999999999999999999', 'NaN', 'infinity')
{
	$res = $qg->get('/q/account' . query_string(aid => $v), key => $secret);
	$qg->expect_error($res, 400, 'param_invalid', "GET aid='$v'", param => 'aid');
}
for my $v ('1; DROP TABLE accounts', 2147483648, -2147483649, 1.5, 1e30, '99999999999999999999999999999999')
{
	$res = $qg->post('/q/account', { params => { aid => $v } }, key => $secret);
	$qg->expect_error($res, 400, 'param_invalid', "POST aid=" . json_encode($v), param => 'aid');
}
$res = $qg->request('POST', '/q/account', key => $secret, content => '{"params": {"aid": 99999999999999999999999999999999}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST aid as a 32-digit JSON number', param => 'aid');
$res = $qg->request('POST', '/q/account', key => $secret, content => '{"params": {"aid": true}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST aid=true', param => 'aid');
$res = $qg->request('POST', '/q/account', key => $secret, content => '{"params": {"aid": {"x": 1}}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST aid as an object', param => 'aid');

# --- int8 limits
$res = $qg->get('/q/big?b=-9223372036854775808', key => $secret);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"b":-9223372036854775808}]', 'int8 minimum is exact');
$res = $qg->get('/q/big?b=9223372036854775808', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'int8 maximum + 1', param => 'b');
$res = $qg->request('POST', '/q/big', key => $secret, content => '{"params": {"b": 9223372036854775808}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST int8 maximum + 1 as a JSON number', param => 'b');
$res = $qg->request('POST', '/q/big', key => $secret, content => '{"params": {"b": -9223372036854775809}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST int8 minimum - 1 as a JSON number', param => 'b');
my $digits = '9' x 1000;
$res = $qg->get("/q/num?n=$digits", key => $secret);
is($res->{status} . ' ' . ($res->{content} // ''), qq{200 [{"n":$digits}]}, 'numeric with 1000 digits (GET) is exact');
$res = $qg->request('POST', '/q/num', key => $secret, content => qq({"params": {"n": $digits}}));
is($res->{status} . ' ' . ($res->{content} // ''), qq{200 [{"n":$digits}]}, 'numeric with 1000 digits (POST JSON number) is exact');
$res = $qg->get('/q/num?n=1e100000000', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'numeric out of range', param => 'n');

# --- NUL bytes
$res = $qg->get('/q/echo?s=a%00b', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'GET s=a%00b (NUL byte)', param => 's');
$res = $qg->get('/q/echo?s=%00', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'GET s=%00 (only a NUL byte)', param => 's');
$res = $qg->get('/q/account?aid=1%00', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'GET aid=1%00 (NUL after a valid number)', param => 'aid');
$res = $qg->request('POST', '/q/echo', key => $secret, content => '{"params": {"s": "a\u0000b"}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST s with \u0000', param => 's');
$res = $qg->request('POST', '/q/account', key => $secret, content => '{"params": {"aid": "1\u0000; DROP TABLE accounts"}}');
$qg->expect_error($res, 400, 'param_invalid', 'POST aid with \u0000 then SQL', param => 'aid');

# --- invalid UTF-8
for my $v ('%FF', 'a%C3', '%C0%AF', '%ED%A0%80', '%F8%88%80%80%80')
{
	$res = $qg->get("/q/echo?s=$v", key => $secret);
	$qg->expect_error($res, 400, 'param_invalid', "GET s=$v (invalid UTF-8)", param => 's');
}
# In a POST, the value is inside the JSON text: a body that is not UTF-8 is not JSON (RFC 8259
# section 8.1), and an escape of an unpaired surrogate decodes to no character at all. The body is
# refused whole, before any value reaches a parameter: 400 invalid_body.
$res = $qg->request('POST', '/q/echo', key => $secret, content => qq({"params": {"s": "a\xFFb"}}));
$qg->expect_error($res, 400, 'invalid_body', 'POST with a raw 0xFF byte in a string');
$res = $qg->request('POST', '/q/echo', key => $secret, content => '{"params": {"s": "\udc00"}}');
$qg->expect_error($res, 400, 'invalid_body', 'POST with a lone low surrogate escape');
$res = $qg->request('POST', '/q/echo', key => $secret, content => '{"params": {"s": "a\ud800b"}}');
$qg->expect_error($res, 400, 'invalid_body', 'POST with a lone high surrogate escape');

# --- hostile parameter names
# The name is not UTF-8, so the errors object names it with U+FFFD in place of the bad byte.
$res = $qg->get('/q/echo?s=x&%FF=1', key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'an unknown parameter whose name is invalid UTF-8', param => "\x{fffd}");
ok(defined $res->{json}, 'and the error body is valid JSON') or diag(QuerygateTest::describe($res));
$res = $qg->get('/q/echo' . query_string('s' => 'x', q{s'; DROP TABLE accounts; --} => 1), key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'an unknown parameter named like SQL', param => q{s'; DROP TABLE accounts; --});
$res = $qg->post('/q/echo', { params => { s => 'x', "a\"b" => 1 } }, key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'an unknown parameter with a quote in its name', param => "a\"b");

# --- very long values
echo_ok('x' x 10_000, 'a 10 000-character value');
my $long = join('', map { chr(0x4e00 + $_ % 500) } 1 .. 50_000);
$res = $qg->post('/q/echo', { params => { s => $long } }, key => $secret);
is($res->{status}, 200, 'POST a 50 000-character (150 kB) UTF-8 value: 200') or diag(QuerygateTest::describe($res));
is_deeply($res->{json}, [ { s => $long, bytes => 150_000 } ], 'and it comes back whole');
$res = $qg->get('/q/account' . query_string(aid => '1' x 5000), key => $secret);
$qg->expect_error($res, 400, 'param_invalid', 'a 5000-digit aid', param => 'aid');

# --- nothing happened to the table
is($qg->sql(q{SELECT to_regclass('public.accounts') IS NOT NULL}), 't', 'table accounts still exists');
is($qg->sql('SELECT count(*), sum(aid), sum(abalance) FROM accounts'), $before, 'accounts unchanged');
$res = $qg->get('/q/account?aid=7', key => $secret);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"aid":7,"bid":1,"abalance":0}]', 'and is still served');

done_testing();
