# The JSON mapping of each output type, the binding of each parameter type from GET (text through
# the type's input function) and from POST JSON (numbers and booleans from their JSON text, strings
# through the input function, objects/arrays as JSON text, null as SQL NULL), and parameter types
# inferred from context.
use strict;
use warnings;
use utf8;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'types');
$qg->sql(q{
	CREATE TABLE typed (i4 int4 PRIMARY KEY, i8 int8, n numeric, u uuid, ts timestamptz, b bool);
	INSERT INTO typed VALUES (1, 9007199254740993, 0.1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2024-01-02 03:04:05+00', true);
});
$qg->sql(<<'SQL');
SELECT querygate.save_query('out', $q$
SELECT 1::int2 AS i2, -2::int4 AS i4, 9007199254740993::int8 AS i8, '-9223372036854775808'::int8 AS i8min,
       1.5::float4 AS f4, 0.1::float8 AS f8, 1e300::float8 AS f8big, 'NaN'::float8 AS fnan,
       'Infinity'::float8 AS finf, '-Infinity'::float4 AS fninf,
       123456789012345678901234567890.123456789012345678901234567890::numeric AS num,
       0.000000000000000000001::numeric AS numsmall, -1.50::numeric AS numneg, 'NaN'::numeric AS numnan,
       'Infinity'::numeric AS numinf, true AS t, false AS f,
       '{"a": [1, 2, {"b": null}], "c": "d\"e"}'::json AS j, '{"x": 1, "y": [true, false]}'::jsonb AS jb,
       '[1, "two"]'::jsonb AS jbarr, '"str"'::jsonb AS jbstr, 'null'::jsonb AS jbnull,
       NULL::int AS nint, NULL::text AS ntext, NULL::jsonb AS njsonb,
       E'quote " backslash \\ newline \n tab \t cr \r bell \x07 unicode é ✓ 😀' AS txt,
       '2024-01-02 03:04:05.123456+00'::timestamptz AS ts, '2024-01-02'::date AS d,
       'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, ARRAY[1, 2, 3] AS arr,
       ARRAY['a b', NULL, 'c"d'] AS tarr, 42::oid AS o, '\x0102ff'::bytea AS by, interval '1 day 2 hours' AS iv,
       '1.5'::money AS m, 'abc'::varchar(5) AS vc, 'x'::"char" AS ch, '127.0.0.1/32'::inet AS ip,
       '(1,2)'::point AS pt
$q$);
SQL
$qg->sql(<<'SQL');
SELECT querygate.save_query('bind', $q$
SELECT :i2::int2 AS i2, :i4::int4 AS i4, :i8::int8 AS i8, :f4::float4 AS f4, :f8::float8 AS f8,
       :num::numeric AS num, :b::bool AS b, :j::json AS j, :jb::jsonb AS jb, :t::text AS t,
       :ts::timestamptz AS ts, :u::uuid AS u, :arr::int[] AS arr, :d::date AS d
$q$);
SELECT querygate.save_query('inferred', 'SELECT i4, i8, n, u, ts, b FROM typed WHERE i4 = :i4 AND i8 = :i8 AND n = :n AND u = :u AND ts = :ts AND b = :b');
SELECT querygate.save_query('nullable', 'SELECT :n::int IS NULL AS is_null, :n::int AS n',
                            params => '{"n": {"nullable": true}}');
SELECT querygate.save_query('echo_text', 'SELECT :s::text AS s, length(:s::text) AS len',
                            params => '{"s": {"nullable": true}}');
SELECT querygate.save_query('echo_json', 'SELECT :j::jsonb AS j, :t::text AS t');
SQL
my $secret = $qg->access(run_as => $qg->role('api_reader', select => ['typed']),
	queries => [qw(out bind inferred nullable echo_text echo_json)]);

# --- output mapping
my $res = $qg->get('/q/out', key => $secret);
is($res->{status}, 200, 'GET /q/out: 200') or diag(QuerygateTest::describe($res));
my $raw = $res->{content} // '';
my $row = ($res->{json} // [ {} ])->[0] // {};

my @column_order = qw(i2 i4 i8 i8min f4 f8 f8big fnan finf fninf num numsmall numneg numnan numinf t f j jb jbarr
  jbstr jbnull nint ntext njsonb txt ts d u arr tarr o by iv m vc ch ip pt);
my @keys = ($raw =~ /(?:^\[\{|,)\s*"([a-z0-9]+)"\s*:/g);
is_deeply([ grep { my $k = $_; grep { $_ eq $k } @column_order } @keys ], \@column_order, 'keys come in column order');

# Numbers: checked on the raw text (exact digits, JSON numbers, not strings).
my %raw_numbers = (
	i2 => '1', i4 => '-2', i8 => '9007199254740993', i8min => '-9223372036854775808',
	f4 => '1.5', f8 => '0.1', num => '123456789012345678901234567890.123456789012345678901234567890',
	numsmall => '0.000000000000000000001', numneg => '-1.50', o => '42');
for my $k (sort keys %raw_numbers)
{
	like($raw, qr/"$k"\s*:\s*\Q$raw_numbers{$k}\E\s*[,}]/, "$k is the JSON number $raw_numbers{$k}");
}
like($raw, qr/"f8big"\s*:\s*1(\.0+)?e\+?300\s*[,}]/i, 'f8big is the JSON number 1e300');
my %raw_strings = (fnan => 'NaN', finf => 'Infinity', fninf => '-Infinity', numnan => 'NaN', numinf => 'Infinity');
for my $k (sort keys %raw_strings)
{
	like($raw, qr/"$k"\s*:\s*"\Q$raw_strings{$k}\E"/, "$k is the string \"$raw_strings{$k}\"");
}
like($raw, qr/"t"\s*:\s*true\s*,\s*"f"\s*:\s*false/, 'bool is true/false');
like($raw, qr/"nint"\s*:\s*null\s*,\s*"ntext"\s*:\s*null\s*,\s*"njsonb"\s*:\s*null/, 'NULL is null for int, text and jsonb');
like($raw, qr/"jbnull"\s*:\s*null/, 'jsonb null is embedded as null');

is_deeply($row->{j}, { a => [ 1, 2, { b => undef } ], c => 'd"e' }, 'json is embedded');
is_deeply($row->{jb}, { x => 1, y => [ JSON::PP::true, JSON::PP::false ] }, 'jsonb object is embedded');
is_deeply($row->{jbarr}, [ 1, 'two' ], 'jsonb array is embedded');
is($row->{jbstr}, 'str', 'jsonb string is embedded');
is($row->{txt}, qq{quote " backslash \\ newline \n tab \t cr \r bell \x07 unicode é ✓ 😀},
	'text with quotes, backslash, control characters and unicode round-trips');
unlike($raw, qr/[\x00-\x1f]/, 'control characters are escaped in the JSON text');
my %strings = (
	ts => '2024-01-02 03:04:05.123456+00', d => '2024-01-02', u => 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
	arr => '{1,2,3}', tarr => '{"a b",NULL,"c\"d"}', by => '\x0102ff', iv => '1 day 02:00:00',
	vc => 'abc', ch => 'x', ip => '127.0.0.1', pt => '(1,2)');
for my $k (sort keys %strings)
{
	like($raw, qr/"$k"\s*:\s*"/, "$k is a JSON string");
	is($row->{$k}, $strings{$k}, "$k is its text output");
}
my $expected_type = $qg->sql(q{SELECT '1.5'::money::text});
is($row->{m}, $expected_type, 'money is its text output (as psql shows it)');

# --- binding from GET: every value goes through the type's input function
my %get = (
	i2 => '-32768', i4 => '2147483647', i8 => '9223372036854775807', f4 => '1.5', f8 => '-0.25',
	num => '1234567890.0987654321000', b => 'yes', j => '{"a": [1, "x"]}', jb => '[1, {"b": 2}]',
	t => "it's \"quoted\" é", ts => '2024-01-02T03:04:05Z', u => 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
	arr => '{1,2,3}', d => '2024-02-29');
$res = $qg->get('/q/bind' . query_string(map { $_ => $get{$_} } sort keys %get), key => $secret);
is($res->{status}, 200, 'GET /q/bind with every type: 200') or diag(QuerygateTest::describe($res));
$raw = $res->{content} // '';
$row = ($res->{json} // [ {} ])->[0] // {};
like($raw, qr/"i2"\s*:\s*-32768\s*,/, 'GET int2 -32768');
like($raw, qr/"i4"\s*:\s*2147483647\s*,/, 'GET int4 2147483647');
like($raw, qr/"i8"\s*:\s*9223372036854775807\s*,/, 'GET int8 9223372036854775807 (exact)');
like($raw, qr/"f4"\s*:\s*1\.5\s*,/, 'GET float4 1.5');
like($raw, qr/"f8"\s*:\s*-0\.25\s*,/, 'GET float8 -0.25');
like($raw, qr/"num"\s*:\s*1234567890\.0987654321000\s*,/, 'GET numeric keeps every digit (and trailing zeros)');
like($raw, qr/"b"\s*:\s*true\s*,/, 'GET bool "yes" is true');
is_deeply($row->{j}, { a => [ 1, 'x' ] }, 'GET json');
is_deeply($row->{jb}, [ 1, { b => 2 } ], 'GET jsonb');
is($row->{t}, "it's \"quoted\" é", 'GET text with quotes and UTF-8');
is($row->{ts}, '2024-01-02 03:04:05+00', 'GET timestamptz in ISO 8601 input');
is($row->{u}, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'GET uuid');
is($row->{arr}, '{1,2,3}', 'GET int[] from its text form');
is($row->{d}, '2024-02-29', 'GET date');

# --- binding from POST: numbers and booleans from their JSON text, strings through the input
# function, objects and arrays as JSON text. The body is written by hand to keep the exact digits.
my $body = '{"params": {"i2": -32768, "i4": 2147483647, "i8": 9223372036854775807, "f4": 1.5, "f8": -0.25, '
  . '"num": 1234567890.0987654321000, "b": true, "j": {"a": [1, "x"]}, "jb": [1, {"b": 2}], '
  . '"t": "it\'s \"quoted\" \u00e9", "ts": "2024-01-02T03:04:05Z", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", '
  . '"arr": "{1,2,3}", "d": "2024-02-29"}}';
$res = $qg->request('POST', '/q/bind', key => $secret, content => $body);
is($res->{status}, 200, 'POST /q/bind with every type: 200') or diag(QuerygateTest::describe($res));
$raw = $res->{content} // '';
$row = ($res->{json} // [ {} ])->[0] // {};
like($raw, qr/"i2"\s*:\s*-32768\s*,/, 'POST int2 from a JSON number');
like($raw, qr/"i4"\s*:\s*2147483647\s*,/, 'POST int4 from a JSON number');
like($raw, qr/"i8"\s*:\s*9223372036854775807\s*,/, 'POST int8 from a JSON number (exact)');
like($raw, qr/"f4"\s*:\s*1\.5\s*,/, 'POST float4 from a JSON number');
like($raw, qr/"f8"\s*:\s*-0\.25\s*,/, 'POST float8 from a JSON number');
like($raw, qr/"num"\s*:\s*1234567890\.0987654321000\s*,/, 'POST numeric from a JSON number keeps every digit');
like($raw, qr/"b"\s*:\s*true\s*,/, 'POST bool from JSON true');
is_deeply($row->{j}, { a => [ 1, 'x' ] }, 'POST json from a JSON object');
is_deeply($row->{jb}, [ 1, { b => 2 } ], 'POST jsonb from a JSON array');
is($row->{t}, "it's \"quoted\" é", 'POST text from a JSON string with escapes');
is($row->{ts}, '2024-01-02 03:04:05+00', 'POST timestamptz from a string');
is($row->{u}, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'POST uuid from a string');
is($row->{arr}, '{1,2,3}', 'POST int[] from its text form');
is($row->{d}, '2024-02-29', 'POST date from a string');

$res = $qg->request('POST', '/q/bind', key => $secret,
	content => '{"params": {"i2": "7", "i4": "8", "i8": "9", "f4": "0.5", "f8": "1e-3", "num": "2.50", "b": "false",'
	  . ' "j": "[1]", "jb": "{\"k\": \"v\"}", "t": 5, "ts": "2024-01-02 03:04:05+00", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",'
	  . ' "arr": "{}", "d": "2024-01-01"}}');
is($res->{status}, 200, 'POST with numbers given as strings and text given as a number') or diag(QuerygateTest::describe($res));
$raw = $res->{content} // '';
$row = ($res->{json} // [ {} ])->[0] // {};
like($raw, qr/"i2"\s*:\s*7\s*,\s*"i4"\s*:\s*8\s*,\s*"i8"\s*:\s*9\s*,\s*"f4"\s*:\s*0\.5\s*,\s*"f8"\s*:\s*0\.001\s*,\s*"num"\s*:\s*2\.50\s*,\s*"b"\s*:\s*false/,
	'strings go through the input functions of int2, int4, int8, float4, float8, numeric and bool');
is_deeply($row->{j}, [1], 'a JSON string holding JSON text for a json parameter');
is_deeply($row->{jb}, { k => 'v' }, 'a JSON string holding JSON text for a jsonb parameter');
is($row->{t}, '5', 'a JSON number for a text parameter is its JSON text');
is($row->{arr}, '{}', 'empty array');

# POST JSON numbers in other spellings, and booleans for text.
$res = $qg->request('POST', '/q/echo_json', key => $secret, content => '{"params": {"j": {"n": 1.0e2, "z": -0}, "t": true}}');
is($res->{status}, 200, 'POST an object with exotic numbers') or diag(QuerygateTest::describe($res));
$row = ($res->{json} // [ {} ])->[0] // {};
is($row->{t}, 'true', 'a JSON true for a text parameter is "true"');
is(ref $row->{j}, 'HASH', 'the object arrives as jsonb');
$res = $qg->request('POST', '/q/echo_json', key => $secret,
	content => '{"params": {"j": "not json", "t": "x"}}');
$qg->expect_error($res, 400, 'param_invalid', 'a JSON string that is not JSON text, for a jsonb parameter', param => 'j');

# --- JSON null is SQL NULL where the rules allow it; GET has no null (an empty value is the
# empty string)
$res = $qg->request('POST', '/q/nullable', key => $secret, content => '{"params": {"n": null}}');
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"is_null":true,"n":null}]', 'POST null binds SQL NULL');
$res = $qg->request('POST', '/q/echo_json', key => $secret, content => '{"params": {"j": "{}", "t": null}}');
$qg->expect_error($res, 400, 'param_invalid', 'null for a parameter without rules (required)', param => 't');
$res = $qg->get('/q/echo_text?s=', key => $secret);
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"s":"","len":0}]', 'GET s= binds the empty string');
$res = $qg->request('POST', '/q/echo_text', key => $secret, content => '{"params": {"s": null}}');
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"s":null,"len":null}]', 'POST null for text is NULL, not "null"');
$res = $qg->request('POST', '/q/echo_text', key => $secret, content => '{"params": {"s": "null"}}');
is($res->{status} . ' ' . ($res->{content} // ''), '200 [{"s":"null","len":4}]', 'POST "null" is the string null');

# --- types inferred from context (no casts): int4, int8, numeric, uuid, timestamptz, bool
my %ctx = (i4 => '1', i8 => '9007199254740993', n => '0.10', u => 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
	ts => '2024-01-02 04:04:05+01', b => 'on');
$res = $qg->get('/q/inferred' . query_string(map { $_ => $ctx{$_} } sort keys %ctx), key => $secret);
is($res->{status}, 200, 'GET with types inferred from the columns') or diag(QuerygateTest::describe($res));
like($res->{content} // '', qr/^\[\{"i4":1,"i8":9007199254740993,"n":0\.1,"u":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11","ts":"2024-01-02 03:04:05\+00","b":true\}\]$/,
	'the row, compared as numeric, uuid and timestamptz (not as text)');
for my $case ([ i4 => '2147483648' ], [ i4 => '1.5' ], [ i8 => '9223372036854775808' ], [ n => 'ten' ],
	[ u => 'not-a-uuid' ], [ ts => 'yesterday-ish' ], [ b => 'maybe' ])
{
	my %p = (%ctx, @$case);
	$res = $qg->get('/q/inferred' . query_string(map { $_ => $p{$_} } sort keys %p), key => $secret);
	$qg->expect_error($res, 400, 'param_invalid', "inferred type refuses $case->[0]=$case->[1]", param => $case->[0]);
}

done_testing();
